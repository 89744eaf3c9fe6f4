"""Writing a DataFrame as DuckLake data files, or as rows small enough to inline.

Spark writes Parquet into a short-lived staging directory inside the table directory; the
driver reads the footers (exact sizes and statistics) and then either moves the files to
DuckLake names (``ducklake-<uuidv7>.parquet``) or, when the write is within the inlining
limit, reads the few rows back and removes the staging directory. No ``_SUCCESS`` or ``.crc``
file and no staging directory outlives the call.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, NullType

from ..lake import faults
from ..lake import files as lake_files
from ..lake.commit import uuid7
from ..lake.delete_files import (
    ROW_ID_COLUMN,
    ROW_ID_FIELD_ID,
    SNAPSHOT_ID_COLUMN,
    SNAPSHOT_ID_FIELD_ID,
)
from ..lake.errors import DataFileError, SchemaMismatchError, UnsupportedTypeError
from ..lake.file_stats import file_column_stats
from ..lake.models import ColumnInfo, NameMappingSpec, NewDataFile
from ..lake.options import DEFAULT_PARQUET_OPTIONS, ParquetOptions
from ..lake.parquet_footer import (
    BoundsOf,
    drop_last_column,
    retype_bytes,
    retype_file,
    set_field_ids,
)
from ..lake.partitions import PartitionKey, hive_directory, partition_value
from ..lake.types import FLOAT_TYPES, LakeType, is_promotion
from . import expressions as sql
from . import hadoop_conf, jvm_classes, local_file_system, physical, statement_sizing
from .partitions import PARTITION_COLUMN, layout_column
from .types import FIELD_ID_KEY, lake_type, write_type

SESSION_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.fieldId.read.enabled": "true",
}
WRITE_OPTIONS = {
    "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "parquet.enable.summary-metadata": "false",
}


def configure(spark: SparkSession) -> None:
    """Set the session options DuckLake files need (runtime SQL confs only), local files'
    modes set without a process each (:mod:`.local_file_system`), and the Hadoop
    configuration every job ships without its properties' resource names
    (:mod:`.hadoop_conf`)."""
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    local_file_system.install(spark)
    hadoop_conf.forget_sources(spark)


# ---------------------------------------------------------------------------------- shaping
def conform(df: DataFrame, columns: Sequence[ColumnInfo], row_ids: bool = False,
            snapshot_ids: bool = False) -> DataFrame:
    """``df`` with exactly the table's columns, in order, cast and tagged with field ids.

    Columns match by name, case-insensitively. A missing or extra column, or a type that
    is neither the column's type nor safely widened to it, is a :class:`SchemaMismatchError`.
    """
    given = _match([f.name for f in df.schema.fields], columns, row_ids, snapshot_ids)
    fields = {f.name: f for f in df.schema.fields}
    out = []
    for column in columns:
        source = fields[given[column.column_name.lower()]]
        target = write_type(column)
        _check_type(source.name, source.dataType, column)
        out.append(Projected(sql.ident(source.name), column.column_name, column.column_id,
                             None if source.dataType == target else target))
    return project(df, out + _hidden_columns(row_ids, snapshot_ids))


def _hidden_columns(row_ids: bool, snapshot_ids: bool) -> list[Projected]:
    """The hidden row-id and snapshot-id columns DuckDB writes, tagged with their field ids."""
    out = []
    if row_ids:
        out.append(Projected(ROW_ID_COLUMN, ROW_ID_COLUMN, ROW_ID_FIELD_ID, LongType()))
    if snapshot_ids:
        out.append(Projected(SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_FIELD_ID,
                             LongType()))
    return out


def conform_physical(df: DataFrame, columns: Sequence[ColumnInfo], row_ids: bool = False,
                    snapshot_ids: bool = False) -> DataFrame:
    """:func:`conform` for flush and compaction of a table with columns Spark cannot write:
    ``df`` holds the table's columns, by name and in their :mod:`.physical` form (what a
    physical scan reads), and the result holds what is written, tagged with field ids."""
    fields = {f.name for f in df.schema.fields}
    out = []
    for column in columns:
        if column.column_name not in fields:
            raise SchemaMismatchError(f"column {column.column_name!r} is missing")
        out.append(Projected(physical.written(sql.ident(column.column_name), column),
                             column.column_name, column.column_id,
                             physical.write_type(column)))
    return project(df, out + _hidden_columns(row_ids, snapshot_ids))


@dataclass(frozen=True)
class Projected:
    """A column of a write's projection: the value (Spark SQL text over the data's columns),
    cast to ``cast`` unless ``None``, named ``name`` and tagged with its field id."""

    expression: str
    name: str
    field_id: int
    cast: DataType | None = None


_PROJECTION_SOURCE = Path(__file__).with_name("DuckLakeProjection.java")


def project(df: DataFrame, columns: Sequence[Projected]) -> DataFrame:
    """``df.select`` of ``columns``: in one py4j call by ``DuckLakeProjection`` (PySpark
    makes about 25 round trips a column), else through PySpark."""
    helper = jvm_classes.instance(df.sparkSession, _PROJECTION_SOURCE, "DuckLakeProjection")
    if helper is not None:
        spec = json.dumps([{"expr": c.expression, "name": c.name, "field_id": c.field_id,
                            "type": None if c.cast is None else c.cast.json()}
                           for c in columns])
        return DataFrame(helper.select(df._jdf, spec), df.sparkSession)  # noqa: SLF001
    out = []
    for c in columns:
        value = F.expr(c.expression)
        if c.cast is not None:
            value = value.cast(c.cast)
        out.append(value.alias(c.name, metadata={FIELD_ID_KEY: c.field_id}))
    return df.select(*out)


def conform_arrow(rows: pa.Table, columns: Sequence[ColumnInfo],
                  row_ids: bool = False) -> pa.Table:
    """The driver-side twin of :func:`conform` for an Arrow table (no Spark job).

    Names match and types are checked exactly as in :func:`conform` (an Arrow type counts as
    the Spark type Spark would read it as; naive timestamps are ``timestamp_ntz``), and values
    are cast to the Arrow types ``DataFrame.toArrow()`` gives for the table's columns, so the
    result is what the Spark path would produce.
    """
    from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type

    given = _match(rows.column_names, columns, row_ids)
    names, arrays = [], []
    for column in columns:
        name = given[column.column_name.lower()]
        source = rows.column(name)
        _check_type(name, from_arrow_type(source.type, prefer_timestamp_ntz=True), column)
        target = to_arrow_type(write_type(column), timezone="UTC")
        names.append(column.column_name)
        arrays.append(source if source.type == target else source.cast(target, safe=True))
    if row_ids:
        names.append(ROW_ID_COLUMN)
        arrays.append(rows.column(ROW_ID_COLUMN).cast(pa.int64()))
    return pa.Table.from_arrays(arrays, names=names)


def _match(names: Sequence[str], columns: Sequence[ColumnInfo], row_ids: bool,
           snapshot_ids: bool = False) -> dict[str, str]:
    """Lower-case table column name -> the data's column name; a mismatch is an error."""
    given = {n.lower(): n for n in names}
    wanted = {c.column_name.lower() for c in columns}
    extra = [n for n in names if n.lower() not in wanted
             and not (row_ids and n == ROW_ID_COLUMN)
             and not (snapshot_ids and n == SNAPSHOT_ID_COLUMN)]
    missing = [c.column_name for c in columns if c.column_name.lower() not in given]
    if extra or missing:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if extra:
            parts.append("not in the table: " + ", ".join(extra))
        raise SchemaMismatchError(
            "the data does not match the table's columns (" + "; ".join(parts) + "); the table "
            "has " + ", ".join(f"{c.column_name} {c.column_type}" for c in columns)
        )
    return given


