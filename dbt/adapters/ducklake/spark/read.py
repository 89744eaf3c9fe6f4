"""Reading a DuckLake table at a snapshot into one Spark DataFrame.

The driver assembles native Parquet scans of the table's state at snapshot S (what the
catalog says about it, :mod:`.table_state`): files are grouped by how their columns must be
matched (by field id, or by a name mapping) and by the column types they were written with;
each group is one ``spark.read.parquet``. Deleted rows are removed with an anti-join on
(data file, row position); inlined rows come from the catalog. Hidden columns expose row
lineage for updates and the change feed.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, StringType, StructField, StructType

from ..lake.catalog import Catalog, join_path
from ..lake.delete_files import (
    ROW_ID_COLUMN,
    ROW_ID_FIELD_ID,
    SNAPSHOT_ID_COLUMN,
    SNAPSHOT_ID_FIELD_ID,
    read_delete_file,
)
from ..lake.errors import DataFileError
from ..lake.file_skipping import SKIPPING_TYPES
from ..lake.files import is_local, strip_scheme
from ..lake.models import ColumnInfo, DataFile
from . import expressions as sql
from . import physical as physical_types
from . import skipping
from .table_state import TableState, inserted_since
from .types import FIELD_ID_KEY, convert, needs_conversion, spark_type

log = logging.getLogger("dbt.adapters.ducklake")

FILE_ID = "_ducklake_data_file_id"
POSITION = "_ducklake_position"
ROW_ID = "_ducklake_row_id"
SNAPSHOT_ID = "_ducklake_snapshot_id"
END_SNAPSHOT_ID = "_ducklake_end_snapshot_id"
META_COLUMNS = (FILE_ID, POSITION, ROW_ID, SNAPSHOT_ID)
# the file's own ``_ducklake_internal_snapshot_id`` (NULL when the file has none); only the
# change feed asks for it, because DuckDB reports it for rows deleted through delete files
EMBEDDED_SNAPSHOT_ID = "_ducklake_embedded_snapshot_id"


def read(spark: SparkSession, lake: Catalog, state: TableState, metadata: bool = False,
         where: str | Column | None = None) -> DataFrame:
    """The table at ``state.snapshot_id``, filtered by ``where``, over only the data files
    whose partition values and statistics allow a row ``where`` keeps (:mod:`.skipping`).

    Without ``where`` the result is a :class:`TableFrame`: its first ``where``/``filter``
    narrows the files the same way, so ``read().where(...)`` costs what it reads.
    """
    if where is None:
        # a state's scan never changes: built once, the DataFrame is shared (they are immutable)
        key = ("scan", id(spark), metadata)
        whole = state.scans.get(key)
        if whole is None:
            whole = state.scans.setdefault(key, scan(spark, state, metadata=metadata))
        return TableFrame(whole, lambda condition: read(spark, lake, state, metadata, condition))
    if not state.data_files or not skipping.worth_skipping(spark, state.data_files):
        return scan(spark, state, metadata=metadata).where(where)
    df = scan(spark, state, metadata=metadata, probe=True).where(where)
    try:
        filters = [f for f in skipping.scan_filters(spark, df)
                   if f.scan.table_id == state.table.table_id
                   and f.scan.snapshot_id == state.snapshot_id]
    except Exception:  # noqa: BLE001 - skipping is an optimisation: never fail a read
        log.debug("file skipping: cannot inspect the plan", exc_info=True)
        return scan(spark, state, metadata=metadata).where(where)
    skipped = skipping.skip_table_files(lake, state, filters)
    log.debug(skipping.Reading(f"{state.schema.schema_name}.{state.table.table_name}",
                               state.snapshot_id, skipped).describe())
    return scan(spark, replace(state, data_files=skipped.kept), metadata=metadata).where(where)


# the DataFrame class of a classic (non-Connect) session, looked up at run time: importing it
# by name would make type checkers analyse all of PySpark's classic implementation
_ClassicDataFrame: Any = importlib.import_module("pyspark.sql.classic.dataframe").DataFrame


class TableFrame(_ClassicDataFrame):
    """A whole-table read whose ``where``/``filter`` also skips files (see :func:`read`);
    every other method behaves as on any DataFrame."""

    def __init__(self, df: DataFrame, read_where: Callable[[Any], DataFrame]) -> None:
        super().__init__(df._jdf, df.sparkSession)  # noqa: SLF001
        self._read_where = read_where

    def filter(self, condition: Any) -> DataFrame:
        return self._read_where(condition)

    def where(self, condition: Any) -> DataFrame:
        return self._read_where(condition)



def scan_inserted(spark: SparkSession, state: TableState, since: int) -> DataFrame:
    """The rows of the table at ``state.snapshot_id`` that snapshots after ``since`` inserted,
    with the metadata columns: what a DELETE, UPDATE or MERGE planned at ``since`` has not
    seen (see ``Transaction.replanner``)."""
    return scan(spark, inserted_since(state, since), metadata=True) \
        .where(F.col(SNAPSHOT_ID) > F.lit(since))



# ---------------------------------------------------------------------------------- paths
_JAVA_LEGAL = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                  "-_.!~*'()" ",;:$&+=" "/@")


def spark_path(path: str) -> str:
    """The string Spark reports in ``_metadata.file_path`` for a path (Hadoop's URI form)."""
    path = strip_scheme(path)
    prefix = "file:"
    if "://" in path:
        scheme, rest = path.split("://", 1)
        authority, _, inner = rest.partition("/")
        prefix, path = f"{scheme}://{authority}", "/" + inner
    out = []
    for ch in path:
        if ch in _JAVA_LEGAL or (ord(ch) > 127 and not ch.isspace() and ch.isprintable()):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode())
    return prefix + "".join(out)


