{#
  unique + not_null in one pass over the model: one query instead of two (each data test is a
  Spark job of its own, and a staging view's test is a scan of silver).
#}
{% test primary_key(model, column_name) %}
    select
        {{ column_name }},
        count(*) as copies
    from {{ model }}
    group by {{ column_name }}
    having count(*) > 1 or {{ column_name }} is null
{% endtest %}
