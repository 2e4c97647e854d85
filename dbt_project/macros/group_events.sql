{#
  The events of one event group (dbt_project.yml vars.event_groups) of one family, in one shape:
  the family's staging model filtered on the group's event types. `columns` is a list of
  [name, type]; a column the staging model lacks gives NULL. Which columns it has comes from the
  generated staging YAML (no database round trip); in a unit test, whose graph has no nodes, the
  given rows stand for the staging model and every column is taken as present.
#}
{% macro group_events(group, family, columns) %}
    {%- set event_types = var('event_groups')[group][family] -%}
    {%- set model_name = 'stg_' ~ family ~ '__events' -%}
    {%- set present = staged_columns(model_name) %}
    select
        {%- for column in columns %}
        {% if present is none or column[0] in present %}{{ column[0] }}{% else %}cast(null as {{ column[1] }}) as {{ column[0] }}{% endif %}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ ref(model_name) }}
    where event_type in ({% for event_type in event_types %}'{{ event_type }}'{{ ", " if not loop.last }}{% endfor %})
{% endmacro %}

{% macro staged_columns(model_name) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set nodes = graph.get('nodes') -%}
    {%- if not nodes -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for node in nodes.values() if node.resource_type == 'model' and node.name == model_name -%}
        {{ return(node.columns.keys() | list) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no staging model " ~ model_name ~ ": run `auditlake gold staging`") }}
{% endmacro %}

{#
  The events of an event-level mart (this model) of one family: its group comes from
  dbt_project.yml vars.event_marts, the one place that says which group a mart holds. A unit test
  has no `this` (no table of its own): the model it tests names the mart.
#}
{% macro mart_events(family, columns) %}
    {%- set mart = this.identifier if this else (model.get('tested_node_unique_id') or '').split('.')[-1] -%}
    {%- set group = var('event_marts').get(mart) -%}
    {%- if group is none -%}
        {{ exceptions.raise_compiler_error(mart ~ " is not an event-level mart (dbt_project.yml vars.event_marts)") }}
    {%- endif -%}
    {{ group_events(group, family, columns) }}
{% endmacro %}
