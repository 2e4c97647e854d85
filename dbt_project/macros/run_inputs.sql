{#
  What a refresh's build passes that changes every build (pipelines/gold/run.py run_inputs), read
  from the environment while a node runs: as dbt vars they would make dbt parse the whole project
  again on every build. Only while executing: read at parse time, dbt would record it and parse
  again when it changes. `tests_since` given as a var (`--vars`) wins; without either, none.
#}
{% macro run_input(name) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set given = var(name, none) -%}
    {%- if given is not none -%}
        {{ return(given) }}
    {%- endif -%}
    {{ return(fromjson(env_var('AUDITLAKE_DBT_RUN', '{}')).get(name)) }}
{% endmacro %}