# ---------------------------------------------------------------------------------- reshaping
def _same(a: ColumnInfo, b: ColumnInfo) -> bool:
    if a.column_id != b.column_id or a.column_type != b.column_type or len(a.children) != len(
        b.children
    ):
        return False
    return all(x.column_name == y.column_name and _same(x, y)
               for x, y in zip(a.children, b.children))


def _default(column: ColumnInfo, keep_physical: bool = False) -> str:
    """SQL text of the value a file written before ``column`` was added holds for it."""
    value = column.initial_default
    if keep_physical and column.type.name in physical_types.WRITTEN_AS:
        return physical_types.physical_literal(value, column)
    target = spark_type(column)
    if value is None or column.type.nested:
        return sql.cast("NULL", target)
    return sql.cast(sql.string(value), target)


def reshape(expr: str, old: ColumnInfo, new: ColumnInfo, physical: bool = True,
            keep_physical: bool = False, depth: int = 0) -> str:
    """SQL text of a value written under column tree ``old`` as column ``new`` now: nested
    fields are matched by column id (renamed ones follow, dropped ones go, added ones get
    their default) and leaves are widened. ``physical`` values were read from Parquet with
    ``spark_type(physical=True)``; inlined rows are already logical (``physical=False``).
    With ``keep_physical`` (compaction) physical values stay physical (:mod:`.physical`).
    ``depth`` keeps nested lambda variables apart."""
    def leaf(e: str, column: ColumnInfo) -> str:
        return convert(e, column, depth) if physical and not keep_physical else e

    if _same(old, new):
        return leaf(expr, old)
    if new.type.name == "struct" and old.type.name == "struct":
        by_id = {c.column_id: c for c in old.children}
        fields = []
        for child in new.children:
            if child.column_id in by_id:
                src = by_id[child.column_id]
                value = reshape(sql.field(expr, src.column_name), src, child, physical,
                                keep_physical, depth)
            else:
                value = _default(child, keep_physical)
            fields.append(f"{value} AS {sql.ident(child.column_name)}")
        return sql.null_or(expr, f"struct({', '.join(fields)})")
    if new.type.name == "list" and old.type.name == "list":
        x = f"__x{depth}"
        inner = reshape(x, old.children[0], new.children[0], physical, keep_physical, depth + 1)
        return f"transform({expr}, {x} -> {inner})"
    if new.type.name == "map" and old.type.name == "map":
        k, v = f"__k{depth}", f"__v{depth}"
        values = reshape(v, old.children[1], new.children[1], physical, keep_physical, depth + 1)
        keys = reshape(k, old.children[0], new.children[0], physical, keep_physical, depth + 1)
        return f"transform_keys(transform_values({expr}, ({k}, {v}) -> {values}), " \
            f"({k}, {v}) -> {keys})"
    if keep_physical:
        return physical_types.promote(expr, old, new)
    return sql.cast(leaf(expr, old), spark_type(new))


