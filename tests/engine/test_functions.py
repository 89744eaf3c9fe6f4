"""SQL functions stored in the lake: created with Spark's syntax, found by any session (at the
current or a pinned snapshot), run by DuckDB as macros where the body means the same there.

DuckDB is the oracle for what is stored: it must load the lake's catalog with the function in
it, and call the macro with Spark's result (or an error naming the function when the body has
no DuckDB translation).
"""

from __future__ import annotations

import logging

import pytest
from oracle import duck_rows

from dbt.adapters.ducklake.lake.errors import UnsafeViewError, UnsupportedViewError
from dbt.adapters.ducklake.lake.models import MacroParameter
from dbt.adapters.ducklake.sql.context import UnsupportedStatementError
from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.functions import register_functions
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark


def _engine(spark, lake, pinned=None, schema=None):  # noqa: ANN001, ANN202
    session = spark.newSession()  # a session of its own: no temp function carried over
    return Engine(session, lake, ViewRegistry(session, lake, pinned, function_schema=schema))


def _value(engine, sql):  # noqa: ANN001, ANN202
    return engine.execute(sql).df.collect()[0][0]


def test_a_function_is_stored_in_the_lake_and_run_by_both_engines(spark, lake, duck,  # noqa: ANN001
                                                                   lake_target):
    engine = _engine(spark, lake)
    engine.execute("CREATE SCHEMA s")
    created = engine.execute("CREATE FUNCTION s.price_for_xlarge(price FLOAT DEFAULT 100) "
                             "RETURNS FLOAT DETERMINISTIC RETURN SELECT price * 2").snapshot
    assert created is not None
    assert _value(engine, "SELECT `s.price_for_xlarge`(100)") == 200.0
    assert _value(engine, "SELECT s.price_for_xlarge(21) + 1") == 43.0
    assert _value(engine, "SELECT s.price_for_xlarge()") == 200.0  # the default
    # another session, as another dbt run finds it; unqualified in the profile's schema
    other = _engine(spark, lake, schema="s")
    assert _value(other, "SELECT price_for_xlarge(5)") == 10.0
    # the Python API: registered for DataFrame expressions in a session of its own
    session = spark.newSession()
    assert register_functions(session, lake) == ["s.price_for_xlarge"]
    assert session.range(1).selectExpr("`s.price_for_xlarge`(4)").collect()[0][0] == 8.0
    # DuckDB loads the catalog and runs the macro (the translation, default included)
    assert duck_rows(duck, "SELECT lake.s.price_for_xlarge(100), "
                           "lake.s.price_for_xlarge()") == [(200.0, 200.0)]
    assert duck.execute(f"SELECT changes FROM lake.snapshots() WHERE snapshot_id = "
                        f"{created.snapshot_id}").fetchone()[0] == {
        "scalar_macros_created": ["s.price_for_xlarge"]}

    again = engine.execute("CREATE OR REPLACE FUNCTION s.price_for_xlarge(price FLOAT DEFAULT "
                           "100) RETURNS FLOAT DETERMINISTIC RETURN SELECT price * 2")
    assert again.snapshot is None and again.message == "unchanged"  # as every dbt run does
    replaced = engine.execute("CREATE OR REPLACE FUNCTION s.price_for_xlarge(price FLOAT) "
                              "RETURNS FLOAT RETURN price * 3").snapshot
    assert replaced is not None
    assert _value(other, "SELECT price_for_xlarge(5)") == 15.0  # the new definition
    duck.execute("DETACH lake")
    duck.execute(lake_target.duckdb_attach)
    assert duck_rows(duck, "SELECT lake.s.price_for_xlarge(5)") == [(15.0,)]
    # a session pinned before the replacement sees the function of its snapshot
    pinned = _engine(spark, lake, pinned=created.snapshot_id)
    assert _value(pinned, "SELECT `s.price_for_xlarge`(5)") == 10.0

    engine.execute("DROP FUNCTION s.price_for_xlarge")
    with pytest.raises(Exception, match="UNRESOLVED_ROUTINE"):
        other.execute("SELECT price_for_xlarge(5)").df.collect()
    duck.execute("DETACH lake")
    duck.execute(lake_target.duckdb_attach)
    assert duck_rows(duck, "SELECT count(*) FROM duckdb_functions() WHERE "
                           "database_name = 'lake' AND function_name = 'price_for_xlarge'"
                     ) == [(0,)]
    assert engine.execute("DROP FUNCTION IF EXISTS s.price_for_xlarge").snapshot is None


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_body_duckdb_cannot_run_the_same_is_spark_only(spark, lake, duck, caplog):  # noqa: ANN001
    engine = _engine(spark, lake)
    engine.execute("CREATE SCHEMA s")
    with caplog.at_level(logging.WARNING, logger="dbt.adapters.ducklake"):
        engine.execute("CREATE FUNCTION s.money(x DOUBLE) RETURNS STRING "
                       "RETURN format_number(x, 2)")
    assert "s.money" in caplog.text and "format_number" in caplog.text
    assert _value(engine, "SELECT `s.money`(1234.5)") == "1,234.50"
    with pytest.raises(Exception, match="s.money is stored as Spark SQL only"):
        duck.execute("SELECT lake.s.money(1234.5)").fetchall()
    # the other way round: DuckDB's own macros have no Spark definition (untyped parameters)
    duck.execute("CREATE MACRO lake.s.plus_one(a) AS a + 1")
    with pytest.raises(UnsupportedViewError, match="s.plus_one is a DuckDB macro"):
        engine.execute("SELECT s.plus_one(1)").df.collect()


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_function_body_is_checked_at_create_and_at_use(spark, lake):  # noqa: ANN001
    engine = _engine(spark, lake)
    engine.execute("CREATE SCHEMA s")
    with pytest.raises(UnsafeViewError, match="function s.f is refused.*reflect"):
        engine.execute("CREATE FUNCTION s.f(x STRING) RETURNS STRING "
                       "RETURN reflect('java.lang.System', 'getenv', x)")
    with pytest.raises(UnsafeViewError, match="files by path"):
        engine.execute("CREATE FUNCTION s.g() RETURNS STRING "
                       "RETURN SELECT max(value) FROM text.`/etc/hostname`")
    assert lake.functions("s") == []
    # a definition written into the lake by someone else is checked before Spark sees it
    lake.create_function(("s", "h"), "1", [MacroParameter("x", "varchar")],
                         "(x STRING) RETURNS STRING RETURN java_method('a.B', 'c', x)")
    with pytest.raises(UnsafeViewError, match="function s.h is refused.*java_method"):
        engine.execute("SELECT `s.h`('x')").df.collect()
    lake.create_function(("s", "k"), "1", [MacroParameter("x", "int32", "1", "int32")],
                         "(x INT DEFAULT reflect('a.B', 'c')) RETURNS INT RETURN x")
    with pytest.raises(UnsafeViewError, match="not a constant"):
        engine.execute("SELECT `s.k`(1)").df.collect()


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_functions_the_lake_cannot_store_are_refused_naming_what_it_can(spark, lake):  # noqa: ANN001
    engine = _engine(spark, lake)
    engine.execute("CREATE SCHEMA s")
    with pytest.raises(UnsupportedStatementError, match="table function.*scalar SQL functions"):
        engine.execute("CREATE FUNCTION s.t(x INT) RETURNS TABLE (a INT) RETURN SELECT x")
    with pytest.raises(UnsupportedStatementError, match="Java class.*scalar SQL functions"):
        engine.execute("CREATE FUNCTION s.j AS 'com.example.Udf'")
    assert lake.functions("s") == []


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_function_created_on_a_branch_is_published_with_it(spark, lake, duck):  # noqa: ANN001
    """``publish: atomic``: a function the build creates is staged on the branch (invisible
    to the lake until the publish) and published with its Spark definition."""
    from dbt.adapters.ducklake.lake.branch import Branch
    from dbt.adapters.ducklake.spark import SparkLake

    _engine(spark, lake).execute("CREATE SCHEMA s")
    branch = Branch.open(lake.catalog)
    try:
        staged = _engine(spark, SparkLake(spark, branch.catalog))
        staged.execute("CREATE FUNCTION s.f(x INT) RETURNS INT RETURN x + 1")
        assert _value(staged, "SELECT `s.f`(1)") == 2
        assert lake.functions("s") == []
        branch.publish()
    finally:
        branch.discard()
    assert _value(_engine(spark, lake), "SELECT `s.f`(41)") == 42
    assert duck_rows(duck, "SELECT lake.s.f(41)") == [(42,)]


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_pinned_session_refuses_to_create_functions(spark, lake):  # noqa: ANN001
    from dbt.adapters.ducklake.lake.errors import ReadOnlyError

    _engine(spark, lake).execute("CREATE SCHEMA s")
    pinned = lake.current_snapshot().snapshot_id
    session = spark.newSession()
    engine = Engine(session, lake, ViewRegistry(session, lake, pinned), read_only=True)
    with pytest.raises(ReadOnlyError):
        engine.execute("CREATE FUNCTION s.f(x INT) RETURNS INT RETURN x + 1")
    assert lake.functions("s") == []


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_bodies_call_lake_functions_and_read_lake_tables(spark, lake):  # noqa: ANN001
    """Inside a function's body Spark resolves `s.g(x)` in its own catalog only: the stored
    body names lake functions and tables as their temp names, so any session runs it."""
    engine = _engine(spark, lake)
    engine.execute("CREATE SCHEMA s")
    engine.execute("CREATE TABLE s.t AS SELECT 1 AS x")
    engine.execute("CREATE FUNCTION s.g(x INT) RETURNS INT RETURN x * 10")
    engine.execute("CREATE FUNCTION s.f(x INT) RETURNS INT RETURN s.g(x) + 1")
    engine.execute("CREATE FUNCTION s.m() RETURNS INT RETURN SELECT max(x) FROM s.t")
    engine.execute("CREATE VIEW s.v AS SELECT s.f(x) AS y, `s.g`(x) AS z, s.m() AS w FROM s.t")
    other = _engine(spark, lake)
    assert [tuple(r) for r in other.execute("SELECT * FROM s.v").df.collect()] == [(11, 10, 1)]
    engine.execute("INSERT INTO s.t VALUES (5)")
    assert _value(other, "SELECT s.m()") == 5  # the table as of the caller's snapshot