def _check_type(name: str, data_type: Any, column: ColumnInfo) -> None:
    if isinstance(data_type, NullType):
        return
    try:
        given = lake_type(data_type, name)
    except Exception as exc:
        raise SchemaMismatchError(str(exc)) from exc
    if column.type.nested or given in ("struct", "list", "map"):
        if given != column.type.name:
            raise SchemaMismatchError(
                f"column {name!r} is {data_type.simpleString()} in the data but "
                f"{column.column_type} in the table")
        return
    if given == str(column.type):
        return
    if not is_promotion(LakeType.parse(given), column.type):
        raise SchemaMismatchError(
            f"column {name!r} is {data_type.simpleString()} ({given}) in the data but "
            f"{column.column_type} in the table, and {given} does not widen to it; cast it "
            "explicitly")


def parquet_leaves(columns: Sequence[ColumnInfo]) -> dict[str, tuple[int, LakeType]]:
    """Spark's Parquet leaf paths (``s.x``, ``l.list.element``, ``m.key_value.key``) -> ids."""
    out: dict[str, tuple[int, LakeType]] = {}

    def visit(column: ColumnInfo, path: str) -> None:
        kind = column.type.name
        if kind == "struct":
            for child in column.children:
                visit(child, f"{path}.{child.column_name}")
        elif kind == "list":
            visit(column.children[0], f"{path}.list.element")
        elif kind == "map":
            visit(column.children[0], f"{path}.key_value.key")
            visit(column.children[1], f"{path}.key_value.value")
        else:
            out[path] = (column.column_id, column.type)

    for column in columns:
        visit(column, column.column_name)
    return out


def field_id_paths(columns: Sequence[ColumnInfo], row_ids: bool = False,
                   snapshot_ids: bool = False) -> dict[tuple[str, ...], int]:
    """Every Spark Parquet node that is a DuckLake column, by path, with its column id.

    These are the ids DuckDB writes itself: top-level columns, struct children, list
    ``element`` and map ``key``/``value`` (not the repeated ``list``/``key_value`` groups).
    """
    out: dict[tuple[str, ...], int] = {}

    def visit(column: ColumnInfo, path: tuple[str, ...]) -> None:
        out[path] = column.column_id
        kind = column.type.name
        if kind == "list":
            visit(column.children[0], path + ("list", "element"))
        elif kind == "map":
            visit(column.children[0], path + ("key_value", "key"))
            visit(column.children[1], path + ("key_value", "value"))
        else:
            for child in column.children:
                visit(child, path + (child.column_name,))

    for column in columns:
        visit(column, (column.column_name,))
    if row_ids:
        out[(ROW_ID_COLUMN,)] = ROW_ID_FIELD_ID
    if snapshot_ids:
        out[(SNAPSHOT_ID_COLUMN,)] = SNAPSHOT_ID_FIELD_ID
    return out


def needs_field_id_patch(columns: Sequence[ColumnInfo]) -> bool:
    """Spark writes no ids on list elements and map keys/values; only then must we patch."""
    return any(n.type.name in ("list", "map") for c in columns for n in c.walk())


