"""``spark.read.format("ducklake").load("s.t")``: a batch read through the Python data source
API, with time travel (``snapshot`` / ``timestamp``) and the filters Spark pushes used to skip
data files (:mod:`...lake.file_skipping`, the native read's rules).

Planning runs on the driver (a Python worker): the table's state at the snapshot, the files
the pushed filters cannot rule out, grouped into tasks of about :data:`TASK_BYTES`; each task
reads its files with pyarrow (:mod:`.arrow_read`). Spark still applies every filter to the
rows: a kept file may hold rows the filter drops.

The native read (``SparkLake.table(...).read()``) is faster for anything but small tables
(docs/streaming.md has the figures): it is Spark's own Parquet scan (column pruning,
vectorised decoding, whole-stage code generation), while here every row crosses from a
Python worker to the JVM as Arrow and every column is read.
"""

from __future__ import annotations

import datetime as dt
import inspect
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from ...lake import file_skipping
from ...lake.catalog import Catalog
from ...lake.errors import InvalidArgumentError, NotFoundError
from ...lake.models import ColumnInfo, DataFile
from .. import skipping
from ..read import _deleted_positions
from ..table_state import TableState, load_state
from . import arrow_read, workers
from .options import LakeOptions, ReadOptions

# files are grouped into tasks of about this many bytes (at most _TASK_FILES files)
TASK_BYTES = 128 * 1024 * 1024
_TASK_FILES = 64
# PySpark's worker that plans a read whose filters Spark pushes (pushdown enabled)
PUSHDOWN_WORKER = "data_source_pushdown_filters.py"
# pushed filters on these Python value types are judged against file statistics
_JUDGED_VALUES = (bool, int, float, Decimal, str, dt.date)


def snapshot_of(lake: Catalog, options: ReadOptions) -> int | None:
    """The snapshot a read is pinned to (``None``: the latest)."""
    if options.snapshot is not None:
        return lake.snapshot(version=options.snapshot).snapshot_id
    if options.timestamp is not None:
        return lake.snapshot(timestamp=options.timestamp).snapshot_id
    return None


def table_state(options: LakeOptions, at: int | None, contents: bool) -> TableState:
    """The table's state, with an error naming the table and the fix when it is unknown."""
    try:
        return load_state(options.open(), options.schema_name, options.table_name, at=at,
                          contents=contents)
    except NotFoundError as exc:
        raise NotFoundError(
            f'format("ducklake") cannot read {options.table}: {exc}. Check the table option '
            "(schema.table) and the catalog") from None


@dataclass(frozen=True)
class FilesPartition(InputPartition):
    files: tuple[arrow_read.FilePart, ...]


@dataclass(frozen=True)
class InlinedPartition(InputPartition):
    part: arrow_read.InlinedPart


def partitions_of(state: TableState, out: arrow_read.Target,
                  files: list[arrow_read.FilePart]) -> list[InputPartition]:
    """Tasks for the files (grouped by size) and one per block of inlined rows."""
    tasks: list[InputPartition] = []
    group: list[arrow_read.FilePart] = []
    size = 0
    sizes = {f.data_file_id: f.file_size_bytes for f in state.data_files}
    for part in files:
        group.append(part)
        size += sizes.get(part.data_file_id, 0)
        if size >= TASK_BYTES or len(group) >= _TASK_FILES:
            tasks.append(FilesPartition(tuple(group)))
            group, size = [], 0
    if group:
        tasks.append(FilesPartition(tuple(group)))
    tasks.extend(InlinedPartition(arrow_read.inlined_part(block, state, out))
                 for block in state.inlined if block.values)
    return tasks


def read_partition(partition: InputPartition, out: arrow_read.Target
                   ) -> Iterator[pa.RecordBatch]:
    if isinstance(partition, FilesPartition):
        for part in partition.files:
            yield from arrow_read.read_file(part, out)
    elif isinstance(partition, InlinedPartition):
        yield from partition.part.rows.to_batches()


