"""What a ``format("ducklake")`` write needs to know of its table, read once per stream.

A streaming query plans and commits every micro-batch from new writer objects (Spark calls
``streamWriter`` twice per batch, in a driver-side Python worker), and each used to read the
table from the catalog again: the table, its columns, its options and its partition spec,
about 5 ms of catalog reads each time, three times per batch for what changes only with DDL.

:func:`current_plan` keeps the plan per Python worker and revalidates it with one catalog
transaction of two small reads: the latest snapshot's ``schema_version`` (DuckLake bumps it
for every CREATE, DROP, RENAME and ALTER, ``SET PARTITIONED BY`` included, and a pure data
commit keeps it) and the ``ducklake_metadata`` rows (``set_option`` changes the inlining
limit or the Parquet options without a snapshot). Either differing reads the plan again, so a
concurrent DDL invalidates it; a DDL committed after this check and before the write's commit
is the commit's conflict check's to catch, as for every write.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ...lake import options as lake_options
from ...lake.catalog import Catalog
from ...lake.errors import InvalidArgumentError, NotFoundError
from ...lake.inlining.rows import can_inline
from ...lake.models import ColumnInfo, Snapshot
from ...lake.options import ParquetOptions
from ...lake.partitions import PartitionKey, keys_of_spec
from .. import write as spark_write
from ..table_state import load_state
from .options import LakeOptions, SinkOptions

# Plans kept per worker: a worker serves few streams, but each distinct one keeps its own.
_PLANS_KEPT = 32


@dataclass(frozen=True)
class Plan:
    """What a task needs to write the table's files (pickled to the executors)."""

    table_id: int
    table_dir: str
    columns: list[ColumnInfo]
    parquet: ParquetOptions
    inline_limit: int  # 0: never inline
    keys: tuple[PartitionKey, ...] = ()  # the partitioned table's keys
    # the table's inlining limit; ``inline_limit`` is 0 where its columns cannot be inlined
    table_inline_limit: int = 0


@dataclass(frozen=True)
class CurrentPlan:
    """A plan and the latest snapshot it was found valid at (a commit's base)."""

    plan: Plan
    snapshot: Snapshot


@dataclass(frozen=True)
class _Kept:
    plan: Plan
    schema_version: int
    stored: tuple[tuple[Any, ...], ...]  # the ducklake_metadata rows it was read with


_KEPT: dict[tuple[LakeOptions, str], _Kept] = {}
_LOCK = threading.Lock()


def current_plan(lake: Catalog, options: SinkOptions, schema: StructType) -> CurrentPlan:
    """The write plan of ``options.table`` for data of ``schema``, as of the latest
    snapshot: kept from an earlier call while the lake's schema version and options are the
    same, else read (and checked against ``schema``) again."""
    key = (options.lake, schema.json())
    with lake.read() as conn:
        latest = lake.latest_snapshot(conn)
        stored = tuple(sorted(lake_options.stored_options(lake, conn), key=repr))
    with _LOCK:
        kept = _KEPT.get(key)
    if kept is not None and kept.schema_version == latest.schema_version and \
            kept.stored == stored:
        return CurrentPlan(kept.plan, latest)
    plan, snapshot = read_plan(lake, options, schema)
    if snapshot.schema_version == latest.schema_version:
        # kept with what was read before it: a later change of either reads it again
        with _LOCK:
            _KEPT[key] = _Kept(plan, latest.schema_version, stored)
            while len(_KEPT) > _PLANS_KEPT:
                _KEPT.pop(next(iter(_KEPT)))
    return CurrentPlan(plan, snapshot)


def forget() -> None:
    """Drop every kept plan (tests; a worker never needs to)."""
    with _LOCK:
        _KEPT.clear()


def read_plan(lake: Catalog, options: SinkOptions,
              schema: StructType) -> tuple[Plan, Snapshot]:
    """The write plan read from the catalog, and the snapshot it was read at."""
    try:
        state = load_state(lake, options.lake.schema_name, options.lake.table_name, contents=False)
    except NotFoundError as exc:
        raise NotFoundError(
            f'format("ducklake") cannot write {options.table}: {exc}. Create it first '
            "(SparkLake.create_table, or a dbt model); a write does not create tables"
        ) from None
    with lake.read() as conn:
        snapshot = lake.snapshot(version=state.snapshot_id, conn=conn)
        parquet = lake_options.parquet_options(lake, conn, state.schema.schema_id,
                                               state.table.table_id)
        spec = lake.partition_spec(state.table.table_id, state.snapshot_id, conn)
    keys = keys_of_spec(spec, state.columns) if spec is not None else ()
    if not spark_write.writes_on_driver(state.columns, ()):
        raise InvalidArgumentError(
            f'format("ducklake") does not write {options.table} yet: it has a column Spark '
            "writes in another physical form. Write it from foreachBatch with "
            "SparkLake.table(...).append(batch_df, stream_id=..., batch_id=...)")
    # The data's columns must be the table's (by name, types that widen to the table's):
    # checked here, on the driver, before any task runs.
    spark_write.conform_arrow(to_arrow_schema(schema).empty_table(), state.columns)
    limit = state.inlining_row_limit if can_inline(state.columns, lake.dialect) else 0
    return Plan(state.table.table_id, state.table_dir, state.columns, parquet, limit,
                tuple(keys), state.inlining_row_limit), snapshot