def name_mapping(columns: Sequence[ColumnInfo], row_ids: bool = False,
                 snapshot_ids: bool = False) -> tuple[NameMappingSpec, ...] | None:
    """A name mapping for Spark files of tables with lists or maps (Spark writes no ids there).

    Files that carry preserved row ids map the hidden row-id column too, or DuckDB cannot
    find it by name.
    """
    if not any(n.type.name in ("list", "map") for c in columns for n in c.walk()):
        return None

    def spec(column: ColumnInfo, name: str) -> NameMappingSpec:
        kind = column.type.name
        kids: tuple[NameMappingSpec, ...]
        if kind == "list":
            kids = (spec(column.children[0], "list"),)
        elif kind == "map":
            kids = (spec(column.children[0], "key"), spec(column.children[1], "value"))
        else:
            kids = tuple(spec(c, c.column_name) for c in column.children)
        return NameMappingSpec(name, column.column_id, kids)

    specs: tuple[NameMappingSpec, ...] = tuple(spec(c, c.column_name) for c in columns)
    if row_ids:
        specs += (NameMappingSpec(ROW_ID_COLUMN, ROW_ID_FIELD_ID),)
    if snapshot_ids:
        specs += (NameMappingSpec(SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_FIELD_ID),)
    return specs


# ---------------------------------------------------------------------------------- staging
@dataclass
class StagedWrite:
    """Parquet files Spark wrote to a staging directory, with their footers."""

    spark: SparkSession
    staging_dir: str
    files: list[tuple[str, pq.FileMetaData, int, int]] = field(default_factory=list)
    nan_columns: dict[int, bool] = field(default_factory=dict)
    field_ids_complete: bool = True
    partition_keys: tuple[PartitionKey, ...] = ()
    partition_values: dict[str, tuple[str | None, ...]] = field(default_factory=dict)
    # files of new rows in a write split by stage(split_new_rows=True): no row-id column
    new_rows: set[str] = field(default_factory=set)
    owns_staging: bool = True  # False for a part(): the whole write discards the directory

    @property
    def row_count(self) -> int:
        return sum(m.num_rows for _, m, _, _ in self.files)

    def part(self, new_rows: bool) -> StagedWrite:
        """The files of a split write (:func:`stage`'s ``split_new_rows``) that hold new rows,
        or those that hold rows keeping their row ids. A part leaves the staging directory to
        the whole write's :meth:`discard`."""
        files = [f for f in self.files if (f[0] in self.new_rows) == new_rows]
        return replace(self, files=files, owns_staging=False,
                       new_rows={f[0] for f in files} if new_rows else set())

    def read_rows(self) -> pa.Table | None:
        tables = [lake_files.read_table(p) for p, _, _, _ in self.files]
        return pa.concat_tables(tables) if tables else None

    def discard(self) -> None:
        if self.owns_staging:
            _hadoop_delete(self.spark, self.staging_dir)

    def publish(self, table_dir: str, columns: Sequence[ColumnInfo],
                row_ids: bool = False, snapshot_ids: bool = False,
                directory: str = "") -> tuple[list[NewDataFile], list[str]]:
        """Move the files to their DuckLake names; returns the new files and their paths.

        ``directory`` (relative to the table, ending in ``/``) places unpartitioned output in
        a hive directory: compaction keeps a partition's files together, as DuckDB requires.
        """
        leaves = parquet_leaves(columns)
        if self.new_rows and row_ids:
            raise AssertionError("files of new rows carry no row ids: publish them apart")
        mapping = None if self.field_ids_complete else name_mapping(columns, row_ids,
                                                                    snapshot_ids)
        out: list[NewDataFile] = []
        paths: list[str] = []
        keys = self.partition_keys
        layout = tuple((k.column.column_id, k.transform_text) for k in keys) if keys else None
        for path, metadata, size, footer in self.files:
            name = directory + f"ducklake-{uuid7()}.parquet"
            values = self.partition_values.get(path, ())
            if keys:  # hive-style layout, as DuckDB writes partitioned tables
                name = hive_directory(keys, values) + name
            target = table_dir + name
            try:
                _hadoop_rename(self.spark, path, target)
            except Exception as exc:
                for done in paths:
                    _hadoop_delete(self.spark, done)
                self.discard()
                storage = storage_error(exc, table_dir)
                if storage is None:
                    raise
                raise storage from exc
            paths.append(target)
            out.append(NewDataFile(
                path=name, record_count=metadata.num_rows, file_size_bytes=size,
                footer_size=footer,
                column_stats=file_column_stats(metadata, leaves, self.nan_columns),
                mapping=mapping, embeds_row_ids=row_ids,
                partition_values=[(k.index, v) for k, v in zip(keys, values)],
                partition_layout=layout,
            ))
        self.discard()
        return out, paths


