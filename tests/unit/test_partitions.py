"""Partition specs and bucket hashing without a JVM: parsing, naming, paths, Murmur3.

Hashes are checked against the Iceberg spec's test vectors and against DuckDB's own
``murmur3_32`` and bucket values (DuckDB is an in-process oracle, no Spark needed).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from dbt.adapters.ducklake.lake import murmur3
from dbt.adapters.ducklake.lake.errors import InvalidArgumentError, NotFoundError
from dbt.adapters.ducklake.lake.models import ColumnInfo
from dbt.adapters.ducklake.lake.partitions import (
    PartitionField,
    bucket_hash,
    hive_directory,
    hive_escape,
    key_names,
    parse_partition_by,
    partition_value,
    resolve,
)
from dbt.adapters.ducklake.lake.types import LakeType


def col(cid: int, name: str, type_: str) -> ColumnInfo:
    return ColumnInfo(cid, 1, None, 1, cid, name, type_, None, "NULL", True, None)


COLUMNS = [col(1, "id", "int64"), col(2, "region", "varchar"), col(3, "ts", "timestamp"),
           col(4, "year", "int32"), col(5, "d", "date"), col(6, "tz", "timestamptz")]


def test_parse_spellings() -> None:
    fields = parse_partition_by(["region", "years(ts)", "MONTHS(ts)", "days(ts)", "hours(ts)",
                                 "bucket(4, id)", "bucket(id, 8)", "identity(`we ird`)",
                                 '"q""t"'])
    assert [str(f) for f in fields] == ["region", "year(ts)", "month(ts)", "day(ts)",
                                       "hour(ts)", "bucket(4, id)", "bucket(8, id)", "we ird",
                                       'q"t']
    assert parse_partition_by("region, year(ts)") == (
        PartitionField("region"), PartitionField("ts", "year"))
    assert [f.transform_text for f in parse_partition_by("bucket(16, id)")] == ["bucket(16)"]


@pytest.mark.parametrize("spec, message", [
    ("truncate(3, s)", "unknown transform 'truncate'.*accepted: .*bucket\\(N, col\\)"),
    ("bucket(0, id)", "bucket count must be between 1"),
    ("bucket(id)", "bucket takes a bucket count"),
    ("bucket(x, id)", "positive integer literal"),
    ("a.b", "nested fields cannot be partition keys"),
    ("year(s.x)", "nested fields"),
    ("year(ts", "missing|unbalanced"),
    ("", "empty"),
])
def test_parse_errors(spec: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        parse_partition_by(spec)


def test_resolve_checks_columns_and_types() -> None:
    keys = resolve(parse_partition_by(["REGION", "year(ts)", "year"]), COLUMNS)
    assert [k.name for k in keys] == ["region", "year", "year_year"]
    assert [k.column.column_id for k in keys] == [2, 3, 4]
    with pytest.raises(NotFoundError, match="no column 'nope'; the table has id, region"):
        resolve(parse_partition_by("nope"), COLUMNS)
    with pytest.raises(InvalidArgumentError, match="year does not apply to column 'region'"):
        resolve(parse_partition_by("year(region)"), COLUMNS)
    nested = [ColumnInfo(9, 1, None, 1, 9, "s", "struct", None, "", True, None)]
    with pytest.raises(InvalidArgumentError, match="top-level scalar"):
        resolve(parse_partition_by("s"), nested)


def test_key_names_and_paths_as_duckdb() -> None:
    assert key_names([("ts", "year"), ("year", "identity"), ("d", "bucket"),
                      ("e", "bucket")]) == ["year", "year_year", "bucket", "bucket_e"]
    # escapes observed on DuckDB 1.5.5: everything but A-Z a-z 0-9 - _ . ~
    assert hive_escape("a b") == "a%20b"
    assert hive_escape("x/y=z%") == "x%2Fy%3Dz%25"
    assert hive_escape("é€") == "%C3%A9%E2%82%AC"
    assert hive_escape("~.-_") == "~.-_"
    assert hive_escape("2024-01-15 12:30:00.5") == "2024-01-15%2012%3A30%3A00.5"
    keys = resolve(parse_partition_by(["region", "year(ts)"]), COLUMNS)
    assert hive_directory(keys, ["a b", None]) == "region=a%20b/year=__HIVE_DEFAULT_PARTITION__/"


def test_partition_values_text() -> None:
    keys = {str(k.field): k for k in resolve(parse_partition_by(
        ["region", "year(ts)", "month(ts)", "day(d)", "hour(tz)", "hour(d)", "ts", "tz",
         "d", "bucket(4, id)"]), COLUMNS)}
    ts = dt.datetime(2024, 3, 5, 23, 30, 0, 500000)
    tz = dt.datetime(2024, 3, 6, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert partition_value(keys["region"], None) is None
    assert partition_value(keys["region"], "") == ""
    assert partition_value(keys["year(ts)"], ts) == "2024"
    assert partition_value(keys["month(ts)"], ts) == "3"
    assert partition_value(keys["day(d)"], dt.date(2024, 3, 5)) == "5"
    assert partition_value(keys["hour(tz)"], tz) == "23"  # taken in UTC
    assert partition_value(keys["hour(d)"], dt.date(2024, 3, 5)) == "0"
    assert partition_value(keys["ts"], ts) == "2024-03-05 23:30:00.5"
    assert partition_value(keys["tz"], tz) == "2024-03-05 23:00:00+00"
    assert partition_value(keys["d"], dt.date(2024, 3, 5)) == "2024-03-05"
    assert partition_value(keys["bucket(4, id)"], 34) == str((2017239379 & 0x7FFFFFFF) % 4)


def test_murmur3_iceberg_vectors() -> None:
    """Iceberg spec, Appendix B: 32-bit hash requirements."""
    assert murmur3.hash_long(34) == 2017239379
    assert murmur3.murmur3_32(b"iceberg") == 1210000089
    assert murmur3.murmur3_32(bytes([0, 1, 2, 3])) == -188683207
    assert murmur3.hash_long(murmur3.double_bits(1.0)) == -142385009
    assert murmur3.hash_long(murmur3.double_bits(-0.0)) == murmur3.hash_long(0)
    assert bucket_hash(dt.date(2017, 11, 16), LakeType("date")) == -653330422
    assert bucket_hash(dt.datetime(2017, 11, 16, 22, 31, 8), LakeType("timestamp")) == \
        -2047944441
    assert bucket_hash(Decimal("14.20"), LakeType("decimal", 9, 2)) == \
        murmur3.hash_long(1420)  # DuckDB hashes the unscaled long (Iceberg: its bytes)


def test_vectorised_equals_scalar() -> None:
    rng = np.random.default_rng(7)
    longs = rng.integers(-2**63, 2**63 - 1, size=500, dtype=np.int64)
    assert murmur3.hash_long_array(longs).tolist() == [murmur3.hash_long(int(v)) for v in longs]
    words = ["", "a", "ab", "abc", "abcd", "é€ x/y", "x" * 300, "\x00"] + [
        "".join(chr(int(c)) for c in rng.integers(32, 0x2FF, size=n)) for n in range(40)]
    data = [w.encode() for w in words]
    assert murmur3.hash_bytes_array(data).tolist() == [murmur3.murmur3_32(b) for b in data]
    cases = [
        (pa.array([1, None, -5, 2**40], pa.int64()), "int64", 0, 0, [1, None, -5, 2**40]),
        (pa.array([True, False, None]), "boolean", 0, 0, [True, False, None]),
        (pa.array([1.5, -0.0, None, float("inf")], pa.float64()), "float64", 0, 0,
         [1.5, -0.0, None, float("inf")]),
        (pa.array([0.1, None], pa.float32()), "float32", 0, 0, [0.1, None]),
        (pa.array(["a b", None, "é"]), "varchar", 0, 0, ["a b", None, "é"]),
        (pa.array([b"\x00\x01", None], pa.binary()), "blob", 0, 0, [b"\x00\x01", None]),
        (pa.array([dt.date(1969, 12, 31), None]), "date", 0, 0, [dt.date(1969, 12, 31), None]),
        (pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 4)], pa.timestamp("us")), "timestamp", 0,
         0, [dt.datetime(2024, 1, 1, 1, 2, 3, 4)]),
        (pa.array([Decimal("-1.25"), None], pa.decimal128(9, 2)), "decimal", 9, 2,
         [Decimal("-1.25"), None]),
        (pa.array([Decimal("-1.25")], pa.decimal128(38, 4)), "decimal", 38, 4,
         [Decimal("-1.25")]),
    ]
    for array, kind, precision, scale, values in cases:
        lake_type = LakeType(kind, precision or None, scale if precision else None)
        got = murmur3.bucket_array_of(array, kind, 7, precision, scale).to_pylist()
        want = [None if v is None else murmur3.bucket(bucket_hash(v, lake_type), 7)
                for v in values]
        assert got == want, kind


@pytest.fixture(scope="module")
def duck():  # noqa: ANN201
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from conftest import duckdb_connect

    con = duckdb_connect()
    yield con
    con.close()


@pytest.mark.parametrize("sql_type, literal, lake, value", [
    ("INTEGER", "-7", "int32", -7),
    ("BIGINT", "9223372036854775807", "int64", 2**63 - 1),
    ("BOOLEAN", "true", "boolean", True),
    ("DOUBLE", "-0.0", "float64", -0.0),
    ("DOUBLE", "3.25", "float64", 3.25),
    ("FLOAT", "0.1", "float32", 0.1),
    ("VARCHAR", "'é€ x/y'", "varchar", "é€ x/y"),
    ("BLOB", "'\\x00\\x01ab'::BLOB", "blob", b"\x00\x01ab"),
    ("DATE", "DATE '1950-06-01'", "date", dt.date(1950, 6, 1)),
    ("TIMESTAMP", "TIMESTAMP '2024-01-15 12:30:00.123456'", "timestamp",
     dt.datetime(2024, 1, 15, 12, 30, 0, 123456)),
    ("TIMESTAMP_S", "TIMESTAMP '2024-01-15 12:30:00'", "timestamp_s",
     dt.datetime(2024, 1, 15, 12, 30)),
    ("TIMESTAMP_MS", "TIMESTAMP '2024-01-15 12:30:00.123'", "timestamp_ms",
     dt.datetime(2024, 1, 15, 12, 30, 0, 123000)),
    ("TIMESTAMPTZ", "TIMESTAMPTZ '2024-01-15 12:30:00+02'", "timestamptz",
     dt.datetime(2024, 1, 15, 10, 30, tzinfo=dt.timezone.utc)),
    ("DECIMAL(9,2)", "-1.25", "decimal(9,2)", Decimal("-1.25")),
    ("DECIMAL(18,3)", "123456789012.345", "decimal(18,3)", Decimal("123456789012.345")),
    ("DECIMAL(38,4)", "-1.25", "decimal(38,4)", Decimal("-1.25")),
    ("HUGEINT", "170141183460469231731687303715884105727", "int128", 2**127 - 1),
    ("UBIGINT", "18446744073709551615", "uint64", 2**64 - 1),
    ("UUID", "'550E8400-E29B-41D4-A716-446655440000'", "uuid",
     "550e8400-e29b-41d4-a716-446655440000"),
])
def test_bucket_hash_matches_duckdb(duck, sql_type: str, literal: str, lake: str,  # noqa: ANN001
                                    value: object) -> None:
    expected = duck.execute(f"SELECT murmur3_32(CAST({literal} AS {sql_type}))").fetchone()[0]
    assert bucket_hash(value, LakeType.parse(lake)) == expected


def test_partition_alter_after_a_query_comment() -> None:
    from dbt.adapters.ducklake.sql.engine import partition_alter

    sql = ('/* {"app": "dbt"} */\nalter table `s.t` set partitioned by (region, month(ts))')
    assert partition_alter(sql) == (["s.t"], "region, month(ts)")
    assert partition_alter("-- c\nALTER TABLE s.t RESET PARTITIONED BY") == (["s", "t"], None)
    assert partition_alter("select 'alter partitioned'") is None
