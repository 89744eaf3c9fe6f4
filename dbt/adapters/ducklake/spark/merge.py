"""MERGE INTO a lake table: one DuckLake snapshot, merge-on-read, row ids kept.

Matched target rows that are updated or deleted are deleted positionally (delete files or
inlined deletes, only in the data files that hold them); updated rows are written again with
their row ids, so DuckDB's ``table_changes`` reports ``update_preimage``/``update_postimage``;
inserted rows get fresh row ids. Clauses are evaluated in order and the first whose condition
holds wins, as in Spark and Delta. A target row matched by several source rows is an error.

Rows another writer inserts into the target while the MERGE runs are merged too when the commit
finds them (``Transaction.replanner``): the matched and not-matched-by-source clauses apply to
them. If a source row matches one of them and the MERGE has a ``WHEN NOT MATCHED`` clause, the
source row's fate changes (an update instead of an insert), so that is a conflict.

:func:`run_merge` runs four steps, each a function of its own:

- the plan (:func:`plan_merge`, a :class:`MergePlan`): the statement's keys and clauses
  (:mod:`.merge_statement`, no Spark), the target's data files pruned by the source's key
  range and the statement's filters, and the frames that pair target and source rows;
- the outcome, what the merge deletes and writes (:func:`merge_outcome`, a
  :class:`MergeOutcome`): on the driver when it is small or the source fits the driver
  (:func:`outcome_on_driver`, over the collected Arrow rows), in Spark otherwise
  (:func:`outcome_in_spark`, over the cached pairs); :func:`collect_to_driver` chooses;
- the commit of that outcome as one snapshot (:func:`commit_outcome`);
- the re-plan for rows concurrent writers inserted (:func:`replan`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from enum import Enum
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from ..lake import delete_files, file_skipping
from ..lake.catalog import Catalog
from ..lake.commit import Transaction
from ..lake.delete_files import ROW_ID_COLUMN
from ..lake.errors import CommitConflictError, SchemaMismatchError
from ..lake.inlining.rows import can_inline
from ..lake.models import ColumnInfo, PublishReplan, Snapshot, TableRef
from ..lake.options import inlining_row_limit
from ..lake.types import TIMESTAMP_TYPES
from ..lake.value_text import encode_value
from . import expressions as sql
from . import skipping
from .dml import CommitInfo, Target, arrow_locations, stage_kept_and_new, writes_on_driver
from .merge_statement import (
    ACTION,
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    SOURCE_ROW,
    MergeClause,
    MergeStatement,
    action_sql,
    equi_keys,
    outcome_sql,
    updates_are_source_rows,
)
from .read import FILE_ID, POSITION, ROW_ID, scan
from .table_state import TableState
from .types import spark_type

__all__ = [
    "MATCHED",
    "NOT_MATCHED",
    "NOT_MATCHED_BY_SOURCE",
    "MergeClause",
    "MergeOutcome",
    "MergePlan",
    "MergeResult",
    "MergeStatement",
    "commit_outcome",
    "run_merge",
    "merge_outcome",
    "outcome_in_spark",
    "outcome_on_driver",
    "plan_merge",
    "replan",
]

log = logging.getLogger("dbt.adapters.ducklake")

# Outcomes up to this many rows are collected to the driver in one job (a merge's typical
# few changed rows); larger ones stay in Spark, unless the source's cache is within
# DRIVER_BYTES (_source_fits_driver).
DRIVER_ROWS = 10_000
DRIVER_BYTES = 256 * 1024 * 1024
# The source's key range is put on the target scan (for the Parquet reader to skip the row
# groups and pages of kept files outside it) when the files' statistics suggest it leaves out
# at least this many rows. Below, new generated code costs more than the scan it saves: a
# merge of 200,000 source rows whose range left out about 1.1M rows of a 1.25M-row file took
# 0.82 s with the range and 0.72 s without it (median of 8, each merge's range different).
KEY_RANGE_MIN_ROWS_OUTSIDE = 2_000_000
# Key types whose Python values (from the source's key range) cast back from their text to
# the same value: integers, decimals and dates.
_SPELLED_KEYS = file_skipping.PRUNABLE_TYPES - TIMESTAMP_TYPES


@dataclass(frozen=True)
class MergeResult:
    snapshot: Snapshot | None
    updated: int
    deleted: int
    inserted: int


def run_merge(
    table: Target,
    source: DataFrame,
    on: str,
    clauses: Sequence[MergeClause],
    target_alias: str,
    source_alias: str,
    info: CommitInfo | None = None,
) -> MergeResult:
    """Carry out ``MERGE INTO table AS target_alias USING source AS source_alias ON on``."""
    statement = MergeStatement(on, tuple(clauses), target_alias, source_alias)
    state = table.state()
    with ExitStack() as caches:
        # The source is evaluated once: it feeds the key range, the join with the target and
        # the rows to insert, and it may be an expensive model query. Once cached, Spark knows
        # its real size and can broadcast it; the plans built on it analyse the cache, not the
        # model query (sql.cached). Each source row gets a number (SOURCE_ROW): the rows no
        # target row matches are found from the pairs the join gives, so the join keeps the
        # unmatched rows of one side at most (an inner or left join broadcasts the source; a
        # full outer join, which keeps both, would shuffle the target's matched rows and the
        # whole source).
        src = _cached(source.withColumn(SOURCE_ROW, F.monotonically_increasing_id()), caches)
        plan = plan_merge(table, statement, state, src, tuple(source.columns))
        if plan is None:
            return MergeResult(None, 0, 0, 0)
        outcome = merge_outcome(plan, caches)
        # over the whole table as read (the plan's state may have had files skipped)
        table.enforce(state, outcome.positions, outcome.inlined, outcome.updates,
                      outcome.inserts)
        return commit_outcome(plan, outcome, info)


def _cached(df: DataFrame, caches: ExitStack) -> DataFrame:
    """:func:`.expressions.cached` of ``df``, unpersisted when ``caches`` closes."""
    persisted, frame = sql.cached(df)
    caches.callback(persisted.unpersist)
    return frame


# -- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MergePlan:
    """A MERGE planned against its target: the statement, the target as read (its data files
    pruned by the source's key range and by the statement's own filters), and the source's
    cache with each row numbered (:data:`SOURCE_ROW`). Its frames pair target rows with source
    rows and give each the clause that applies; building one analyses the ON condition and
    the clauses (no Spark job)."""

    table: Target
    statement: MergeStatement
    state: TableState
    src: DataFrame
    source_columns: tuple[str, ...]
    # the source's row count, when its key range was taken (:func:`_prune_by_source_keys`)
    source_rows: int | None = None
    # the key range as conditions on the target's rows (SQL), where it leaves out many rows
    key_bounds: tuple[str, ...] = ()
    # whether the join broadcasts the source (a hint: see plan_merge)
    broadcast_source: bool = False

    @property
    def columns(self) -> list[ColumnInfo]:
        return self.state.columns

    @property
    def names(self) -> list[str]:
        return [c.column_name for c in self.state.columns]

    def target(self) -> DataFrame:
        """The target's rows with their metadata columns. The key range bounds the rows as
        well as the files where that leaves out many rows: Spark hands the bounds to the
        Parquet reader, which skips the row groups and pages of a kept file outside them."""
        target = scan(self.table.spark, self.state, metadata=True)
        if self.key_bounds:
            target = target.where(" AND ".join(self.key_bounds))
        return target

    def paired(self, target: DataFrame, joined_columns: list[str] | None = None) -> DataFrame:
        """Each row of ``target`` with each source row the ON condition pairs it with (and,
        with WHEN NOT MATCHED BY SOURCE, every other target row), with the clause that
        applies and what it writes. Pairs to which no clause applies are kept: they say that
        their source row matched.

        With ``joined_columns`` (the source columns the ON condition names) only those are
        joined and the pairs carry no values: for a merge whose updates are its source rows
        as they are (:func:`.merge_statement.updates_are_source_rows`), whose values the
        collected candidate inserts hold. Spark then broadcasts the keys alone, not every
        source column."""
        t, s = self.statement.target_alias, self.statement.source_alias
        source_side = self.src if joined_columns is None else \
            self.src.select(*[sql.ident(c) for c in joined_columns], SOURCE_ROW)
        if self.broadcast_source:
            source_side = source_side.hint("broadcast")
        by_source = self.statement.by_source
        joined = target.alias(t).join(source_side.alias(s), on=F.expr(self.statement.on),
                                      how="left" if by_source else "inner")
        matched = f"{sql.ident(s)}.{SOURCE_ROW} IS NOT NULL"
        sides = {MATCHED: matched, NOT_MATCHED_BY_SOURCE: f"NOT ({matched})"} if by_source \
            else {MATCHED: "true"}
        return self._project(joined, sides, f"{ACTION} IS NOT NULL OR {matched}",
                             values=joined_columns is None)

    def unmatched(self) -> DataFrame:
        """Each source row with the WHEN NOT MATCHED clause that would apply to it if no
        target row matched it, and the values it would insert."""
        return self._project(self.src.alias(self.statement.source_alias), {NOT_MATCHED: "true"},
                             f"{ACTION} IS NOT NULL")

    def _project(self, frame: DataFrame, sides: dict[str, str], keep: str,
                 values: bool = True) -> DataFrame:
        """The rows of ``frame`` that ``keep`` holds for, once each has its clause
        (:func:`.merge_statement.action_sql`), projected to what the writes need
        (:func:`.merge_statement.outcome_sql`)."""
        action = action_sql(self.statement.clauses, sides)
        frame = sql.select(frame, ["*", f"{action} AS {ACTION}"])
        return sql.select(frame.where(keep), outcome_sql(
            self.statement, sides, self.columns, self.source_columns, values))


def plan_merge(table: Target, statement: MergeStatement, state: TableState, src: DataFrame,
               source_columns: tuple[str, ...]) -> MergePlan | None:
    """The merge planned against ``state``, with its data files pruned; ``None`` when the
    source (``src``, its cache) is empty, once the statement is analysed all the same."""
    plan = MergePlan(table, statement, state, src, source_columns)
    # A target too small for file skipping to pay (skipping.worth_skipping) is read whole:
    # no separate job for the source's key range; the merge job evaluates the source.
    if not statement.by_source and state.data_files and \
            skipping.worth_skipping(table.spark, state.data_files):
        pruned, source_rows, key_bounds = _prune_by_source_keys(table, state, src, statement)
        if pruned is None:
            # An empty source changes nothing, but a bad ON condition or clause must fail
            # as it would with rows: planning (no Spark job) analyses them.
            plan.paired(scan(table.spark, state, metadata=True))
            plan.unmatched()
            return None
        plan = replace(plan, state=pruned, source_rows=source_rows,
                       key_bounds=tuple(key_bounds))
    # A source Spark would broadcast is the side to broadcast, however small an estimate
    # makes the target's scan look: it is the target that is large.
    plan = replace(plan, broadcast_source=sql.broadcastable(src))
    return replace(plan, state=_kept_target_files(plan))


def _prune_by_source_keys(table: Target, state: TableState, src: DataFrame,
                          statement: MergeStatement,
                          ) -> tuple[TableState | None, int, list[str]]:
    """The table state without the data files no source key can match (``None`` if the source
    is empty), from the source's key range and the files' min/max statistics; the source's
    row count; and the key range as conditions on the target's rows (SQL, for key types whose
    values are spelled exactly: not timestamps, which reach Python in its local time), when
    the kept files' statistics say they leave out :data:`KEY_RANGE_MIN_ROWS_OUTSIDE` rows.

    Only the equalities ``t.col = s.col`` among the ON condition's top-level ANDs count, and
    only for columns whose type prunes exactly (:data:`.lake.file_skipping.PRUNABLE_TYPES`) and
    whose source type is the same. The job that fills the source's cache gives the row count
    and every key's range on the way (:func:`_fill_observed`): one stage, with no
    aggregation's shuffle and no job of its own.
    """
    keys = []
    source_types = {f.name.lower(): f.dataType for f in src.schema.fields}
    by_lower = {c.column_name.lower(): c for c in state.columns}
    for target_name, source_name in equi_keys(statement.on, statement.target_alias,
                                              statement.source_alias):
        column = by_lower.get(target_name)
        if column is None or not file_skipping.prunable(column.type) or \
                source_types.get(source_name) != spark_type(column):
            continue
        keys.append((column, source_name))
    row = _fill_observed(src, [F.count(F.lit(1)), *[f(F.col(sql.ident(name)))
                                                      for _, name in keys
                                                      for f in (F.min, F.max)]])
    if not row[0]:
        return None, 0, []
    ranges, spelled, conditions = [], [], []
    for index, (column, _) in enumerate(keys):
        low, high = row[1 + 2 * index], row[2 + 2 * index]
        if low is None:  # every source key is NULL: equality matches no target row
            return replace(state, data_files=[]), row[0], []
        low_text, high_text = encode_value(low, column.type), encode_value(high, column.type)
        if low_text is not None and high_text is not None:
            ranges.append(file_skipping.KeyRange(column.column_id, column.type, low_text,
                                                 high_text))
            if column.type.name in _SPELLED_KEYS:
                kind = spark_type(column)
                spelled.append(ranges[-1])
                conditions.append(f"{sql.ident(column.column_name)} BETWEEN "
                                  f"{sql.cast(sql.string(str(low)), kind)} AND "
                                  f"{sql.cast(sql.string(str(high)), kind)}")
    if not ranges or not state.data_files:
        return state, row[0], []
    with table.lake.read() as conn:
        bounds = table.lake.file_column_bounds(state.table.table_id,
                                              [r.column_id for r in ranges],
                                              state.snapshot_id, conn)
    kept = file_skipping.files_in_ranges(state.data_files, bounds, ranges)
    # The range goes on the scan only where the kept files' statistics say it leaves out many
    # rows: its literals change with every source, and Spark spells literals into the code it
    # generates, so each merge would compile and warm up new classes for the target scan and
    # for the source's side of the join (KEY_RANGE_MIN_ROWS_OUTSIDE).
    if file_skipping.rows_outside(kept, bounds, spelled) < KEY_RANGE_MIN_ROWS_OUTSIDE:
        conditions = []
    return replace(state, data_files=kept), row[0], conditions


def _fill_observed(cached: DataFrame, metrics: Sequence[Column]) -> list[Any]:
    """Fill ``cached`` (a frame reading a cache) and return the aggregate ``metrics`` over its
    rows, computed on the way. A plain aggregation would take three Spark jobs under adaptive
    execution (the cache, the partial and the final aggregate); this is one stage, whose rows
    go to Spark's no-op sink."""
    observation = Observation(f"ducklake_{uuid.uuid4().hex}")
    named = [m.alias(f"m{i}") for i, m in enumerate(metrics)]
    cached.observe(observation, *named).write.format("noop").mode("overwrite").save()
    values = observation.get
    return [values.get(f"m{i}") for i in range(len(named))]


