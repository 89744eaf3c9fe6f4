"""The values a flush writes for columns Spark cannot write, against DuckDB's own conversions.

A flush turns inlined catalog values into what DuckDB's Parquet writer stores: TIME, TIMETZ and
TIMESTAMP_NS as its INT64s (:func:`parquet_int`, from the catalog text or PostgreSQL's
``time``), (U)HUGEINT as the DOUBLE of DuckDB's cast (:func:`hugeint_double`). Each is checked
against what DuckDB 1.5.5 itself writes for the same value.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import duckdb_connect

from dbt.adapters.ducklake.lake.errors import UnsupportedTypeError
from dbt.adapters.ducklake.lake.inlining.codec import parquet_int
from dbt.adapters.ducklake.lake.types import LakeType
from dbt.adapters.ducklake.spark.physical import hugeint_double

VALUES = {
    "time": ["00:00:00", "23:59:59.999999", "24:00:00", "12:30:00.5", "01:02:03.000004"],
    # (not an offset of seconds only: DuckDB's text of it says minutes, its Parquet seconds)
    "timetz": ["00:00:00+15:59", "23:59:59.999999-15:59", "24:00:00-15:59", "24:00:00+00",
               "12:34:56.789-00:30:15", "01:00:00+05", "23:00:00-05", "00:00:00+01:02:03"],
    "timestamp_ns": ["1677-09-22 00:00:00.000000001", "2262-04-10 23:47:16.854775807",
                     "1969-12-31 23:59:59.999999999", "1970-01-01", "2024-01-15 12:30:00.5",
                     "infinity", "-infinity"],
}
DUCK_TYPES = {"time": "TIME", "timetz": "TIMETZ", "timestamp_ns": "TIMESTAMP_NS"}


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_parquet_int_is_what_duckdb_writes(tmp_path: Path, kind: str) -> None:
    """From DuckDB's text of the value (what SQLite and PostgreSQL VARCHAR cells hold) and
    from PostgreSQL's ``time`` (as a driver returns it), the INT64 of DuckDB's Parquet file."""
    con = duckdb_connect()
    path = tmp_path / "v.parquet"
    literals = ", ".join(f"('{v}'::{DUCK_TYPES[kind]})" for v in VALUES[kind])
    con.execute(f"COPY (SELECT v FROM (VALUES {literals}) t(v)) TO '{path}' (FORMAT parquet)")
    written = pq.read_table(path).column("v").cast(pa.int64()).to_pylist()
    texts = [r[0] for r in con.execute(f"SELECT v::VARCHAR FROM (VALUES {literals}) t(v)")
             .fetchall()]
    assert [parquet_int(t, LakeType(kind)) for t in texts] == written
    if kind != "timestamp_ns":  # PostgreSQL's TIME columns; Python has no 24:00:00
        for (value,), expected, text in zip(
                con.execute(f"SELECT v FROM (VALUES {literals}) t(v)").fetchall(), written,
                VALUES[kind]):
            if not text.startswith("24:"):
                assert parquet_int(value, LakeType(kind)) == expected, text
    con.close()


def test_hugeint_double_is_duckdbs_cast() -> None:
    """DuckDB adds the two 64-bit halves as doubles (so it rounds twice, unlike float()):
    checked over every magnitude, both signs, and the edges of both types."""
    rng = random.Random(7)
    values = [0, 1, -1, -3, 2**53 + 1, -(2**53) - 3, -(2**90) - 2**37 - 1,
              -12345678901234567, -(2**127), 2**127 - 2**74, 2**64 + 2**11 + 1]
    for bits in range(1, 127):
        for _ in range(8):
            v = rng.getrandbits(bits)
            values += [v, -v]
    unsigned = [abs(v) for v in values] + [2**128 - 2**75, 2**127 + 1]
    assert any(float(v) != hugeint_double(v) for v in values)  # the cases that matter
    con = duckdb_connect()
    for kind, sql, items in (("int128", "HUGEINT", values), ("uint128", "UHUGEINT", unsigned)):
        for start in range(0, len(items), 400):
            chunk = items[start:start + 400]
            got = con.execute("SELECT " + ", ".join(
                f"CAST(CAST('{v}' AS {sql}) AS DOUBLE)" for v in chunk)).fetchone()
            assert [hugeint_double(v, kind) for v in chunk] == list(got)
    con.close()


def test_hugeint_double_refuses_what_duckdb_cannot_read_back() -> None:
    """DuckDB writes 2**127 - 1 as the DOUBLE 2**127 and then fails to read its own file."""
    for value, kind in ((2**127 - 1, "int128"), (2**127 - 2**72, "int128"),
                        (2**128 - 1, "uint128")):
        with pytest.raises(UnsupportedTypeError, match="outside"):
            hugeint_double(value, kind)
    assert hugeint_double(-(2**127)) == -(2.0**127)
