"""The Spark SQL text reads are built from (``spark.expressions``); no JVM."""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from dbt.adapters.ducklake.spark import expressions as sql


def test_identifiers_are_quoted_with_backticks_doubled() -> None:
    assert sql.ident("a") == "`a`"
    assert sql.ident("x`y.z") == "`x``y.z`"
    assert sql.field("`s`", "a b") == "(`s`).`a b`"


def test_strings_that_a_parser_setting_could_change_are_spelled_as_bytes() -> None:
    assert sql.string("plain text, ü") == "'plain text, ü'"
    for text in ("it's", "back\\slash", "new\nline"):
        spelled = sql.string(text)
        assert spelled == f"CAST(X'{text.encode().hex()}' AS STRING)"
        assert "'" + text not in spelled


def test_literals() -> None:
    assert sql.literal(None) == "NULL"
    assert sql.literal(True) == "TRUE"
    assert sql.literal(-(2**70)) == str(-(2**70))
    assert sql.literal(0.1) == "'0.1'"
    assert sql.literal(float("nan")) == "'NaN'"
    assert sql.literal(float("-inf")) == "'-Infinity'"
    assert sql.literal(Decimal("1.50")) == "'1.50'"
    assert sql.literal(b"\x00\xff") == "X'00ff'"
    assert sql.literal("it's") == sql.string("it's")


def test_types_as_ddl_text() -> None:
    nested = StructType([
        StructField("a b", ArrayType(MapType(StringType(), DecimalType(10, 2)))),
        StructField("c`d", TimestampNTZType()),
    ])
    assert sql.type_sql(nested) == \
        "STRUCT<`a b`: ARRAY<MAP<string, DECIMAL(10, 2)>>, `c``d`: timestamp_ntz>"
    assert sql.cast("NULL", LongType()) == "CAST(NULL AS bigint)"
