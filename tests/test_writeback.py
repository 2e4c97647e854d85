"""Write-Back silver on tiny inline frames (decoding, offsets, quarantine), the export readers and the generator."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

import pytest
from pyspark.testing import assertDataFrameEqual

from auditlake_devtools.sample.writeback import (
    DIRTY_KINDS,
    EXPORT_ONLY_KINDS,
    generate_historical_audit,
    insert_sql,
    write_export,
)
from pipelines.config.load import load_config
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from pipelines.writeback import COLUMNS, ROLE_FIELD
from pipelines.writeback.bronze import to_bronze_rows
from pipelines.writeback.silver import QUARANTINE_REASONS, promote_writeback, to_writeback_silver
from pipelines.writeback.source import SOURCE_COLUMNS, _cause, incremental_query, read_file_export
from tests.lake import variant_environ

ID1 = "1234a678-9b01-23c4-5d6e-7f89a0123b45"
ID2 = "aaaaaaaa-0000-4000-8000-000000000002"
OLD = "bbbbbbbb-0000-4000-8000-00000000000b"
NEW = "cccccccc-0000-4000-8000-00000000000c"
WIDGET = "dddddddd-0000-4000-8000-00000000000d"


def row(database: str = "metadata", parse_status: str = "ok", raw_record: str | None = None, **values) -> dict:
    """A source row like the readers return; the reference's example by default."""
    base = {
        "ID": ID1,
        "ACTIONDATE_LOCAL": "2019-01-21 14:24:47",
        "ACTIONDATE_UTC": "2019-01-21 12:24:47",
        "ACTIONNAME": "INSERT_DATA",
        "ACTIONPARAMS": None,
        "DATASET": "forecasts_modifications",
        "DATASETKEY": NEW,
        "SYSTEM": "Server",
        "USERNAME": "username",
        "IDWIDGETCONFIGURATION": WIDGET,
        "WRITEBACK_SITE": "default",
    } | values
    return base | {
        "database": database,
        "parse_status": parse_status,
        "raw_record": raw_record or json.dumps(base, sort_keys=True),
        "source": "inline",
    }


def silver(spark, rows: list[dict]):
    frame = spark.createDataFrame(
        [tuple(r[c] for c in SOURCE_COLUMNS) for r in rows], ", ".join(f"`{c}` string" for c in SOURCE_COLUMNS)
    )
    frames = to_writeback_silver(to_bronze_rows(frame, "run-t"))
    return {r["id"]: r.asDict() for r in frames.audit.collect()}, [r.asDict() for r in frames.quarantine.collect()]


def test_actions_are_decoded(spark):
    ids = [f"{i:08x}-0000-4000-8000-000000000000" for i in range(7)]
    audit, quarantine = silver(
        spark,
        [
            row(ID=ids[0], ACTIONNAME="INSERT_DATA", DATASETKEY=NEW),
            row(ID=ids[1], ACTIONNAME="DELETE_DATA", DATASETKEY=OLD),
            row(ID=ids[2], ACTIONNAME="EDIT_DATA", ACTIONPARAMS="editDataInsert", DATASETKEY=NEW),
            row(ID=ids[3], ACTIONNAME="EDIT_DATA", ACTIONPARAMS="editDataDelete", DATASETKEY=OLD),
            row(ID=ids[4], ACTIONNAME="EDIT_DATA", ACTIONPARAMS=OLD.upper(), DATASETKEY=NEW),
            row(ID=ids[5], ACTIONNAME="EDIT_DATA", ACTIONPARAMS="somethingElse"),
            row(
                ID=ids[6],
                ACTIONNAME="alter_dataset",
                ACTIONPARAMS="renameColumn; dropColumn;;addColumn",
                DATASETKEY=None,
            ),
        ],
    )
    assert quarantine == []
    kinds = {i: (a["action_name"], a["edit_kind"]) for i, a in audit.items()}
    assert [kinds[i] for i in ids] == [
        ("INSERT_DATA", "submitted_entry"),
        ("DELETE_DATA", "deleted_entry"),
        ("EDIT_DATA", "inserted_line"),
        ("EDIT_DATA", "deleted_line"),
        ("EDIT_DATA", "replaced_line"),
        ("EDIT_DATA", "edited_other"),
        ("ALTER_DATASET", "dataset_change"),
    ]
    replaced = audit[ids[4]]
    assert (replaced["replaced_line_key"], replaced["new_line_key"]) == (OLD, NEW)  # UUIDs lower-cased
    assert audit[ids[2]]["replaced_line_key"] is None and audit[ids[2]]["new_line_key"] is None
    assert audit[ids[6]]["dataset_operations"] == ["renameColumn", "dropColumn", "addColumn"]
    assert audit[ids[0]]["dataset_operations"] is None
    assert audit[ids[5]]["action_params"] == "somethingElse"


