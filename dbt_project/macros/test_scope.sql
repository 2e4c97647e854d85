{#
  The rows a data test reads (dbt's get_where_subquery, overridden for this project).

  A refresh passes tests_since (macros/run_inputs.sql): when the last successful gold build
  started. The tests of the staging views over silver and of the incremental marts then check
  only the rows promoted to silver since (silver_ingest_ts): older rows were tested by that build.
  A row arriving again under an old key never reaches a mart twice: silver sets a re-delivered
  event aside as a duplicate (so an event fact, which appends, takes it once), and a mart whose
  rows change merges on its key (the silver -> gold reconciliation counts both). A plain
  `dbt build`, a --full-refresh and the first gold build pass none and test every row. Tests
  of the tables rebuilt whole (dimensions, reports) always read every row. A test's own `where`
  config still applies.
#}
{% macro spark__get_where_subquery(relation) -%}
    {%- set conditions = [] -%}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}
        {%- do conditions.append('(' ~ where ~ ')') -%}
    {%- endif -%}
    {%- set since = run_input('tests_since') -%}
    {%- if since and tested_by_new_rows(relation) -%}
        {%- do conditions.append("silver_ingest_ts > timestamp '" ~ since ~ "'") -%}
    {%- endif -%}
    {%- if conditions -%}
        {%- do return('(select * from ' ~ relation ~ ' where ' ~ conditions | join(' and ') ~ ') dbt_subquery') -%}
    {%- endif -%}
    {%- do return(relation) -%}
{%- endmacro %}

{# An incremental mart, or a staging view over a silver table (both carry silver_ingest_ts; a
   staging view over an ops table, stg_ops__feed_completeness, does not). #}
{% macro tested_by_new_rows(relation) -%}
    {%- if not execute -%}
        {%- do return(false) -%}
    {%- endif -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and (node.alias or node.name) == relation.identifier -%}
        {%- if node.config.materialized == 'incremental' -%}
            {%- do return(true) -%}
        {%- endif -%}
        {%- for source in graph.sources.values()
            if [source.source_name, source.name] in node.sources and source.schema == var('silver_schema') -%}
            {%- do return('staging' in node.fqn) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- do return(false) -%}
{%- endmacro %}