class LakeBatchReader(DataSourceReader):
    """Reads the table at one snapshot, pinned when the read is planned (the latest unless
    ``snapshot`` or ``timestamp`` says otherwise); with :attr:`predicates` (pushed filters,
    :class:`LakeFilteringReader`) it reads only the files they cannot rule out."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        lake = options.lake.open()
        at = snapshot_of(lake, options)
        self.at = lake.latest_snapshot().snapshot_id if at is None else at
        state = table_state(options.lake, self.at, contents=False)
        self.out = arrow_read.target(state)
        if list(self.out.names) != schema.fieldNames():
            raise InvalidArgumentError(
                f"the columns of {options.lake.table} changed while the read was planned "
                f"({', '.join(schema.fieldNames())} -> {', '.join(self.out.names)}); read "
                "again")
        self.columns = {c.column_name.lower(): c for c in state.columns}
        self.predicates: list[file_skipping.Predicate] = []

    def partitions(self) -> Sequence[InputPartition]:
        state = table_state(self.options.lake, self.at, contents=True)
        if self.predicates:
            state = replace(state, data_files=_kept(self.options.lake.open(), state,
                                                   file_skipping.And(tuple(self.predicates))))
        files = arrow_read.file_parts(state, _deleted_positions(state))
        return partitions_of(state, self.out, files)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        workers.begin_call()
        yield from read_partition(partition, self.out)


class LakeFilteringReader(LakeBatchReader):
    """The batch reader with filter pushdown: Spark refuses a reader that implements
    ``pushFilters`` unless ``spark.sql.python.filterPushdown.enabled`` is set, so this class
    is used only when it is (:func:`pushdown_enabled`)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        for item in filters:
            predicate = _predicate(item, self.columns)
            if predicate is not None:
                self.predicates.append(predicate)
        return filters  # only files are skipped: Spark filters the rows


def pushdown_enabled() -> bool:
    """Whether the planning worker runs with Python filter pushdown enabled.

    Spark does not hand the setting to the data source; which worker calls
    ``DataSource.reader`` tells it (PySpark 4.1-4.3). With pushdown enabled and filters to
    push, the JVM plans the read in :data:`PUSHDOWN_WORKER` (it runs only then, and calls
    ``pushFilters`` on the reader it gets); otherwise in ``plan_data_source_read.py``, whose
    ``_main`` holds the setting in its local ``enable_pushdown`` (true there when the query
    had no filter to push). Anything else found (another PySpark) reads as disabled: the read
    then works without skipping files.
    """
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_name == "_main":
            if "enable_pushdown" in frame.f_locals:
                return frame.f_locals["enable_pushdown"] is True
            if os.path.basename(frame.f_code.co_filename) == PUSHDOWN_WORKER:
                return True
        frame = frame.f_back
    return False


def _kept(lake: Catalog, state: TableState, predicate: file_skipping.Predicate) -> list[DataFile]:
    """The files of ``state`` whose partition values and statistics allow a match."""
    columns = file_skipping.columns_of(predicate)
    partitions, statistics = skipping.skipping_stats(lake, state, columns)
    return file_skipping.skip_files(state.data_files, predicate, partitions, statistics).kept


def _predicate(item: Filter, by_name: dict[str, ColumnInfo]) -> file_skipping.Predicate | None:
    """A pushed filter as a file-skipping predicate, when the catalog can judge it."""
    attribute: tuple[str, ...] = tuple(getattr(item, "attribute", ()))
    if len(attribute) != 1:
        return None
    column = by_name.get(str(attribute[0]).lower())
    if column is None or column.type.name not in file_skipping.SKIPPING_TYPES:
        return None
    if isinstance(item, IsNull):
        return file_skipping.IsNull(column.column_id)
    if isinstance(item, IsNotNull):
        return file_skipping.IsNull(column.column_id, negated=True)
    if isinstance(item, In):
        values = tuple(item.value)
        if not values or not all(_judged(v) for v in values):
            return None
        return file_skipping.In(column.column_id, column.type, values)
    ops = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
           LessThanOrEqual: "<="}
    op = ops.get(type(item))
    value: Any = getattr(item, "value", None)
    if op is None or not _judged(value):
        return None
    return file_skipping.Compare(column.column_id, column.type, op, value)


def _judged(value: Any) -> bool:
    """Values compared exactly as Spark compares them: no timestamps (Spark hands them over
    in the session's zone, naive)."""
    return isinstance(value, _JUDGED_VALUES) and not isinstance(value, dt.datetime)