def _rename(column: ColumnInfo, names: dict[int, str]) -> ColumnInfo | None:
    """The column tree with file names from a name mapping; ``None`` if the file lacks it."""
    if column.column_id not in names:
        return None
    kids = []
    for child in column.children:
        renamed = _rename(child, names)
        if renamed is None:
            renamed = replace(child, column_name=f"__ducklake_absent_{child.column_id}")
        kids.append(renamed)
    return replace(column, column_name=names[column.column_id], children=tuple(kids))


# ---------------------------------------------------------------------------------- scanning
def scan(
    spark: SparkSession, state: TableState, metadata: bool = False,
    embedded_snapshot: bool = False, probe: bool = False, keep_physical: bool = False,
) -> DataFrame:
    """The table at ``state.snapshot_id`` as a DataFrame.

    With ``metadata``, four hidden columns are added: the data file id and row position of
    Parquet rows (NULL for inlined rows), the row id and the snapshot that inserted the row.
    ``embedded_snapshot`` adds :data:`EMBEDDED_SNAPSHOT_ID` as well. A ``probe`` is only
    planned, never run, to see which filters a query puts on each scan (:mod:`.skipping`):
    each scan names one of its files to Spark (so planning does not list them all), the
    files are not checked on disk, and deletes and inlined rows (which are never skipped)
    are left out, so its rows are wrong but its plan is cheap.

    With ``keep_physical`` (flush and compaction, over data files only) the columns Spark cannot
    write keep the physical values read from Parquet (:mod:`.physical`): what compaction
    writes back, losslessly.

    Without them, files that have no deleted rows at the snapshot and no rows from later
    snapshots (``partial_max``) are a plain Parquet scan: no file rows are joined to their
    rows, so the read costs what ``spark.read.parquet`` of the same files costs, and Spark's
    column pruning and filter pushdown apply as usual.
    """
    s = state.snapshot_id
    if keep_physical and state.inlined:
        raise AssertionError("a physical scan reads data files only")
    parts: list[DataFrame] = []
    deleted = _deleted_positions(state)
    columns_only = not metadata and not embedded_snapshot
    wanted = [sql.ident(c.column_name) for c in state.columns]
    for (_, _, constants), (file_columns, by_name, files) in _file_groups(state).items():
        # files with deleted rows or rows from later snapshots need their catalog row
        plain = [f for f in files if columns_only and (probe or (
                 f.data_file_id not in deleted
                 and (f.partial_max is None or f.partial_max <= s)))]
        plain_ids = {f.data_file_id for f in plain}
        joined = [f for f in files if f.data_file_id not in plain_ids]
        if plain:
            parts.append(_scan_group(spark, state, file_columns, by_name, plain,
                                     dict(constants), plain=True, probe=probe,
                                     keep_physical=keep_physical))
        if joined:
            part = _scan_group(spark, state, file_columns, by_name, joined, dict(constants),
                               probe=probe, keep_physical=keep_physical)
            if not probe:
                part = _without_deleted(spark, part, {
                    f.data_file_id: deleted[f.data_file_id] for f in joined
                    if f.data_file_id in deleted})
            parts.append(sql.select(part, wanted) if columns_only else part)
    if not probe:  # inlined rows are never skipped: a probe need not plan them
        parts.extend(sql.select(part, wanted) if columns_only else part
                     for part in _inlined_frames(spark, state))
    if not parts:
        schema = StructType([StructField(c.column_name,
                                         spark_type(c, physical=keep_physical), True)
                             for c in state.columns] + _meta_fields()
                            + [StructField(EMBEDDED_SNAPSHOT_ID, LongType(), True)])
        result = local_frame(spark, [], schema)
    else:
        result = parts[0]
        for part in parts[1:]:
            result = result.unionByName(part)
    if columns_only and parts:  # every part is the table's columns already
        return result
    # one drop: each DataFrame call analyses the whole plan again
    unwanted = ([] if metadata else list(META_COLUMNS)) + \
        ([] if embedded_snapshot else [EMBEDDED_SNAPSHOT_ID])
    return result.drop(*unwanted) if unwanted else result


