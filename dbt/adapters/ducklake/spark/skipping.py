"""File skipping: which data files a query needs, from the filters Spark pushes to its scans.

Every Parquet scan of a lake table (:func:`.read.scan`) tags the columns it reads with their
DuckLake column id and type and with a token naming the scan's files. Once Spark has
optimised a query, each filter sits right above the scan it applies to; this module walks the
optimised plan, turns the conditions on tagged columns into :mod:`..lake.file_skipping` predicates,
and judges every file of the scan by its partition values and column statistics. The caller
then plans the query again over the files that remain (the native Parquet reader stays on the
hot path: skipping only shortens its file list).

Understood: ``= <> < <= > >= <=> IN``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT`` between a
column and literals (after Spark's own constant folding, so ``date '2024-01-01' + 1`` or a
cast literal count), and uncorrelated scalar subqueries (``ts > (select max(ts) from t)``),
which are evaluated once here. Anything else in a condition is "unknown" and keeps files.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..lake import file_skipping
from ..lake.catalog import Catalog
from ..lake.errors import InvalidArgumentError
from ..lake.file_skipping import Predicate
from ..lake.models import DataFile
from ..lake.types import LakeType
from .table_state import TableState

log = logging.getLogger("dbt.adapters.ducklake")

# Judging files costs a second look at the plan, a catalog query and a second plan (tens to
# hundreds of milliseconds); reading a few megabytes of Parquet costs less. Statements whose
# lake tables hold fewer bytes than this read them whole (0: always skip).
MIN_BYTES_CONF = "spark.ducklake.fileSkipping.minTableBytes"
DEFAULT_MIN_BYTES = 16 << 20

COLUMN_ID_KEY = "ducklake.column_id"
TYPE_KEY = "ducklake.type"
SCAN_KEY = "ducklake.scan"

_COUNTER = itertools.count(1)
_SCANS: OrderedDict[str, ScanFiles] = OrderedDict()
_SCANS_KEPT = 20_000
_SCANS_LOCK = threading.Lock()


@dataclass(frozen=True)
class ScanFiles:
    """The files one tagged Parquet scan reads, and whose table and snapshot they are."""

    table_id: int
    snapshot_id: int
    file_ids: tuple[int, ...]


def remember_scan(table_id: int, snapshot_id: int, files: list[DataFile]) -> str:
    """A token for a scan of ``files``, to tag its columns with."""
    token = f"{table_id}@{snapshot_id}#{next(_COUNTER)}"
    with _SCANS_LOCK:
        _SCANS[token] = ScanFiles(table_id, snapshot_id, tuple(f.data_file_id for f in files))
        while len(_SCANS) > _SCANS_KEPT:
            _SCANS.popitem(last=False)
    return token


def column_metadata(token: str, column_id: int | None = None,
                    column_type: str | None = None) -> dict[str, Any]:
    """The tags of one scanned column: the scan's token on every column (so a scan is
    recognised whatever columns a query keeps), the column id and type on those whose file
    values are the column's values (no conversion, no type change since the file)."""
    if column_id is None:
        return {SCAN_KEY: token}
    return {COLUMN_ID_KEY: column_id, TYPE_KEY: column_type, SCAN_KEY: token}


# ---------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class ScanFilter:
    """A tagged scan in an optimised plan and the condition its rows must meet."""

    scan: ScanFiles
    predicate: Predicate


def worth_skipping(spark: SparkSession, files: Iterable[DataFile]) -> bool:
    """Whether ``files`` (those a statement may read) hold enough bytes for skipping some of
    them to pay for judging them (:data:`MIN_BYTES_CONF`)."""
    value = spark.conf.get(MIN_BYTES_CONF, None)
    try:
        threshold = DEFAULT_MIN_BYTES if value is None else int(value)
    except ValueError:
        raise InvalidArgumentError(
            f"{MIN_BYTES_CONF} must be a number of bytes (0 judges every read), not "
            f"{value!r}") from None
    if threshold <= 0:
        return True
    total = 0
    for data_file in files:
        total += data_file.file_size_bytes
        if total >= threshold:
            return True
    return False


def scan_filters(spark: SparkSession, df: DataFrame) -> list[ScanFilter]:
    """Every tagged scan in ``df``'s optimised plan (subqueries included), with the
    conditions of the filters directly above it (through projections only)."""
    plan = df._jdf.queryExecution().optimizedPlan()  # noqa: SLF001 - no public plan API
    out: list[ScanFilter] = []
    translator = _Translator(spark)
    _walk(plan, [], out, translator, set())
    return out


def _seq(seq: Any) -> Iterator[Any]:
    for i in range(seq.size()):
        yield seq.apply(i)


