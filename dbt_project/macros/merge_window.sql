{#
  dbt-spark's merge, with one more condition on the target for a model configured with
  `merge_window='<column>'`: DBT_INTERNAL_DEST.<column> >= the newest-rows' least <column>, given as
  a literal so that Delta skips the target's files that cannot hold a matched row (a MERGE reads the
  whole target to find its matches: at years of history, most of a windowed mart's merge). It is
  right only where every row the source holds has <column> at most that of the target row it
  replaces: a job's first_event_at or a session's signed_in_at, recomputed from a window that holds
  all of the job's or session's events, is never later than what the mart held. A source row with
  no value turns the condition off. The source (the model's temporary view) is cached first, so
  that the lookup and the merge compute it once; the marts' post-hook `uncache_merge_source()`
  (dbt_project.yml) drops that cache (left behind, it holds a plan over silver's tables: a later write to them in the
  same process re-analyses it, and fails once a table was made again).
#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- set column = config.get('merge_window') -%}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- if column and execute -%}
        {%- do run_query("cache table " ~ source) -%}
        {%- set found = run_query("select cast(min(" ~ column ~ ") as string), count_if(" ~ column
            ~ " is null) from " ~ source) -%}
        {%- set least, nulls = found.rows[0][0], found.rows[0][1] -%}
        {%- if nulls == 0 -%}
            {#- a target row with no value (a column the merge is adding) may still match -#}
            {%- do predicates.append("(DBT_INTERNAL_DEST." ~ column ~ " >= timestamp '"
                ~ (least or "9999-12-31 00:00:00") ~ "' or DBT_INTERNAL_DEST." ~ column ~ " is null)") -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(dbt.spark__get_merge_sql(target, source, unique_key, dest_columns, predicates)) }}
{% endmacro %}

{# Every mart's post-hook: for a model with merge_window, the cached source of its merge uncached
   (nothing for the others: dbt skips an empty hook). #}
{% macro uncache_merge_source() -%}
    {%- if config.get('merge_window') -%}
        uncache table if exists {{ this.identifier }}__dbt_tmp
    {%- endif -%}
{%- endmacro %}
