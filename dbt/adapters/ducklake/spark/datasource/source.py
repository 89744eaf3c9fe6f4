"""``spark.readStream.format("ducklake")``: the rows each new snapshot of a table inserts.

Offsets are snapshot ids: ``{"snapshot": n}`` means every row inserted up to snapshot ``n`` was
emitted. A new query starts with the table's rows at its first snapshot (the offset carries
``"initial": true`` until that first batch), like Delta's source; ``startingSnapshot`` starts
instead at the inserts of a snapshot (or ``latest``: only later commits). Each micro-batch
ends at a snapshot that changed the table, at most ``maxSnapshotsPerTrigger`` of them (Spark
asks for all available under ``availableNow``, which stops at the latest snapshot of the
query's start).

Inserted rows are DuckDB's ``ducklake_table_insertions`` (:mod:`...lake.changes`): rows of
files a snapshot in the range wrote, and of flushed or merged files only those whose embedded
snapshot id is in the range, so rows a flush or compaction rewrote are never emitted again.
A commit that deletes or updates rows of the table fails the stream
(:class:`StreamChangeError`) unless ``skipChangeCommits`` skips such commits whole (their
inserts too, as Delta does) or ``readChangeFeed`` emits DuckDB's ``table_changes`` rows
(``change_type``, ``snapshot_id``, ``rowid``, then the columns). A dropped table, or one whose
columns changed, ends the stream with an error too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StringType, StructField, StructType

from ...lake import changes as lake_changes
from ...lake.changes import ChangeRange
from ...lake.errors import DuckLakeError, InvalidArgumentError, NotFoundError
from ...lake.inlining import rows as inlined_data
from ...lake.models import ColumnInfo, split_changes
from ..read import _deleted_positions
from ..table_state import TableState, file_column_ids
from . import arrow_read, workers
from .options import ReadOptions
from .reader import partitions_of, read_partition, table_state

CHANGE_TYPE = "change_type"
_DELETES = ("deleted_from_table", "inlined_delete")
_ENDS = ("dropped_table", "altered_table")


class StreamChangeError(DuckLakeError):
    """A commit the stream cannot emit as inserted rows (a delete, an update, a drop)."""


def change_feed_schema(columns: Sequence[ColumnInfo]) -> StructType:
    lineage = arrow_read.spark_schema(columns, lineage=True)
    return StructType([StructField(CHANGE_TYPE, StringType(), True), *lineage.fields])


@dataclass(frozen=True)
class ChangesPartition(InputPartition):
    """One micro-batch of the change feed, read and paired in one task."""

    inserted: tuple[arrow_read.FilePart, ...]
    inserted_inlined: tuple[arrow_read.InlinedPart, ...]
    deleted: tuple[tuple[arrow_read.FilePart, tuple[tuple[int, int], ...]], ...]
    deleted_inlined: tuple[arrow_read.InlinedPart, ...]


class LakeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.options = options
        state = table_state(options.lake, None, contents=False)
        self.table_id = state.table.table_id
        self.column_ids = [c.column_id for c in state.columns]
        self.lineage = arrow_read.target(state, lineage=True)
        self.out = arrow_read.target(state)
        self.until: int | None = None  # availableNow: the latest snapshot at the start

    # ---------------------------------------------------------------- offsets
    def initialOffset(self) -> dict[str, Any]:
        lake = self.options.lake.open()
        latest = lake.latest_snapshot().snapshot_id
        start = self.options.starting_snapshot
        if start is None:
            return {"snapshot": latest, "initial": True}
        if start == "latest":
            return {"snapshot": latest}
        if not isinstance(start, int) or start > latest:
            raise InvalidArgumentError(
                f"startingSnapshot {start} is after the lake's latest snapshot ({latest})")
        return {"snapshot": start - 1}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_snapshots is not None:
            return ReadMaxFiles(self.options.max_snapshots)  # a snapshot, to us
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.until = self.options.lake.open().latest_snapshot().snapshot_id

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        cap = self.until if self.until is not None else \
            self.options.lake.open().latest_snapshot().snapshot_id
        touching = self._touching(int(start["snapshot"]), cap)
        if isinstance(limit, ReadMaxFiles) and len(touching) > limit.max_files:
            touching = touching[:limit.max_files]
        end = touching[-1][0] if touching else int(start["snapshot"])
        return {"snapshot": end}

    def _touching(self, after: int, until: int) -> list[tuple[int, list[str]]]:
        """Snapshots in ``(after, until]`` that changed the table, with their change kinds."""
        out = []
        for snapshot in self.options.lake.open().snapshots(since=after):
            if snapshot.snapshot_id > until:
                break
            kinds = [kind for kind, _, value in
                     (t.partition(":") for t in split_changes(snapshot.changes_made))
                     if value == str(self.table_id)]
            if kinds:
                out.append((snapshot.snapshot_id, kinds))
        return out

    # ---------------------------------------------------------------- batches
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, last = int(start["snapshot"]), int(end["snapshot"])
        skipped = self._check(first, last)
        tasks: list[InputPartition] = []
        if start.get("initial") and not self.options.change_feed:
            state = self._state(first)
            tasks += partitions_of(state, self.lineage, arrow_read.file_parts(
                state, _deleted_positions(state)))
        if last > first:
            span = ChangeRange(first + 1, last)
            if self.options.change_feed:
                tasks.append(self._changes(span))
            else:
                tasks += self._insertions(span)
        return [t if isinstance(t, ChangesPartition) else _Filtered(t, tuple(skipped))
                for t in tasks]

    def _check(self, first: int, last: int) -> list[int]:
        """The snapshots to skip; raises for a change the stream cannot emit."""
        skipped = []
        table = self.options.lake.table
        for snapshot_id, kinds in self._touching(first, last):
            ended = [k for k in kinds if k in _ENDS]
            if ended:
                what = "dropped" if "dropped_table" in ended else "changed the columns of"
                raise StreamChangeError(
                    f"snapshot {snapshot_id} {what} {table}, which this stream reads; start "
                    "a new query (a new checkpoint) to read the table as it is now")
            if any(k in _DELETES for k in kinds) and not self.options.change_feed:
                if not self.options.skip_change_commits:
                    raise StreamChangeError(
                        f"snapshot {snapshot_id} deleted or updated rows of {table}, which "
                        "this stream reads as inserted rows only. Set .option("
                        '"skipChangeCommits", "true") to skip such commits (their inserted '
                        'rows too), or .option("readChangeFeed", "true") to read every change')
                skipped.append(snapshot_id)
        return skipped

    def _state(self, at: int) -> TableState:
        try:
            state = table_state(self.options.lake, at, contents=True)
        except NotFoundError as exc:
            raise StreamChangeError(str(exc)) from None
        if state.table.table_id != self.table_id:
            raise StreamChangeError(f"{self.options.lake.table} was dropped and created again")
        return state

    def _insertions(self, span: ChangeRange) -> list[InputPartition]:
        lake = self.options.lake.open()
        base = self._state(span.end)
        with lake.read() as conn:
            files = lake_changes.insertion_files(lake, self.table_id, span, conn)
            inlined = inlined_data.read_rows(
                lake, conn, self.table_id, "begin_snapshot >= :a AND begin_snapshot <= :b",
                {"a": span.start, "b": span.end})
            file_columns = file_column_ids(lake, conn, files)
        state = replace(base, data_files=files, inlined=inlined, file_columns=file_columns)
        parts = arrow_read.file_parts(state, {}, (span.start, span.end))
        return partitions_of(state, self.lineage, parts)

    def _changes(self, span: ChangeRange) -> ChangesPartition:
        lake = self.options.lake.open()
        base = self._state(span.end)
        with lake.read() as conn:
            files = lake_changes.insertion_files(lake, self.table_id, span, conn)
            params = {"a": span.start, "b": span.end}
            inserted = inlined_data.read_rows(
                lake, conn, self.table_id, "begin_snapshot >= :a AND begin_snapshot <= :b",
                params)
            deleted = inlined_data.read_rows(
                lake, conn, self.table_id,
                "end_snapshot IS NOT NULL AND end_snapshot >= :a AND end_snapshot <= :b", params)
            scans = lake_changes.deletion_scans(lake, self.table_id, span, conn)
        state = replace(base, data_files=files)
        removed = []
        for item in scans:
            rows = lake_changes.deleted_rows(item, base.table_dir, span)
            if rows:
                f = replace(item.data_file, begin_snapshot=item.snapshot_id)
                part = arrow_read.file_parts(replace(base, data_files=[f]), {})[0]
                removed.append((part, tuple((p, -1 if s is None else s)
                                            for p, s in sorted(rows.items()))))
        return ChangesPartition(
            tuple(arrow_read.file_parts(state, {}, (span.start, span.end))),
            tuple(arrow_read.inlined_part(b, base, self.lineage) for b in inserted),
            tuple(removed),
            tuple(arrow_read.inlined_part(
                replace(b, begin_snapshots=[int(e or 0) for e in b.end_snapshots]), base,
                self.lineage) for b in deleted))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        workers.begin_call()
        if isinstance(partition, ChangesPartition):
            yield from _change_rows(partition, self.lineage)
            return
        assert isinstance(partition, _Filtered)
        for batch in read_partition(partition.inner, self.lineage):
            if partition.skipped:
                batch = batch.filter(pc.invert(pc.is_in(
                    batch.column(0), value_set=pa.array(partition.skipped, pa.int64()))))
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays(batch.columns[2:], schema=self.out.arrow)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: offsets are snapshot ids the catalog keeps."""


