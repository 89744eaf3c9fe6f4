"""Columns qualified by a lake table's name: ``SELECT t.id FROM s.t``.

Spark and DuckDB both let a query qualify a column by the name of the table it reads, with no
alias: ``t.id`` for ``FROM s.t``, and dbt models write ``orders.id`` beside
``{{ ref('orders') }}``. A lake table is read through a temp view named `` `s.t` ``, so the
registry gives each reference the table's name as its alias; a statement that qualifies
columns by the view name itself (`` `s.t`.id ``, as ``{{ this }}.id`` renders) keeps that.
DuckDB, running the same SQL on the same lake, is the oracle. File skipping is on for every
table here (``minTableBytes`` 0), so the narrowed views a read is pointed at keep the names
too.

The catalog plays no part in how a name resolves (that is Spark's analysis of the views the
registry names), so the module runs on a SQLite catalog only.
"""

from __future__ import annotations

import logging
import re

import pytest
from conftest import new_lake_target
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def module_lake_target(tmp_path_factory):  # noqa: ANN001, ANN201 - LakeTarget
    with new_lake_target("sqlite", tmp_path_factory.mktemp("lake")) as target:
        yield target


@pytest.fixture
def lake_target(tmp_path):  # noqa: ANN001, ANN201 - LakeTarget
    with new_lake_target("sqlite", tmp_path) as target:
        yield target


SETUP = [
    "CREATE SCHEMA s", "CREATE SCHEMA o",
    "CREATE TABLE s.t AS SELECT 1 AS grp, 10 AS v",
    "INSERT INTO s.t SELECT 2, 20 UNION ALL SELECT 3, 30",
    "CREATE TABLE s.u AS SELECT 1 AS grp, 'one' AS label",
    "INSERT INTO s.u SELECT 3, 'three'",
    "CREATE TABLE o.t AS SELECT 2 AS grp, 'o-two' AS note",
]


@pytest.fixture(scope="module", autouse=True)
def skipping_every_table(spark):  # noqa: ANN001, ANN201
    """File skipping on for every table, however small."""
    previous = spark.conf.get("spark.ducklake.fileSkipping.minTableBytes", None)
    spark.conf.set("spark.ducklake.fileSkipping.minTableBytes", "0")
    yield
    if previous is None:
        spark.conf.unset("spark.ducklake.fileSkipping.minTableBytes")
    else:
        spark.conf.set("spark.ducklake.fileSkipping.minTableBytes", previous)


def _set_up(spark, lake, duck) -> Engine:  # noqa: ANN001
    """Two schemas with a table ``t`` each and a table ``s.u``, two files per table so that a
    filter can skip one (none is inlined)."""
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    for statement in SETUP:
        engine.execute(statement)
    return engine


@pytest.fixture
def engine(spark, lake, duck):  # noqa: ANN001, ANN201
    """A lake of the test's own, for tests that write or change the registry."""
    return _set_up(spark, lake, duck)


@pytest.fixture(scope="module")
def reader(spark, module_lake, module_duck):  # noqa: ANN001, ANN201
    """One lake per catalog for the tests that only read it."""
    return _set_up(spark, module_lake, module_duck)


def ours(engine, sql: str) -> list[tuple]:  # noqa: ANN001
    return sorted(spark_rows(engine.execute(sql).df), key=repr)


def duckdb(duck, sql: str) -> list[tuple]:  # noqa: ANN001
    duck.execute("USE lake")
    return sorted(duck_rows(duck, sql), key=repr)


