"""DuckDB as the independent oracle: normalise both engines' rows and compare them."""

from __future__ import annotations

import datetime as dt
import glob
import math
import os
from decimal import Decimal
from typing import Any


def norm(value: Any) -> Any:
    """One comparable Python form for values from DuckDB and from Spark (via Arrow)."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), norm(v)) for k, v in value.items()))
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return tuple(sorted((str(k), norm(v)) for k, v in value))
        return tuple(norm(v) for v in value)
    if isinstance(value, tuple):
        return tuple(norm(v) for v in value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return round(value, 9)
    if isinstance(value, Decimal):
        return value.normalize()
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def rows(records: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for r in records:
        if isinstance(r, dict):
            r = tuple(r.values())
        out.append(tuple(norm(v) for v in r))
    return sorted(out, key=repr)


def duck_rows(duck: Any, sql: str) -> list[tuple[Any, ...]]:
    return rows(duck.execute(sql).fetchall())


def spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return rows(df.toArrow().to_pylist())


def assert_same(duck: Any, table: str, df: Any, at: int | None = None) -> None:
    """DuckDB's reading of ``lake.<table>`` (optionally at a version) equals ``df``."""
    cols = ", ".join(f'"{f.name}"' for f in df.schema.fields)
    clause = f" AT (VERSION => {at})" if at is not None else ""
    expected = duck_rows(duck, f"SELECT {cols} FROM lake.{table}{clause}")
    actual = spark_rows(df)
    assert actual == expected, f"\nspark : {actual[:5]}\nduckdb: {expected[:5]}"


def duckdb_connect():  # noqa: ANN201 - duckdb.DuckDBPyConnection
    """DuckDB 1.5.5 with the ducklake, sqlite and postgres extensions loaded by path (the
    extensions come as pip packages; nothing is downloaded), in UTC."""
    import duckdb
    import duckdb_extension_ducklake

    base = os.path.dirname(os.path.dirname(duckdb_extension_ducklake.__file__))
    con = duckdb.connect(config={
        "allow_unsigned_extensions": True,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    })
    for ext in sorted(glob.glob(os.path.join(
            base, "duckdb_extension_*", "extensions", "v1.5.5", "*.duckdb_extension"))):
        con.execute(f"LOAD '{ext}'")
    con.execute("SET TimeZone = 'UTC'")
    return con
