{#
  A delivery's cost should not grow with the years of history under it. A mart that folds several
  events into one row (a job, a session) recomputes only the rows with new events, and reads silver
  only from the earliest time such a row can start: window_start runs `sql` (one timestamp) before
  the model's query and gives it as a literal, so Spark prunes silver's older event_date partitions
  when it plans the scan (as mart_watermark does for silver_ingest_ts). No row to recompute (NULL):
  a time after all events, so nothing is read.
#}
{% macro window_start(sql) %}
    {%- set nothing = "9999-12-31 00:00:00" -%}
    {%- if not execute -%}
        {{ return(nothing) }}
    {%- endif -%}
    {%- set found = run_query("select cast((" ~ sql ~ ") as string)") -%}
    {%- set start = found.columns[0].values()[0] if found and found.rows | length > 0 else none -%}
    {{ return(start or nothing) }}
{% endmacro %}

{# The events at or after `start` (a window_start), as a filter on event_date (partition pruning) and event_time. #}
{% macro in_window(start) -%}
    event_date >= date '{{ start[:10] }}' and event_time >= timestamp '{{ start }}'
{%- endmacro %}
