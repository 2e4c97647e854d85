"""Rewriting a table: every identifier of the person replaced by its token in one UPDATE, and the rows it
rewrote counted from the commit (found again in the table's history after a crash)."""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from pipelines.config.load import Config
from pipelines.lake.delta_tables import (
    latest_commit_info,
    table_files,
    table_names,
    table_version,
)
from pipelines.lake.table_names import tables
from pipelines.personal_data.erase.person import Person


def java_regex(text: str) -> str:
    """``text`` as a literal inside a Java regular expression (backslash before every non-word
    character, which Java reads as that character)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "\\" + ch for ch in text)


def pseudonymise(column: Column, person: Person, tokens: dict[str, str]) -> Column:
    """``column`` (a string) with the person's identifiers replaced by their tokens."""
    out = column
    for value in person.identifiers():
        token = tokens[value]
        if value.lower() in person.keys:  # distinctive: wherever it occurs, any case
            out = F.regexp_replace(out, F.lit("(?i)" + java_regex(value)), F.lit(token))
        else:  # a name: the whole value, or a JSON string holding it
            # each step reads `out` once: the expression grows with the identifiers, never doubles per
            # name (a person with many names made a plan that filled the driver's heap)
            out = F.regexp_replace(out, F.lit("(?iu)^" + java_regex(value) + "$"), F.lit(token))
            out = F.regexp_replace(out, F.lit('(?i)"' + java_regex(value) + '"'), F.lit(f'"{token}"'))
    return out


def _rewrites(frame: DataFrame, person: Person, tokens: dict[str, str]) -> dict[str, Column]:
    """column -> its pseudonymised value, for the text columns (and arrays of text) of ``frame``."""
    out = {}
    for f in frame.schema.fields:
        col = F.col(f"`{f.name}`")
        if isinstance(f.dataType, StringType):
            out[f.name] = pseudonymise(col, person, tokens)
        elif isinstance(f.dataType, ArrayType) and isinstance(f.dataType.elementType, StringType):
            out[f.name] = F.transform(col, lambda x: pseudonymise(x, person, tokens))
    return out


def erasable_tables(spark: SparkSession, cfg: Config) -> list[str]:
    """Every Delta table (views excluded: they hold no data) of the lake's schemas, gold's staging schema
    included, but the erasure log."""
    t = tables(cfg)
    out = []
    for schema in t.table_schemas:
        if spark.catalog.databaseExists(schema):
            out += [f"{schema}.{name}" for name in sorted(table_names(spark, schema, views=False))]
    return [name for name in out if name != t.erasures]


def _pattern(person: Person) -> str:
    """One Java regular expression that finds what ``pseudonymise`` replaces: a key anywhere (any
    case), a name as the whole value or as a JSON string."""
    keys = [java_regex(v) for v in person.identifiers() if v.lower() in person.keys]
    names = [java_regex(v) for v in person.identifiers() if v.lower() not in person.keys]
    parts = [f"(?i:{'|'.join(keys)})"] if keys else []
    if names:
        parts += [f"(?iu:^(?:{'|'.join(names)})$)", f'(?i:"(?:{"|".join(names)})")']
    return "|".join(parts)


def _holding(frame: DataFrame, person: Person, tokens: dict[str, str]) -> tuple[Column, dict[str, Column]] | None:
    """(rows holding an identifier, column -> its rewrite) for ``frame``; None: no text column.
    A row holds one when a text column matches the person's pattern: one regular expression per
    column, not the rewrite's chain compared with the value (a wide table's plan stays small)."""
    rewrites = _rewrites(frame, person, tokens)
    if not rewrites:
        return None
    pattern = _pattern(person)
    types = {f.name: f.dataType for f in frame.schema.fields}
    hit = F.lit(False)
    for name in rewrites:
        col = F.col(f"`{name}`")
        hit = hit | (
            col.rlike(pattern) if isinstance(types[name], StringType) else F.exists(col, lambda x: x.rlike(pattern))
        )
    return F.coalesce(hit, F.lit(False)), rewrites


def pseudonymise_table(spark: SparkSession, table: str, person: Person, tokens: dict[str, str]) -> int:
    """Rewrite the rows of ``table`` holding an identifier, in one UPDATE; -> how many rows it
    rewrote, its commit's own count (0: none held one, and Delta made no commit). One pass over the
    table: counting the rows first would read it twice. The commit's note (``COMMIT_NOTE``: the
    erasure's id, which a re-run looks for in the table's history) is the caller's to set: a session
    setting, set once around tables rewritten at once. A table with no data file (a report with no
    finding) holds nobody: its log says so, no UPDATE is planned."""
    files = table_files(spark, table)
    if files is not None and files[0] == 0:
        return 0
    holding = _holding(spark.table(table), person, tokens)
    if not holding:
        return 0
    before = table_version(spark, table)
    DeltaTable.forName(spark, table).update(condition=holding[0], set={f"`{n}`": v for n, v in holding[1].items()})
    if table_version(spark, table) == before:
        return 0
    return _rewritten_rows(latest_commit_info(spark, table, 1)[0])


def _rewritten_rows(commit) -> int:
    return int((commit["operationMetrics"] or {}).get("numUpdatedRows") or 0)


def rows_rewritten_by(spark: SparkSession, table: str, erasure_id: str, since_version: int) -> int | None:
    """The rows the commit of erasure ``erasure_id`` on ``table`` after ``since_version`` rewrote (a
    run killed after that commit, before its count was kept); None: it made no such commit. The
    refresh lock keeps other writers out meanwhile: the commits since are the erasure's."""
    newer = table_version(spark, table) - since_version
    if newer <= 0:
        return None
    for commit in latest_commit_info(spark, table, newer):
        if commit["userMetadata"] == erasure_id:
            return _rewritten_rows(commit)
    return None