def stage(spark: SparkSession, df: DataFrame, table_dir: str,
          columns: Sequence[ColumnInfo], row_ids: bool = False,
          partition_keys: Sequence[PartitionKey] = (), snapshot_ids: bool = False,
          parquet: ParquetOptions = DEFAULT_PARQUET_OPTIONS, sort_by: Sequence[Any] = (),
          single_file: bool = False, drop_after_sort: Sequence[str] = (),
          split_new_rows: bool = False) -> StagedWrite:
    """Have Spark write ``df`` (already conformed) under a staging directory of the table.

    With ``partition_keys`` every file holds the rows of exactly one partition: rows are
    shuffled by their key values (one file per partition and write, not one per task) and
    each file is labelled with DuckDB's partition values from one of its rows.

    ``split_new_rows`` (with ``row_ids``, on a local data path) writes rows that keep their
    row id and new rows (a NULL row id) in one job but into separate files, and removes the
    row-id column from the new rows' files (:func:`.parquet_footer.drop_last_column`), so
    that they take fresh row ids as an insert's do: MERGE's updated and inserted rows.
    :meth:`StagedWrite.part` tells the two kinds of files apart.
    """
    staging = f"{table_dir}{lake_files.STAGING_MARK}{uuid.uuid4().hex}"
    keys = tuple(partition_keys)
    if split_new_rows and not (row_ids and lake_files.is_local(table_dir)):
        raise AssertionError("split_new_rows needs row ids and a local data path")
    try:
        # small inputs: no codegen, one shuffle partition, and one task (so one file) unless
        # the rows were laid out on purpose
        with statement_sizing.sized(spark, df) as small:
            one_task = small and statement_sizing.layout_is_implicit(spark, df)
            observed = _observed(_laid_out(df, keys, sort_by, single_file, split_new_rows,
                                           drop_after_sort, one_task), columns)
            writer = observed.df.write.mode("overwrite")
            for key, value in {**WRITE_OPTIONS, **_spark_parquet_options(parquet)}.items():
                writer = writer.option(key, value)
            if keys or split_new_rows:
                writer = writer.partitionBy(PARTITION_COLUMN)
            writer.parquet(staging)
        values = observed.observation.get
    except BaseException as exc:
        _hadoop_delete(spark, staging)
        storage = storage_error(exc, table_dir)
        if storage is not None:
            raise storage from exc
        raise
    violations = {c.column_name: int(values.get(f"null_{c.column_id}") or 0)
                  for c in observed.required}
    violations = {k: v for k, v in violations.items() if v}
    if violations:
        _hadoop_delete(spark, staging)
        raise not_null_error(violations)
    staged = StagedWrite(spark, staging, partition_keys=keys)
    staged.nan_columns = {c.column_id: bool(values.get(f"nan_{c.column_id}") or 0)
                          for c in observed.floats}
    try:
        _collect_files(staged, columns, row_ids, snapshot_ids, split_new_rows)
    except BaseException:
        staged.discard()
        raise
    faults.reach("files_staged")
    return staged


def _laid_out(df: DataFrame, keys: tuple[PartitionKey, ...], sort_by: Sequence[Any],
              single_file: bool, split_new_rows: bool, drop_after_sort: Sequence[str],
              one_task: bool = False) -> DataFrame:
    """``df`` shuffled and sorted as its files must be: one partition per file, new rows
    apart from kept ones (``split_new_rows``), each file in the table's sort order.

    ``one_task`` (a statement with small inputs) writes an unpartitioned table's rows from
    one task, without a shuffle: one file instead of one per input split (literal rows are
    split over the session's cores), so the write and every later read of the table run one
    task where they ran several, each with its own setup, commit and file to open; and the
    query runs as one stage (:func:`.statement_sizing.one_partition`)."""
    new_kind = F.when(F.col(ROW_ID_COLUMN).isNull(), F.lit(_NEW_ROWS)).otherwise(F.lit("k")) \
        if split_new_rows else None
    if sort_by and not keys and not single_file:
        # The whole write in the sort order (a range-partitioned shuffle), as DuckDB's sort on
        # insert: each file then holds a contiguous range of the keys, so per-file min/max
        # skip files, not only row groups inside them.
        df = df.orderBy(*sort_by)
    if keys:
        layout = layout_column(keys)
        if new_kind is not None:
            layout = F.concat(new_kind, layout)
        df = df.withColumn(PARTITION_COLUMN, layout).repartition(PARTITION_COLUMN)
    elif new_kind is not None:  # each task writes a file of each kind it holds rows of
        df = df.withColumn(PARTITION_COLUMN, new_kind)
    elif single_file:  # compaction output: one file
        df = df.repartition(1)
    if one_task and not keys and not single_file:
        df = statement_sizing.one_partition(df.sparkSession, df).coalesce(1)
    if sort_by:  # after the shuffle, so that each file is written in this order; by the
        # hive column first, which Spark's writer would otherwise sort by again
        by_file = [F.col(PARTITION_COLUMN)] if keys or new_kind is not None else []
        df = df.sortWithinPartitions(*by_file, *sort_by)
    if drop_after_sort:  # columns that only ordered the rows (a projection keeps the order)
        df = df.drop(*drop_after_sort)
    return df


@dataclass(frozen=True)
class _Observed:
    """A write's rows with what Spark counts while writing them: rows, whether each float
    column holds a NaN (for its statistics), NULLs in each NOT NULL column (a violation)."""

    df: DataFrame
    observation: Observation
    floats: list[ColumnInfo]
    required: list[ColumnInfo]


def _observed(df: DataFrame, columns: Sequence[ColumnInfo]) -> _Observed:
    floats = [c for c in columns if c.type.name in FLOAT_TYPES]
    required = [c for c in columns if not c.nulls_allowed]
    observation = Observation(f"ducklake_{uuid.uuid4().hex}")
    metrics = [F.count(F.lit(1)).alias("rows")] + [
        F.max(F.isnan(F.col(sql.ident(c.column_name))).cast("int")).alias(f"nan_{c.column_id}")
        for c in floats
    ] + [
        F.sum(F.col(sql.ident(c.column_name)).isNull().cast("long")).alias(f"null_{c.column_id}")
        for c in required
    ]
    return _Observed(df.observe(observation, *metrics), observation, floats, required)