def _file_groups(state: TableState
                 ) -> dict[tuple[Any, ...], tuple[list[ColumnInfo], bool, list[DataFile]]]:
    """The data files of ``state`` grouped for one ``spark.read.parquet`` each: by how their
    columns are matched (field ids, or names from a name mapping), the columns and types
    they were written with, and the values their hive paths hold. Group key -> (the file's
    columns, matched by name, the files)."""
    groups: dict[tuple[Any, ...], tuple[list[ColumnInfo], bool, list[DataFile]]] = {}
    cache: dict[int, list[ColumnInfo]] = {}
    current_ids = {c.column_id for c in state.columns}
    for data_file in state.data_files:
        file_columns = [c for c in state.written_columns(data_file, cache)
                        if c.column_id in current_ids]
        by_name = False
        if data_file.mapping_id is not None:
            names = {m.target_field_id: m.source_name
                     for m in state.mappings.get(data_file.mapping_id, [])
                     if not m.is_partition}
            file_columns = [r for r in (_rename(c, names) for c in file_columns) if r is not None]
            by_name = True
        constants = tuple(sorted(state.path_values.get(data_file.data_file_id, {}).items()))
        key = (by_name, tuple(_signature(c) for c in file_columns), constants)
        groups.setdefault(key, (file_columns, by_name, []))[2].append(data_file)
    return groups


# Up to this many deleted rows in a group are removed with a filter on literal positions
# (no Spark job); more use an anti-join (broadcast up to _BROADCAST_DELETES).
_FILTER_DELETES = 20_000
_BROADCAST_DELETES = 5_000_000
# Up to this many files in a group get their catalog rows from a literal map (no broadcast
# join; each row is compared with at most this many paths).
_MAP_FILES = 16


def local_frame(spark: SparkSession, rows: Sequence[tuple[Any, ...]],
                schema: StructType) -> DataFrame:
    """A DataFrame of driver-side rows, shipped as Arrow.

    ``createDataFrame`` on Python rows pickles them through a Python RDD, which costs a Python
    worker round trip per partition every time the frame is evaluated; an Arrow table is
    materialised in the JVM directly (about ten times faster for the small frames here).
    """
    try:
        from pyspark.sql.pandas.types import to_arrow_schema

        arrow_schema = to_arrow_schema(schema, timezone="UTC")
        columns = list(zip(*rows)) if rows else [() for _ in schema.fields]
        table = pa.Table.from_arrays(
            [pa.array(list(values), type=f.type) for values, f in zip(columns, arrow_schema)],
            schema=arrow_schema)
    except (ImportError, pa.ArrowException, TypeError, ValueError, OverflowError):
        return spark.createDataFrame(list(rows), schema)
    return spark.createDataFrame(table, schema)


def _signature(column: ColumnInfo) -> tuple[Any, ...]:
    return (column.column_id, column.column_name, column.column_type,
            tuple(_signature(c) for c in column.children))


def _meta_fields() -> list[StructField]:
    return [StructField(n, LongType(), True) for n in META_COLUMNS]


