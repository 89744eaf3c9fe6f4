"""Skipping data files that cannot hold a row a read or a statement wants.

A read's predicate is evaluated against what the catalog knows about each data file: its partition
values (``ducklake_file_partition_value``) and its per-column statistics
(``ducklake_file_column_stats``: min, max, null count, non-NULL count, NaN). A file is skipped only
when those stats *prove* that no row of it satisfies the predicate; anything unknown -- a missing
stats row (a column added after the file was written), a NULL bound, a value that does not parse, a
float column that may hold NaN, a varchar bound that may be a truncated prefix -- keeps the file.
Table-level statistics are never used (DuckDB 1.5.5 writes wrong ones in the case
``stats.widen_table_column_stats`` describes). Inlined rows and delete files are not files of this
kind: the reader always applies them.

Predicates are small frozen trees over column ids (so a renamed column still matches its
statistics) holding Python values (``int``, ``float``, ``Decimal``, ``str``, ``bool``,
``date``, naive ``datetime`` for timestamps, aware ``datetime`` for timestamptz); values are
compared with the catalog's bounds in :func:`.stats.sort_key` order.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from . import murmur3
from .models import DataFile
from .partitions import bucket_hash
from .stats import compare_encoded, sort_key
from .types import TIMESTAMP_TYPES, LakeType

# Column types whose file bounds order exactly as Spark compares values, and which the read
# path exposes without a conversion (so a predicate on the column is a predicate on the file).
SKIPPING_TYPES = frozenset({
    "boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "decimal", "date", "timestamp", "timestamp_s", "timestamp_ms",
    "timestamptz", "varchar",
})
# Types whose bounds MERGE uses to prune its target by the source's key range (exact, no
# truncation, no NaN, no zone).
PRUNABLE_TYPES = frozenset({
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int128",
    "uint128", "decimal", "date", "timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns",
})
# The timestamp types without a time zone (their Python values are naive datetimes).
NAIVE_TIMESTAMP_TYPES = TIMESTAMP_TYPES - {"timestamptz"}
_EPOCH = dt.datetime(1970, 1, 1)
_NS_PER_DAY = 86_400 * 10**9


# ------------------------------------------------------------------------------ predicates
@dataclass(frozen=True)
class Compare:
    """``column <op> value``; ``op`` is one of ``= <> < <= > >=``."""

    column_id: int
    lake_type: LakeType
    op: str
    value: Any


@dataclass(frozen=True)
class In:
    """``column IN (values)`` (no NULL among the values)."""

    column_id: int
    lake_type: LakeType
    values: tuple[Any, ...]


@dataclass(frozen=True)
class IsNull:
    column_id: int
    negated: bool = False


@dataclass(frozen=True)
class And:
    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    part: Predicate


@dataclass(frozen=True)
class Unknown:
    """A condition the catalog cannot judge: any file may satisfy it."""


UNKNOWN = Unknown()
Predicate = Compare | In | IsNull | And | Or | Not | Unknown
_NEGATED = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def negate(predicate: Predicate) -> Predicate:
    """``NOT predicate`` pushed down to the leaves (SQL's three-valued logic: a row passes
    ``NOT (x < 5)`` exactly when ``x >= 5`` holds, NULLs pass neither)."""
    if isinstance(predicate, Compare):
        return Compare(predicate.column_id, predicate.lake_type, _NEGATED[predicate.op],
                       predicate.value)
    if isinstance(predicate, In):
        return And(tuple(Compare(predicate.column_id, predicate.lake_type, "<>", v)
                         for v in predicate.values))
    if isinstance(predicate, IsNull):
        return IsNull(predicate.column_id, not predicate.negated)
    if isinstance(predicate, And):
        return Or(tuple(negate(p) for p in predicate.parts))
    if isinstance(predicate, Or):
        return And(tuple(negate(p) for p in predicate.parts))
    if isinstance(predicate, Not):
        return predicate.part
    return predicate


def columns_of(predicate: Predicate) -> set[int]:
    if isinstance(predicate, (Compare, In, IsNull)):
        return {predicate.column_id}
    if isinstance(predicate, (And, Or)):
        return set().union(*(columns_of(p) for p in predicate.parts)) if predicate.parts \
            else set()
    if isinstance(predicate, Not):
        return columns_of(predicate.part)
    return set()


def skippable(predicate: Predicate) -> bool:
    """Whether any part of the predicate can rule a file out."""
    return bool(columns_of(predicate))


# ------------------------------------------------------------------------------ file stats
@dataclass(frozen=True)
class ColumnStats:
    """What the catalog proves about one column in one file. ``None`` is unknown.

    ``lower``/``upper`` are inclusive bounds in :func:`.stats.sort_key` form; when
    ``upper_is_prefix`` the true maximum may be longer text starting with ``upper``.
    ``value_count`` counts non-NULL values. ``bucket`` is ``(count, bucket)`` of a
    ``bucket(count)`` partition key.
    """

    lower: Any = None
    upper: Any = None
    upper_is_prefix: bool = False
    null_count: int | None = None
    value_count: int | None = None
    contains_nan: bool | None = None
    bucket: tuple[int, int] | None = None


FileStats = Mapping[int, ColumnStats]  # column id -> stats
ALL_NULL = ColumnStats(value_count=0)


def value_key(value: Any, lake_type: LakeType) -> Any:
    """A Python value in the order of :func:`.stats.sort_key` for its column type."""
    name = lake_type.name
    if name in ("float32", "float64"):
        number = float(value)
        return (1, 0.0) if math.isnan(number) else (0, number)
    if name == "boolean":
        return int(bool(value))
    if name == "decimal":
        return Decimal(value)
    if name in ("varchar", "json"):
        return str(value).encode("utf-8")
    if name == "date":
        if isinstance(value, dt.datetime):
            value = value.date()
        return (value - _EPOCH.date()).days
    if name in TIMESTAMP_TYPES:
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = value - _EPOCH
        return ((delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds) * 1000
    return int(value)


def stats_from_row(lake_type: LakeType, null_count: int | None, value_count: int | None,
                   min_value: str | None, max_value: str | None,
                   contains_nan: bool | None) -> ColumnStats:
    """The stats of one ``ducklake_file_column_stats`` row."""
    lower = upper = None
    try:
        if min_value is not None and max_value is not None:
            lower, upper = sort_key(min_value, lake_type), sort_key(max_value, lake_type)
    except (ValueError, ArithmeticError, KeyError):
        lower = upper = None
    return ColumnStats(
        lower=lower, upper=upper, upper_is_prefix=lake_type.name in ("varchar", "json"),
        null_count=None if null_count is None else int(null_count),
        value_count=None if value_count is None else int(value_count),
        contains_nan=None if contains_nan is None else bool(contains_nan))


def stats_from_partition_values(keys: Sequence[tuple[int, LakeType, str, str | None]]
                                ) -> dict[int, ColumnStats]:
    """What a file's partition values prove, per column: ``keys`` holds one
    ``(column id, column type, transform, value text)`` per partition key of the file.

    Identity values are exact; ``year``, ``month``, ``day`` and ``hour`` of a date or a
    timestamp without zone bound the column to one calendar span (from the year down); a
    ``bucket(N)`` value rules out equality with values of other buckets. A NULL value means
    every row holds NULL. Calendar fields of timestamptz are left alone (the zone they were
    taken in is the writer's session setting).
    """
    by_column: dict[int, list[tuple[LakeType, str, str | None]]] = {}
    for column_id, lake_type, transform, value in keys:
        by_column.setdefault(column_id, []).append((lake_type, transform, value))
    out: dict[int, ColumnStats] = {}
    for column_id, entries in by_column.items():
        if any(value is None for _, _, value in entries):
            out[column_id] = ALL_NULL
            continue
        stats = _partition_column_stats(entries)
        if stats is not None:
            out[column_id] = stats
    return out


def _partition_column_stats(entries: list[tuple[LakeType, str, str | None]]
                            ) -> ColumnStats | None:
    lake_type = entries[0][0]
    fields: dict[str, int] = {}
    for _, transform, value in entries:
        assert value is not None
        try:
            if transform == "identity":
                return ColumnStats(lower=sort_key(value, lake_type),
                                   upper=sort_key(value, lake_type), null_count=0)
            if transform.startswith("bucket("):
                return ColumnStats(bucket=(int(transform[7:-1]), int(value)), null_count=0)
            fields[transform] = int(value)
        except (ValueError, ArithmeticError, KeyError):
            return None
    span = _calendar_span(fields, lake_type.name)
    if span is None:
        return ColumnStats(null_count=0)
    return ColumnStats(lower=span[0], upper=span[1], null_count=0)


def _calendar_span(fields: Mapping[str, int], type_name: str) -> tuple[int, int] | None:
    """Inclusive bounds (days for dates, nanoseconds for timestamps) of the span named by
    year [, month [, day [, hour]]] partition values; ``None`` without a year."""
    if type_name != "date" and type_name not in NAIVE_TIMESTAMP_TYPES:
        return None
    if "year" not in fields:
        return None
    year = fields["year"]
    try:
        if "month" not in fields:
            start, end = dt.datetime(year, 1, 1), dt.datetime(year + 1, 1, 1)
        else:
            month = fields["month"]
            start = dt.datetime(year, month, 1)
            end = dt.datetime(year + (month == 12), month % 12 + 1, 1)
            if "day" in fields:
                start = start.replace(day=fields["day"])
                end = start + dt.timedelta(days=1)
                if "hour" in fields and type_name != "date":
                    start = start + dt.timedelta(hours=fields["hour"])
                    end = start + dt.timedelta(hours=1)
    except (ValueError, OverflowError):
        return None
    if type_name == "date":
        return (start - _EPOCH).days, (end - _EPOCH).days - 1
    def ns(moment: dt.datetime) -> int:
        return (moment - _EPOCH) // dt.timedelta(microseconds=1) * 1000
    return ns(start), ns(end) - 1


# ------------------------------------------------------------------------------ judging
def may_match(predicate: Predicate, stats: FileStats) -> bool:
    """False only when the stats prove no row of the file satisfies the predicate."""
    if isinstance(predicate, And):
        return all(may_match(p, stats) for p in predicate.parts)
    if isinstance(predicate, Or):
        return any(may_match(p, stats) for p in predicate.parts)
    if isinstance(predicate, Not):
        return may_match(negate(predicate.part), stats)
    if isinstance(predicate, Unknown):
        return True
    column = stats.get(predicate.column_id)
    if column is None:
        return True
    if isinstance(predicate, IsNull):
        if predicate.negated:
            return column.value_count is None or column.value_count > 0
        return column.null_count is None or column.null_count > 0
    if isinstance(predicate, In):
        return any(_compare(column, Compare(predicate.column_id, predicate.lake_type, "=", v))
                   for v in predicate.values)
    return _compare(column, predicate)


def _compare(column: ColumnStats, predicate: Compare) -> bool:
    if column.value_count == 0:  # every value is NULL: no comparison holds
        return False
    value, lake_type, op = predicate.value, predicate.lake_type, predicate.op
    try:
        key = value_key(value, lake_type)
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return True
    if column.bucket is not None and op == "=":
        try:
            count, bucket = column.bucket
            if murmur3.bucket(bucket_hash(value, lake_type), count) != bucket:
                return False
        except Exception:  # noqa: BLE001 - a value the hash does not take: cannot judge
            return True
    if isinstance(key, tuple) and key[0] == 1:  # a NaN literal: leave it to the engine
        return True
    nan = lake_type.name in ("float32", "float64") and column.contains_nan is not False
    low, high = column.lower, column.upper
    try:
        if op in ("=", "<", "<="):
            if low is not None and (low > key or (op == "<" and low == key)):
                return False
            if op == "=":
                return _may_reach(column, key, strict=False)
            return True
        if op in (">", ">="):
            return nan or _may_reach(column, key, strict=op == ">")
        # <>: only a file whose every value equals the literal is ruled out
        return not (low is not None and low == key and high == key
                    and not column.upper_is_prefix and not nan)
    except TypeError:  # bounds of another type than the literal: cannot judge
        return True


def _may_reach(column: ColumnStats, key: Any, strict: bool) -> bool:
    """Whether some value of the column may be >= ``key`` (> when ``strict``)."""
    high = column.upper
    if high is None:
        return True
    if high > key or (not strict and high == key):
        return True
    return column.upper_is_prefix and isinstance(key, bytes) and key.startswith(high)


@dataclass(frozen=True)
class Skipped:
    """Which files a read keeps, and why the others were left out."""

    kept: list[DataFile]
    total: int
    by_partition: int
    by_statistics: int


def skip_files(files: Sequence[DataFile], predicate: Predicate,
               partitions: Mapping[int, FileStats], statistics: Mapping[int, FileStats]
               ) -> Skipped:
    """The files that may hold a row satisfying ``predicate``: partition stats are judged
    first, then column statistics."""
    kept: list[DataFile] = []
    by_partition = by_statistics = 0
    for data_file in files:
        fid = data_file.data_file_id
        if fid in partitions and not may_match(predicate, partitions[fid]):
            by_partition += 1
        elif fid in statistics and not may_match(predicate, statistics[fid]):
            by_statistics += 1
        else:
            kept.append(data_file)
    return Skipped(kept, len(files), by_partition, by_statistics)


# ------------------------------------------------------------------------------ MERGE ranges
@dataclass(frozen=True)
class KeyRange:
    """The values a statement can touch in one column, both ends included, DuckDB-encoded."""

    column_id: int
    lake_type: LakeType
    low: str
    high: str


# data file id -> column id -> (min_value, max_value), as the catalog stores them
FileBounds = Mapping[int, Mapping[int, tuple[str | None, str | None]]]


def prunable(lake_type: LakeType) -> bool:
    return lake_type.name in PRUNABLE_TYPES


def files_in_ranges(files: Sequence[DataFile], bounds: FileBounds,
                    ranges: Sequence[KeyRange]) -> list[DataFile]:
    """The files whose bounds overlap every range (a file lacking bounds is kept)."""
    return [f for f in files
            if all(_may_overlap(bounds.get(f.data_file_id, {}).get(r.column_id), r)
                   for r in ranges)]


def _may_overlap(bound: tuple[str | None, str | None] | None, key: KeyRange) -> bool:
    if bound is None:
        return True
    low, high = bound
    if low is None or high is None:
        # no bounds: all NULL (nothing equals a key) or not recorded; keep it to be safe
        return True
    try:
        return (compare_encoded(high, key.low, key.lake_type) >= 0
                and compare_encoded(low, key.high, key.lake_type) <= 0)
    except ValueError:
        return True



def rows_outside(files: Sequence[DataFile], bounds: FileBounds,
                 ranges: Sequence[KeyRange]) -> float:
    """About how many rows of ``files`` lie outside ``ranges``: what a filter on the ranges
    could let the Parquet reader skip (their row groups and pages). Each file's values are
    taken as spread evenly between its bounds, and a row as outside when it is outside any
    range; a file without bounds counts for nothing."""
    total = 0.0
    for data_file in files:
        outside = 0.0
        for key in ranges:
            bound = bounds.get(data_file.data_file_id, {}).get(key.column_id)
            low, high = bound if bound is not None else (None, None)
            if low is None or high is None:
                continue
            try:
                values = [sort_key(text, key.lake_type)
                          for text in (low, high, key.low, key.high)]
                share = _share_outside(*values)
            except (ValueError, TypeError, ArithmeticError):
                continue
            outside = max(outside, share)
        total += outside * data_file.record_count
    return total


def _share_outside(low: Any, high: Any, key_low: Any, key_high: Any) -> float:
    """The share of the span ``low``..``high`` outside ``key_low``..``key_high``."""
    if high == low:
        return 0.0 if key_low <= low <= key_high else 1.0
    inside = min(high, key_high) - max(low, key_low)
    return 1.0 - max(0.0, min(1.0, float(inside) / float(high - low)))
