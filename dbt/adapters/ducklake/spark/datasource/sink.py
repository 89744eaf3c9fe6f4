"""``format("ducklake")`` writes: the streaming sink and batch ``df.write``.

Writes (streaming ``append`` and ``complete``, batch ``append``, ``overwrite`` and
``errorifexists``) run in two halves. Each task (:meth:`_LakeWriter.write`, on an executor)
either hands its rows back in its commit message, when they are few enough to be inlined,
or writes them as Parquet files of the table with pyarrow. The commit (on the driver, in a
Python worker with no SparkSession) then registers the files (statistics from their
footers), or inlines the rows when the whole batch is within the table's inlining limit, in
one catalog transaction.

A streaming batch lands exactly once: the commit carries the stream's id and the batch id
(:mod:`...lake.streams`), so a batch Spark replays after a crash commits nothing and a reset
checkpoint is refused. The stream's id is the ``streamId`` option, else the query's
checkpoint location.

Tasks need the package (and pyarrow) where they run, as any Python UDF does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ...lake import data_files, faults
from ...lake import files as lake_files
from ...lake.branch import guarding_branch
from ...lake.catalog import Catalog
from ...lake.commit import Transaction
from ...lake.errors import (
    CommitConflictError,
    CommitUnknownError,
    InvalidArgumentError,
    NotFoundError,
    SchemaMismatchError,
)
from ...lake.models import NewDataFile, Snapshot, TableRef
from ...lake.partitions import hive_directory, partition_value
from ...lake.streams import StreamBatch
from .. import write as spark_write
from ..table_state import load_state
from . import workers
from .flush import flush, inlined_row_count
from .options import SinkOptions
from .plan import CurrentPlan, Plan, current_plan

# A task writes a file each time it holds this much Arrow data; the last one may be smaller.
TASK_FILE_BYTES = 256 * 1024 * 1024


# ---------------------------------------------------------------------------------- writing
@dataclass
class LakeCommitMessage(WriterCommitMessage):
    """One task's output: files it wrote, or its few rows for the commit to inline."""

    files: list[NewDataFile] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # absolute, to remove if not committed
    rows: pa.Table | None = None
    # the plan the task wrote with: Spark's commit worker makes a new writer, planned at
    # commit time, so only the messages know what the tasks were given
    plan: Plan | None = None