def test_times_and_offsets(spark):
    audit, _ = silver(
        spark,
        [
            row(ID=ID1),  # the reference's example: local two hours ahead
            row(ID=ID2, ACTIONDATE_UTC="2026-03-29T01:30:00Z", ACTIONDATE_LOCAL="2026-03-29 04:30:00.4"),
            row(ID=OLD, ACTIONDATE_UTC="2026-01-10 15:00:00", ACTIONDATE_LOCAL="2026-01-10 10:00:01"),  # New York
            row(ID=NEW, ACTIONDATE_LOCAL=None),
        ],
    )
    ref = audit[ID1.lower()]
    assert ref["action_date_utc"] == datetime(2019, 1, 21, 12, 24, 47)
    assert ref["action_date_local"] == datetime(2019, 1, 21, 14, 24, 47)  # wall clock, as stored
    assert ref["utc_offset_minutes"] == 120 and str(ref["action_date"]) == "2019-01-21"
    assert audit[ID2]["utc_offset_minutes"] == 180  # after the spring DST change; fraction rounded away
    assert audit[OLD]["utc_offset_minutes"] == -300  # one second of skew between the two clocks
    assert audit[NEW]["action_date_local"] is None and audit[NEW]["utc_offset_minutes"] is None


def test_impossible_rows_are_quarantined_with_reasons(spark):
    ids = [f"{i:08x}-0000-4000-8000-0000000000ff" for i in range(12)]
    audit, quarantine = silver(
        spark,
        [
            row(ID=None),
            row(ID="   "),
            row(ID="row-17"),
            row(ID=ids[0], ACTIONDATE_UTC=None),
            row(ID=ids[1], ACTIONDATE_UTC="2026-02-30 25:61:00"),
            row(ID=ids[2], ACTIONDATE_LOCAL="yesterday"),
            row(ID=ids[3], ACTIONDATE_LOCAL="2019-01-22 12:24:47"),  # a day away from UTC: no such zone
            row(ID=ids[4], ACTIONNAME="PURGE_DATA"),
            row(ID=ids[5], ACTIONNAME=None),
            row(ID=ids[6], database="archive"),
            row(ID=None, parse_status="malformed", raw_record="{not json"),
            row(ID=ids[7]),  # the one good row
        ],
    )
    assert list(audit) == [ids[7]]
    reasons = sorted((q["reason"], q["raw_id"] or "") for q in quarantine)
    assert reasons == sorted(
        [
            ("null_id", ""),
            ("null_id", "   "),
            ("bad_id", "row-17"),
            ("bad_date", ids[0]),
            ("bad_date", ids[1]),
            ("bad_date", ids[2]),
            ("bad_date", ids[3]),
            ("unknown_action", ids[4]),
            ("unknown_action", ids[5]),
            ("unknown_database", ids[6]),
            ("malformed_record", ""),
        ]
    )
    assert {q["reason"] for q in quarantine} == set(QUARANTINE_REASONS)
    details = {q["raw_id"]: q["detail"] for q in quarantine}
    assert details[ids[1]] == "ACTIONDATE_UTC is not a timestamp: 2026-02-30 25:61:00"
    assert details[ids[3]] == "ACTIONDATE_LOCAL is 1440 minutes from ACTIONDATE_UTC"
    assert details[ids[4]] == "ACTIONNAME not documented: PURGE_DATA"  # a new action shows up by name
    malformed = next(q for q in quarantine if q["reason"] == "malformed_record")
    assert malformed["raw_record"] == "{not json"