def _walk(node: Any, conditions: list[Any], out: list[ScanFilter], translator: _Translator,
          seen: set[int]) -> None:
    kind = node.nodeName()
    if kind == "LogicalRelation":
        scan = _scan_of(node)
        if scan is not None:
            parts = [translator.predicate(c) for c in conditions]
            out.append(ScanFilter(scan, file_skipping.And(tuple(parts)) if parts
                                  else file_skipping.UNKNOWN))
        return
    if kind == "Filter":
        below = [*conditions, node.condition()]
    elif kind == "Project":
        below = conditions
    else:
        below = []
    for child in _seq(node.children()):
        _walk(child, below, out, translator, seen)
    for sub in _seq(node.subqueries()):  # plans inside expressions: IN, EXISTS, scalar
        if sub.hashCode() not in seen:
            seen.add(sub.hashCode())
            _walk(sub, [], out, translator, seen)


def _scan_of(relation: Any) -> ScanFiles | None:
    output = relation.output()
    if output.isEmpty():
        return None
    metadata = output.apply(0).metadata()  # every column of a tagged scan has the token
    if not metadata.contains(SCAN_KEY):
        return None
    with _SCANS_LOCK:
        return _SCANS.get(metadata.getString(SCAN_KEY))


# ---------------------------------------------------------------------------- conditions
_COMPARISONS = {"EqualTo": "=", "EqualNullSafe": "=", "LessThan": "<",
                "LessThanOrEqual": "<=", "GreaterThan": ">", "GreaterThanOrEqual": ">="}
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NOT_A_VALUE = object()


class _Translator:
    """Catalyst conditions (py4j objects) to :mod:`..lake.file_skipping` predicates."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.subqueries: dict[int, Any] = {}

    def predicate(self, expr: Any) -> Predicate:
        try:
            return self._predicate(expr)
        except Exception:  # an expression shape not foreseen keeps the files
            log.debug("file skipping: cannot use condition %s", expr, exc_info=True)
            return file_skipping.UNKNOWN

    def _predicate(self, expr: Any) -> Predicate:
        kind = expr.getClass().getSimpleName()
        if kind == "And":
            return file_skipping.And((self._predicate(expr.left()), self._predicate(expr.right())))
        if kind == "Or":
            return file_skipping.Or((self._predicate(expr.left()), self._predicate(expr.right())))
        if kind == "Not":
            return file_skipping.Not(self._predicate(expr.child()))
        if kind in ("IsNull", "IsNotNull"):
            column = _column(expr.child())
            if column is None:
                return file_skipping.UNKNOWN
            return file_skipping.IsNull(column[0], negated=kind == "IsNotNull")
        if kind in _COMPARISONS:
            op = _COMPARISONS[kind]
            left, right = expr.left(), expr.right()
            column = _column(left)
            if column is None:
                column, op, right = _column(right), _FLIPPED[op], left
            if column is None:
                return file_skipping.UNKNOWN
            value = self._value(right)
            if value is _NOT_A_VALUE or value is None:  # NULL: the engine folds that itself
                return file_skipping.UNKNOWN
            return file_skipping.Compare(column[0], column[1], op, value)
        if kind == "In":
            column = _column(expr.value())
            if column is None:
                return file_skipping.UNKNOWN
            values = [self._value(v) for v in _seq(expr.list())]
            if any(v is _NOT_A_VALUE for v in values):
                return file_skipping.UNKNOWN
            kept = tuple(v for v in values if v is not None)
            return file_skipping.In(column[0], column[1], kept)
        if kind == "InSet":
            column = _column(expr.child())
            if column is None:
                return file_skipping.UNKNOWN
            data_type = expr.child().dataType()
            values = [_python_value(v, data_type) for v in _iterate(expr.hset())]
            if any(v is _NOT_A_VALUE for v in values):
                return file_skipping.UNKNOWN
            kept = tuple(v for v in values if v is not None)
            return file_skipping.In(column[0], column[1], kept)
        return file_skipping.UNKNOWN

    def _value(self, expr: Any) -> Any:
        kind = expr.getClass().getSimpleName()
        if kind == "Literal":
            return _python_value(expr.value(), expr.dataType())
        if kind == "ScalarSubquery" and expr.outerAttrs().isEmpty():
            key = expr.exprId().id()
            if key not in self.subqueries:
                self.subqueries[key] = self._run_subquery(expr)
            return self.subqueries[key]
        return _NOT_A_VALUE

    def _run_subquery(self, expr: Any) -> Any:
        """An uncorrelated scalar subquery's one value, computed once for skipping."""
        jvm: Any = self.spark._jvm  # noqa: SLF001 - no public API runs a logical plan
        jss = self.spark._jsparkSession  # noqa: SLF001
        dataset = jvm.org.apache.spark.sql.classic.Dataset.ofRows(jss, expr.plan())
        rows = DataFrame(dataset, self.spark).take(2)
        if len(rows) != 1:
            return _NOT_A_VALUE
        value = rows[0][0]
        data_type = expr.dataType().typeName()
        if isinstance(value, dt.datetime) and data_type == "timestamp":
            value = value.astimezone(dt.timezone.utc)  # Spark returns session-local times
        return value


