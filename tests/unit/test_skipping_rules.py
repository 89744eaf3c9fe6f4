"""The file-skipping judgement: a file is ruled out only when its catalog stats prove it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from dbt.adapters.ducklake.lake import file_skipping, murmur3
from dbt.adapters.ducklake.lake.file_skipping import (
    And,
    ColumnStats,
    Compare,
    In,
    IsNull,
    Not,
    Or,
    may_match,
    negate,
    stats_from_partition_values,
    stats_from_row,
)
from dbt.adapters.ducklake.lake.models import DataFile
from dbt.adapters.ducklake.lake.partitions import bucket_hash
from dbt.adapters.ducklake.lake.types import LakeType

INT = LakeType.parse("int64")
DBL = LakeType.parse("float64")
TXT = LakeType.parse("varchar")
DATE = LakeType.parse("date")
TS = LakeType.parse("timestamp")
TZ = LakeType.parse("timestamptz")
DEC = LakeType.parse("decimal(10,2)")


def ints(low: int, high: int, nulls: int = 0) -> dict[int, ColumnStats]:
    return {1: stats_from_row(INT, nulls, 10, str(low), str(high), None)}


@pytest.mark.parametrize(("op", "value", "expected"), [
    ("=", 5, False), ("=", 10, True), ("=", 20, True), ("=", 21, False),
    ("<", 10, False), ("<", 11, True), ("<=", 10, True), ("<=", 9, False),
    (">", 20, False), (">", 19, True), (">=", 20, True), (">=", 21, False),
    ("<>", 15, True),
])
def test_comparisons_against_bounds(op: str, value: int, expected: bool) -> None:
    assert may_match(Compare(1, INT, op, value), ints(10, 20)) is expected


def test_not_equal_rules_out_only_a_constant_file() -> None:
    assert not may_match(Compare(1, INT, "<>", 7), ints(7, 7))
    assert may_match(Compare(1, INT, "<>", 7), ints(7, 8))


def test_unknowns_keep_the_file() -> None:
    assert may_match(Compare(1, INT, "=", 99), {})  # no stats row (column added later)
    assert may_match(Compare(1, INT, "=", 99), {1: stats_from_row(INT, 0, 5, None, None, None)})
    assert may_match(Compare(1, INT, "=", 99), {1: stats_from_row(INT, 0, 5, "x", "y", None)})
    assert may_match(file_skipping.UNKNOWN, ints(1, 2))
    assert may_match(And((file_skipping.UNKNOWN, Compare(1, INT, "=", 1))), ints(1, 2))
    assert not may_match(And((file_skipping.UNKNOWN, Compare(1, INT, "=", 9))), ints(1, 2))


def test_null_stats() -> None:
    all_null = {1: stats_from_row(INT, 10, 0, None, None, None)}
    assert not may_match(Compare(1, INT, "=", 1), all_null)
    assert not may_match(Compare(1, INT, "<>", 1), all_null)
    assert may_match(IsNull(1), all_null)
    assert not may_match(IsNull(1, negated=True), all_null)
    assert not may_match(IsNull(1), ints(1, 2, nulls=0))
    assert may_match(IsNull(1), ints(1, 2, nulls=3))
    assert may_match(IsNull(1), {1: stats_from_row(INT, None, None, "1", "2", None)})


def test_not_follows_three_valued_logic() -> None:
    assert negate(Compare(1, INT, "<", 5)) == Compare(1, INT, ">=", 5)
    assert not may_match(Not(Compare(1, INT, "<", 50)), ints(10, 20))
    assert may_match(Not(Compare(1, INT, "<", 15)), ints(10, 20))
    ten = stats_from_row(INT, 0, 2, "10", "10", None)
    assert not may_match(Not(In(1, INT, (10, 11))), {1: ten})
    assert may_match(Not(Or((Compare(1, INT, "=", 1), IsNull(1)))), ints(1, 2))
    assert not may_match(Not(Or((Compare(1, INT, ">", 0), IsNull(1)))), ints(1, 2))


def test_in_lists() -> None:
    assert may_match(In(1, INT, (1, 15, 30)), ints(10, 20))
    assert not may_match(In(1, INT, (1, 30)), ints(10, 20))
    assert not may_match(In(1, INT, ()), ints(10, 20))


def test_floats_with_nan_keep_upper_comparisons() -> None:
    nan = {1: stats_from_row(DBL, 0, 3, "1.0", "2.0", True)}
    no_nan = {1: stats_from_row(DBL, 0, 3, "1.0", "2.0", False)}
    unknown = {1: stats_from_row(DBL, 0, 3, "1.0", "2.0", None)}
    assert may_match(Compare(1, DBL, ">", 5.0), nan)
    assert may_match(Compare(1, DBL, ">", 5.0), unknown)
    assert not may_match(Compare(1, DBL, ">", 5.0), no_nan)
    assert may_match(Compare(1, DBL, "=", float("nan")), no_nan)  # left to the engine
    assert not may_match(Compare(1, DBL, "<", 1.0), nan)
    one = {1: stats_from_row(DBL, 0, 3, "1.0", "1.0", True)}
    assert may_match(Compare(1, DBL, "<>", 1.0), one)  # NaN <> 1.0
    assert may_match(Compare(1, DBL, "=", -0.0), {1: stats_from_row(DBL, 0, 3, "0.0", "1.0",
                                                                  False)})


def test_varchar_upper_bounds_may_be_prefixes() -> None:
    stats = {1: stats_from_row(TXT, 0, 3, "abc", "abc", None)}
    assert may_match(Compare(1, TXT, "=", "abca"), stats)  # 'abc' may be a truncated 'abcz'
    assert not may_match(Compare(1, TXT, "=", "abd"), stats)
    assert not may_match(Compare(1, TXT, "=", "ab"), stats)
    assert may_match(Compare(1, TXT, ">", "abc"), stats)
    assert not may_match(Compare(1, TXT, ">", "b"), stats)
    assert may_match(Compare(1, TXT, "<>", "abc"), stats)
    assert not may_match(Compare(1, TXT, "<", "abc"), stats)
    # bytes order (UTF-8), as DuckDB and Spark compare strings
    assert not may_match(Compare(1, TXT, "=", "é"), {1: stats_from_row(TXT, 0, 1, "a", "z", None)})


def test_temporal_and_decimal_values() -> None:
    days = {1: stats_from_row(DATE, 0, 3, "2024-01-10", "2024-01-20", None)}
    assert not may_match(Compare(1, DATE, "=", dt.date(2024, 1, 21)), days)
    assert may_match(Compare(1, DATE, "=", dt.date(2024, 1, 20)), days)
    moments = {1: stats_from_row(TS, 0, 3, "2024-01-10 00:00:00", "2024-01-10 12:00:00.5", None)}
    assert may_match(Compare(1, TS, ">", dt.datetime(2024, 1, 10, 12, 0, 0, 400000)), moments)
    assert not may_match(Compare(1, TS, ">", dt.datetime(2024, 1, 10, 12, 0, 0, 500000)),
                         moments)
    zoned = {1: stats_from_row(TZ, 0, 3, "2024-01-10 00:00:00+00", "2024-01-10 10:00:00+00", None)}
    cet = dt.timezone(dt.timedelta(hours=1))
    assert may_match(Compare(1, TZ, "=", dt.datetime(2024, 1, 10, 11, tzinfo=cet)), zoned)
    assert not may_match(Compare(1, TZ, "=", dt.datetime(2024, 1, 10, 12, tzinfo=cet)), zoned)
    money = {1: stats_from_row(DEC, 0, 3, "1.50", "2.25", None)}
    assert may_match(Compare(1, DEC, "=", Decimal("2.250")), money)
    assert not may_match(Compare(1, DEC, ">", Decimal("2.25")), money)


def test_identity_and_calendar_partitions() -> None:
    region = stats_from_partition_values([(2, TXT, "identity", "eu")])
    assert not may_match(Compare(2, TXT, "=", "us"), region)
    assert may_match(Compare(2, TXT, "=", "eu"), region)
    assert not may_match(IsNull(2), region)
    nulls = stats_from_partition_values([(2, TXT, "identity", None)])
    assert may_match(IsNull(2), nulls) and not may_match(Compare(2, TXT, "=", "eu"), nulls)
    march = stats_from_partition_values([(3, TS, "year", "2024"), (3, TS, "month", "3")])
    assert may_match(Compare(3, TS, "=", dt.datetime(2024, 3, 31, 23, 59)), march)
    assert not may_match(Compare(3, TS, ">=", dt.datetime(2024, 4, 1)), march)
    assert not may_match(Compare(3, TS, "<", dt.datetime(2024, 3, 1)), march)
    day = stats_from_partition_values([(4, DATE, "year", "2023"), (4, DATE, "month", "12"),
                           (4, DATE, "day", "31")])
    assert may_match(Compare(4, DATE, "=", dt.date(2023, 12, 31)), day)
    assert not may_match(Compare(4, DATE, ">", dt.date(2023, 12, 31)), day)
    # a month without its year bounds nothing
    assert may_match(Compare(3, TS, "=", dt.datetime(2020, 1, 1)),
                     stats_from_partition_values([(3, TS, "month", "3")]))
    # calendar fields of timestamptz depend on the writer's zone: not used
    assert may_match(Compare(5, TZ, "=", dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)),
                     stats_from_partition_values([(5, TZ, "year", "2024")]))


def test_bucket_partitions_rule_out_other_buckets() -> None:
    bucket = murmur3.bucket(bucket_hash(17, INT), 4)
    stats = stats_from_partition_values([(1, INT, "bucket(4)", str(bucket))])
    assert may_match(Compare(1, INT, "=", 17), stats)
    others = [v for v in range(100) if murmur3.bucket(bucket_hash(v, INT), 4) != bucket]
    assert not may_match(Compare(1, INT, "=", others[0]), stats)
    assert not may_match(In(1, INT, tuple(others[:5])), stats)
    assert may_match(Compare(1, INT, ">", 1000), stats)  # ranges say nothing about buckets


def test_skip_files_counts_partition_first() -> None:
    def data_file(fid: int) -> DataFile:
        return DataFile(fid, 1, 1, None, None, f"{fid}.parquet", True, "parquet", 1, 1, None,
                        0, None, None, None, None)

    files = [data_file(i) for i in range(3)]
    predicate = Compare(1, INT, "=", 5)
    result = file_skipping.skip_files(
        files, predicate, {0: stats_from_partition_values([(1, INT, "identity", "4")])},
        {1: ints(6, 9), 2: ints(0, 10)})
    assert [f.data_file_id for f in result.kept] == [2]
    assert (result.total, result.by_partition, result.by_statistics) == (3, 1, 1)
