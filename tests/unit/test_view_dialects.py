"""A DuckLake view's stored query as Spark runs it, and ours as DuckDB runs it (no JVM:
sqlglot only)."""

from __future__ import annotations

import pytest
from imports import imported_by

from dbt.adapters.ducklake.lake.errors import UnsupportedViewError
from dbt.adapters.ducklake.lake.models import (
    ViewInfo,
    format_column_aliases,
    parse_column_aliases,
)
from dbt.adapters.ducklake.sql import view_dialects
from dbt.adapters.ducklake.sql.view_dialects import duckdb_query, spark_query, translate


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


# ------------------------------------------------------------------ Spark SQL as DuckDB runs it
SPARK_TYPES = {("s", "t"): {"id": "int", "name": "string", "amount": "decimal(10,2)",
                            "f": "double", "day": "date", "tags": "array<string>",
                            "m": "map<string,int>"}}


def to_duckdb(sql: str, names: tuple[str, ...] = ()) -> str:
    return duckdb_query(sql, "s.v", lambda s, t: SPARK_TYPES.get((s, t)), names)


def test_our_views_read_the_lake_tables_through_duckdbs_catalog_placeholder() -> None:
    # dbt renders a relation as one backticked `schema.table`
    assert to_duckdb("SELECT id FROM `s.t`") == 'SELECT t.id FROM {DUCKLAKE_CATALOG}."s"."t"'
    assert to_duckdb("WITH w AS (SELECT id FROM s.t) SELECT * FROM w") == \
        "WITH w AS (SELECT t.id FROM {DUCKLAKE_CATALOG}.s.t) SELECT * FROM w"
    # a CTE named like a lake table leaves the qualified table the lake's
    assert "FROM t JOIN {DUCKLAKE_CATALOG}.s.t AS u" in \
        to_duckdb("WITH t AS (SELECT 1 AS id) SELECT u.id FROM t JOIN s.t AS u ON u.id = t.id")


def test_spark_meanings_are_kept_in_duckdb() -> None:
    assert to_duckdb("SELECT CAST(amount AS INT), CAST(id AS BIGINT) FROM s.t") == \
        "SELECT CAST(TRUNC(t.amount) AS INT), CAST(t.id AS BIGINT) FROM {DUCKLAKE_CATALOG}.s.t"
    assert to_duckdb("SELECT tags[0], element_at(tags, -1), tags[id], m['k'] FROM s.t") == (
        "SELECT LIST_EXTRACT(t.tags, 1), LIST_EXTRACT(t.tags, -1), "
        "LIST_EXTRACT(t.tags, (t.id + 1)), MAP_EXTRACT_VALUE(t.m, 'k') "
        "FROM {DUCKLAKE_CATALOG}.s.t")
    assert to_duckdb("SELECT date_add(day, 2), dayofweek(day) FROM s.t") == (
        "SELECT (CAST(t.day AS DATE) + 2), (DAYOFWEEK(CAST(t.day AS DATE)) + 1) "
        "FROM {DUCKLAKE_CATALOG}.s.t")
    assert to_duckdb("SELECT CAST(CAST(amount AS INT) AS BIGINT) FROM s.t") == \
        "SELECT CAST(CAST(TRUNC(t.amount) AS INT) AS BIGINT) FROM {DUCKLAKE_CATALOG}.s.t"
    assert to_duckdb("SELECT concat(name, '!') FROM s.t") == \
        "SELECT t.name || '!' FROM {DUCKLAKE_CATALOG}.s.t"


def test_duckdb_gets_sparks_column_names() -> None:
    assert to_duckdb("SELECT id, lower(name), id AS n FROM s.t",
                     ("id", "lower(name)", "n")) == \
        'SELECT t.id, LOWER(t.name) AS "lower(name)", t.id AS n FROM {DUCKLAKE_CATALOG}.s.t'
    with pytest.raises(UnsupportedViewError, match="beside a"):
        to_duckdb("SELECT *, lower(name) FROM s.t", ("id", "lower(name)"))


@pytest.mark.parametrize("sql, construct", [
    ("SELECT collect_list(name) FROM s.t", "ARRAY_AGG"),
    ("SELECT avg(amount) FROM s.t", "average of decimals"),
    ("SELECT amount / 3 FROM s.t", "division of decimals"),
    ("SELECT id / 1.5 FROM s.t", "division of decimals"),
    ("SELECT amount * amount * amount * amount FROM s.t", "38 digits"),
    ("SELECT CAST(name AS INT) FROM s.t", "cast from text"),
    ("SELECT CAST(CAST(name AS INT) AS BIGINT) FROM s.t", "cast from text"),
    ("SELECT date_add(day, CAST(name AS INT)) FROM s.t", "cast from text"),
    ("SELECT tags[CAST(f AS STRING)] FROM s.t", "cast from double"),
    ("SELECT CAST(f AS STRING) FROM s.t", "cast from double"),
    ("SELECT substring(name, 0, 2) FROM s.t", "positive"),
    ("SELECT name FROM s.t WHERE name LIKE 'a\\_%'", "backslash"),
    ("SELECT round(f, 1) FROM s.t", "rounding a double"),
    ("SELECT id FROM `s.t@v3`", "s.t@v3"),
    ("SELECT id FROM temp_view", "temp_view"),
    ("SELECT id FROM spark_catalog.s.t", "spark_catalog"),
    ("SELECT x[0] FROM s.unknown", "unknown type"),
])
def test_spark_constructs_without_a_duckdb_equivalent_are_named(sql: str, construct: str) -> None:
    with pytest.raises(UnsupportedViewError) as info:
        to_duckdb(sql)
    assert "s.v" in str(info.value) and construct.lower() in str(info.value).lower()


def test_sqlglot_is_imported_on_first_use() -> None:
    """Every dbt start imports the adapter; sqlglot (0.1 s) only a view's translation needs."""
    assert imported_by("dbt.adapters.ducklake.impl", "m.split('.')[0] == 'sqlglot'") == []
    assert len(view_dialects._translatable()) == len(
        view_dialects._SAME_IN_DUCKDB + view_dialects._REWRITTEN_FOR_DUCKDB)
