{#
  The state reports look at the entity histories (snapshot_history, type-2: a row holds from
  valid_from until valid_to, NULL while it still holds) at one time. These two macros say once what
  that time is and which row of a history holds then, so every report reads the same state.

  review_time(): one row, as_of: the time a report reviews, dbt var access_review_as_of (UTC) when
  given, else the latest applied snapshot hour, since a snapshot holds until the next one.
#}
{% macro review_time() %}
    {%- set as_of = access_review_as_of() -%}
    {%- if as_of -%}
    select cast('{{ as_of }}' as timestamp) as as_of
    {%- else -%}
    select max(snapshot_hour) as as_of
    from ({{ snapshot_hours() }}) as delivered
    where status = 'applied'
    {%- endif -%}
{% endmacro %}

{#
  current_at(alias, as_of): a join or filter condition, true for the row of history `alias` that
  holds at `as_of` (a timestamp expression, e.g. a review_time's `t.as_of`).
#}
{% macro current_at(alias, as_of) -%}
    {{ alias }}.valid_from <= {{ as_of }} and ({{ alias }}.valid_to > {{ as_of }} or {{ alias }}.valid_to is null)
{%- endmacro %}