QUERIES = [
    "SELECT t.grp FROM s.t",
    "SELECT t.grp, t.v FROM s.t WHERE t.v > 15",
    "SELECT t.* FROM s.t WHERE t.grp = 3",
    "SELECT t.grp, u.label FROM s.t JOIN s.u ON t.grp = u.grp WHERE u.grp > 1",
    "SELECT t.grp FROM s.t WHERE t.v > (SELECT max(u.grp) FROM s.u) * 5",
    "SELECT t.grp, x.note FROM s.t JOIN o.t AS x ON t.grp = x.grp",
    "SELECT t.grp FROM s.t WHERE t.grp IN (SELECT u.grp FROM s.u WHERE u.label = 'three')",
    "WITH t AS (SELECT 42 AS grp) SELECT t.grp FROM t",
    "WITH t AS (SELECT t.grp FROM s.t WHERE t.v > 15) SELECT t.grp FROM t",
    "WITH x AS (SELECT t.grp, t.v FROM s.t) SELECT x.grp, u.label FROM x JOIN s.u "
    "ON x.grp = u.grp",
    "WITH a AS (SELECT t.grp FROM s.t WHERE t.v < 15), b AS (SELECT t.grp FROM s.t "
    "WHERE t.v > 25) SELECT a.grp FROM a UNION ALL SELECT b.grp FROM b",
    "SELECT count(*) AS n FROM s.t, s.u WHERE t.grp = u.grp AND t.v < 20",
    "SELECT s.t.grp, S.U.label FROM s.t JOIN s.u ON s.t.grp = s.u.grp WHERE s.t.v > 5",
    "SELECT t.* FROM s.t WHERE s.t.v IN (SELECT max(s.t.v) FROM s.t)",
    "SELECT s.t.grp, o.t.note FROM s.t JOIN o.t ON s.t.grp = o.t.grp",
    "SELECT s.t.v FROM s.t TABLESAMPLE (100 PERCENT) WHERE s.t.grp > 1",
    "SELECT s.t.v FROM s.t WHERE s.t.v > 15 UNION ALL SELECT s.t.v FROM s.t WHERE s.t.v > 15",
    "SELECT s.t.grp FROM s.t WHERE s.t.v = (SELECT max(s.t.v) FROM s.t) OR s.t.grp = "
    "(SELECT max(s.t.v) FROM s.t)",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_columns_qualified_by_the_table_name_read_as_in_duckdb(reader, module_duck,  # noqa: ANN001
                                                             sql):
    assert ours(reader, sql) == duckdb(module_duck, sql)


def test_a_star_qualified_by_schema_and_table(reader):  # noqa: ANN001
    """``s.t.*``, which Spark takes and DuckDB's parser does not."""
    assert ours(reader, "SELECT s.t.* FROM s.t WHERE s.t.grp = 2") == [(2, 20)]


def test_two_tables_of_one_name(reader):  # noqa: ANN001
    """``s.t`` and ``o.t`` in one query: ``t.grp`` is ambiguous (Spark says so; here the
    error offers both tables' columns); ``s.t.grp`` (in QUERIES) and the rest work."""
    assert ours(reader, "SELECT * FROM s.t JOIN o.t USING (grp)") == [(2, 20, "o-two")]
    with pytest.raises(Exception, match=r"`s\.t`\.`grp`, `o\.t`\.`grp`"):
        ours(reader, "SELECT t.grp FROM s.t CROSS JOIN o.t")


def test_as_dbt_renders_relations(engine, caplog):  # noqa: ANN001
    """``{{ ref('t') }}`` renders as `` `s.t` ``: qualified by the table's name, or by the
    rendered relation itself (``{{ this }}.v``), as long as the statement does not do both;
    also at a past snapshot, and when file skipping points the read at fewer files."""
    expected = [(2, 20), (3, 30)]
    caplog.set_level(logging.DEBUG, logger="dbt.adapters.ducklake")
    assert ours(engine, "SELECT t.grp, t.v FROM `s.t` WHERE t.v > 15") == expected
    assert ours(engine, "SELECT `s.t`.grp, `s.t`.v FROM `s.t` WHERE `s.t`.v > 15") == expected
    assert ours(engine, "SELECT `s.t`.grp, `s.t`.`v` FROM `s.t`") == [(1, 10), *expected]
    reads = [re.search(r"s\.t@\d+: read (\d+) of (\d+) files", r.getMessage())
             for r in caplog.records]
    skipped = [m.group(0) for m in reads if m and int(m.group(1)) < int(m.group(2))]
    assert len(skipped) == 2, skipped  # the two filtered reads were pointed at fewer files
    created = engine.execute("CREATE TABLE s.w AS SELECT 1 AS grp").snapshot.snapshot_id
    engine.execute("INSERT INTO s.w SELECT 2")
    assert ours(engine, f"SELECT w.grp FROM `s.w@v{created}` WHERE w.grp > 0") == [(1,)]


def test_statements_that_write_read_qualified_columns(engine, duck):  # noqa: ANN001
    engine.execute("CREATE TABLE s.c AS SELECT t.grp, t.v FROM s.t WHERE t.v > 15")
    engine.execute("INSERT INTO s.c SELECT u.grp, 0 FROM s.u WHERE u.label = 'one'")
    engine.execute("MERGE INTO s.c USING s.u ON c.grp = u.grp "
                   "WHEN MATCHED THEN UPDATE SET v = c.v + 1")
    engine.execute("UPDATE s.c SET v = c.v * 10 WHERE c.grp = 2")
    engine.execute("DELETE FROM s.c WHERE c.grp IN (SELECT t.grp FROM s.t WHERE t.v = 30 "
                   "AND c.v > 0)")
    assert ours(engine, "SELECT * FROM s.c") == [(1, 1), (2, 200)]
    assert duckdb(duck, "SELECT * FROM s.c") == [(1, 1), (2, 200)]


def test_a_view_qualifies_columns_by_table_name_in_both_engines(engine, duck):  # noqa: ANN001
    engine.execute("CREATE VIEW s.ours AS SELECT t.grp, u.label FROM s.t JOIN s.u "
                   "ON t.grp = u.grp")
    duck.execute("CREATE VIEW lake.s.theirs AS SELECT t.grp, u.label FROM s.t JOIN s.u "
                 "ON t.grp = u.grp")
    expected = [(1, "one"), (3, "three")]
    for view in ("ours", "theirs"):
        assert ours(engine, f"SELECT * FROM s.{view}") == expected, view
        assert ours(engine, f"SELECT {view}.label FROM s.{view} WHERE {view}.grp = 3") == \
            [("three",)], view
        assert duckdb(duck, f"SELECT * FROM s.{view}") == expected, view


@pytest.mark.parametrize("reference", ["`s.t`", "s.t"])
def test_a_name_registered_after_a_failed_analysis_gets_its_alias(engine, monkeypatch,  # noqa: ANN001
                                                                  reference):
    """A name whose registration ahead of analysis failed (another thread's commit dropped
    what it reads, say) is registered when Spark reports it missing, and gets the alias it
    would have had. The failure is injected."""
    registry = engine.registry
    register = registry.register
    calls = []

    def failing_once(name):  # noqa: ANN001, ANN202
        calls.append(name)
        if len(calls) == 1:
            raise RuntimeError("injected: the lake changed meanwhile")
        return register(name)

    registry.invalidate()
    monkeypatch.setattr(registry, "register", failing_once)
    assert ours(engine, f"SELECT t.grp FROM {reference} WHERE t.v > 15") == [(2,), (3,)]
    assert len(calls) == 2