def test_one_row_per_id_with_the_databases_it_was_seen_in(spark):
    audit, _ = silver(
        spark,
        [
            row("metadata", ID=ID1),
            row("persistence", ID=ID1.upper()),  # the same action, its ID spelled in capitals
            row("persistence", ID=ID2, USERNAME="from-persistence"),
            row("metadata", ID=OLD, ACTIONNAME="ALTER_DATASET", ACTIONPARAMS="addColumn"),
            row("persistence", ID=NEW, USERNAME="p"),
            row("metadata", ID=NEW, USERNAME="m"),  # the copies disagree: metadata's wins, flagged
            row("metadata", ID=NEW, USERNAME="m"),  # the same row twice in one read lands once
        ],
    )
    assert len(audit) == 4
    flags = {i: (a["seen_in_metadata"], a["seen_in_persistence"], a["copies_differ"]) for i, a in audit.items()}
    assert flags == {
        ID1.lower(): (True, True, False),
        ID2: (False, True, False),
        OLD: (True, False, False),
        NEW: (True, True, True),
    }
    assert audit[NEW]["username"] == "m" and audit[NEW]["database"] == "metadata"
    assert audit[ID2]["username"] == "from-persistence"


def test_malformed_uuids_are_rescued_not_lost(spark):
    audit, quarantine = silver(spark, [row(DATASETKEY="line-9", IDWIDGETCONFIGURATION="{w}")])
    assert quarantine == []
    a = audit[ID1.lower()]
    assert a["dataset_key"] is None and a["widget_config_id"] is None
    assert json.loads(a["_rescued_data"]) == {"DATASETKEY": "line-9", "IDWIDGETCONFIGURATION": "{w}"}


def test_null_id_rows_are_keyed_by_content_in_bronze(spark):
    frame = spark.createDataFrame(
        [tuple(r[c] for c in SOURCE_COLUMNS) for r in [row(ID=None), row(ID=None), row(ID=None, USERNAME="x")]],
        ", ".join(f"`{c}` string" for c in SOURCE_COLUMNS),
    )
    keys = [r["row_key"] for r in to_bronze_rows(frame, "r").collect()]
    assert len(keys) == 2 and all(k.startswith("sha256:") for k in keys)


def test_ndjson_and_csv_exports_read_alike(spark, tmp_path):
    rows = generate_historical_audit(40, seed=3, dirty=True)
    ndjson = read_file_export(spark, write_export(tmp_path / "a.ndjson", rows), "metadata")
    csv = read_file_export(spark, write_export(tmp_path / "a.csv", rows), "metadata")
    # the CSV reader cannot tell an empty field from a missing one: both are NULL
    assertDataFrameEqual(csv.select(*COLUMNS, "database"), ndjson.select(*COLUMNS, "database"))
    assert ndjson.count() == len(rows)
    first = json.loads((tmp_path / "a.ndjson").read_text().splitlines()[0])
    assert list(first) == [*COLUMNS, ROLE_FIELD]


def test_ndjson_reader_matches_names_in_any_case_and_keeps_bad_lines(spark, tmp_path):
    path = tmp_path / "lower.ndjson"
    record = {c.lower(): v for c, v in row().items() if c in COLUMNS}
    path.write_text(json.dumps(record) + "\n\n" + "not json\n" + json.dumps({"ID": ID2, "SYSTEM": 7}) + "\n")
    got = {r["ID"]: r.asDict() for r in read_file_export(spark, path, "persistence").collect()}
    assert got[ID1]["ACTIONDATE_UTC"] == "2019-01-21 12:24:47" and got[ID1]["database"] == "persistence"
    assert got[ID2]["SYSTEM"] == "7"  # a number keeps its text
    assert got[None]["parse_status"] == "malformed" and got[None]["raw_record"] == "not json"
    assert len(got) == 3  # the blank line is not a record


