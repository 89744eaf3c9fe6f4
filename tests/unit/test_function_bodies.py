"""A function's body as DuckDB runs it (the view translator's rules, no JVM), and its Spark
definition as the lake keeps it."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake.errors import UnsupportedViewError
from dbt.adapters.ducklake.sql.functions import (
    Parameter,
    duckdb_body,
    spark_definition,
    spark_only_body,
)

PRICE = [Parameter("price", "float")]


@pytest.mark.parametrize("body, is_query, parameters, returns, expected", [
    ("price * 2", False, PRICE, "FLOAT", "CAST((price * 2) AS REAL)"),
    ("SELECT price * 2", True, PRICE, "FLOAT", "CAST((price * 2) AS REAL)"),  # as dbt writes
    ("SELECT price * 2 AS doubled", True, PRICE, "DOUBLE", "CAST((price * 2) AS DOUBLE)"),
    ("coalesce(upper(s), 'none')", False, [Parameter("s", "string")], "STRING",
     "CAST((COALESCE(UPPER(s), 'none')) AS TEXT)"),
])
def test_a_body_with_the_same_meaning_becomes_a_macro_expression(
        body, is_query, parameters, returns, expected):  # noqa: ANN001
    assert duckdb_body("s.f", body, is_query, parameters, returns) == expected


@pytest.mark.parametrize("body, is_query, construct", [
    ("format_number(x, 2)", False, "format_number"),
    ("CAST(s AS INT) + 1", False, "a cast from text to INT"),
    ("SELECT max(x) FROM s.t", True, "query over relations"),
    ("SELECT x WHERE x > 1", True, "query over relations"),
])
def test_a_body_without_one_is_refused_naming_the_construct(body, is_query, construct):  # noqa: ANN001
    with pytest.raises(UnsupportedViewError, match=construct) as info:
        duckdb_body("s.f", body, is_query, [Parameter("x", "double"), Parameter("s", "string")],
                    "STRING")
    assert "function s.f" in str(info.value)


def test_a_spark_only_body_is_an_error_naming_the_function() -> None:
    assert spark_only_body("s.o'k") == (
        "error('function s.o''k is stored as Spark SQL only: its body has no DuckDB SQL "
        "with the same meaning; call it from Spark')")


def test_the_spark_definition_keeps_defaults_determinism_and_comment() -> None:
    text = spark_definition([Parameter("price", "float", "100"), Parameter("n", "int")],
                            "FLOAT", "price * n", False, "it's")
    assert text == ("(`price` float DEFAULT 100, `n` int) RETURNS FLOAT NOT DETERMINISTIC "
                    "COMMENT 'it\\'s' RETURN price * n")
    assert spark_definition([], "INT", "1", None, None) == "() RETURNS INT RETURN 1"
