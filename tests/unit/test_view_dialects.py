"""A DuckLake view's stored query as Spark runs it (no JVM: sqlglot only)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake.errors import UnsupportedViewError
from dbt.adapters.ducklake.lake.models import (
    ViewInfo,
    format_column_aliases,
    parse_column_aliases,
)
from dbt.adapters.ducklake.sql.view_dialects import spark_query, translate


def view(sql: str, dialect: str = "duckdb", aliases: str = "") -> ViewInfo:
    return ViewInfo(1, "u", 1, None, 0, "v", dialect, sql, aliases, "s")


def test_spark_views_run_as_written() -> None:
    assert spark_query(view('SELECT "x" FROM t', "spark"), "s") == 'SELECT "x" FROM t'


def test_duckdb_views_get_spark_quoting_and_their_schema() -> None:
    assert translate('SELECT "name" FROM t', "duckdb", "s", "s.v") == \
        "SELECT `name` FROM s.t AS t"
    # the lake's own catalog, as DuckDB writes it, is dropped
    assert translate("SELECT * FROM {DUCKLAKE_CATALOG}.o.t", "duckdb", "s", "s.v") == \
        "SELECT * FROM o.t AS t"
    # a CTE is not a table of the schema
    assert translate("WITH t AS (SELECT 1 AS x) SELECT x FROM t", "duckdb", "s", "s.v") == \
        "WITH t AS (SELECT 1 AS x) SELECT x FROM t AS t"
    # DuckDB's lists start at 1 (-1 is the last) and give NULL out of range
    assert translate("SELECT l[1], l[-1], l[i], m['k'] FROM t", "duckdb", "s", "s.v") == \
        "SELECT TRY_ELEMENT_AT(l, 1), TRY_ELEMENT_AT(l, -1), TRY_ELEMENT_AT(l, i), m['k'] " \
        "FROM s.t AS t"
    # DuckDB stores count(*) as count_star()
    assert translate("SELECT count_star() FROM t", "duckdb", "s", "s.v") == \
        "SELECT COUNT(*) FROM s.t AS t"


@pytest.mark.parametrize("sql, dialect, words", [
    ("SELECT * FROM other.s.t", "duckdb", ["another database"]),
    ("SELECT FROM WHERE", "duckdb", ["s.v", "duckdb"]),
    ("SELECT 1", "klingon", ["klingon", "'spark' or 'duckdb'"]),
    ("SELECT d + to_days(1) FROM t", "duckdb", ["interval arithmetic", "TIMESTAMP"]),
])
def test_views_that_cannot_be_translated_say_so(sql: str, dialect: str,
                                                 words: list[str]) -> None:
    with pytest.raises(UnsupportedViewError) as info:
        translate(sql, dialect, "s", "s.v")
    for word in words:
        assert word in str(info.value)


def test_column_aliases_text() -> None:
    assert parse_column_aliases("") == []
    assert view("SELECT 1", aliases='"a","b"').aliases == ["a", "b"]
    assert parse_column_aliases('["a", "b"]') == ["a", "b"]  # as earlier versions wrote them
    assert parse_column_aliases('"say ""hi""",x') == ['say "hi"', "x"]
    assert format_column_aliases(['say "hi"', "x"]) == '"say ""hi""","x"'
    assert format_column_aliases([]) == ""


def test_casts_to_integers_round_as_duckdb_does_unless_the_value_is_whole() -> None:
    def columns(schema: str, table: str) -> dict[str, str] | None:
        return {"i": "INTEGER", "d": "DOUBLE", "b": "BOOLEAN"} if table == "t" else None

    assert translate("SELECT CAST(i AS INTEGER) AS a, CAST(d AS INTEGER) AS b, "
                     "CAST(b AS INTEGER) AS c FROM t", "duckdb", "s", "s.v", columns) == \
        "SELECT CAST(t.i AS INT) AS a, CAST(ROUND(t.d) AS INT) AS b, CAST(t.b AS INT) AS c " \
        "FROM s.t AS t"
    # a column of unknown type (here: of a view) is rounded too; ROUND keeps integers whole
    assert translate("SELECT CAST(x AS BIGINT) AS a FROM v2", "duckdb", "s", "s.v",
                     columns) == "SELECT CAST(ROUND(x) AS BIGINT) AS a FROM s.v2 AS v2"