class _LakeWriter:
    """The two halves of a write; :class:`LakeStreamWriter` and :class:`LakeBatchWriter`
    give them Spark's names."""

    def __init__(self, options: SinkOptions, schema: StructType, overwrite: bool) -> None:
        self.options = options
        self.overwrite = overwrite
        lake = options.open()
        guard = guarding_branch(lake)
        if guard is not None:
            raise InvalidArgumentError(
                f'format("ducklake") cannot write to {options.table} of this lake now: '
                f"{guard} stages every write of this process on a branch, published as one "
                "snapshot at its end, and this write would land on the lake at once, beside "
                "it. Write through a model (a Python model returns its DataFrame), a seed or "
                "run_query; or run the invocation with DUCKLAKE_PUBLISH=per_model.")
        self.schema = schema
        self.plan = current_plan(lake, options, schema).plan

    # ---------------------------------------------------------------- on the executors
    def _write(self, batches: Iterator[pa.RecordBatch]) -> LakeCommitMessage:
        workers.begin_call()
        plan = self.plan
        message = LakeCommitMessage(plan=plan)
        held: list[pa.RecordBatch] = []
        held_rows = held_bytes = 0
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                held.append(batch)
                held_rows += batch.num_rows
                held_bytes += batch.nbytes
                if held_bytes >= TASK_FILE_BYTES and held_rows > plan.inline_limit:
                    self._write_file(message, held)
                    held, held_rows, held_bytes = [], 0, 0
            if not held:
                return message
            rows = pa.Table.from_batches(held)
            if not message.files and rows.num_rows <= plan.inline_limit:
                message.rows = spark_write.conform_arrow(rows, plan.columns)
            else:
                self._write_file(message, held)
        except BaseException:
            _remove(message.paths)
            raise
        return message

    def _write_file(self, message: LakeCommitMessage, batches: list[pa.RecordBatch]) -> None:
        plan = self.plan
        rows = spark_write.conform_arrow(pa.Table.from_batches(batches), plan.columns)
        for new_file, path in write_files(rows, plan.table_dir, plan):
            message.files.append(new_file)
            message.paths.append(path)

    # ---------------------------------------------------------------- on the driver
    def _commit(self, messages: Sequence[WriterCommitMessage | None],
                batch_id: int | None) -> Snapshot | None:
        """Register the tasks' output as one snapshot; ``None`` when there is nothing to
        commit (no rows, and not an overwrite)."""
        got = [m for m in messages if isinstance(m, LakeCommitMessage)]
        paths = [p for m in got for p in m.paths]
        try:
            return self._commit_messages(got, paths, batch_id)
        except CommitUnknownError:
            raise  # the snapshot may hold the files: keep them
        except BaseException:
            _remove(paths)  # the commit certainly did not land
            raise

    def _commit_messages(self, got: list[LakeCommitMessage], paths: list[str],
                         batch_id: int | None) -> Snapshot | None:
        options, plan = self.options, self.plan
        lake = options.open()
        current = self._current(lake, [m.plan for m in got if m.plan is not None] or [plan])
        tx = Transaction(lake, current.snapshot)
        tx.files_written.extend(paths)
        if batch_id is not None:
            if options.stream_id is None:
                raise InvalidArgumentError(
                    'the ducklake sink needs the query\'s checkpoint: .option('
                    '"checkpointLocation", ...) on writeStream, or .option("streamId", ...) '
                    "naming the stream for good; without one a restarted query would write "
                    "its last batch twice")
            tx.once(StreamBatch(options.stream_id, batch_id, plan.table_id))
        files = [f for m in got for f in m.files]
        small = [m.rows for m in got if m.rows is not None and m.rows.num_rows]
        rows = pa.concat_tables(small) if small else None
        count = sum(f.record_count for f in files) + (rows.num_rows if rows else 0)
        if count == 0 and not self.overwrite:
            return None
        inlined: list[dict[str, Any]] = []
        if rows is not None:
            limit = current.plan.table_inline_limit if plan.inline_limit else 0
            if not files and rows.num_rows <= limit:
                inlined = rows.to_pylist()
            else:
                # the tasks' small remainders, as one more file (written here, on the driver)
                for new_file, path in write_files(rows, current.plan.table_dir, plan):
                    files.append(new_file)
                    tx.files_written.append(path)
        ref = TableRef(plan.table_id)
        if self.overwrite:
            state = load_state(lake, options.lake.schema_name, options.lake.table_name,
                               at=current.snapshot.snapshot_id)
            data_files.replace(tx, ref, files, inlined)
            tx.touch_data_files([f.data_file_id for f in state.data_files])
            tx.replanner = _replaced_anyway
        else:
            data_files.insert(tx, ref, files, inlined)
        info: dict[str, Any] = {"writer": 'spark format("ducklake")'}
        if batch_id is not None:
            info["spark_batch_id"] = batch_id
        snapshot = tx.commit(options.author, options.message, info)
        faults.reach("batch_committed")
        flush_at = options.flush_inlined_rows
        if flush_at is not None and (inlined or tx.replayed) and \
                inlined_row_count(lake, plan.table_id) > flush_at:
            flush(lake, options.lake.schema_name, options.lake.table_name,
                  {"writer": 'spark format("ducklake") flushInlinedRows'}, options.author)
        return snapshot

    def _current(self, lake: Catalog, written: list[Plan]) -> CurrentPlan:
        """The table's plan now, which must still be the one the tasks wrote with
        (``written``)."""
        options = self.options
        try:
            current = current_plan(lake, options, self.schema)
        except NotFoundError:
            raise NotFoundError(
                f"{options.table} was dropped while this write ran; nothing was "
                "committed") from None
        except SchemaMismatchError as exc:
            raise SchemaMismatchError(
                f"the columns of {options.table} changed while this write ran (a concurrent "
                f"ALTER), so nothing was committed: {exc}. Write data with the table's "
                "columns (a streaming query: restart it with them)") from None
        for plan in written:
            self._check_unchanged(plan, current.plan)
        return current

    def _check_unchanged(self, plan: Plan, now: Plan) -> None:
        table = self.options.table
        if now.table_id != plan.table_id:
            raise NotFoundError(
                f"{table} was dropped and created again while this write ran (table "
                f"id {plan.table_id} is now {now.table_id}); nothing was committed")
        if now.columns != plan.columns or now.keys != plan.keys:
            raise CommitConflictError(
                f"the columns or partitioning of {table} changed while this write "
                "ran (a concurrent ALTER); nothing was committed. Run the write again (a "
                "streaming query: restart it) to write with the table's new columns")

    def _abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        _remove([p for m in messages if isinstance(m, LakeCommitMessage) for p in m.paths])


def write_files(rows: pa.Table, table_dir: str, plan: Plan) -> list[tuple[NewDataFile, str]]:
    """``rows`` (conformed to the table) as files of the table: one, or for a partitioned
    table one per partition, in DuckDB's hive directories with the partition values; a file
    already written is removed if a later one fails."""
    if not plan.keys:
        return [spark_write.write_rows_file(rows, table_dir, plan.columns, plan.parquet)]
    layout = tuple((k.column.column_id, k.transform_text) for k in plan.keys)
    groups: dict[tuple[str | None, ...], list[int]] = {}
    values = [rows.column(k.column.column_name).to_pylist() for k in plan.keys]
    for i, row in enumerate(zip(*values)):
        key = tuple(partition_value(k, v) for k, v in zip(plan.keys, row))
        groups.setdefault(key, []).append(i)
    out: list[tuple[NewDataFile, str]] = []
    try:
        for key, indices in groups.items():
            directory = hive_directory(plan.keys, key)
            new_file, path = spark_write.write_rows_file(
                rows.take(pa.array(indices, pa.int64())), table_dir + directory,
                plan.columns, plan.parquet)
            out.append((replace(new_file, path=directory + new_file.path,
                                partition_values=[(k.index, v) for k, v in zip(plan.keys, key)],
                                partition_layout=layout), path))
    except BaseException:
        _remove([path for _, path in out])
        raise
    return out


def _remove(paths: list[str]) -> None:
    for path in paths:
        lake_files.remove_file(path)  # one that cannot be removed is an orphan for cleanup


def _replaced_anyway(since: Snapshot, until: Snapshot) -> None:
    """Rows inserted meanwhile need no plan: an overwrite ends every live file and row."""


class LakeStreamWriter(_LakeWriter, DataSourceStreamArrowWriter):
    """``writeStream.format("ducklake")``: one snapshot per micro-batch, at most once."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._commit(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._abort(messages)


class LakeBatchWriter(_LakeWriter, DataSourceArrowWriter):
    """``df.write.format("ducklake")``: ``append`` or ``overwrite``, one snapshot."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._commit(messages, None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._abort(messages)


__all__ = ["LakeBatchWriter", "LakeCommitMessage", "LakeStreamWriter"]
