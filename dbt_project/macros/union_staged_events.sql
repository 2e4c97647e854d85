{#
  The union of the staging views of one event group (dbt_project.yml vars.event_groups) for one
  family, in one shape: `columns` is a list of [name, type]; a view without a column gives NULL.
  Which columns a view has comes from the generated staging YAML (no database round trip).
#}
{% macro union_staged_events(group, family, columns) %}
    {%- set event_types = var('event_groups')[group][family] -%}
    {%- for event_type in event_types %}
        {%- set model_name = 'stg_' ~ family ~ '__' ~ event_type -%}
        {%- set present = staged_columns(model_name) %}
    select
        {%- for column in columns %}
        {% if column[0] in present %}{{ column[0] }}{% else %}cast(null as {{ column[1] }}) as {{ column[0] }}{% endif %}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ ref(model_name) }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
{% endmacro %}

{% macro staged_columns(model_name) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.name == model_name -%}
        {{ return(node.columns.keys() | list) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no staging model " ~ model_name ~ ": run `auditlake gold staging`") }}
{% endmacro %}
