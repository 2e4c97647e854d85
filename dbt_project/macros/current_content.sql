{#
  Facts about the entity histories that several reports read alike, said once.

  current_content(): the workbooks, data sources and flows the histories hold now, one row each:
  site_luid, content_type ('workbook', 'datasource', 'flow'), content_luid, content_name,
  project_luid, owner_luid (LUIDs lower-case).
#}
{% macro current_content() %}
    {%- for content_type, entity in [('workbook', 'workbooks'), ('datasource', 'datasources'), ('flow', 'flows')] %}
    select
        lower(site_luid) as site_luid,
        '{{ content_type }}' as content_type,
        lower(luid) as content_luid,
        name as content_name,
        lower(project_luid) as project_luid,
        lower(owner_luid) as owner_luid
    from ({{ snapshot_history(entity, [
        ['luid', 'string'], ['name', 'string'], ['project_luid', 'string'], ['owner_luid', 'string']
    ]) }}) as c
    where valid_to is null and luid is not null
    {{- "\n    union all" if not loop.last }}
    {%- endfor %}
{% endmacro %}

{#
  all_users_groups(current_only): each site's "All Users" group, the group every user of the site
  is in (Tableau names it so and it cannot be renamed): site_luid, group_luid (lower-case). With
  current_only, as the groups' history holds it now; else as any version held it.
#}
{% macro all_users_groups(current_only) %}
    select distinct
        lower(site_luid) as site_luid,
        lower(luid) as group_luid
    from ({{ snapshot_history('groups', [['luid', 'string'], ['name', 'string']]) }}) as g
    where name = 'All Users'{{ " and valid_to is null" if current_only }}
{% endmacro %}
