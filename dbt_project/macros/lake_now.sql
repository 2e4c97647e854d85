{#
  "Now" for a report: the newest site event in the lakehouse, so a report answers the same way
  whenever it is rebuilt on the same data. Read from the newest event_date only: silver is
  partitioned by event_date (to_date(event_time)), Delta answers max(event_date) from its log, and
  Spark prunes the scan to that partition when the query runs; a max over every event's time read
  all of history on every build.
#}
{% macro lake_now() -%}
    select max(event_time) as as_of_time
    from {{ ref('stg_site__events') }}
    where event_date = (select max(event_date) from {{ ref('stg_site__events') }})
{%- endmacro %}
