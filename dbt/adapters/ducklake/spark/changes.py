"""The change feed as Spark DataFrames: ``table_changes``, ``table_insertions`` and
``table_deletions`` between two snapshots, row for row as DuckDB's ``ducklake`` computes them.

The catalog says where the changed rows are (:mod:`..lake.changes`); this module reads them
with the same native Parquet scans as a time-travel read, with the table's columns as of the
end snapshot. Every frame starts with ``snapshot_id`` (the snapshot that inserted or deleted
the row) and ``rowid`` (the row's lineage id); ``changes`` adds ``change_type``.

An update is a delete and an insert of the same row id in the same snapshot: ``changes``
pairs them into ``update_preimage`` / ``update_postimage`` exactly as DuckDB's
``ducklake_table_changes`` macro does (two left joins on snapshot id and row id).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from ..lake import changes as lake_changes
from ..lake.catalog import Catalog
from ..lake.changes import Bound, ChangeRange, DeletionScan
from ..lake.errors import InvalidArgumentError
from ..lake.inlining import rows as inlined_data
from ..lake.inlining.rows import InlinedRows
from ..lake.models import DataFile
from . import expressions as sql
from .read import EMBEDDED_SNAPSHOT_ID, FILE_ID, POSITION, ROW_ID, SNAPSHOT_ID, local_frame, scan
from .table_state import TableState, file_column_ids, lake_text

SNAPSHOT_COLUMN = "snapshot_id"
ROWID_COLUMN = "rowid"
CHANGE_TYPE_COLUMN = "change_type"
CHANGE_TYPES = ("insert", "delete", "update_preimage", "update_postimage")
_MATCHED = "__ducklake_matched"


@dataclass(frozen=True)
class ChangeSources:
    """What the catalog says about a table's changes in one range, read in one transaction."""

    span: ChangeRange
    base: TableState  # the table at the end snapshot, without files or rows
    inserted_files: list[DataFile]
    inserted_inlined: list[InlinedRows]
    deletion_scans: list[DeletionScan]
    deleted_inlined: list[InlinedRows]


def load_sources(lake: Catalog, schema_name: str, table_name: str, start: Bound,
                 end: Bound) -> ChangeSources:
    """Resolve the bounds and collect every source of changed rows of the table.

    The table is looked up by its name at the end snapshot (a table renamed inside the range
    is found by its new name), as DuckDB does.
    """
    with lake.read() as conn:
        span = lake_changes.resolve_range(lake, start, end, conn)
        schema = lake.schema(schema_name, span.end, conn)
        table = lake.table(schema_name, table_name, span.end, conn)
        columns = lake.columns(table.table_id, span.end, conn)
        history = conn.execute(
            lake_text(lake, "SELECT * FROM {ducklake_column} WHERE table_id = :t"),
            {"t": table.table_id}).all()
        inserted = lake_changes.insertion_files(lake, table.table_id, span, conn)
        scans = lake_changes.deletion_scans(lake, table.table_id, span, conn)
        mapping_ids = {f.mapping_id for f in inserted if f.mapping_id is not None} | {
            s.data_file.mapping_id for s in scans if s.data_file.mapping_id is not None}
        params = {"a": span.start, "b": span.end}
        base = TableState(
            snapshot_id=span.end, schema=schema, table=table, columns=columns,
            table_dir=lake.table_dir(schema, table), data_files=[], delete_files={},
            inlined_deletes={}, inlined=[], column_history=[tuple(r) for r in history],
            mappings=lake.name_mappings(sorted(mapping_ids), conn),
            file_columns=file_column_ids(lake, conn, [*inserted, *(s.data_file for s in scans)]))
        inserted_inlined = inlined_data.read_rows(
            lake, conn, table.table_id, "begin_snapshot >= :a AND begin_snapshot <= :b", params)
        deleted_inlined = [  # the rows are selected with end_snapshot IS NOT NULL
            replace(block, begin_snapshots=[int(cast(int, e)) for e in block.end_snapshots])
            for block in inlined_data.read_rows(
                lake, conn, table.table_id,
                "end_snapshot IS NOT NULL AND end_snapshot >= :a AND end_snapshot <= :b", params)]
    return ChangeSources(span, base, inserted, inserted_inlined, scans, deleted_inlined)