def test_generator_is_deterministic_and_coherent():
    rows = generate_historical_audit(200, seed=5, dirty=True)
    assert rows == generate_historical_audit(200, seed=5, dirty=True)
    clean = [r for r in rows if r.dirty is None]
    by_db = Counter(r.database for r in clean)
    metadata_ids = {r.values["ID"] for r in clean if r.database == "metadata"}
    persistence = [r for r in clean if r.database == "persistence"]
    # persistence: data changes only, each also in metadata; metadata: those plus dataset changes
    assert {r.values["ID"] for r in persistence} <= metadata_ids
    assert all(r.values["ACTIONNAME"] != "ALTER_DATASET" for r in persistence)
    assert by_db["metadata"] - by_db["persistence"] == sum(r.values["ACTIONNAME"] == "ALTER_DATASET" for r in clean)
    # a line is replaced or deleted only after it was inserted
    seen: set[str] = set()
    for r in (r for r in clean if r.database == "metadata"):
        v = r.values
        if v["ACTIONNAME"] == "EDIT_DATA" and v["ACTIONPARAMS"] not in ("editDataInsert", "editDataDelete"):
            assert v["ACTIONPARAMS"] in seen
        if v["ACTIONNAME"] == "DELETE_DATA":
            assert v["DATASETKEY"] in seen
        if v["DATASETKEY"]:
            seen.add(v["DATASETKEY"])
    assert {r.values["SYSTEM"] for r in clean} == {"Server", "Desktop"}
    assert sorted(r.dirty for r in rows if r.dirty) == sorted(DIRTY_KINDS)
    assert set(EXPORT_ONLY_KINDS) < set(DIRTY_KINDS)


def test_incremental_query_and_sql_quoting():
    actual = {c: c.lower() for c in COLUMNS if c != "IDWIDGETCONFIGURATION"}
    q = incremental_query("historical_audit", actual, datetime(2026, 4, 1, 12, 0))
    assert 'CAST("id" AS text) AS "ID"' in q and 'CAST(NULL AS text) AS "IDWIDGETCONFIGURATION"' in q
    assert q.endswith(""" WHERE "actiondate_utc" >= '2026-04-01 12:00:00.000000' OR "actiondate_utc" IS NULL""")
    assert "WHERE" not in incremental_query("historical_audit", actual, None)
    assert "'O''Brien'" in insert_sql([{"ID": ID1, "USERNAME": "O'Brien"}])


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "An error occurred while calling o1.load.\n: org.postgresql.util.PSQLException: FATAL: password "
            'authentication failed for user "r"\n\tat org.postgresql...',
            'FATAL: password authentication failed for user "r"',
        ),
        ("java.net.ConnectException: Connection refused\n\tat ...", "Connection refused"),
    ],
)
def test_driver_errors_become_one_line(text, expected):
    assert _cause(RuntimeError(text)) == expected


def test_a_refresh_with_the_shipped_defaults_lands_no_write_back_row(spark, lake_dir):
    """A new lake on the shipped configuration (conf/base.yaml, the default environment) and an empty
    landing folder: no Write-Back source is read, so no row reaches bronze, nor silver, which types only
    what bronze holds (bronze is append-only: a sample's row landed there would stay in the audit trail).
    Bronze's run, then silver's Write-Back step alone: the Activity Log's empty promotion and its event
    views cost most of a silver run and say nothing about Write-Back."""
    cfg = load_config("local", environ=variant_environ(lake_dir, "shipped"))
    cfg.path("paths.landing_dir").mkdir(parents=True)
    report = run_refresh(spark, cfg, ["bronze"], log=lambda _m: None)
    landing = report.writeback["bronze"]
    assert (landing.skipped_reason, landing.rows_landed) == ("writeback.source is none", 0)
    assert promote_writeback(spark, cfg, report.run_id, log=lambda _m: None).bronze_rows == 0
    t = tables(cfg)
    for table in (t.writeback_raw, t.writeback_audit, t.writeback_quarantine):
        assert not spark.catalog.tableExists(table) or spark.table(table).isEmpty(), table
