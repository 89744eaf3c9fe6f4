"""A table's rows as Arrow, without Spark: what ``format("ducklake")`` reads run in Python
workers (no SparkSession there), one data file or one block of inlined rows per task.

The driver turns the catalog's state into :class:`FilePart` and :class:`InlinedPart`
(picklable); a task reads its part with pyarrow into the table's Spark columns: columns
found by field id (or by a name mapping's names), missing ones as their default, types cast
to the table's, deleted positions and rows of other snapshots left out. Row lineage comes
along when asked (``rowid`` and the inserting snapshot), for the change feed.

Kept simple on purpose: a table with a column Spark reads in another physical form
(:func:`..types.needs_conversion`) is refused, as is a nested column whose fields changed
since a file was written; the native read (``SparkLake.table(...).read()``) reads both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructField, StructType

from ...lake import files as lake_files
from ...lake.delete_files import (
    ROW_ID_COLUMN,
    ROW_ID_FIELD_ID,
    SNAPSHOT_ID_COLUMN,
    SNAPSHOT_ID_FIELD_ID,
)
from ...lake.errors import DataFileError, InvalidArgumentError
from ...lake.inlining.rows import InlinedRows
from ...lake.models import ColumnInfo, DataFile
from .. import physical
from ..table_state import TableState
from ..types import needs_conversion, spark_type

ROWID = "rowid"
SNAPSHOT = "snapshot_id"
BATCH_ROWS = 64 * 1024


@dataclass(frozen=True)
class Target:
    """The columns a read emits: the table's (name, id, default), then lineage if asked."""

    names: tuple[str, ...]
    column_ids: tuple[int, ...]
    defaults: tuple[str | None, ...]
    arrow: pa.Schema
    lineage: bool


def target(state: TableState, lineage: bool = False) -> Target:
    """What a read of ``state`` emits; a column the Python reader cannot read is refused."""
    for column in state.columns:
        if needs_conversion(column):
            raise InvalidArgumentError(
                f'format("ducklake") cannot read {state.schema.schema_name}.'
                f"{state.table.table_name}: column {column.column_name} ({column.column_type})"
                " is read through a conversion only the native read does; read it with "
                "SparkLake.open(spark, catalog).table(...).read()")
    return Target(tuple(c.column_name for c in state.columns),
                  tuple(c.column_id for c in state.columns),
                  tuple(c.initial_default for c in state.columns),
                  to_arrow_schema(spark_schema(state.columns, lineage), timezone="UTC"),
                  lineage)


def spark_schema(columns: Sequence[ColumnInfo], lineage: bool = False) -> StructType:
    from pyspark.sql.types import LongType

    fields = [StructField(c.column_name, spark_type(c), True) for c in columns]
    if lineage:
        fields = [StructField(SNAPSHOT, LongType(), True), StructField(ROWID, LongType(), True),
                  *fields]
    return StructType(fields)


# ---------------------------------------------------------------------------------- files
@dataclass(frozen=True)
class FilePart:
    """One data file to read: where, how its columns are found, what to leave out."""

    path: str
    data_file_id: int
    begin_snapshot: int
    row_id_start: int | None
    names: tuple[tuple[int, str], ...] | None  # column id -> name in the file, or by field id
    constants: tuple[tuple[int, str | None], ...]  # hive path values, by column id
    deleted: tuple[int, ...]  # positions
    snapshots: tuple[int, int] | None  # keep rows whose embedded snapshot id is in the range
    record_count: int


def file_parts(state: TableState, deleted: dict[int, list[int]],
               snapshots: tuple[int, int] | None = None,
               files: Sequence[DataFile] | None = None) -> list[FilePart]:
    """A part per data file of ``state`` (or ``files``); ``snapshots`` keeps, of files that
    span snapshots (``partial_max``), the rows inserted in that inclusive range."""
    parts = []
    for f in state.data_files if files is None else files:
        names = None
        if f.mapping_id is not None:
            names = tuple((m.target_field_id, m.source_name)
                          for m in state.mappings.get(f.mapping_id, []) if not m.is_partition)
        spans = f.partial_max is not None and snapshots is not None and (
            f.begin_snapshot < snapshots[0] or f.partial_max > snapshots[1])
        parts.append(FilePart(
            state.path_of(f), f.data_file_id, f.begin_snapshot, f.row_id_start, names,
            tuple(sorted(state.path_values.get(f.data_file_id, {}).items())),
            tuple(sorted(deleted.get(f.data_file_id, ()))), snapshots if spans else None,
            f.record_count))
    return parts