def _kept_target_files(plan: MergePlan) -> TableState:
    """The plan's table state without the data files the merge's own filters on the target
    rule out: the target-only conditions of the ON clause (dbt's ``incremental_predicates``),
    which Spark pushes onto the target scan, judged by partition values and statistics
    (:mod:`.spark.skipping`). An ON condition of key equalities alone is not planned for it."""
    table, state = plan.table, plan.state
    if not state.data_files or not skipping.worth_skipping(table.spark, state.data_files) \
            or plan.statement.only_equi_keys():
        return state
    try:
        probe = plan.paired(scan(table.spark, state, metadata=True, probe=True))
        filters = [f for f in skipping.scan_filters(table.spark, probe)
                   if f.scan.table_id == state.table.table_id
                   and f.scan.snapshot_id == state.snapshot_id]
    except Exception:  # noqa: BLE001 - skipping is an optimisation; the merge plans again
        return state
    skipped = skipping.skip_table_files(table.lake, state, filters)
    log.debug("MERGE target " + skipping.Reading(
        f"{state.schema.schema_name}.{state.table.table_name}", state.snapshot_id,
        skipped).describe())
    return replace(state, data_files=skipped.kept)


# -- the outcome ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MergeOutcome:
    """What a merge changes: the target rows it deletes (positions per data file, and
    inlined row ids), the updated rows (with their row ids, :data:`ROW_ID_COLUMN`) and the
    inserted rows. Each kind of rows is ``None`` for none, Arrow rows the driver stages, or a
    frame Spark writes."""

    positions: dict[int, delete_files.Positions]
    inlined: list[int]
    updates: DataFrame | pa.Table | None
    inserts: DataFrame | pa.Table | None


