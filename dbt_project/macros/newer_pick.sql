{#
  The newer of two picks, each a struct(event_time, event_id[, <field>]): a delivery's `new` one,
  and the one a merged table keeps as plain columns (`old_at`, `old_event_id` and, with `field`,
  `old_value`; null when the table holds none). greatest() compares event_time, then event_id: a
  late event does not replace a newer value (int_content_mentions, int_group_mentions).
#}
{% macro newer_pick(new, old_at, old_event_id, field=none, old_value=none) -%}
    greatest({{ new }}, case
        when {{ old_value if field else old_event_id }} is not null
            then named_struct(
                'event_time', {{ old_at }},
                'event_id', {{ old_event_id }}
                {%- if field %},
                '{{ field }}', {{ old_value }}
                {%- endif %}
            )
    end)
{%- endmacro %}