def read_file(part: FilePart, out: Target) -> Iterator[pa.RecordBatch]:
    """The rows of one data file, shaped to ``out``."""
    try:
        table = lake_files.read_table(part.path)
    except (OSError, pa.ArrowException) as exc:
        raise DataFileError(f"data file {part.path} cannot be read: {exc}") from exc
    if table.num_rows != part.record_count:
        raise DataFileError(f"data file {part.path} has {table.num_rows} rows; the catalog "
                            f"says {part.record_count}")
    by_id = _field_ids(table.schema)
    names = dict(part.names) if part.names is not None else None
    keep = _kept(table, part, by_id)
    constants = dict(part.constants)
    columns: list[pa.Array | pa.ChunkedArray] = []
    if out.lineage:
        positions = pa.array(range(table.num_rows), pa.int64())
        embedded = _embedded(table, by_id, ROW_ID_FIELD_ID, ROW_ID_COLUMN)
        start = part.row_id_start or 0
        rowid = pc.add(positions, start) if embedded is None else pc.coalesce(
            embedded.cast(pa.int64()), pc.add(positions, start))
        snaps = _embedded(table, by_id, SNAPSHOT_ID_FIELD_ID, SNAPSHOT_ID_COLUMN)
        begin = pa.array([part.begin_snapshot] * table.num_rows, pa.int64())
        snapshot = begin if snaps is None else pc.coalesce(snaps.cast(pa.int64()), begin)
        columns += [snapshot, rowid]
    offset = 2 if out.lineage else 0
    for i, (column_id, default) in enumerate(zip(out.column_ids, out.defaults)):
        field = out.arrow.field(i + offset)
        index = table.schema.get_field_index(names[column_id]) if names is not None and \
            column_id in names else (by_id.get(column_id, -1) if names is None else -1)
        if index >= 0:
            columns.append(_cast(table.column(index), field, part.path))
        else:
            text = constants.get(column_id, default)
            columns.append(_constant(text, table.num_rows, field))
    result = pa.Table.from_arrays(columns, schema=out.arrow)
    if keep is not None:
        result = result.filter(keep)
    yield from result.to_batches(max_chunksize=BATCH_ROWS)


def _field_ids(schema: pa.Schema) -> dict[int, int]:
    out = {}
    for i, f in enumerate(schema):
        raw = (f.metadata or {}).get(b"PARQUET:field_id")
        if raw is not None:
            out[int(raw)] = i
    return out


def _embedded(table: pa.Table, by_id: dict[int, int], field_id: int, name: str
              ) -> pa.ChunkedArray | None:
    index = by_id.get(field_id, table.schema.get_field_index(name))
    return table.column(index) if index >= 0 else None


def _kept(table: pa.Table, part: FilePart, by_id: dict[int, int]) -> pa.Array | None:
    """The mask of rows to keep: not deleted, and of the snapshot range asked for."""
    if not part.deleted and part.snapshots is None:
        return None
    keep = pa.array([True] * table.num_rows)
    if part.deleted:
        positions = pa.array(range(table.num_rows), pa.int64())
        keep = pc.invert(pc.is_in(positions, value_set=pa.array(part.deleted, pa.int64())))
    if part.snapshots is not None:
        snaps = _embedded(table, by_id, SNAPSHOT_ID_FIELD_ID, SNAPSHOT_ID_COLUMN)
        if snaps is not None:
            snaps = pc.coalesce(snaps.cast(pa.int64()), part.begin_snapshot)
            low, high = part.snapshots
            keep = pc.and_(keep, pc.and_(pc.greater_equal(snaps, low),
                                         pc.less_equal(snaps, high)))
    return keep


def _cast(values: pa.ChunkedArray, field: pa.Field, path: str) -> pa.ChunkedArray:
    if values.type == field.type:
        return values
    try:
        return values.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataFileError(
            f"column {field.name} of data file {path} ({values.type}) cannot be read as "
            f"{field.type} by the Python reader ({exc}); read the table with "
            "SparkLake.open(spark, catalog).table(...).read()") from exc


def _constant(text: str | None, count: int, field: pa.Field) -> pa.Array:
    if text is None or text == "NULL":
        return pa.nulls(count, field.type)
    try:
        return pa.array([text] * count, pa.string()).cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(count, field.type)


# ---------------------------------------------------------------------------------- inlined
@dataclass(frozen=True)
class InlinedPart:
    """Inlined rows, already read from the catalog on the driver, as the table's values."""

    rows: pa.Table


def inlined_part(block: InlinedRows, state: TableState, out: Target) -> InlinedPart:
    """One block of inlined rows as Arrow in ``out``'s shape (its lineage from the block)."""
    index = {c.column_id: i for i, c in enumerate(block.columns)}
    arrays: list[pa.Array] = []
    if out.lineage:
        arrays += [pa.array(block.begin_snapshots, pa.int64()),
                   pa.array(block.row_ids, pa.int64())]
    offset = 2 if out.lineage else 0
    count = len(block.values)
    for i, (column, default) in enumerate(zip(state.columns, out.defaults)):
        field = out.arrow.field(i + offset)
        at = index.get(column.column_id)
        if at is None:
            arrays.append(_constant(default, count, field))
            continue
        convert = physical.spark_converter(block.columns[at])
        values = [convert(v[at]) for v in block.values]
        try:
            arrays.append(pa.array(values, type=field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            arrays.append(pa.array(values).cast(field.type))
    return InlinedPart(pa.Table.from_arrays(arrays, schema=out.arrow))