def _scan_group(
    spark: SparkSession, state: TableState, file_columns: list[ColumnInfo], by_name: bool,
    files: list[DataFile], constants: dict[int, str | None] | None = None,
    plain: bool = False, probe: bool = False, keep_physical: bool = False,
) -> DataFrame:
    """One ``spark.read.parquet`` of files whose columns are matched the same way, shaped to
    the table's columns. Unless ``plain``, each row also gets its file's catalog row (for
    the metadata columns, deletes and the embedded-snapshot filter)."""
    fields = []
    token = skipping.remember_scan(state.table.table_id, state.snapshot_id, files)
    current = {c.column_id: c for c in state.columns}
    for c in file_columns:
        now = current.get(c.column_id)
        judged = now is not None and now.column_type == c.column_type and \
            c.type.name in SKIPPING_TYPES and not needs_conversion(c)
        meta = skipping.column_metadata(token, c.column_id if judged else None, c.column_type)
        if not by_name:
            meta[FIELD_ID_KEY] = c.column_id
        fields.append(StructField(c.column_name, spark_type(c, physical=True,
                                                            field_ids=not by_name), True, meta))
    if not plain:
        for name, fid in ((ROW_ID_COLUMN, ROW_ID_FIELD_ID),
                          (SNAPSHOT_ID_COLUMN, SNAPSHOT_ID_FIELD_ID)):
            meta = skipping.column_metadata(token)
            if not by_name:
                meta[FIELD_ID_KEY] = fid
            fields.append(StructField(name, LongType(), True, meta))
    paths = [state.path_of(f) for f in files]
    if probe:
        paths = paths[:1]
    else:
        check_files(state, files, paths)
    df = _read_parquet(spark, StructType(fields), paths)
    if plain:
        return sql.select(df, _shaped(state, file_columns, constants, keep_physical))
    df, conditions, prefix = _with_file_row_ids(spark, df, files, paths, probe)
    embedded = sql.ident(SNAPSHOT_ID_COLUMN)
    position = sql.ident(POSITION)
    # Only files holding rows of later snapshots need the embedded-snapshot filter. Without
    # them the statement's plan has no literal that changes from snapshot to snapshot: Spark
    # spells such literals into the code it generates, so every new value is a new class the
    # JVM runs interpreted until it compiles it again (a 10M-row MERGE scan took 0.87 s
    # against 0.53 s with the class already compiled).
    if any(f.partial_max is not None and f.partial_max > state.snapshot_id for f in files):
        conditions.append(f"({embedded} IS NULL OR {embedded} <= {state.snapshot_id})")
    if conditions:
        df = df.where(" AND ".join(conditions))
    return sql.select(df, [
        *_shaped(state, file_columns, constants, keep_physical),
        f"{prefix}__fid AS {sql.ident(FILE_ID)}",
        f"CAST({position} AS BIGINT) AS {position}",
        f"coalesce({sql.ident(ROW_ID_COLUMN)}, {prefix}__row_id_start + {position}) AS "
        f"{sql.ident(ROW_ID)}",
        f"coalesce({embedded}, {prefix}__begin) AS {sql.ident(SNAPSHOT_ID)}",
        f"{embedded} AS {sql.ident(EMBEDDED_SNAPSHOT_ID)}",
    ])


def _with_file_row_ids(spark: SparkSession, df: DataFrame, files: list[DataFile],
                       paths: list[str], probe: bool) -> tuple[DataFrame, list[str], str]:
    """``df`` (a scan of ``files``, at ``paths``) with each row's position and its file's
    catalog row (``__fid``, ``__row_id_start``, ``__begin``): what a row's id and snapshot are
    made of. Also the conditions that drop rows whose file was not found, and the prefix of
    those columns' names."""
    # Each row finds its file's catalog row by a key Spark reports per file. Comparing path strings
    # for every row cost more than the scan itself (MERGE's 10M-row target scan: 3.0 s against
    # 1.2 s for the bare scan); local files were just checked to have the catalog's exact size
    # (check_files), so where no two files of the group share a size, the size is the key.
    sizes = [f.file_size_bytes for f in files]
    key_type: DataType
    by_size = not probe and len(set(sizes)) == len(sizes) and all(is_local(p) for p in paths)
    if by_size:
        key, key_type = "_metadata.file_size", LongType()
        keys: list[Any] = sizes
        spelled = [f"CAST({size} AS BIGINT)" for size in sizes]
    else:
        key, key_type = "_metadata.file_path", StringType()
        keys = [spark_path(p) for p in paths]
        spelled = [sql.string(k) for k in keys]
    if len(files) <= _MAP_FILES and len(set(keys)) == len(keys):
        stats = ", ".join(
            f"{k}, struct(CAST({f.data_file_id} AS BIGINT) AS __fid, "
            f"CAST({sql.literal(f.row_id_start)} AS BIGINT) AS __row_id_start, "
            f"CAST({f.begin_snapshot} AS BIGINT) AS __begin)"
            for k, f in zip(spelled, files))
        df = df.selectExpr("*", f"map({stats})[{key}] AS __file",
                           f"_metadata.row_index AS {sql.ident(POSITION)}")
        # Every size was just checked (check_files): each row finds its file, which Spark
        # then looks up only for the rows a statement keeps (a MERGE's matched ones), not for
        # every row a filter on them would test. A path Spark spells differently would miss.
        conditions, prefix = [] if by_size else ["__file IS NOT NULL"], "__file."
    else:
        catalog = local_frame(
            spark,
            [(k, f.data_file_id, f.row_id_start, f.begin_snapshot)
             for k, f in zip(keys, files)],
            StructType([StructField("__key", key_type), StructField("__fid", LongType()),
                        StructField("__row_id_start", LongType()),
                        StructField("__begin", LongType())]),
        )
        df = df.selectExpr("*", f"{key} AS __key",
                           f"_metadata.row_index AS {sql.ident(POSITION)}") \
            .join(F.broadcast(catalog), on="__key", how="inner")
        conditions, prefix = [], ""
    return df, conditions, prefix