def _collect_files(staged: StagedWrite, columns: Sequence[ColumnInfo], row_ids: bool,
                   snapshot_ids: bool, split_new_rows: bool) -> None:
    """Find the files Spark wrote, give them DuckDB's column types and complete field ids,
    split off the new rows' files (their row-id column dropped), and read their footers."""
    spark, keys = staged.spark, staged.partition_keys
    patch = needs_field_id_patch(columns)
    ids = field_id_paths(columns, row_ids, snapshot_ids) if patch else {}
    retyped = physical.leaves(columns)
    labels: dict[str, tuple[str | None, ...]] = {}
    for path in _hadoop_list(spark, staged.staging_dir, recursive=bool(keys) or split_new_rows):
        if not path.endswith(".parquet"):
            continue
        if retyped:  # columns written physically get DuckDB's logical types
            if not lake_files.is_local(path):
                raise DataFileError(f"cannot give {path} DuckDB's column types in place: "
                                    "such files are written by stage_arrow")
            local = lake_files.strip_scheme(path)
            retype_file(local, retyped, _bounds_reader(local))
        if patch:
            if lake_files.is_local(path):
                set_field_ids(path, ids)
            else:
                staged.field_ids_complete = False
        if split_new_rows and \
                path.rsplit("/", 2)[-2].startswith(f"{PARTITION_COLUMN}={_NEW_ROWS}"):
            drop_last_column(lake_files.strip_scheme(path), ROW_ID_COLUMN)
            staged.new_rows.add(path)
        metadata, size, footer = lake_files.read_footer(path)
        if metadata.num_rows == 0:
            continue
        staged.files.append((path, metadata, size, footer))
        if keys:
            directory = path.rsplit("/", 1)[0]
            if directory not in labels:
                labels[directory] = _partition_values(path, keys)
            staged.partition_values[path] = labels[directory]


# The hive directory value (prefix) of new rows' files in a split write (stage).
_NEW_ROWS = "n"


def _spark_parquet_options(parquet: ParquetOptions) -> dict[str, str]:
    """Spark's (parquet-java's) writer options for the lake's ``parquet_*`` options."""
    options = {
        # Spark spells "uncompressed" "none"
        "compression": "none" if parquet.compression == "uncompressed" else parquet.compression,
        "parquet.compression.codec.zstd.level": str(parquet.compression_level),
    }
    if parquet.row_group_size is not None:
        options["parquet.block.row.count.limit"] = str(parquet.row_group_size)
    if parquet.row_group_size_bytes is not None:
        options["parquet.block.size"] = str(parquet.row_group_size_bytes)
    if parquet.max_rows_per_file is not None:  # target_file_size, as rows (see dml)
        options["maxRecordsPerFile"] = str(parquet.max_rows_per_file)
    return options


# pyarrow's spelling of the lake's parquet_compression codecs (Spark says "none" as well)
_ARROW_CODECS = {"uncompressed": "none", "lz4_raw": "lz4"}


def stage_arrow(spark: SparkSession, df: DataFrame, table_dir: str,
                columns: Sequence[ColumnInfo], row_ids: bool = False,
                partition_keys: Sequence[PartitionKey] = (), snapshot_ids: bool = False,
                parquet: ParquetOptions = DEFAULT_PARQUET_OPTIONS, sort_by: Sequence[Any] = (),
                drop_after_sort: Sequence[str] = ()) -> StagedWrite:
    """:func:`stage` for files Spark cannot write: a uuid column (DuckDB's
    FIXED_LEN_BYTE_ARRAY(16), :mod:`.physical`), or a data path where a footer cannot be
    patched in place. Spark computes and orders the rows (``df`` as :func:`conform_physical`
    gives it), the driver collects them and writes one file per partition with pyarrow, with
    a field id on every node and DuckDB's column types, into the same staging directory.

    The rows of one write are held on the driver: meant for flush and compaction, whose
    output is bounded by the table's target file size.
    """
    staging = f"{table_dir}{lake_files.STAGING_MARK}{uuid.uuid4().hex}"
    keys = tuple(partition_keys)
    order = list(sort_by)
    if keys:
        df = df.withColumn(PARTITION_COLUMN, layout_column(keys))
        order = [F.col(PARTITION_COLUMN), *order]
    df = df.repartition(1)
    if order:
        df = df.sortWithinPartitions(*order)
    if drop_after_sort:
        df = df.drop(*drop_after_sort)
    try:
        rows = df.toArrow()
    except BaseException as exc:
        storage = storage_error(exc, table_dir)
        if storage is not None:
            raise storage from exc
        raise
    check_not_null(rows, columns)
    staged = StagedWrite(spark, staging, partition_keys=keys)
    staged.nan_columns = _nan_columns(rows, columns)
    retyped = physical.leaves(columns)
    try:
        for index, part in enumerate(_partition_slices(rows) if keys else [rows]):
            if part.num_rows == 0:
                continue
            path = f"{staging}/{index:05d}/part-00000.parquet" if keys else \
                f"{staging}/part-00000.parquet"
            data = _parquet_bytes(_file_table(part, columns), parquet)
            data = retype_bytes(data, retyped, _bounds_reader(data))
            _write_file(path, data, table_dir)
            metadata, size, footer = lake_files.read_footer(path)
            staged.files.append((path, metadata, size, footer))
            if keys:
                staged.partition_values[path] = _partition_values(path, keys)
    except BaseException:
        staged.discard()
        raise
    faults.reach("files_staged")
    return staged