@dataclass(frozen=True)
class _Filtered(InputPartition):
    """A read task of a micro-batch, and the snapshots whose rows it leaves out."""

    inner: InputPartition
    skipped: tuple[int, ...]


def _change_rows(partition: ChangesPartition, lineage: arrow_read.Target
                 ) -> Iterator[pa.RecordBatch]:
    """Inserted and deleted rows, an insert and a delete of one row id in one snapshot
    paired into ``update_postimage`` / ``update_preimage``, as DuckDB's table_changes."""
    inserted = [pa.Table.from_batches(list(arrow_read.read_file(p, lineage)), lineage.arrow)
                for p in partition.inserted]
    inserted += [p.rows for p in partition.inserted_inlined]
    deleted = [p.rows for p in partition.deleted_inlined]
    for part, rows in partition.deleted:
        table = pa.Table.from_batches(list(arrow_read.read_file(part, lineage)), lineage.arrow)
        taken = table.take(pa.array([p for p, _ in rows], pa.int64()))
        by = pa.array([s if s >= 0 else None for _, s in rows], pa.int64())
        snapshot = pc.coalesce(by, taken.column(0))
        deleted.append(taken.set_column(0, lineage.arrow.field(0), snapshot))
    ins = pa.concat_tables(inserted) if inserted else lineage.arrow.empty_table()
    dels = pa.concat_tables(deleted) if deleted else lineage.arrow.empty_table()
    ins_keys = set(zip(ins.column(0).to_pylist(), ins.column(1).to_pylist()))
    del_keys = set(zip(dels.column(0).to_pylist(), dels.column(1).to_pylist()))
    for table, other, paired, alone in ((ins, del_keys, "update_postimage", "insert"),
                                        (dels, ins_keys, "update_preimage", "delete")):
        if not table.num_rows:
            continue
        keys = zip(table.column(0).to_pylist(), table.column(1).to_pylist())
        kinds = pa.array([paired if k in other else alone for k in keys], pa.string())
        out = table.add_column(0, pa.field(CHANGE_TYPE, pa.string()), kinds)
        yield from out.to_batches(max_chunksize=arrow_read.BATCH_ROWS)
