"""Rows of every common Spark type (nested ones too), for tests that write them and have
DuckDB read them back."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from pyspark.sql import types as T

SCHEMA = T.StructType([
    T.StructField("id", T.IntegerType(), False),
    T.StructField("big", T.LongType()),
    T.StructField("small", T.ShortType()),
    T.StructField("tiny", T.ByteType()),
    T.StructField("f", T.FloatType()),
    T.StructField("d", T.DoubleType()),
    T.StructField("dec", T.DecimalType(18, 3)),
    T.StructField("wide", T.DecimalType(38, 10)),
    T.StructField("s", T.StringType()),
    T.StructField("b", T.BooleanType()),
    T.StructField("day", T.DateType()),
    T.StructField("ts", T.TimestampType()),
    T.StructField("ntz", T.TimestampNTZType()),
    T.StructField("bin", T.BinaryType()),
    T.StructField("st", T.StructType([T.StructField("x", T.IntegerType()),
                                      T.StructField("y", T.StringType())])),
    T.StructField("arr", T.ArrayType(T.IntegerType())),
    T.StructField("mp", T.MapType(T.StringType(), T.LongType())),
])


def make_rows(start: int, n: int) -> list[tuple]:
    out = []
    for i in range(start, start + n):
        out.append((
            i, i * 10_000_000_000, i % 300, i % 100, i / 4, i * 1.5 if i % 7 else None,
            Decimal(i) / 8, Decimal("-1.0000000001") * i, f"name '{i}', é" if i % 5 else None,
            i % 2 == 0, dt.date(2024, 1, 1) + dt.timedelta(days=i),
            dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i),
            dt.datetime(1969, 12, 31, 23, 59) + dt.timedelta(microseconds=i * 7),
            bytes([i % 256, 0, 255]), {"x": i, "y": f"y{i}"} if i % 3 else None,
            [i, None, i + 1] if i % 4 else [], {f"k{i}": i, "z": None} if i % 6 else None,
        ))
    return out