class Collect(Enum):
    """How much of a merge's outcome the driver collects, in one job."""

    LIMITED = "limited"  # up to DRIVER_ROWS rows; one more says the outcome is larger
    WHOLE = "whole"  # all of it, as far as spark.driver.maxResultSize allows


def merge_outcome(plan: MergePlan, caches: ExitStack) -> MergeOutcome:
    """What the merge deletes and writes: collected to the driver where
    :func:`collect_to_driver` says so and the rows fit (:func:`outcome_on_driver`), else
    computed in Spark from the cached pairs (:func:`outcome_in_spark`). Caches made here are
    unpersisted when ``caches`` closes."""
    target = plan.target()
    candidates = plan.unmatched() if plan.statement.inserts else None
    on_driver = writes_on_driver(plan.table, plan.state)
    collect = collect_to_driver(plan, on_driver)
    # The pairs are cached for the jobs that may read them again: not for the collect when
    # the driver writes whatever it collects.
    read_once = collect is not None and on_driver
    # Collected to write from the driver, dbt's merge (UPDATE SET *, INSERT *) takes its
    # updated rows' values from the candidate inserts, which hold every source row.
    joined_columns = updates_are_source_rows(plan.statement, plan.columns,
                                             plan.source_columns) if read_once else None
    pairs = plan.paired(target) if joined_columns is None else None
    if not read_once:
        assert pairs is not None
        pairs = _cached(pairs, caches)
    if collect is not None:
        collected = _collect(plan, target, pairs, candidates, joined_columns, collect)
        if collected is not None:
            outcome = outcome_on_driver(collected, plan.statement, plan.names,
                                        keys_alone=joined_columns is not None)
            return _staged_forms(plan, outcome, on_driver, pairs, candidates)
        if read_once:
            pairs = _cached(plan.paired(target) if pairs is None else pairs, caches)
    assert pairs is not None
    return outcome_in_spark(plan, pairs, candidates)