def writes_on_driver(columns: Sequence[ColumnInfo],
                     partition_keys: Sequence[PartitionKey]) -> bool:
    """Whether rows already on the driver can become a file there (:func:`stage_rows`): a
    table without partition keys (the file's partition comes from Spark's layout column)
    and without columns written in their physical form (:mod:`.physical`)."""
    if partition_keys:
        return False
    try:
        return not physical.needs_physical(columns)
    except UnsupportedTypeError:
        return False


def stage_rows(spark: SparkSession, rows: pa.Table, table_dir: str,
               columns: Sequence[ColumnInfo],
               parquet: ParquetOptions = DEFAULT_PARQUET_OPTIONS) -> StagedWrite:
    """Write rows already on the driver (as :func:`conform_arrow` gives them) as one Parquet
    file of the table with pyarrow, for a table :func:`writes_on_driver` accepts: no Spark job.

    A MERGE whose few changed rows were collected, or an Arrow table handed to ``append``,
    would otherwise go back to Spark (a DataFrame from the Arrow table and a write job: about
    0.4 s for a thousand rows, most of a small merge). The file is what Spark would write:
    the same column types (decimals as integers up to 18 digits), a field id on every node,
    the row-id column when the rows have one.
    """
    check_not_null(rows, columns)
    staging = f"{table_dir}{lake_files.STAGING_MARK}{uuid.uuid4().hex}"
    staged = StagedWrite(spark, staging)
    staged.nan_columns = _nan_columns(rows, columns)
    if rows.num_rows == 0:  # no file, as a Spark write leaves none for no rows
        return staged
    try:
        path = f"{staging}/part-00000.parquet"
        _write_file(path, _file_table(rows, columns), table_dir, parquet)
        metadata, size, footer = lake_files.read_footer(path)
        staged.files.append((path, metadata, size, footer))
    except BaseException:
        staged.discard()
        raise
    faults.reach("files_staged")
    return staged


def write_rows_file(rows: pa.Table, table_dir: str, columns: Sequence[ColumnInfo],
                    parquet: ParquetOptions = DEFAULT_PARQUET_OPTIONS,
                    ) -> tuple[NewDataFile, str]:
    """Write rows (as :func:`conform_arrow` gives them) straight to a new DuckLake-named file
    of the table with pyarrow, for writers with no SparkSession (the ``ducklake`` data
    source's tasks and commits); returns the file to register and its absolute path.

    The file is the one :func:`stage_rows` writes, with statistics from its footer. It is
    an orphan until a snapshot registers it: the caller removes it if the commit fails.
    """
    check_not_null(rows, columns)
    name = f"ducklake-{uuid7()}.parquet"
    path = table_dir + name
    _write_file(path, _file_table(rows, columns), table_dir, parquet)
    try:
        metadata, size, footer = lake_files.read_footer(path)
    except BaseException:
        lake_files.remove_file(path)
        raise
    return NewDataFile(
        path=name, record_count=metadata.num_rows, file_size_bytes=size, footer_size=footer,
        column_stats=file_column_stats(metadata, parquet_leaves(columns),
                                       _nan_columns(rows, columns)),
    ), path


def _nan_columns(rows: pa.Table, columns: Sequence[ColumnInfo]) -> dict[int, bool]:
    """Column id -> whether the rows hold a NaN, for the top-level float columns."""
    return {c.column_id: bool(pc.any(pc.is_nan(rows.column(c.column_name))).as_py())
            for c in columns if c.type.name in FLOAT_TYPES}


def _partition_slices(rows: pa.Table) -> list[pa.Table]:
    """The runs of rows (ordered by their partition) that share a partition, without the
    partition column."""
    labels = rows.column(PARTITION_COLUMN).to_pylist()
    rows = rows.drop_columns([PARTITION_COLUMN])
    out, start = [], 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            out.append(rows.slice(start, i - start))
            start = i
    return out