def _shaped(state: TableState, file_columns: list[ColumnInfo],
            constants: dict[int, str | None] | None, keep_physical: bool = False) -> list[str]:
    """SQL text of the table's columns at the snapshot, from columns read as
    ``file_columns``."""
    by_id = {c.column_id: c for c in file_columns}
    out = []
    for column in state.columns:
        old = by_id.get(column.column_id)
        if constants and column.column_id in constants:  # the value is in the hive path
            value = constants[column.column_id]
            if keep_physical and column.type.name in physical_types.WRITTEN_AS:
                expr = physical_types.physical_literal(value, column)
            else:
                expr = sql.cast("NULL" if value is None else sql.string(value),
                                spark_type(column))
        elif old is None:
            expr = _default(column, keep_physical)
        else:
            expr = reshape(sql.ident(old.column_name), old, column, keep_physical=keep_physical)
        out.append(f"{expr} AS {sql.ident(column.column_name)}")
    return out


# Spark reads a path holding any of ``{}[]*?\`` as a glob pattern (``SparkHadoopUtil.
# isGlobPath``): under a data path such as ``/lakes/sales[eu]/`` the pattern matched no file and
# every read of a Parquet file failed with PATH_NOT_FOUND. The catalog names each file
# exactly, so those characters are escaped as Hadoop's glob syntax escapes them (a backslash),
# and the pattern matches the one file named. Spark's own switch (the ``__globPaths__``
# option) is no way out: with several paths it lists each path once per path (Spark 4.3.0).
_GLOB_CHARACTER = re.compile(r"([{}\[\]*?\\])")


def literal_path(path: str) -> str:
    """``path`` as a glob pattern that matches only ``path`` itself."""
    return _GLOB_CHARACTER.sub(r"\\\1", path)


def _read_parquet(spark: SparkSession, schema: StructType, paths: Sequence[str]) -> DataFrame:
    """``spark.read.schema(schema).parquet(*paths)``, each path taken literally
    (:func:`literal_path`), with the paths sent to the JVM as one string
    (:func:`.expressions.java_seq`): py4j would otherwise convert the list one element per
    round trip (about 0.1 ms each, a second for 10,000 live files)."""
    paths = [literal_path(p) for p in paths]
    seq = sql.java_seq(spark, paths) if len(paths) > _MAP_FILES else None
    if seq is None:
        return spark.read.schema(schema).parquet(*paths)
    reader = spark.read.schema(schema)
    return reader._df(reader._jreader.parquet(seq))  # noqa: SLF001 - no public API takes a Seq


# Spark checks the paths it is given in a listing job of one task per path once there are more
# than 32 (parallelPartitionDiscovery.parallelism defaults to 10,000): at ~3 ms a task, 30 s
# for a table of 10,000 live files. The catalog already names every file, so a few tasks
# listing many paths each are enough.
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"


def configure(spark: SparkSession) -> None:
    """Tune how Spark lists the files a read names, unless the user set it themselves."""
    if spark.sparkContext.getConf().get(LISTING_PARALLELISM) is None:
        spark.conf.set(LISTING_PARALLELISM,
                       str(max(2, 2 * spark.sparkContext.defaultParallelism)))


