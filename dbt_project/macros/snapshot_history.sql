{#
  Entity snapshots (Tableau's hourly entityType= Parquet dumps) as silver keeps them: one type-2
  history table per entity type, silver.entity_<entity>_history, with the columns as delivered
  plus site_luid, valid_from, valid_to (NULL while current), ... (pipelines/entity_snapshots/).

  snapshot_history(entity, columns): `columns` ([name, type], delivered names) plus site_luid,
  valid_from and valid_to, each cast to its type. No document lists the delivered columns, so a
  column the table lacks gives a typed NULL; a lake without snapshots (Tableau delivers them to
  Enterprise and Tableau+ only) has no table, and the select is empty (`where false`) with the
  same columns. The table is read through source('entity_snapshots', ...)
  (models/intermediate/snapshots/_snapshots__sources.yml), so a unit test can give its rows; in a
  unit test (its graph has no nodes) every column is taken as present.
#}
{% macro snapshot_history(entity, columns) %}
    {{- snapshot_source_select('entity_snapshots', 'entity_' ~ entity ~ '_history', columns + [
        ['site_luid', 'string'], ['valid_from', 'timestamp'], ['valid_to', 'timestamp']
    ]) -}}
{% endmacro %}

{# ops.snapshot_hours: one row per delivered snapshot (entity type, site, hour, status). #}
{% macro snapshot_hours() %}
    {{- snapshot_source_select('snapshot_ops', 'snapshot_hours', [
        ['entity_type', 'string'], ['site_luid', 'string'], ['snapshot_hour', 'timestamp'],
        ['rows', 'bigint'], ['status', 'string'], ['run_id', 'string']
    ]) -}}
{% endmacro %}

{% macro snapshot_source_select(source_name, table_name, columns) %}
    {#- called unconditionally: at parse time this records the dependency (and a unit test's input) -#}
    {%- set relation = source(source_name, table_name) -%}
    {%- set present = snapshot_columns(relation) %}
    select
        {%- for column in columns %}
        {% if present is none or column[0] | lower in present -%}
            cast(`{{ column[0] }}` as {{ column[1] }})
        {%- else -%}
            cast(null as {{ column[1] }})
        {%- endif %} as {{ column[0] }}{{ "," if not loop.last }}
        {%- endfor %}
    {% if present is none or present | length > 0 -%}
        from {{ relation }}
    {%- else -%}
        where false
    {%- endif %}
{% endmacro %}

{#
  The lower-cased column names of `relation`; [] when it does not exist (or nothing runs yet:
  parsing); none in a unit test, where the given rows stand for the table.
#}
{% macro snapshot_columns(relation) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- if not graph.get('nodes') -%}
        {{ return(none) }}
    {%- endif -%}
    {#- the one name looked up, not adapter.get_relation: that lists the whole schema (`show table
        extended`), which with silver's ~250 event views is slow, in each snapshot model of every
        build; describing a missing table instead would log Spark's error -#}
    {#- the pipeline's target always has silver (a gold build requires it); another target (plain `dbt`,
        sqlfluff's templater on a fresh clone) may not, and `show tables in` a missing schema fails -#}
    {%- if target.name != 'pipeline' and run_query("show databases like '" ~ relation.schema ~ "'").rows | length == 0 -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set found = run_query("show tables in " ~ relation.schema ~ " like '" ~ relation.identifier ~ "'") -%}
    {%- if found.rows | length == 0 -%}
        {{ return([]) }}
    {%- endif -%}
    {{ return(adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list) }}
{% endmacro %}

{#
  rpt_access_review's date (dbt var access_review_as_of): a timestamp in UTC, as
  YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][Z|+HH:MM], or none (or empty) for the latest applied
  snapshot hour. Anything else stops the build naming the var.
#}
{% macro access_review_as_of() %}
    {%- set value = var('access_review_as_of', none) -%}
    {%- if value is none or value | string | trim == '' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set text = value | string | trim -%}
    {%- set shape = '^\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?)?(Z|[+-]\\d{2}:\\d{2})?$' -%}
    {%- if not modules.re.match(shape, text) -%}
        {{ exceptions.raise_compiler_error("var access_review_as_of: '" ~ text ~ "' is not a timestamp "
            ~ "(YYYY-MM-DD or YYYY-MM-DD HH:MM[:SS], UTC)") }}
    {%- endif -%}
    {{ return(text) }}
{% endmacro %}
