{#
  The one way a key is made from its parts: SHA-256 of the parts joined with '|' (each part a SQL
  expression; a null part is left out, as concat_ws does). Stable across rebuilds, so a finding
  keeps its id and `auditlake alerts` does not send it again.
#}
{% macro hash_key(parts) -%}
    sha2(concat_ws('|', {{ parts | join(', ') }}), 256)
{%- endmacro %}

{# A detection's id: its kind, then what identifies the finding (rpt_detections, auditlake alerts). #}
{% macro detection_id(kind, parts) -%}
    {{ hash_key(["'" ~ kind ~ "'"] + parts) }}
{%- endmacro %}