def _column(expr: Any) -> tuple[int, LakeType] | None:
    if expr.getClass().getSimpleName() != "AttributeReference":
        return None
    metadata = expr.metadata()
    if not metadata.contains(COLUMN_ID_KEY):
        return None
    return int(metadata.getLong(COLUMN_ID_KEY)), LakeType.parse(metadata.getString(TYPE_KEY))


def _iterate(scala_set: Any) -> Iterator[Any]:
    iterator = scala_set.iterator()
    while iterator.hasNext():
        yield iterator.next()


_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


def _python_value(value: Any, data_type: Any) -> Any:
    """A Catalyst internal value of a type as the Python value
    :mod:`..lake.file_skipping` takes."""
    if value is None:
        return None
    name = data_type.typeName()
    if name in ("byte", "short", "integer", "long", "float", "double", "boolean"):
        return value
    if name.startswith("decimal"):
        return Decimal(value.toJavaBigDecimal().toPlainString())
    if name in ("string", "varchar", "char"):
        return str(value.toString())
    if name == "date":
        return _EPOCH_DATE + dt.timedelta(days=int(value))
    if name == "timestamp":
        return (_EPOCH + dt.timedelta(microseconds=int(value))).replace(tzinfo=dt.timezone.utc)
    if name == "timestamp_ntz":
        return _EPOCH + dt.timedelta(microseconds=int(value))
    return _NOT_A_VALUE


# ---------------------------------------------------------------------------- judging
@dataclass(frozen=True)
class Reading:
    """What one read of a table keeps: the files, and the figures for the log line."""

    table: str
    snapshot_id: int
    skipped: file_skipping.Skipped

    def describe(self) -> str:
        s = self.skipped
        return (f"{self.table}@{self.snapshot_id}: read {len(s.kept)} of {s.total} files "
                f"(skipped by partition: {s.by_partition}, by statistics: {s.by_statistics})")


def skip_table_files(lake: Catalog, state: TableState, filters: list[ScanFilter],
                     live: bool = True) -> file_skipping.Skipped:
    """The files of ``state`` that the scans in ``filters`` (those of this table at this
    snapshot) may need; a file read by a scan without a usable condition, or by no tagged
    scan at all, is kept. ``live=False`` when the files need not be live at the state's
    snapshot (the change feed)."""
    predicates: dict[int, list[Predicate]] = {}
    for item in filters:
        for fid in item.scan.file_ids:
            predicates.setdefault(fid, []).append(item.predicate)
    scanned = {fid for item in filters for fid in item.scan.file_ids}
    columns = set().union(*(file_skipping.columns_of(f.predicate) for f in filters)) \
        if filters else set()
    partitions, statistics = skipping_stats(lake, state, columns, live)
    kept: list[DataFile] = []
    by_partition = by_statistics = 0
    for data_file in state.data_files:
        fid = data_file.data_file_id
        wanted = predicates.get(fid)
        if fid not in scanned or not wanted:
            kept.append(data_file)
            continue
        # the file is needed if any scan of it may find a row
        either = file_skipping.Or(tuple(wanted))
        result = file_skipping.skip_files([data_file], either, partitions, statistics)
        by_partition += result.by_partition
        by_statistics += result.by_statistics
        kept.extend(result.kept)
    return file_skipping.Skipped(kept, len(state.data_files), by_partition, by_statistics)


def skipping_stats(lake: Catalog, state: TableState, column_ids: set[int], live: bool = True
                   ) -> tuple[dict[int, file_skipping.FileStats],
                          dict[int, dict[int, file_skipping.ColumnStats]]]:
    """Per data file of ``state``, what bounds the values of ``column_ids``: from its
    partition values, and from its column statistics. Read once per table state (a snapshot
    never changes) and kept on it."""
    if not column_ids:
        return {}, {}
    types = {c.column_id: c.type for c in state.columns}
    cache = state.stats.setdefault("live" if live else "any", {})
    with cache.setdefault("lock", threading.Lock()):
        missing = sorted(c for c in column_ids if ("stats", c) not in cache)
        need_partitions = "partitions" not in cache
        if missing or need_partitions:
            table_id, s = state.table.table_id, state.snapshot_id if live else None
            with lake.read() as conn:
                if missing:
                    rows = lake.file_column_stats_rows(table_id, missing, s, conn)
                if need_partitions:
                    keys = lake.file_partition_keys(table_id, s, conn)
            for column_id in missing:
                cache[("stats", column_id)] = {}
            if missing:
                for fid, cid, nulls, values, low, high, nan in rows:
                    if cid in types:
                        cache[("stats", cid)][fid] = file_skipping.stats_from_row(
                            types[cid], nulls, values, low, high, nan)
            if need_partitions:
                cache["partitions"] = {
                    fid: file_skipping.stats_from_partition_values(
                        [(cid, types[cid], transform, value) for cid, transform, value in items
                         if cid in types])
                    for fid, items in keys.items()}
        statistics: dict[int, dict[int, file_skipping.ColumnStats]] = {}
        for column_id in column_ids:
            for fid, stats in cache.get(("stats", column_id), {}).items():
                statistics.setdefault(fid, {})[column_id] = stats
        return cache["partitions"], statistics