def check_files(state: TableState, files: Sequence[DataFile], paths: Sequence[str]) -> None:
    """Local data files must exist with the catalog's exact size; say which one does not.

    A missing or truncated file would otherwise surface as a Spark task failure deep in a
    stack trace. Object stores are not checked here (one request per file); Spark's own error
    names the file there.
    """
    for data_file, path in zip(files, paths):
        if not is_local(path):
            continue
        local = strip_scheme(path)
        try:
            size = os.path.getsize(local)
        except OSError:
            raise DataFileError(
                f"data file {local} of table {state.schema.schema_name}."
                f"{state.table.table_name} is missing (data file id {data_file.data_file_id}); "
                "restore it, or the table cannot be read") from None
        if size != data_file.file_size_bytes:
            raise DataFileError(
                f"data file {local} of table {state.schema.schema_name}."
                f"{state.table.table_name} is {size} bytes but the catalog recorded "
                f"{data_file.file_size_bytes}: it is truncated or was overwritten")


def _deleted_positions(state: TableState) -> dict[int, list[int]]:
    """Data file id -> positions of its rows deleted at the snapshot."""
    live = {f.data_file_id for f in state.data_files}
    out: dict[int, list[int]] = {}
    for data_file_id, delete_file in state.delete_files.items():
        if data_file_id not in live:
            continue
        path = join_path(state.table_dir, delete_file.path, delete_file.path_is_relative)
        try:
            positions = [pos for pos, snapshot in read_delete_file(path,
                                                                   delete_file.begin_snapshot)
                         if snapshot <= state.snapshot_id]
        except DataFileError as exc:
            raise DataFileError(
                f"delete file {path} of table {state.schema.schema_name}."
                f"{state.table.table_name} cannot be read: {exc}") from exc
        if positions:
            out.setdefault(data_file_id, []).extend(positions)
    for data_file_id, entries in state.inlined_deletes.items():
        if data_file_id in live:
            out.setdefault(data_file_id, []).extend(pos for pos, _ in entries)
    return out


def _without_deleted(spark: SparkSession, part: DataFrame,
                     deleted: dict[int, list[int]]) -> DataFrame:
    """``part`` without the rows at the deleted (data file id, position) pairs."""
    total = sum(len(v) for v in deleted.values())
    if not total:
        return part
    if total <= _FILTER_DELETES:
        # one SQL string: a Column per literal would cost a py4j call each
        gone = " OR ".join(
            f"({FILE_ID} = {int(fid)} AND {POSITION} IN "
            f"({', '.join(str(int(p)) for p in sorted(set(positions)))}))"
            for fid, positions in deleted.items())
        return part.where(f"NOT ({gone})")
    pairs = local_frame(
        spark, [(fid, pos) for fid, positions in deleted.items() for pos in positions],
        StructType([StructField(FILE_ID, LongType(), False),
                    StructField(POSITION, LongType(), False)]))
    if total <= _BROADCAST_DELETES:
        pairs = F.broadcast(pairs)
    return part.join(pairs, on=[FILE_ID, POSITION], how="left_anti")


def _inlined_frames(spark: SparkSession, state: TableState) -> list[DataFrame]:
    frames = []
    current_ids = {c.column_id for c in state.columns}
    for block in state.inlined:
        cols = [c for c in block.columns if c.column_id in current_ids]
        index = [block.columns.index(c) for c in cols]
        schema = StructType(
            [StructField(c.column_name, spark_type(c), True) for c in cols]
            + [StructField(ROW_ID, LongType(), True), StructField(SNAPSHOT_ID, LongType(), True)]
        )
        convert = [(i, physical_types.spark_converter(c)) for i, c in zip(index, cols)]
        rows = [
            tuple(to(values[i]) for i, to in convert) + (rid, begin)
            for values, rid, begin in zip(block.values, block.row_ids, block.begin_snapshots)
        ]
        df = local_frame(spark, rows, schema)
        by_id = {c.column_id: c for c in cols}
        out = []
        for column in state.columns:
            old = by_id.get(column.column_id)
            # a nested type is reshaped by field id, as for Parquet files
            expr = _default(column) if old is None else \
                reshape(sql.ident(old.column_name), old, column, physical=False)
            out.append(f"{expr} AS {sql.ident(column.column_name)}")
        frames.append(sql.select(df, [
            *out, f"CAST(NULL AS BIGINT) AS {sql.ident(FILE_ID)}",
            f"CAST(NULL AS BIGINT) AS {sql.ident(POSITION)}", sql.ident(ROW_ID),
            sql.ident(SNAPSHOT_ID), f"CAST(NULL AS BIGINT) AS {sql.ident(EMBEDDED_SNAPSHOT_ID)}"]))
    return frames
