"""MERGE INTO a lake table: one DuckLake snapshot, merge-on-read, row ids kept.

Matched target rows that are updated or deleted are deleted positionally (delete files or
inlined deletes, only in the data files that hold them); updated rows are written again with
their row ids, so DuckDB's ``table_changes`` reports ``update_preimage``/``update_postimage``;
inserted rows get fresh row ids. Clauses are evaluated in order and the first whose condition
holds wins, as in Spark and Delta. A target row matched by several source rows is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .lake import delete_files
from .lake.commit import TableRef
from .lake.delete_files import ROW_ID_COLUMN
from .lake.errors import InvalidArgumentError, SchemaMismatchError
from .lake.inlined_data import can_inline
from .lake.models import Snapshot
from .spark.lake import CommitInfo, LakeTable, locations
from .spark.read import ROW_ID, scan

MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "matched", "not_matched", "not_matched_by_source"
ACTIONS = ("update", "update_star", "delete", "insert", "insert_star")


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause: which rows it applies to, its condition, and what it does."""

    when: str  # matched | not_matched | not_matched_by_source
    action: str  # update | update_star | delete | insert | insert_star
    condition: str | None = None
    assignments: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class MergeResult:
    snapshot: Snapshot | None
    updated: int
    deleted: int
    inserted: int


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def merge_into(
    table: LakeTable,
    source: DataFrame,
    on: str,
    clauses: Sequence[MergeClause],
    target_alias: str,
    source_alias: str,
    info: CommitInfo | None = None,
) -> MergeResult:
    """Carry out ``MERGE INTO table AS target_alias USING source AS source_alias ON on``."""
    for clause in clauses:
        if clause.action not in ACTIONS:
            raise InvalidArgumentError(
                f"unknown MERGE action {clause.action!r}; accepted: {', '.join(ACTIONS)}")
    lake = table._lake  # noqa: SLF001 - the table's own lake
    state = table.state()
    columns = state.columns
    by_lower = {c.column_name.lower(): c.column_name for c in columns}
    t, s = target_alias, source_alias
    target = scan(lake.spark, state, metadata=True).withColumn("__ducklake_t", F.lit(True))
    src = source.withColumn("__ducklake_s", F.lit(True))
    kinds = {c.when for c in clauses}
    how = {(True, True): "full", (True, False): "right", (False, True): "left",
           (False, False): "inner"}[(NOT_MATCHED in kinds, NOT_MATCHED_BY_SOURCE in kinds)]
    joined = target.alias(t).join(src.alias(s), on=F.expr(on), how=how)
    t_here, s_here = F.col(f"{_q(t)}.__ducklake_t").isNotNull(), \
        F.col(f"{_q(s)}.__ducklake_s").isNotNull()
    side = {MATCHED: t_here & s_here, NOT_MATCHED: ~t_here,
            NOT_MATCHED_BY_SOURCE: ~s_here}
    action: Column = F.lit(None).cast("int")
    for index in reversed(range(len(clauses))):
        clause = clauses[index]
        test = side[clause.when]
        if clause.condition:
            test = test & F.coalesce(F.expr(clause.condition), F.lit(False))
        action = F.when(test, F.lit(index)).otherwise(action)
    joined = joined.withColumn("__ducklake_action", action).where(
        F.col("__ducklake_action").isNotNull()).cache()
    try:
        touching = [i for i, c in enumerate(clauses) if c.when != NOT_MATCHED]
        changed = joined.where(F.col("__ducklake_action").isin(touching))
        duplicate = changed.groupBy(F.col(f"{_q(t)}.{ROW_ID}")).count() \
            .where(F.col("count") > 1).limit(1).collect()
        if duplicate:
            raise SchemaMismatchError(
                "MERGE matched one target row with more than one source row (row id "
                f"{duplicate[0][0]}); make the ON condition match at most one source row per "
                "target row, e.g. deduplicate the source on the merge key")
        positions, inlined = locations(changed.select(
            F.col(f"{_q(t)}.*")))
        updates, inserts = [], []
        for index, clause in enumerate(clauses):
            rows = joined.where(F.col("__ducklake_action") == index)
            if clause.action in ("update", "update_star"):
                sets = _assignments(clause, by_lower, t, s, source.columns)
                updates.append(rows.select(
                    *[(F.expr(sets[c.column_name]).cast(_spark_type(c)) if c.column_name in sets
                       else F.col(f"{_q(t)}.{_q(c.column_name)}")).alias(c.column_name)
                      for c in columns],
                    F.col(f"{_q(t)}.{ROW_ID}").alias(ROW_ID_COLUMN)))
            elif clause.action in ("insert", "insert_star"):
                sets = _assignments(clause, by_lower, t, s, source.columns)
                inserts.append(rows.select(
                    *[(F.expr(sets[c.column_name]) if c.column_name in sets
                       else F.lit(None)).cast(_spark_type(c)).alias(c.column_name)
                      for c in columns]))
        if not positions and not inlined and not inserts:
            return MergeResult(None, 0, 0, 0)
        tx = table._tx(state)  # noqa: SLF001
        ref = TableRef(state.table.table_id)
        delete_files.delete(tx, ref, positions, inlined)
        inline_ok = can_inline(columns, lake.lake.dialect)
        updated = inserted = 0
        for frames, row_ids in ((updates, True), (inserts, False)):
            if not frames:
                continue
            frame = frames[0]
            for other in frames[1:]:
                frame = frame.unionByName(other)
            count = lake._stage_insert(  # noqa: SLF001
                tx, ref, frame, state.table_dir, columns, state.schema.schema_id,
                state.table.table_id, inline_ok=inline_ok, row_ids=row_ids)
            if row_ids:
                updated = count
            else:
                inserted = count
        touched = sum(len(p) for p in positions.values()) + len(inlined)
        if tx.empty:
            return MergeResult(None, 0, 0, 0)
        snapshot = lake.commit(tx, info)
        return MergeResult(snapshot, updated, touched - updated, inserted)
    finally:
        joined.unpersist()


def _assignments(clause: MergeClause, columns: dict[str, str], t: str, s: str,
                 source_columns: Sequence[str]) -> dict[str, str]:
    """Target column -> SQL expression, for ``SET``/``VALUES`` lists and for ``*``.

    ``*`` takes every target column the source has, by name; a target column the source
    lacks keeps its value (update) or is NULL (insert), as after ``on_schema_change``.
    """
    if clause.action in ("update_star", "insert_star"):
        present = {c.lower() for c in source_columns}
        return {name: f"{_q(s)}.{_q(name)}" for lower, name in columns.items()
                if lower in present}
    out = {}
    for key, value in clause.assignments:
        name = key.strip("`")
        for prefix in (f"{t}.", f"`{t}`."):
            if key.startswith(prefix):
                name = key[len(prefix):].strip("`")
        if name.lower() not in columns:
            raise SchemaMismatchError(
                f"MERGE sets unknown column {name!r}; the table has "
                + ", ".join(columns.values()))
        out[columns[name.lower()]] = value
    return out


def _spark_type(column):  # noqa: ANN001, ANN202
    from .spark.types import spark_type

    return spark_type(column)