def insertions(spark: SparkSession, sources: ChangeSources) -> DataFrame:
    """Rows inserted in the range (also those deleted again later): ``snapshot_id``,
    ``rowid``, then the table's columns."""
    span = sources.span
    state = replace(sources.base, data_files=sources.inserted_files,
                    inlined=sources.inserted_inlined)
    df = scan(spark, state, metadata=True)
    partial = [f.data_file_id for f in sources.inserted_files if f.partial_max is not None]
    if partial:
        # files that span snapshots keep only the rows their embedded ids place in the range
        file_id, snapshot_id = sql.ident(FILE_ID), sql.ident(SNAPSHOT_ID)
        df = df.where(f"{file_id} IS NULL OR {file_id} NOT IN ({', '.join(map(str, partial))})"
                      f" OR {snapshot_id} BETWEEN {span.start} AND {span.end}")
    return _shape(df, sources)


def deletions(spark: SparkSession, sources: ChangeSources) -> DataFrame:
    """Rows deleted in the range, with the values they had: ``snapshot_id`` (the deleting
    snapshot), ``rowid``, then the table's columns."""
    span = sources.span
    pairs: list[tuple[int, int, int | None, int]] = []
    files = {}
    for item in sources.deletion_scans:
        rows = lake_changes.deleted_rows(item, sources.base.table_dir, span)
        if rows:
            files[item.data_file.data_file_id] = item.data_file
            pairs.extend((item.data_file.data_file_id, pos, sid, item.snapshot_id)
                         for pos, sid in rows.items())
    frames = []
    if pairs:
        state = replace(sources.base, data_files=sorted(files.values(),
                                                        key=lambda f: f.data_file_id))
        deleted = local_frame(spark, pairs, StructType([
            StructField(FILE_ID, LongType(), False), StructField(POSITION, LongType(), False),
            StructField("__deleted_by", LongType(), True),
            StructField("__scan_snapshot", LongType(), False)]))
        rows_df = scan(spark, state, metadata=True, embedded_snapshot=True).join(
            F.broadcast(deleted), on=[FILE_ID, POSITION], how="inner")
        by = F.expr(f"coalesce(__deleted_by, {sql.ident(EMBEDDED_SNAPSHOT_ID)}, "
                    "__scan_snapshot)")
        frames.append(rows_df.withColumn(SNAPSHOT_ID, by)
                      .drop("__deleted_by", "__scan_snapshot", EMBEDDED_SNAPSHOT_ID))
    if sources.deleted_inlined:
        frames.append(scan(spark, replace(sources.base, inlined=sources.deleted_inlined),
                           metadata=True))
    if not frames:
        frames.append(scan(spark, sources.base, metadata=True))  # empty, with the columns
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return _shape(df, sources)


def changes(spark: SparkSession, sources: ChangeSources) -> DataFrame:
    """``snapshot_id``, ``rowid``, ``change_type``, then the table's columns.

    ``change_type`` is ``insert``, ``delete``, or, for a row id deleted and inserted by the
    same snapshot, ``update_preimage`` (old values) and ``update_postimage`` (new values).
    """
    ins = insertions(spark, sources)
    dels = deletions(spark, sources)
    keys = [SNAPSHOT_COLUMN, ROWID_COLUMN]
    columns = [sql.ident(c.column_name) for c in sources.base.columns]

    def side(frame: DataFrame, other: DataFrame, matched: str, unmatched: str) -> DataFrame:
        marks = other.selectExpr(*map(sql.ident, keys), f"TRUE AS {_MATCHED}")
        joined = frame.join(marks, on=keys, how="left")
        kind = f"CASE WHEN {_MATCHED} IS NOT NULL THEN '{matched}' ELSE '{unmatched}' END"
        return sql.select(joined, [*map(sql.ident, keys),
                                   f"{kind} AS {sql.ident(CHANGE_TYPE_COLUMN)}", *columns])

    return side(ins, dels, "update_postimage", "insert").unionByName(
        side(dels, ins, "update_preimage", "delete"))


def _shape(df: DataFrame, sources: ChangeSources) -> DataFrame:
    names = {c.column_name for c in sources.base.columns}
    clash = names & {SNAPSHOT_COLUMN, ROWID_COLUMN, CHANGE_TYPE_COLUMN}
    if clash:
        raise InvalidArgumentError(
            f"table {sources.base.schema.schema_name}.{sources.base.table.table_name} has a "
            f"column named {sorted(clash)[0]}, which the change feed uses for itself; rename "
            "the column to read its changes")
    return sql.select(df, [f"{sql.ident(SNAPSHOT_ID)} AS {sql.ident(SNAPSHOT_COLUMN)}",
                           f"{sql.ident(ROW_ID)} AS {sql.ident(ROWID_COLUMN)}",
                           *[sql.ident(c.column_name) for c in sources.base.columns]])

