{#
  union all of `relations` (CTE or model names) matching their columns by name, not position:
  each branch selects `columns` by name, so a column added to one branch, or listed in another
  order, cannot shift the values of the others (Spark's SQL union matches by position). `each`
  is appended to every branch (e.g. newer_than_mart()).
#}
{% macro union_by_name(relations, columns, each='') -%}
    {%- for relation in relations %}
    select {{ columns | join(', ') }} from {{ relation }}
    {%- if each %}
    {{ each }}
    {%- endif %}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
{%- endmacro %}
