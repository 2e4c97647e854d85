"""Run Great Expectations checkpoints on the frames a batch is about to promote, and gate it.

A checkpoint is named for the boundary it guards and the frame it reads
(``bronze_to_silver.bronze_rows``, ``bronze_to_silver.silver_events_site``, ...). Every
expectation result becomes one row of ``ops.dq_results``. A failed ``critical`` expectation of
kind ``batch`` (and of kind ``share`` on a batch of ``quality.thresholds.min_rows_for_shares``
rows or more) raises ``QualityGateError`` naming the suite, the expectation and a sample of the
offending values, which stops the promotion of that batch (nothing of it is written, and the
earlier layer stays as it is). A ``share`` judged on fewer rows is logged, not stopping. Rows a
``row`` expectation rejects were set aside before the gate (``pipelines.quality.suites.row_rules``):
one that still fails here stops, as a rule and its condition disagreeing is the lake's fault.
Warnings are logged and recorded.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.config.project import GX_TEMPLATE_DIR
from pipelines.errors import CheckFailed
from pipelines.lake.delta_tables import ensure_schema
from pipelines.lake.state_files import write_json_whole
from pipelines.lake.table_names import tables
from pipelines.runtime.spark_session import append_rows

if TYPE_CHECKING:  # Great Expectations loads when a frame is first checked (its import alone takes seconds)
    import great_expectations as gx

    from pipelines.quality.suites import SuiteSpec

# One GX datasource per engine: small frames are checked in pandas, large ones in Spark.
# The committed GX configuration and Data Docs styles; each lake's context is a copy under its data.
IGNORED_IN_TEMPLATE = ("uncommitted", "expectations", "checkpoints", "validation_definitions")
_DATASOURCES = {"spark": "auditlake_spark", "pandas": "auditlake_pandas"}
_RESULT_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": 5}
# What a checkpoint asks of each engine. GX's Spark engine fetches an expectation's sample of unexpected
# values with a query of its own (a filter and a limit: two or three jobs over the whole frame, even
# when nothing is unexpected), so a large frame is checked for its counts only, and checked again for
# the samples only when some value was unexpected (rare). A limit of 0 costs no job: Spark plans it as
# an empty relation.
_RESULT_FORMATS = {"pandas": _RESULT_FORMAT, "spark": {**_RESULT_FORMAT, "partial_unexpected_count": 0}}
# Each stored checkpoint's digest (what it was made from), in the context's uncommitted folder
SUITE_DIGESTS = "auditlake-suite-digests.json"
# Columns that identify a row for a human reading a failure.
_ROW_CONTEXT = ("event_id", "event_type", "event_time", "bronze_id", "source_file", "raw_line")
DQ_RESULTS_SCHEMA = (
    "run_id string, checkpoint string, suite string, expectation_key string, expectation_type string, "
    "column string, severity string, success boolean, element_count long, unexpected_count long, "
    "unexpected_percent double, observed_value string, sample string, validated_at timestamp"
)


class QualityGateError(CheckFailed):
    """A critical expectation failed: the batch is not promoted. ``stopped_by``: the checkpoint and the
    keys of the expectations that stopped it."""

    def __init__(self, message: str, stopped_by: str = ""):
        super().__init__(message)
        self.stopped_by = stopped_by


@dataclass
class ExpectationOutcome:
    checkpoint: str
    suite: str
    key: str
    expectation_type: str
    column: str | None
    severity: str
    kind: str
    success: bool
    element_count: int | None
    unexpected_count: int | None
    unexpected_percent: float | None
    observed_value: str | None
    sample: list
    sample_rows: list[dict] = field(default_factory=list)

    def describe(self) -> str:
        what = f"{self.expectation_type}({self.column})" if self.column else self.expectation_type
        figures = (
            f"{self.unexpected_count} of {self.element_count} rows unexpected"
            if self.unexpected_count is not None
            else f"observed {self.observed_value}"
        )
        rows = f"; sample of offending rows: {json.dumps(self.sample_rows, default=str)}" if self.sample_rows else ""
        return (
            f"suite {self.suite}, expectation {self.key} [{what}]: {figures}; "
            f"sample of offending values: {json.dumps(self.sample, default=str)}{rows}"
        )


def _offending_rows(frame: DataFrame | pd.DataFrame, column: str, values: list, limit: int = 3) -> list[dict]:
    """A few whole rows behind the offending values (identifying columns only, long text cut)."""
    cols = [c for c in dict.fromkeys((column, *_ROW_CONTEXT)) if c in frame.columns]
    known = [v for v in values if v is not None]
    if isinstance(frame, pd.DataFrame):
        hit = frame[column].isin(known) | (frame[column].isna() if None in values else False)
        rows = [{k: _plain(v) for k, v in r.items()} for r in frame.loc[hit, cols].head(limit).to_dict("records")]
    else:
        cond = F.col(column).isin(known)
        if any(v is None for v in values):
            cond = cond | F.col(column).isNull()
        rows = [r.asDict() for r in frame.where(cond).select(*cols).limit(limit).collect()]
    return [{k: (str(v)[:120] if v is not None else None) for k, v in r.items()} for r in rows]


def _plain(value):
    """A value from GX's pandas engine as plain Python (numpy scalars, pandas timestamps, NaN/NaT -> None),
    as the Spark engine gives it: samples go back into Spark filters and ops.dq_results."""
    if isinstance(value, (list, tuple, dict)):
        return value
    if value is None or pd.isna(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    return value.item() if hasattr(value, "item") else value


def context_dir(cfg: Config) -> Path:
    """The GX file context under the data (``quality.context_dir``), made from the committed
    template (``expectations/gx``: its configuration and Data Docs styles) when missing."""
    root = cfg.quality_dir
    if not (root / "gx" / "great_expectations.yml").is_file():
        shutil.copytree(
            GX_TEMPLATE_DIR, root / "gx", dirs_exist_ok=True, ignore=shutil.ignore_patterns(*IGNORED_IN_TEMPLATE)
        )
    return root


def data_docs_index(cfg: Config) -> Path:
    return context_dir(cfg) / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"


class QualityGate:
    """One GX file context per process, made when a frame is first checked (a refresh with nothing
    new loads no GX); validates frames and records every outcome."""

    def __init__(self, spark: SparkSession, cfg: Config, log=print):
        self.spark, self.cfg, self.log = spark, cfg, log
        self.enabled = bool(cfg.settings.quality.enabled)
        self.pandas_max_rows = int(cfg.settings.quality.pandas_max_rows)
        self.min_rows_for_shares = int(cfg.settings.quality.thresholds.min_rows_for_shares)
        self._context = None
        self.datasources = {}
        self.outcomes: list[ExpectationOutcome] = []
        self._unrecorded: list[tuple] = []  # rows for ops.dq_results: `record` appends them
        self.results: list = []  # the validation results this gate stored (ids: their Data Docs pages)

    @property
    def context(self):
        if self._context is None:
            import great_expectations as gx
            from great_expectations.data_context.types.base import ProgressBarsConfig

            logging.getLogger("great_expectations").setLevel(logging.ERROR)
            self._context = gx.get_context(mode="file", project_root_dir=str(context_dir(self.cfg)))
            self._context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
            for engine, ds_name in _DATASOURCES.items():
                try:
                    self.datasources[engine] = self._context.data_sources.get(ds_name)
                except (KeyError, ValueError, LookupError):
                    sources = self._context.data_sources
                    add = sources.add_spark if engine == "spark" else sources.add_pandas
                    self.datasources[engine] = add(name=ds_name)
        return self._context

    @property
    def checked(self) -> bool:
        """Whether this gate validated anything (and so has a context and results to show)."""
        return self._context is not None

    def _checkpoint(self, name: str, spec: SuiteSpec, engine: str) -> gx.Checkpoint:
        """The stored checkpoint when its suite and engine are what the last refresh stored (the
        digests file in the context), else the suite, its validation definition and the checkpoint
        stored anew: writing them is GX's JSON files and its objects built again, for every batch of
        every hourly refresh."""
        import great_expectations as gx
        from great_expectations.exceptions import DataContextError

        digest = _suite_digest(spec, engine, _RESULT_FORMATS[engine], gx.__version__)
        stored = self._stored_digests()
        if stored.get(name) == digest:
            try:
                return self.context.checkpoints.get(name)
            except (DataContextError, LookupError, ValueError):  # gone from the store: stored again below
                pass
        checkpoint = self._store_checkpoint(name, spec, engine)
        stored[name] = digest
        write_json_whole(self._digests_path(), stored)
        return checkpoint

    def _digests_path(self) -> Path:
        return context_dir(self.cfg) / "gx" / "uncommitted" / SUITE_DIGESTS

    def _stored_digests(self) -> dict[str, str]:
        try:
            return json.loads(self._digests_path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _store_checkpoint(self, name: str, spec: SuiteSpec, engine: str) -> gx.Checkpoint:
        import great_expectations as gx

        from pipelines.quality.suites import build_suite

        suite = self.context.suites.add_or_update(build_suite(spec))
        datasource = self.datasources[engine]
        try:
            asset = datasource.get_asset(name)
        except LookupError:
            asset = datasource.add_dataframe_asset(name=name)
        try:
            batch_def = asset.get_batch_definition("whole")
        except KeyError:
            batch_def = asset.add_batch_definition_whole_dataframe("whole")
        vd = self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=batch_def, suite=suite)
        )
        return self.context.checkpoints.add_or_update(
            gx.Checkpoint(name=name, validation_definitions=[vd], result_format=_RESULT_FORMATS[engine])
        )

    def fetches_whole(self, rows: int) -> bool:
        """Whether a frame of ``rows`` rows is checked on GX's pandas engine, fetched whole into this process."""
        return self.enabled and 0 < self.pandas_max_rows and rows <= self.pandas_max_rows

    def validate(
        self,
        boundary: str,
        spec: SuiteSpec,
        frame: DataFrame | pd.DataFrame,
        run_id: str,
        rows: int | None = None,
        batch_rows: int | None = None,
        waive_shares: bool = False,
        set_aside: dict[str, int] | None = None,
    ) -> list[ExpectationOutcome]:
        """Validate ``frame`` (a Spark frame, or a pandas one of figures counted already) against ``spec``;
        record outcomes; raise if a critical one stops the batch. ``rows``: the frame's row count when the
        caller knows it (a frame known too large for the pandas engine is not fetched to find that out).
        ``batch_rows``: the rows of the batch a share is judged on (default: the frame's); ``waive_shares``:
        an operator released the batch, so no share stops it; ``set_aside``: rows the suite's row rules
        set aside before the gate, by key, recorded with the outcomes."""
        if not self.enabled:
            return []
        name = f"{boundary}.{spec.name}"
        # Only the few columns the suite names are checked (the whole frame is read again only for
        # the rows behind a failure).
        wanted = {e.column for e in spec.expectations if getattr(e, "column", None)}
        judge = _Judging(batch_rows, waive_shares, set_aside or {})
        if isinstance(frame, pd.DataFrame):
            narrow_pandas = frame[[c for c in frame.columns if c in wanted]]
            return self._validate(name, spec, frame, "pandas", narrow_pandas, run_id, judge)
        narrow = frame.select(*[c for c in frame.columns if c in wanted])
        # GX's Spark engine runs a job or two per expectation, a fixed price per suite even for a
        # handful of rows. A frame that fits in quality.pandas_max_rows is fetched once (Arrow) and
        # checked by GX's pandas engine in this process instead.
        if self.pandas_max_rows > 0 and (rows is None or self.fetches_whole(rows)):
            small = narrow.limit(self.pandas_max_rows + 1).toPandas()
            if self.fetches_whole(len(small)):
                return self._validate(name, spec, frame, "pandas", small, run_id, judge)
        # The Spark engine scans the frame once per metric. Materialised as a local checkpoint (rows kept
        # on the executors, memory then disk), GX's dozen queries plan over a leaf, not over the batch's
        # typing, which a cached frame's plan still holds and Spark matches against its cache at every
        # query (docs/performance.md, "Silver's typing and gate"). The frame is the suite's few columns
        # only.
        return self._validate(name, spec, frame, "spark", narrow.localCheckpoint(), run_id, judge)

    def _validate(
        self,
        name: str,
        spec: SuiteSpec,
        frame: DataFrame | pd.DataFrame,
        engine: str,
        data,
        run_id: str,
        judge: _Judging,
    ) -> list[ExpectationOutcome]:
        checkpoint = self._checkpoint(name, spec, engine)
        result = checkpoint.run(batch_parameters={"dataframe": data})
        self.results += list(result.run_results)
        suite_results = list(result.run_results.values())
        unexpected = any((r.result or {}).get("unexpected_count") for s in suite_results for r in s.results)
        if engine == "spark" and unexpected:
            # counted without samples (_RESULT_FORMATS): run again for them, stored as a result of its own
            key, sampled = _run_with_samples(checkpoint, data)
            self.results.append(key)
            suite_results = [sampled]
        outcomes = [_outcome(name, spec, r) for suite_result in suite_results for r in suite_result.results]
        for o in outcomes:
            if not o.success and o.column and o.sample:
                o.sample_rows = _offending_rows(frame, o.column, o.sample)
        _note_set_aside(outcomes, judge.set_aside)
        self._queue(outcomes, run_id)
        self.outcomes += outcomes
        failed = []
        for o in outcomes:
            if o.success:
                continue
            if o.severity == "warning":
                self.log(f"quality warning: {o.describe()}")
            elif o.kind == "share" and judge.waive_shares:
                self.log(f"quality: released by the operator, not stopping: {o.describe()}")
            elif o.kind == "share" and (rows := judge.batch_rows or o.element_count or 0) < self.min_rows_for_shares:
                self.log(
                    f"quality: a share judged on {rows} rows (fewer than quality.thresholds.min_rows_for_shares, "
                    f"{self.min_rows_for_shares}), not stopping: {o.describe()}"
                )
            else:
                failed.append(o)
        if failed:
            raise QualityGateError(
                f"quality gate {name} stopped the promotion: " + " | ".join(o.describe() for o in failed),
                stopped_by=f"{name} " + ", ".join(dict.fromkeys(o.key for o in failed)),
            )
        return outcomes

    def _queue(self, outcomes: list[ExpectationOutcome], run_id: str) -> None:
        now = datetime.now(UTC)  # aware: Spark reads a naive time in this process's local zone
        self._unrecorded += [
            (
                run_id,
                o.checkpoint,
                o.suite,
                o.key,
                o.expectation_type,
                o.column,
                o.severity,
                o.success,
                o.element_count,
                o.unexpected_count,
                None if o.unexpected_percent is None else float(o.unexpected_percent),
                o.observed_value,
                json.dumps({"values": o.sample, "rows": o.sample_rows}, default=str),
                now,
            )
            for o in outcomes
        ]

    def record(self) -> None:
        """Append the outcomes checked since the last call to ops.dq_results: one commit for the
        suites a batch passes before it is written (a Delta append per suite cost more than the check)."""
        if not self._unrecorded:
            return
        table = tables(self.cfg).dq_results
        ensure_schema(self.spark, table.split(".")[0])
        append_rows(self.spark, self.cfg, self._unrecorded, DQ_RESULTS_SCHEMA, table)
        self._unrecorded = []

    def finish(self) -> Path:
        """After a run's last check (also when one raised): what is not recorded yet, then the Data Docs."""
        self.record()
        return self.build_data_docs(only_new=True)

    def build_data_docs(self, only_new: bool = False) -> Path:
        """The Data Docs site, after each suite's validation results past its newest
        ``quality.data_docs_runs`` are removed. GX renders a page per stored result and reads every
        one for the index: kept forever, an hourly refresh's site would take longer every run.
        ``only_new``: the pages of this gate's results and of their suites, and the index; the other
        pages are there already."""
        from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

        self._prune(int(self.cfg.settings.quality.data_docs_runs))
        if only_new and self.results:
            suites = {r.expectation_suite_identifier.name for r in self.results}
            pages = [*self.results, *(ExpectationSuiteIdentifier(name=n) for n in sorted(suites))]
            self.context.build_data_docs(resource_identifiers=pages)
        else:
            self.context.build_data_docs()
        return data_docs_index(self.cfg)

    def _prune(self, keep: int) -> None:
        """Remove each suite's validation results (and their pages) past its newest ``keep``."""
        store = self.context.validation_results_store
        by_suite: dict[str, list] = {}
        for key in store.list_keys():
            by_suite.setdefault(key.expectation_suite_identifier.name, []).append(key)
        results = context_dir(self.cfg) / "gx" / "uncommitted" / "validations"  # great_expectations.yml's
        site = data_docs_index(self.cfg).parent / "validations"
        for keys in by_suite.values():
            for key in sorted(keys, key=lambda k: k.run_id.run_time, reverse=True)[keep:]:
                store.remove_key(key)
                suite, run_name, run_time, batch = key.to_tuple()
                _remove_empty(results / suite / run_name / run_time, results)
                page = site / suite / run_name / run_time / f"{batch}.html"
                page.unlink(missing_ok=True)
                _remove_empty(page.parent, site)


