{# The key of a user's site-role version in dim_users (and of an escalation found in it). #}
{% macro user_version_key(site_luid, user_luid, version_number) -%}
    {{ hash_key([site_luid, user_luid, 'cast(' ~ version_number ~ ' as string)']) }}
{%- endmacro %}