def collect_to_driver(plan: MergePlan, on_driver: bool) -> Collect | None:
    """How the merge's outcome (its pairs and candidate inserts) reaches the driver; ``None``
    for not at all: it is merged in Spark. ``on_driver``: the driver writes the table's files.

    Most merges (a dbt snapshot, an incremental run) change a few rows: they are collected in
    one job, and the rows are staged from the driver (inlined, or a file pyarrow writes),
    without a Spark job per kind of row (:attr:`Collect.LIMITED`). Not when the source's row
    count, if known, already says they are more than the driver takes.

    A larger source whose cache fits the driver (:func:`_source_fits_driver`) is collected in
    full with its pairs when the driver writes the files: no limit (a limit gathers the rows
    in one task) and no Spark write (:attr:`Collect.WHOLE`). Spark's
    ``spark.driver.maxResultSize`` bounds the collect, and a merge whose pairs outgrow it
    goes the Spark way.
    """
    large = plan.source_rows is not None and plan.source_rows > DRIVER_ROWS
    if large and on_driver and _source_fits_driver(plan.src):
        return Collect.WHOLE
    if large and _probe_holds_every_source_row(plan.statement.clauses):
        return None
    return Collect.LIMITED


def _source_fits_driver(src: DataFrame) -> bool:
    """Whether a merge may collect its whole outcome, for a source whose cache is filled: the
    source is within :data:`DRIVER_BYTES` and a quarter of ``spark.driver.maxResultSize``
    (the outcome holds each source row once or twice, plus its pairs), and that setting
    bounds the collect at all (0 is no bound)."""
    bound = sql.max_result_size(src.sparkSession)
    return bound > 0 and sql.size_in_bytes(src) <= min(DRIVER_BYTES, bound // 4)


def _probe_holds_every_source_row(clauses: Sequence[MergeClause]) -> bool:
    """Whether the collected probe of a merge holds a row for every source row: a ``WHEN NOT
    MATCHED`` clause without a condition (dbt's merge strategy) gives each one an insert."""
    return any(c.when == NOT_MATCHED and not c.condition for c in clauses)


def _collect(plan: MergePlan, target: DataFrame, pairs: DataFrame | None,
             candidates: DataFrame | None, joined_columns: list[str] | None,
             collect: Collect) -> pa.Table | None:
    """The pairs (with only ``joined_columns`` of the source when ``pairs`` is ``None``) and
    the candidate inserts, collected in one job; ``None`` when they are more than ``collect``
    lets the driver take."""
    if pairs is None:
        assert candidates is not None and joined_columns is not None
        probe = plan.paired(target, joined_columns).unionByName(
            candidates, allowMissingColumns=True)
    else:
        probe = pairs if candidates is None else pairs.unionByName(candidates)
    if collect is Collect.WHOLE:
        return sql.collect_within_result_size(probe)
    collected = probe.limit(DRIVER_ROWS + 1).toArrow()
    return None if collected.num_rows > DRIVER_ROWS else collected


def outcome_on_driver(collected: pa.Table, statement: MergeStatement, names: Sequence[str],
                      keys_alone: bool) -> MergeOutcome:
    """The outcome of collected merge rows (Arrow; no Spark): the pairs, which have a target
    row's location, and the candidate inserts, which have none. The updated rows are the
    pairs' new values, or with ``keys_alone`` (pairs without values, for dbt's merge) their
    source rows' candidate inserts; the inserted rows are the candidates whose source row no
    pair holds. Refuses a target row matched twice."""
    located = pc.is_valid(collected.column(ROW_ID))
    pairs = collected.filter(located)
    candidates = collected.filter(pc.invert(located))
    positions, inlined = _arrow_touched(_rows_of(pairs, statement.touching))
    updating = statement.updating
    kept = None
    if updating and keys_alone:
        # each updated row is its source row's candidate insert, with its row id
        rows = _rows_of(pairs, updating)
        found = pc.index_in(rows.column(SOURCE_ROW), value_set=candidates.column(SOURCE_ROW))
        if found.null_count:
            raise AssertionError("a matched source row has no candidate insert")
        kept = candidates.select(list(names)).take(found).append_column(
            ROW_ID_COLUMN, rows.column(ROW_ID))
    elif updating:
        kept = _rows_of(pairs, updating).rename_columns(
            {ROW_ID: ROW_ID_COLUMN}).select([*names, ROW_ID_COLUMN])
    new = None
    if statement.inserts:
        matched = pc.drop_null(pairs.column(SOURCE_ROW)).combine_chunks()
        new = candidates.filter(pc.invert(pc.is_in(
            candidates.column(SOURCE_ROW), value_set=matched))).select(list(names))
    return MergeOutcome(positions, inlined, kept, new)


def _staged_forms(plan: MergePlan, outcome: MergeOutcome, on_driver: bool,
                  pairs: DataFrame | None, candidates: DataFrame | None) -> MergeOutcome:
    """The outcome collected on the driver with each kind of rows in the form it is staged
    (:func:`_staged_form`); when the driver does not write the table's files, rows beyond
    the inlining limit are taken from the pairs' cache (``pairs``) by Spark."""
    kept, new = outcome.updates, outcome.inserts
    assert not isinstance(kept, DataFrame) and not isinstance(new, DataFrame)
    in_spark: tuple[DataFrame | None, DataFrame | None] = (None, None)
    if not on_driver:
        assert pairs is not None
        in_spark = _rows_in_spark(plan, pairs, candidates)
    limit = _inlining_limit(plan)
    return replace(outcome, updates=_staged_form(kept, in_spark[0], on_driver, limit),
                   inserts=_staged_form(new, in_spark[1], on_driver, limit))


def _inlining_limit(plan: MergePlan) -> int | None:
    """The target's inlining row limit; ``None`` when its columns cannot be inlined."""
    table, state = plan.table, plan.state
    with table.lake.read() as conn:
        limit = inlining_row_limit(table.lake, conn, state.schema.schema_id,
                                   state.table.table_id, table.options)
    return limit if can_inline(state.columns, table.lake.dialect) else None


def _staged_form(rows: pa.Table | None, in_spark: DataFrame | None, on_driver: bool,
                 inline_limit: int | None) -> DataFrame | pa.Table | None:
    """How a kind of collected rows is staged: not at all when there are none; from the
    driver when it writes the table's files or the rows are within the inlining limit
    (``None``: no inlining); else as Spark computes them from the caches, so that the updated
    and the inserted rows share one Spark write."""
    if rows is None or rows.num_rows == 0:
        return None
    if on_driver or inline_limit is not None and rows.num_rows <= inline_limit:
        return rows
    return in_spark


def outcome_in_spark(plan: MergePlan, pairs: DataFrame,
                     candidates: DataFrame | None) -> MergeOutcome:
    """The outcome as Spark computes it from the pairs' cache: the touched rows' locations
    (one collect, which refuses a target row matched twice), and the updated and inserted
    rows as frames."""
    positions, inlined = _touched(pairs.where(F.col(ACTION).isin(plan.statement.touching)))
    updates, inserts = _rows_in_spark(plan, pairs, candidates)
    return MergeOutcome(positions, inlined, updates, inserts)


def _rows_in_spark(plan: MergePlan, pairs: DataFrame, candidates: DataFrame | None,
                   ) -> tuple[DataFrame | None, DataFrame | None]:
    """The updated and the inserted rows as Spark computes them from the pairs' cache: the
    inserted rows are the candidates whose source row no pair holds."""
    return (_updated_rows(plan, pairs) if plan.statement.updating else None,
            None if candidates is None else candidates.join(
                pairs.select(SOURCE_ROW), on=SOURCE_ROW, how="left_anti")
            .select(*plan.names))


def _updated_rows(plan: MergePlan, pairs: DataFrame) -> DataFrame:
    """The pairs' updated rows, with the row ids of the target rows they replace."""
    return pairs.where(F.col(ACTION).isin(plan.statement.updating)).select(
        *plan.names, F.col(ROW_ID).alias(ROW_ID_COLUMN))


def _rows_of(outcome: pa.Table, clauses: Sequence[int]) -> pa.Table:
    """The collected outcome rows whose clause is one of ``clauses``."""
    return outcome.filter(pc.is_in(outcome.column(ACTION),
                                   value_set=pa.array(clauses, outcome.schema.field(ACTION).type)))


def _touched(rows: DataFrame) -> tuple[dict[int, delete_files.Positions], list[int]]:
    """Positions (per data file) and inlined row ids of the target rows the merge updates or
    deletes, collected in one pass that also refuses a row matched twice."""
    return _arrow_touched(rows.select(FILE_ID, POSITION, ROW_ID).toArrow())


def _arrow_touched(table: pa.Table,
                   ) -> tuple[dict[int, delete_files.Positions], list[int]]:
    """:func:`_touched` of rows already collected."""
    table = table.select([FILE_ID, POSITION, ROW_ID])
    row_ids = table.column(2)
    if pc.count_distinct(row_ids).as_py() != len(row_ids):
        counts = pc.value_counts(row_ids)
        twice = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
        raise SchemaMismatchError(
            "MERGE matched one target row with more than one source row (row id "
            f"{twice[0].as_py()}); make the ON condition match at most one source row per "
            "target row, e.g. deduplicate the source on the merge key")
    return arrow_locations(table)


# -- the commit and the re-plan ------------------------------------------------------------


@dataclass
class MergeCounts:
    """Target rows a merge touched (updated or deleted), updated and inserted, so far: the
    re-plan at commit adds to them."""

    touched: int = 0
    updated: int = 0
    inserted: int = 0

    def result(self, snapshot: Snapshot | None) -> MergeResult:
        return MergeResult(snapshot, self.updated, self.touched - self.updated, self.inserted)


def commit_outcome(plan: MergePlan, outcome: MergeOutcome,
                   info: CommitInfo | None) -> MergeResult:
    """Stage the outcome on one transaction (deletes, then the updated and inserted rows) and
    commit it as one snapshot; rows another writer inserted meanwhile are merged at commit
    (:func:`replan`). Nothing is committed when nothing changes."""
    if not outcome.positions and not outcome.inlined and outcome.inserts is None:
        return MergeResult(None, 0, 0, 0)
    table, state = plan.table, plan.state
    tx = table.transaction(state)
    counts = MergeCounts(touched=_delete(tx, state, outcome.positions, outcome.inlined))
    updates, inserts = outcome.updates, outcome.inserts
    if isinstance(updates, DataFrame) and isinstance(inserts, DataFrame):
        # one Spark write for both kinds of rows, into separate files
        both = updates.unionByName(
            inserts.withColumn(ROW_ID_COLUMN, F.lit(None).cast("long")))
        counts.updated, counts.inserted = stage_kept_and_new(table, tx, state, both)
        updates = inserts = None
    if updates is not None:
        counts.updated += table.stage(tx, state, updates, row_ids=True)
    if inserts is not None:
        counts.inserted += table.stage(tx, state, inserts, row_ids=False)
    if tx.empty:
        return MergeResult(None, 0, 0, 0)
    tx.replanner = partial(replan, plan, tx, counts)
    tx.publish_replan = PublishReplan("MERGE", partial(replan_on_lake, plan))
    return counts.result(table.commit(tx, info))


def replan_on_lake(plan: MergePlan, tx: Transaction, lake: Catalog, since: Snapshot,
                   until: Snapshot) -> None:
    """At a branch's publish (``Transaction.publish_replan``): merge the rows others
    inserted into the lake's table since the branch's base, staged on the publish's ``tx``
    (:func:`replan` reading the lake instead of the branch)."""
    on_lake = replace(plan, table=replace(plan.table, lake=lake))
    replan(on_lake, tx, MergeCounts(), since, until)


def _delete(tx: Transaction, state: TableState, positions: dict[int, delete_files.Positions],
            inlined: list[int]) -> int:
    """Stage the deletes of the rows at ``positions`` and of ``inlined`` row ids; returns
    their number."""
    delete_files.delete(tx, TableRef(state.table.table_id), positions, inlined)
    return sum(len(p) for p in positions.values()) + len(inlined)


def replan(plan: MergePlan, tx: Transaction, counts: MergeCounts, since: Snapshot,
           until: Snapshot) -> None:
    """Merge the rows inserted by snapshots ``since < s <= until`` as well: stage on ``tx``
    the deletes and updates the matched and not-matched-by-source clauses make of them
    (``Transaction.replanner``, with ``plan``, ``tx`` and ``counts`` bound). A source row
    matching one of them would change its fate under a WHEN NOT MATCHED clause: a conflict."""
    table, statement = plan.table, plan.statement
    target = table.inserted_meanwhile(since, until)
    if statement.inserts and target.alias(statement.target_alias).join(
            plan.src.alias(statement.source_alias), on=F.expr(statement.on),
            how="left_semi").limit(1).count():
        raise CommitConflictError(
            f"commit conflict: another transaction inserted rows into {table.name} "
            "that the MERGE's source matches, so source rows it would insert may now "
            f"be matches (this transaction started at snapshot {since.snapshot_id}; "
            f"the lake is now at {until.snapshot_id}). Nothing was committed; rerun "
            "the statement.")
    more_cache, more = sql.cached(plan.paired(target))
    try:
        positions, inlined = _touched(more.where(F.col(ACTION).isin(statement.touching)))
        counts.touched += _delete(tx, plan.state, positions, inlined)
        if statement.updating:
            counts.updated += table.stage(tx, plan.state, _updated_rows(plan, more),
                                          row_ids=True)
    finally:
        more_cache.unpersist()