@dataclass(frozen=True)
class _Judging:
    """How one validation's failures are judged (``QualityGate.validate``'s arguments)."""

    batch_rows: int | None
    waive_shares: bool
    set_aside: dict[str, int]


def _note_set_aside(outcomes: list[ExpectationOutcome], set_aside: dict[str, int]) -> None:
    """The rows each row rule set aside before the gate, on the first outcome of its key: the gate saw
    the batch without them, so its figures alone would not show them."""
    for key, n in set_aside.items():
        first = next((o for o in outcomes if o.key == key), None)
        if first is not None and n:
            first.observed_value = f"{n} rows set aside to quarantine (reason {key}) before the check"


def _outcome(checkpoint: str, spec: SuiteSpec, r) -> ExpectationOutcome:
    """One expectation's result (GX's ExpectationValidationResult) as the gate records it."""
    conf = r.expectation_config
    res = r.result or {}
    return ExpectationOutcome(
        checkpoint=checkpoint,
        suite=spec.name,
        key=conf.meta.get("key", conf.type),
        expectation_type=conf.type,
        column=conf.kwargs.get("column"),
        severity=conf.meta.get("severity", "critical"),
        kind=conf.meta.get("kind", "batch"),
        success=bool(r.success),
        element_count=_plain(res.get("element_count")),
        unexpected_count=_plain(res.get("unexpected_count")),
        unexpected_percent=_plain(res.get("unexpected_percent")),
        observed_value=None if res.get("observed_value") is None else str(res.get("observed_value")),
        sample=[_plain(v) for v in list(res.get("partial_unexpected_list") or [])[:5]],
    )


