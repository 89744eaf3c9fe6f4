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
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from ..lake import delete_files, pruning
from ..lake.delete_files import ROW_ID_COLUMN
from ..lake.errors import CommitConflictError, SchemaMismatchError
from ..lake.inlining.rows import can_inline
from ..lake.models import Snapshot, TableRef
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
    only_equi_keys,
    outcome_sql,
    updates_are_source_rows,
)
from .read import FILE_ID, POSITION, ROW_ID, TableState, scan
from .types import spark_type

__all__ = ["MATCHED", "NOT_MATCHED", "NOT_MATCHED_BY_SOURCE", "MergeClause", "MergeResult",
           "merge_into"]

log = logging.getLogger("dbt.adapters.ducklake")


@dataclass(frozen=True)
class MergeResult:
    snapshot: Snapshot | None
    updated: int
    deleted: int
    inserted: int


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def merge_into(
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
    columns = state.columns
    t, s = target_alias, source_alias
    kinds = {c.when for c in clauses}
    # The source is evaluated once: it feeds the key range, the join with the target and the
    # rows to insert, and it may be an expensive model query. Once cached, Spark knows its real
    # size and can broadcast it; the plans built on it analyse the cache, not the model query
    # (sql.cached). Each source row gets a number (SOURCE_ROW): the rows no target row matches
    # are found from the pairs the join gives, so the join keeps the unmatched rows of one
    # side at most (an inner or left join broadcasts the source; a full outer join, which
    # keeps both, would shuffle the target's matched rows and the whole source).
    source_cache, src = sql.cached(
        source.withColumn(SOURCE_ROW, F.monotonically_increasing_id()))
    pairs_cache: DataFrame | None = None
    broadcast_source = False
    nmbs = NOT_MATCHED_BY_SOURCE in kinds

    def project(frame: DataFrame, sides: dict[str, str], keep: str,
                values: bool = True) -> DataFrame:
        """The rows of ``frame`` that ``keep`` holds for, once each has its clause
        (:func:`.merge_statement.action_sql`), projected to what the writes need
        (:func:`.merge_statement.outcome_sql`)."""
        frame = sql.select(frame, ["*", f"{action_sql(clauses, sides)} AS {ACTION}"])
        return sql.select(frame.where(keep), outcome_sql(statement, sides, columns,
                                                         source.columns, values))

    def paired(target: DataFrame, joined_columns: list[str] | None = None) -> DataFrame:
        """Each target row with each source row the ON condition pairs it with (and, with WHEN
        NOT MATCHED BY SOURCE, every other target row), with the clause that applies and what
        it writes; building it analyses the ON condition and the clauses. Pairs to which no
        clause applies are kept: they say that their source row matched.

        With ``joined_columns`` (the source columns the ON condition names) only those are
        joined and the pairs carry no values: for a merge whose updates are its source rows
        as they are (:func:`.merge_statement.updates_are_source_rows`), whose values the
        collected candidate inserts hold. Spark then broadcasts the keys alone, not every
        source column."""
        source_side = src if joined_columns is None else \
            src.select(*[_q(c) for c in joined_columns], SOURCE_ROW)
        if broadcast_source:
            source_side = source_side.hint("broadcast")
        joined = target.alias(t).join(source_side.alias(s), on=F.expr(on),
                                      how="left" if nmbs else "inner")
        matched = f"{_q(s)}.{SOURCE_ROW} IS NOT NULL"
        sides = {MATCHED: matched, NOT_MATCHED_BY_SOURCE: f"NOT ({matched})"} if nmbs else \
            {MATCHED: "true"}
        return project(joined, sides, f"{ACTION} IS NOT NULL OR {matched}",
                       values=joined_columns is None)

    def unmatched() -> DataFrame:
        """Each source row with the WHEN NOT MATCHED clause that would apply to it if no
        target row matched it, and the values it would insert."""
        return project(src.alias(s), {NOT_MATCHED: "true"}, f"{ACTION} IS NOT NULL")

    try:
        # A target too small for file skipping to pay (skipping.worth_judging) is read whole:
        # no separate job for the source's key range; the merge job evaluates the source.
        source_rows = None
        key_bounds: list[str] = []
        if not nmbs and state.data_files and \
                skipping.worth_judging(table.spark, state.data_files):
            pruned, source_rows, key_bounds = _prune_by_source_keys(table, state, src, on, t, s)
            if pruned is None:
                # An empty source changes nothing, but a bad ON condition or clause must fail
                # as it would with rows: planning (no Spark job) analyses them.
                paired(scan(table.spark, state, metadata=True))
                unmatched()
                return MergeResult(None, 0, 0, 0)
            state = pruned
        # A source Spark would broadcast is the side to broadcast, however small an estimate
        # makes the target's scan look: it is the target that is large.
        broadcast_source = sql.broadcastable(src)
        state = _skip_files(table, state, paired, on, t, s)
        target = scan(table.spark, state, metadata=True)
        # The key range bounds the target rows as well as its files where that leaves out many
        # rows: Spark hands the bounds to the Parquet reader, which skips the row groups and
        # pages of a kept file outside them.
        if key_bounds:
            target = target.where(" AND ".join(key_bounds))
        candidates = unmatched() if NOT_MATCHED in kinds else None
        touching = [i for i, c in enumerate(clauses) if c.when != NOT_MATCHED]
        updating = [i for i, c in enumerate(clauses) if c.action in ("update", "update_star")]
        names = [c.column_name for c in columns]
        on_driver = writes_on_driver(table, state)
        # Most merges (a dbt snapshot, an incremental run) change a few rows: the pairs and
        # the candidate inserts are collected in one job, and the rows are staged from the
        # driver (inlined, or a file pyarrow writes), without a Spark job per kind of row.
        # (Not when the source's row count, if known, already says they are more than the
        # driver takes.) The pairs are cached for the jobs that may read them again: not for
        # that probe when the driver can write whatever it collects.
        # A larger source whose cache fits the driver (_source_fits_driver) is collected in
        # full with its pairs when the driver writes the files: no limit (a limit gathers the
        # rows in one task) and no Spark write; Spark's spark.driver.maxResultSize bounds the
        # collect, and a merge whose pairs outgrow it goes the Spark way.
        large = source_rows is not None and source_rows > DRIVER_ROWS
        whole = large and on_driver and _source_fits_driver(src)
        probing = whole or not (large and _probe_holds_every_source_row(clauses))
        # Collected to write from the driver, dbt's merge (UPDATE SET *, INSERT *) takes its
        # updated rows' values from the candidate inserts, which hold every source row.
        joined_columns = updates_are_source_rows(statement, columns, source.columns) \
            if probing and on_driver else None
        pairs = paired(target) if joined_columns is None else None
        if not (probing and on_driver):
            assert pairs is not None
            pairs_cache, pairs = sql.cached(pairs)
        outcome = None
        if probing:
            if pairs is None:
                assert candidates is not None and joined_columns is not None
                probe = paired(target, joined_columns).unionByName(
                    candidates, allowMissingColumns=True)
            else:
                probe = pairs if candidates is None else pairs.unionByName(candidates)
            if whole:
                outcome = sql.collect_within_result_size(probe)
            else:
                outcome = probe.limit(DRIVER_ROWS + 1).toArrow()
                if outcome.num_rows > DRIVER_ROWS:
                    outcome = None
        if outcome is None:
            joined_columns = None
            if pairs_cache is None:
                pairs_cache, pairs = sql.cached(paired(target) if pairs is None else pairs)
        assert pairs is not None or outcome is not None

        def spark_rows() -> tuple[DataFrame | None, DataFrame | None]:
            """The updated and the inserted rows as Spark computes them from the pairs' cache
            (there unless the driver writes whatever the probe collected)."""
            assert pairs_cache is not None and pairs is not None
            return (pairs.where(F.col(ACTION).isin(updating)).select(
                        *names, F.col(ROW_ID).alias(ROW_ID_COLUMN)) if updating else None,
                    None if candidates is None else candidates.join(
                        pairs.select(SOURCE_ROW), on=SOURCE_ROW, how="left_anti")
                    .select(*names))

        updates: DataFrame | pa.Table | None
        inserts: DataFrame | pa.Table | None
        if outcome is not None:
            located = pc.is_valid(outcome.column(ROW_ID))
            pairs_rows = outcome.filter(located)
            candidate_rows = outcome.filter(pc.invert(located))
            positions, inlined = _arrow_touched(_rows_of(pairs_rows, touching))
            with table.lake.read() as conn:
                limit = inlining_row_limit(table.lake, conn, state.schema.schema_id,
                                           state.table.table_id)
            inline_ok = can_inline(columns, table.lake.dialect)
            kept = None
            if updating and joined_columns is not None:
                # each updated row is its source row's candidate insert, with its row id
                rows = _rows_of(pairs_rows, updating)
                found = pc.index_in(rows.column(SOURCE_ROW),
                                    value_set=candidate_rows.column(SOURCE_ROW))
                if found.null_count:
                    raise AssertionError("a matched source row has no candidate insert")
                kept = candidate_rows.select(names).take(found).append_column(
                    ROW_ID_COLUMN, rows.column(ROW_ID))
            elif updating:
                kept = _rows_of(pairs_rows, updating).rename_columns(
                    {ROW_ID: ROW_ID_COLUMN}).select([*names, ROW_ID_COLUMN])
            new = None
            if candidates is not None:
                matched = pc.drop_null(pairs_rows.column(SOURCE_ROW)).combine_chunks()
                new = candidate_rows.filter(pc.invert(pc.is_in(
                    candidate_rows.column(SOURCE_ROW), value_set=matched))).select(names)
            in_spark = (None, None) if on_driver else spark_rows()
            inline_limit = limit if inline_ok else None
            updates = _staged_form(kept, in_spark[0], on_driver, inline_limit)
            inserts = _staged_form(new, in_spark[1], on_driver, inline_limit)
        else:
            assert pairs is not None
            positions, inlined = _touched(pairs.where(F.col(ACTION).isin(touching)))
            updates, inserts = spark_rows()
        if not positions and not inlined and inserts is None:
            return MergeResult(None, 0, 0, 0)
        tx = table.transaction(state)
        ref = TableRef(state.table.table_id)
        delete_files.delete(tx, ref, positions, inlined)
        counts = {"touched": sum(len(p) for p in positions.values()) + len(inlined),
                  "updated": 0, "inserted": 0}
        if isinstance(updates, DataFrame) and isinstance(inserts, DataFrame):
            # one Spark write for both kinds of rows, into separate files
            both = updates.unionByName(
                inserts.withColumn(ROW_ID_COLUMN, F.lit(None).cast("long")))
            counts["updated"], counts["inserted"] = stage_kept_and_new(table, tx, state, both)
            updates = inserts = None
        for rows, row_ids in ((updates, True), (inserts, False)):
            if rows is None:
                continue
            counts["updated" if row_ids else "inserted"] += table.stage(
                tx, state, rows, row_ids=row_ids)
        if tx.empty:
            return MergeResult(None, 0, 0, 0)

        def replan(since: Snapshot, until: Snapshot) -> None:
            """Merge the rows inserted by snapshots ``since < s <= until`` as well."""
            target = table.inserted(since, until)
            if NOT_MATCHED in kinds and target.alias(t).join(
                    src.alias(s), on=F.expr(on), how="left_semi").limit(1).count():
                raise CommitConflictError(
                    f"commit conflict: another transaction inserted rows into {table.name} "
                    "that the MERGE's source matches, so source rows it would insert may now "
                    f"be matches (this transaction started at snapshot {since.snapshot_id}; "
                    f"the lake is now at {until.snapshot_id}). Nothing was committed; rerun "
                    "the statement.")
            more_cache, more = sql.cached(paired(target))
            try:
                new_positions, new_inlined = _touched(more.where(F.col(ACTION).isin(touching)))
                delete_files.delete(tx, ref, new_positions, new_inlined)
                counts["touched"] += sum(len(p) for p in new_positions.values()) + \
                    len(new_inlined)
                if updating:
                    counts["updated"] += table.stage(
                        tx, state, more.where(F.col(ACTION).isin(updating)).select(
                            *names, F.col(ROW_ID).alias(ROW_ID_COLUMN)), row_ids=True)
            finally:
                more_cache.unpersist()

        tx.replanner = replan
        snapshot = table.commit(tx, info)
        return MergeResult(snapshot, counts["updated"], counts["touched"] - counts["updated"],
                           counts["inserted"])
    finally:
        if pairs_cache is not None:
            pairs_cache.unpersist()
        source_cache.unpersist()


def _skip_files(table: Target, state: TableState, plan: Callable[[DataFrame], DataFrame],
                on: str, t: str, s: str) -> TableState:
    """The table state without the data files the merge's own filters on the target rule out:
    the target-only conditions of the ON clause (dbt's ``incremental_predicates``), which Spark
    pushes onto the target scan, judged by partition values and statistics (:mod:`.spark.
    skipping`). An ON condition of key equalities alone is not planned for it."""
    if not state.data_files or not skipping.worth_judging(table.spark, state.data_files) \
            or only_equi_keys(on, t, s):
        return state
    try:
        probe = plan(scan(table.spark, state, metadata=True, probe=True))
        filters = [f for f in skipping.scan_filters(table.spark, probe)
                   if f.scan.table_id == state.table.table_id
                   and f.scan.snapshot_id == state.snapshot_id]
    except Exception:  # noqa: BLE001 - skipping is an optimisation; the merge plans again
        return state
    skipped = skipping.judge(table.lake, state, filters)
    log.debug("MERGE target " + skipping.Reading(
        f"{state.schema.schema_name}.{state.table.table_name}", state.snapshot_id,
        skipped).describe())
    return replace(state, data_files=skipped.kept)


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


def _prune_by_source_keys(table: Target, state: TableState, src: DataFrame, on: str,
                          t: str, s: str) -> tuple[TableState | None, int, list[str]]:
    """The table state without the data files no source key can match (``None`` if the source
    is empty), from the source's key range and the files' min/max statistics; the source's
    row count; and the key range as conditions on the target's rows (SQL, for key types whose
    values are spelled exactly: not timestamps, which reach Python in its local time), when
    the kept files' statistics say they leave out :data:`KEY_RANGE_MIN_ROWS_OUTSIDE` rows.

    Only the equalities ``t.col = s.col`` among the ON condition's top-level ANDs count, and
    only for columns whose type prunes exactly (:data:`.lake.pruning.PRUNABLE_TYPES`) and
    whose source type is the same. The job that fills the source's cache gives the row count
    and every key's range on the way (:func:`_fill_observed`): one stage, with no
    aggregation's shuffle and no job of its own.
    """
    keys = []
    source_types = {f.name.lower(): f.dataType for f in src.schema.fields}
    by_lower = {c.column_name.lower(): c for c in state.columns}
    for target_name, source_name in equi_keys(on, t, s):
        column = by_lower.get(target_name)
        if column is None or not pruning.prunable(column.type) or \
                source_types.get(source_name) != spark_type(column):
            continue
        keys.append((column, source_name))
    row = _fill_observed(src, [F.count(F.lit(1)), *[f(F.col(_q(name))) for _, name in keys
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
            ranges.append(pruning.KeyRange(column.column_id, column.type, low_text, high_text))
            if column.type.name in _SPELLED_KEYS:
                kind = spark_type(column)
                spelled.append(ranges[-1])
                conditions.append(f"{_q(column.column_name)} BETWEEN "
                                  f"{sql.cast(sql.string(str(low)), kind)} AND "
                                  f"{sql.cast(sql.string(str(high)), kind)}")
    if not ranges or not state.data_files:
        return state, row[0], []
    with table.lake.read() as conn:
        bounds = table.lake.file_column_bounds(state.table.table_id,
                                              [r.column_id for r in ranges],
                                              state.snapshot_id, conn)
    kept = pruning.files_in_ranges(state.data_files, bounds, ranges)
    # The range goes on the scan only where the kept files' statistics say it leaves out many
    # rows: its literals change with every source, and Spark spells literals into the code it
    # generates, so each merge would compile and warm up new classes for the target scan and
    # for the source's side of the join (KEY_RANGE_MIN_ROWS_OUTSIDE).
    if pruning.rows_outside(kept, bounds, spelled) < KEY_RANGE_MIN_ROWS_OUTSIDE:
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


# Key types whose Python values (from the source's key range) cast back from their text to
# the same value: integers, decimals and dates.
_SPELLED_KEYS = pruning.PRUNABLE_TYPES - TIMESTAMP_TYPES
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