def _file_table(rows: pa.Table, columns: Sequence[ColumnInfo]) -> pa.Table:
    """Collected rows as the file's Arrow table: uuid leaves as 16-byte fixed-size binary and
    every node tagged with its field id (list elements and map keys/values included)."""
    fields, arrays = [], []
    for column in columns:
        array = rows.column(column.column_name)
        target = _arrow_field(column.column_name, column, array.type)
        fields.append(target)
        arrays.append(array if array.type == target.type else array.cast(target.type))
    for name, fid in ((ROW_ID_COLUMN, ROW_ID_FIELD_ID), (SNAPSHOT_ID_COLUMN,
                                                         SNAPSHOT_ID_FIELD_ID)):
        if name in rows.column_names:
            fields.append(pa.field(name, pa.int64(), metadata=_field_id(fid)))
            arrays.append(rows.column(name).cast(pa.int64()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _field_id(fid: int) -> dict[bytes, bytes]:
    return {b"PARQUET:field_id": str(fid).encode()}


def _arrow_field(name: str, column: ColumnInfo, given: pa.DataType,
                 nullable: bool = True) -> pa.Field:
    kind = column.type.name
    target: pa.DataType
    if kind == "struct":
        target = pa.struct([_arrow_field(c.column_name, c, given.field(c.column_name).type)
                            for c in column.children])
    elif kind == "list":
        target = pa.list_(_arrow_field("element", column.children[0], given.value_type))
    elif kind == "map":
        key, value = column.children
        target = pa.map_(_arrow_field("key", key, given.key_type, nullable=False),
                         _arrow_field("value", value, given.item_type))
    elif kind == "uuid":
        target = pa.binary(16)
    else:
        target = given
    return pa.field(name, target, nullable=nullable, metadata=_field_id(column.column_id))


def _parquet_bytes(table: pa.Table, parquet: ParquetOptions) -> bytes:
    """The table as one Parquet file in memory (:func:`_write_parquet`), for a file whose
    bytes are edited before they are written."""
    sink = pa.BufferOutputStream()
    _write_parquet(table, sink, parquet)
    return bytes(sink.getvalue().to_pybytes())


def _write_parquet(table: pa.Table, out: pa.NativeFile, parquet: ParquetOptions) -> None:
    """Write the table as one Parquet file: decimals as INT32/INT64 up to 18 digits, as
    Spark and DuckDB write them; dictionary encoding where it pays (:func:`_dictionary`);
    the lake's codec, zstd level and row group bounds."""
    codec = _ARROW_CODECS.get(parquet.compression, parquet.compression)
    pq.write_table(table, out, compression=codec,
                   compression_level=parquet.compression_level if codec == "zstd" else None,
                   row_group_size=parquet.rows_per_group(table.num_rows, table.nbytes),
                   store_schema=False, store_decimal_as_integer=True,
                   use_dictionary=_dictionary(table))


def _dictionary(table: pa.Table) -> bool | list[str]:
    """The columns to dictionary-encode: those with repeated values. pyarrow encodes every
    column with a dictionary until its page is full, so a column of distinct values (a key,
    a row id, an amount) carries its values twice, in the dictionary and as indices: the
    MERGE benchmark's files came out 40% larger than Spark's, whose writer drops a
    dictionary that does not pay. A table with nested columns keeps pyarrow's default
    (their leaves have paths of their own)."""
    if any(pa.types.is_nested(f.type) for f in table.schema) or table.num_rows == 0:
        return True
    return [name for name, column in zip(table.column_names, table.columns)
            if _repeats(column)]


def _repeats(column: pa.ChunkedArray) -> bool:
    """Whether at most half of the column's values are distinct (a type pyarrow cannot count
    keeps the dictionary), judged on a random sample of its rows (the same for a given
    length; rows at fixed strides alias with periodic values): counting every value cost a
    100,000-row MERGE 0.1 s. The sample's distinct values are compared with the number a
    column of values that each occur twice (half distinct) would show in it."""
    rows = len(column)
    taken = min(rows, _DICTIONARY_SAMPLE)
    if taken < rows:
        picked = np.random.default_rng(rows).choice(rows, taken, replace=False)
        column = column.take(np.sort(picked))
    try:
        distinct = pc.count_distinct(column).as_py()
    except pa.ArrowNotImplementedError:
        return True
    return distinct <= rows / 2 * (1 - (1 - taken / rows) ** 2)


# Rows of a column from which _repeats judges it.
_DICTIONARY_SAMPLE = 10_000


def _write_file(path: str, data: bytes | pa.Table, table_dir: str,
                 parquet: ParquetOptions = DEFAULT_PARQUET_OPTIONS) -> None:
    """Write a file's bytes, or a table streamed into the file as Parquet
    (:func:`_write_parquet`): a MERGE's rows collected on the driver can make a file of
    hundreds of MB, which built in memory first was held twice more."""
    fs, inner = lake_files.filesystem(path)
    try:
        fs.create_dir(inner.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(inner) as out:
            if isinstance(data, pa.Table):
                _write_parquet(data, out, parquet)
            else:
                out.write(data)
    except (OSError, pa.ArrowException) as exc:
        storage = storage_error(exc, table_dir)
        if storage is not None:
            raise storage from exc
        raise DataFileError(f"cannot write {path}: {exc}; nothing was committed") from exc


def _bounds_reader(source: str | bytes) -> BoundsOf:
    """Exact unsigned (min, max) of one column chunk of a Parquet file (a local path or the
    bytes), read back from its values: for :func:`..lake.parquet_footer.retype_file` when the
    writer's signed bounds of an unsigned column cannot be re-ordered."""
    def bounds(row_group: int, path: tuple[str, ...]) -> tuple[int, int] | None:
        handle = pa.BufferReader(source) if isinstance(source, bytes) else source
        table = pq.ParquetFile(handle).read_row_group(row_group, columns=[path[0]])
        values = pc.drop_null(_leaf_values(table.column(0).combine_chunks(), path[1:]))
        if len(values) == 0:
            return None
        width = pa.uint32() if values.type.bit_width == 32 else pa.uint64()
        low_high = pc.min_max(values.view(width))
        return low_high["min"].as_py(), low_high["max"].as_py()

    return bounds


def _leaf_values(array: pa.Array, path: Sequence[str]) -> pa.Array:
    """The values of the leaf at ``path`` (below a top-level column) in ``array``."""
    steps = list(path)
    while steps:
        step = steps.pop(0)
        kind = array.type
        if pa.types.is_map(kind):  # key_value, then key or value
            if steps:
                step = steps.pop(0)
            array = array.keys if step == "key" else array.items
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):  # list, then element
            array = array.flatten()
            if steps:
                steps.pop(0)
        else:  # a struct child, NULL where its parent is
            array = array.flatten()[kind.get_field_index(step)]
    return array


def _partition_values(path: str, keys: Sequence[PartitionKey]) -> tuple[str | None, ...]:
    """DuckDB's partition values of a file whose rows all share one partition."""
    names = list(dict.fromkeys(k.column.column_name for k in keys))
    row = lake_files.first_row(path, names)
    return tuple(partition_value(k, row[k.column.column_name]) for k in keys)


# ---------------------------------------------------------------------------------- errors
# Messages of the operating system's and Hadoop's storage errors, as they appear (in some
# cause) of Spark's job failure, and what each means for the user.
STORAGE_ERRORS = (
    ("No space left on device", "the data path is full (no space left on device)"),
    ("Disk quota exceeded", "the data path is over its disk quota"),
    ("Read-only file system", "the data path is on a read-only file system"),
    ("Permission denied", "permission denied on the data path"),
    ("AccessDenied", "the object store denied access to the data path"),
    ("Mkdirs failed", "cannot create directories under the data path"),
)


def storage_error(exc: BaseException, table_dir: str) -> DataFileError | None:
    """A clear :class:`DataFileError` for a write that failed on storage, else ``None``.

    Spark reports a failed write as a job abort whose first line names neither the path nor
    the cause; the cause is in the JVM's stack trace text.
    """
    text = str(exc)
    for needle, meaning in STORAGE_ERRORS:
        at = text.lower().find(needle.lower())
        if at < 0:
            continue
        detail = text[at:].splitlines()[0][:300]
        local = lake_files.strip_scheme(table_dir)
        if lake_files.is_local(local) and os.path.isdir(local) and \
                not os.access(local, os.W_OK):
            meaning = "the data path is not writable (read-only file system or permissions)"
        return DataFileError(
            f"cannot write Parquet files under {table_dir}: {meaning} ({detail}). "
            "Nothing was committed; the lake is unchanged.")
    return None


# ---------------------------------------------------------------------------------- hadoop fs
def _jvm_path(spark: SparkSession, path: str) -> Any:
    return sql.java_class(spark, "org.apache.hadoop.fs.Path")(path)


def _fs(spark: SparkSession, jpath: Any) -> Any:
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
    return jpath.getFileSystem(conf)


def _hadoop_list(spark: SparkSession, directory: str, recursive: bool = False) -> list[str]:
    """The files under ``directory``. A local directory is listed by Python: Hadoop's local
    file system starts an ``ls -ld`` process for every file it lists (to read the file's
    permissions), and each file costs py4j round trips."""
    if lake_files.is_local(directory):
        return _local_list(directory, recursive)
    jpath = _jvm_path(spark, directory)
    fs = _fs(spark, jpath)
    out = []
    iterator = fs.listFiles(jpath, recursive)
    while iterator.hasNext():
        status = iterator.next()
        p = status.getPath()
        out.append(_local_form(directory, p.toUri().getPath(), p.toString()))
    return sorted(out)


def _local_list(directory: str, recursive: bool) -> list[str]:
    root = os.path.abspath(lake_files.strip_scheme(directory))  # as Hadoop qualifies it
    out = []
    for base, _dirs, names in os.walk(root):
        out += [os.path.join(base, name) for name in names]
        if not recursive:
            break
    return sorted(out)


def _local_form(directory: str, uri_path: str, full: str) -> str:
    """A listed file in the same form as ``directory`` (plain path or URL)."""
    if "://" in lake_files.strip_scheme(directory):
        return full
    return uri_path


def _hadoop_rename(spark: SparkSession, source: str, target: str) -> None:
    if lake_files.is_local(source) and lake_files.is_local(target):  # no py4j round trips
        local = lake_files.strip_scheme(target)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        os.rename(lake_files.strip_scheme(source), local)
        return
    src, dst = _jvm_path(spark, source), _jvm_path(spark, target)
    fs = _fs(spark, src)
    try:  # the local file system keeps .crc side files; move the bare file only
        fs = fs.getRawFileSystem()
    except Exception:  # noqa: BLE001 - not a checksummed file system
        pass
    fs.mkdirs(dst.getParent())
    if not fs.rename(src, dst):
        raise OSError(f"could not move {source} to {target}")


def _hadoop_delete(spark: SparkSession, path: str) -> None:
    jpath = _jvm_path(spark, path)
    try:
        _fs(spark, jpath).delete(jpath, True)
    except Exception:  # noqa: BLE001 - best effort cleanup
        pass


def local_rows(df: DataFrame) -> pa.Table:
    return statement_sizing.run_sized(df.sparkSession, df, DataFrame.toArrow)


def not_null_error(violations: dict[str, int]) -> SchemaMismatchError:
    parts = ", ".join(f"column {name!r} ({count} NULL value{'s' if count != 1 else ''})"
                      for name, count in violations.items())
    return SchemaMismatchError(
        f"NOT NULL constraint failed: {parts}. Nothing was committed; filter or fill the "
        "NULLs, or drop the constraint")


def check_not_null(rows: pa.Table, columns: Sequence[ColumnInfo]) -> None:
    """The NOT NULL check for rows that are inlined rather than written by Spark."""
    violations = {c.column_name: rows.column(c.column_name).null_count
                  for c in columns if not c.nulls_allowed and c.column_name in rows.column_names}
    violations = {k: v for k, v in violations.items() if v}
    if violations:
        raise not_null_error(violations)