def _run_with_samples(checkpoint: gx.Checkpoint, data) -> tuple:
    """The checkpoint's validation run again with samples of unexpected values (``_RESULT_FORMAT``):
    its result's store key (for the Data Docs) and the result."""
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    (definition,) = checkpoint.validation_definitions
    run_id = RunIdentifier(run_time=datetime.now(UTC))
    result = definition.run(
        checkpoint_id=checkpoint.id,
        batch_parameters={"dataframe": data},
        result_format=_RESULT_FORMAT,
        run_id=run_id,
    )
    key = ValidationResultIdentifier(
        expectation_suite_identifier=ExpectationSuiteIdentifier(name=definition.suite.name),
        run_id=run_id,
        batch_identifier=result.batch_id,
    )
    return key, result


def _suite_digest(spec: SuiteSpec, engine: str, result_format: dict, gx_version: str) -> str:
    """What a stored checkpoint was made from: the suite's expectations (type, arguments, meta), the
    engine, what it asks GX to return and GX's release."""
    expectations = [e.configuration.to_json_dict() for e in spec.expectations]
    made_of = [spec.name, engine, result_format, gx_version, expectations]
    return hashlib.sha256(json.dumps(made_of, sort_keys=True, default=str).encode()).hexdigest()


def _remove_empty(folder: Path, root: Path) -> None:
    """``folder`` and the folders above it up to ``root``, while empty."""
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
