{#
  Every capability Tableau's REST API names per item type (project, workbook, view, datasource,
  flow), as a select of (item_type, capability): what an administrator or an owner holds on an item whatever its
  rules say (rpt_effective_access). A macro so that a unit test can narrow it to a few.
#}
{% macro tableau_capabilities() %}
    select * from values
    ('project', 'Read'), ('project', 'Write'), ('project', 'ProjectLeader'),
    ('workbook', 'Read'), ('workbook', 'Filter'), ('workbook', 'ViewComments'), ('workbook', 'AddComment'),
    ('workbook', 'ExportImage'), ('workbook', 'ExportData'), ('workbook', 'ShareView'),
    ('workbook', 'ViewUnderlyingData'), ('workbook', 'WebAuthoring'), ('workbook', 'RunExplainData'),
    ('workbook', 'ExportXml'), ('workbook', 'Write'), ('workbook', 'CreateRefreshMetrics'),
    ('workbook', 'ChangeHierarchy'), ('workbook', 'Delete'), ('workbook', 'ChangePermissions'),
    ('view', 'Read'), ('view', 'Filter'), ('view', 'ViewComments'), ('view', 'AddComment'),
    ('view', 'ExportImage'), ('view', 'ExportData'), ('view', 'ShareView'), ('view', 'ViewUnderlyingData'),
    ('view', 'WebAuthoring'), ('view', 'Delete'), ('view', 'ChangePermissions'),
    ('datasource', 'Read'), ('datasource', 'Connect'), ('datasource', 'ExportXml'), ('datasource', 'Write'),
    ('datasource', 'SaveAs'), ('datasource', 'ChangeHierarchy'), ('datasource', 'Delete'),
    ('datasource', 'ChangePermissions'),
    ('flow', 'Read'), ('flow', 'ExportXml'), ('flow', 'Execute'), ('flow', 'WebAuthoringForFlows'),
    ('flow', 'Write'), ('flow', 'ChangeHierarchy'), ('flow', 'Delete'), ('flow', 'ChangePermissions')
    as capabilities (item_type, capability)
{% endmacro %}
