{#
  Incremental marts read only the silver rows promoted since their last run: silver is
  append-only and every batch stamps silver_ingest_ts, so rows newer than the mart's newest are
  exactly the new ones. A mart of one row per event appends them (incremental_strategy='append'):
  silver holds each event once (a re-delivered one is set aside as a duplicate, in any batch), and
  the mark is the mart's own, so no row comes twice, and the mart's history is never read, as a
  MERGE reads it to find matches. A mart whose rows change (a job, a session, a dimension) merges
  on its unique key.
  The mart's newest timestamp is looked up first and written into the query as a literal: a
  scalar subquery is only known once the query runs, too late for Spark to push it into the
  silver scans (Parquet row-group skipping), so every run would read all of silver's history.
  The literal is the end of the newest's second (+ 999 ms): silver stamps whole seconds, a later
  run a later second (pipelines/lake/silver_stamp.py), so it selects the same rows as the newest
  itself, and Delta, which compares a file's max with 1 ms added (delta-io/delta#2462), skips
  every file whose rows the mart already holds instead of none.
#}
{% macro newer_than_mart(column='silver_ingest_ts', incremental=none, keyword='where') %}
    {%- if (is_incremental() if incremental is none else incremental) %}
    {{ keyword }} {{ column }} > {{ mart_watermark(column) }}
    {%- endif %}
{% endmacro %}

{% macro mart_watermark(column) %}
    {%- set floor = "timestamp '1900-01-01 00:00:00'" -%}
    {%- if not execute -%}
        {{ return(floor) }}
    {%- endif -%}
    {%- set found = run_query("select cast(max(" ~ column ~ ") as string) from " ~ this) -%}
    {%- set newest = found.columns[0].values()[0] if found and found.rows | length > 0 else none -%}
    {#- An empty mart (a report that found nothing yet) has no newest row: the last successful gold
        build read every silver row promoted before it started and kept none, so the rows since are
        the new ones (tests_since, which a refresh passes); without it, all of silver. As for any
        incremental mart, a changed definition (a new event type in its group, a column staging
        exposes for the first time) reaches older rows only with `--full-refresh`. -#}
    {%- set newest = newest or run_input('tests_since') -%}
    {#- Spark's timestamp text: 'yyyy-MM-dd HH:mm:ss' and any fraction; the second's end -#}
    {{ return("timestamp '" ~ newest[:19] ~ ".999'" if newest else floor) }}
{% endmacro %}

{#
  is_incremental(), and the mart already has every one of `columns`. A mart built by an earlier
  version of its model, without them, is recomputed from all of history once instead; the merge
  (on_schema_change='append_new_columns') adds the columns and updates every row.
#}
{% macro is_incremental_with(columns) %}
    {%- if not (execute and is_incremental()) -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set present = adapter.get_columns_in_relation(this) | map(attribute='name') | map('lower') | list -%}
    {%- for column in columns if column | lower not in present -%}
        {{ return(false) }}
    {%- endfor -%}
    {{ return(true) }}
{% endmacro %}
