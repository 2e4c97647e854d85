{#
  Incremental marts read only the silver rows promoted since their last run: silver is
  append-only and every batch stamps silver_ingest_ts, so rows newer than the mart's newest are
  exactly the new ones. The merge on the mart's unique key keeps a re-delivered row single.
#}
{% macro newer_than_mart(column='silver_ingest_ts') %}
    {%- if is_incremental() %}
    where {{ column }} > (select coalesce(max({{ column }}), timestamp '1900-01-01') from {{ this }})
    {%- endif %}
{% endmacro %}
