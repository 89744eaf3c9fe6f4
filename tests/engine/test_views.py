"""Views across the engines: the views DuckDB writes, read by Spark with DuckDB's meaning,
and the views we write, run by DuckDB with Spark's.

DuckDB is the oracle: for every view body of the matrices, ``SELECT * FROM view`` gives the
same rows (and the same column names) in both engines.
"""

from __future__ import annotations

import logging

import pytest
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import UnsupportedViewError
from dbt.adapters.ducklake.lake.models import format_column_aliases, parse_column_aliases
from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]

# name -> the view's query as DuckDB users write it (in schema ``s``, where ``t`` lives)
VIEWS = {
    "quoted": 'SELECT "id", "name" FROM t',
    "unqualified": "SELECT id, amount FROM t WHERE amount > 1.5",
    "catalog_qualified": "SELECT id FROM lake.s.t",
    "cross_schema_join": "SELECT t.id, o.label FROM t JOIN o.labels AS o ON o.id = t.id",
    "cte_named_like_a_table": "WITH t AS (SELECT 42 AS id) SELECT id FROM t",
    "cte": "WITH big AS (SELECT * FROM t WHERE id > 1) SELECT count(*) AS n FROM big",
    "window": "SELECT id, sum(amount) OVER (PARTITION BY grp ORDER BY id) AS running FROM t",
    "case": "SELECT id, CASE WHEN amount > 2 THEN 'big' WHEN amount IS NULL THEN 'none' "
            "ELSE 'small' END AS size FROM t",
    "casts": "SELECT id::VARCHAR AS s, CAST(amount AS INTEGER) AS i, "
             "CAST(day AS TIMESTAMP) AS ts, amount::DECIMAL(10, 2) AS d FROM t",
    "dates": "SELECT id, date_trunc('month', day) AS m, strftime(day, '%Y/%m/%d') AS f, "
             "year(day) AS y, month(day) AS mo, dayofweek(day) AS dow, "
             "date_diff('day', DATE '2024-01-01', day) AS days FROM t",
    "strings": "SELECT id, upper(name) AS u, length(name) AS l, name || '!' AS e, "
               "substr(name, 2, 2) AS part, replace(name, 'a', 'o') AS r FROM t",
    "qualify": "SELECT id, grp FROM t QUALIFY row_number() OVER (PARTITION BY grp "
               "ORDER BY id DESC) = 1",
    "exclude": "SELECT * EXCLUDE (name, tags) FROM t",
    "struct_and_list": "SELECT id, info.k AS k, tags[1] AS first_tag, "
                       "array_length(tags) AS n FROM t",
    "group_by_all": "SELECT grp, count(*) AS n, max(amount) AS top FROM t GROUP BY ALL",
    "aliased(a, b)": "SELECT id, name FROM t",
    'odd_aliases("odd ""col""", plain)': "SELECT id, grp FROM t",
    "on_a_view": "SELECT a, upper(b) AS b FROM aliased WHERE a > 1",
    "cast_on_a_view": "SELECT id, CAST(amount AS INTEGER) AS i FROM unqualified",
}


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def duckdb_lake(duck) -> None:  # noqa: ANN001
    duck.execute("CREATE SCHEMA lake.s")
    duck.execute("CREATE SCHEMA lake.o")
    duck.execute("""CREATE TABLE lake.s.t AS SELECT * FROM (VALUES
        (1, 'anna', 1.0, 1, DATE '2024-01-31', {'k': 'x'}, ['a', 'b']),
        (2, 'bob', 2.5, 1, DATE '2024-02-01', {'k': 'y'}, ['c']),
        (3, 'cara', NULL, 2, DATE '2024-03-15', {'k': NULL}, []),
        (4, 'dan', 3.25, 2, DATE '2025-12-31', NULL, NULL))
        v(id, name, amount, grp, day, info, tags)""")
    duck.execute("CREATE TABLE lake.o.labels AS SELECT * FROM (VALUES (1, 'one'), (3, 'three'))"
                 " v(id, label)")
    for name, body in VIEWS.items():
        duck.execute(f"CREATE VIEW lake.s.{name} AS {body}")


def view_name(key: str) -> str:
    return key.split("(")[0]


@pytest.mark.postgres_too
def test_duckdb_views_read_by_spark_as_duckdb_reads_them(engine, duck):  # noqa: ANN001
    duckdb_lake(duck)
    failures = []
    for key in VIEWS:
        name = view_name(key)
        expected = duck.execute(f"SELECT * FROM lake.s.{name}")
        columns = [d[0] for d in expected.description]
        expected_rows = sorted(duck_rows(duck, f"SELECT * FROM lake.s.{name}"), key=repr)
        df = engine.execute(f"SELECT * FROM s.{name}").df
        ours = sorted(spark_rows(df), key=repr)
        if ours != expected_rows:
            failures.append(f"{name}: spark {ours} duckdb {expected_rows}")
        if "(" in key and df.columns != columns:
            failures.append(f"{name}: columns {df.columns} duckdb {columns}")
    assert not failures, "\n".join(failures)


def test_duckdb_view_names_its_columns_in_the_catalog_as_we_write_them(engine, lake, duck):  # noqa: ANN001
    duckdb_lake(duck)
    views = {v.view_name: v for v in lake.catalog.views("s")}
    assert views["aliased"].aliases == ["a", "b"]
    assert views["aliased"].column_aliases == format_column_aliases(["a", "b"])
    assert views["aliased"].aliases == parse_column_aliases(views["aliased"].column_aliases)
    # ours, with a column list: stored as DuckDB stores it, read back with those names
    engine.execute("CREATE VIEW s.ours (x, `y z`) AS SELECT id, name FROM s.t")
    ours = next(v for v in lake.catalog.views("s") if v.view_name == "ours")
    assert ours.column_aliases == '"x","y z"'
    assert engine.execute("SELECT * FROM s.ours").df.columns == ["x", "y z"]
    # a rename keeps them
    engine.execute("ALTER VIEW s.ours RENAME TO s.ours2")
    assert engine.execute("SELECT * FROM s.ours2").df.columns == ["x", "y z"]


def test_a_duckdb_view_changed_later_reads_as_it_was(engine, lake, duck):  # noqa: ANN001
    duckdb_lake(duck)
    before = lake.catalog.latest_snapshot().snapshot_id
    duck.execute('CREATE OR REPLACE VIEW lake.s.quoted AS SELECT "name" AS "id" FROM t')
    now = sorted(spark_rows(engine.execute("SELECT * FROM s.quoted").df))
    assert now == [("anna",), ("bob",), ("cara",), ("dan",)]
    then = sorted(spark_rows(engine.execute(f"SELECT * FROM `s.quoted@v{before}`").df))
    assert then == sorted(duck_rows(duck, f"SELECT * FROM lake.s.quoted AT (VERSION => {before})"))
    assert then == [(1, "anna"), (2, "bob"), (3, "cara"), (4, "dan")]


@pytest.mark.parametrize("body, words", [
    ("SELECT age(day) AS a FROM t", ["s.untranslatable", "duckdb", "AGE"]),
    ("SELECT * FROM other_db.s.t", ["s.untranslatable", "another database"]),
    ("SELECT day + INTERVAL 1 DAY AS d FROM t", ["s.untranslatable", "interval arithmetic"]),
])
def test_a_duckdb_view_spark_cannot_run_fails_naming_it(engine, duck, body, words):  # noqa: ANN001
    duckdb_lake(duck)
    duck.execute("ATTACH ':memory:' AS other_db")
    duck.execute("CREATE SCHEMA other_db.s")
    duck.execute("CREATE TABLE other_db.s.t AS SELECT DATE '2024-01-01' AS day")
    duck.execute(f"CREATE VIEW lake.s.untranslatable AS {body}")
    with pytest.raises(UnsupportedViewError) as info:
        engine.execute("SELECT * FROM s.untranslatable").df.collect()
    for word in words:
        assert word.lower() in str(info.value).lower(), str(info.value)



# ------------------------------------------------------------------ views we write, run by DuckDB
# name -> a view's query as Spark users (and dbt models) write it
SPARK_VIEWS = {
    "backticks": "SELECT `id`, `name` FROM `s`.`t`",
    "unnamed": "SELECT id + 1, upper(name), amount * 2, cast(id AS STRING), x.grp FROM s.t AS x",
    "strings": "SELECT id, lower(name) AS lo, length(name) AS l, concat(name, '!') AS e, "
               "concat_ws('-', name, upper(name)) AS w, substring(name, 2, 2) AS part, "
               "replace(name, 'a', 'o') AS r, trim(concat(' ', name, ' ')) AS tr, "
               "instr(name, 'a') AS pos, name || '?' AS q FROM s.t",
    "casts": "SELECT id, CAST(amount AS INT) AS i, CAST(f AS BIGINT) AS b, "
             "CAST(amount AS DECIMAL(10, 1)) AS d, CAST(day AS TIMESTAMP) AS ts, "
             "CAST(ts AS DATE) AS dt, CAST(flag AS INT) AS fl, CAST(day AS STRING) AS ds, "
             "CAST(f AS DOUBLE) AS fd FROM s.e",
    "dates": "SELECT id, date_add(day, 3) AS plus, date_sub(day, 1) AS minus, "
             "datediff(day, DATE'2024-01-01') AS days, year(day) AS y, month(day) AS m, "
             "dayofmonth(day) AS dd, dayofweek(day) AS dow, hour(ts) AS h FROM s.e",
    "window": "SELECT id, row_number() OVER (PARTITION BY grp ORDER BY amount) AS rn, "
              "sum(amount) OVER (PARTITION BY grp ORDER BY id) AS running, "
              "lag(id) OVER (ORDER BY id) AS prev, rank() OVER (ORDER BY amount DESC) AS rk "
              "FROM s.t",
    "case": "SELECT id, CASE WHEN amount > 2 THEN 'big' WHEN amount IS NULL THEN 'none' "
            "ELSE 'small' END AS size, if(grp = 1, 'one', 'other') AS g, "
            "coalesce(amount, 0) AS a, nullif(grp, 2) AS n, grp <=> NULL AS nn FROM s.t",
    "cte_join": "WITH big AS (SELECT * FROM s.t WHERE id > 1) SELECT big.id, o.label "
                "FROM big LEFT JOIN o.labels o ON o.id = big.id",
    "aggregate": "SELECT grp, count(*) AS n, count(DISTINCT name) AS names, "
                 "sum(amount) AS total, min(day) AS first, max(name) AS last, "
                 "avg(id) AS mean FROM s.t GROUP BY grp HAVING count(*) > 0",
    "nested": "SELECT id, info.k AS k, tags[0] AS first_tag, element_at(tags, -1) AS last, "
              "size(tags) AS n, m['a'] AS a FROM s.e",
    "sets": "SELECT id FROM s.t WHERE grp = 1 UNION ALL SELECT id FROM s.t WHERE grp = 2 "
            "UNION SELECT 99 AS id",
    "subqueries": "SELECT id FROM s.t AS x WHERE id IN (SELECT id FROM o.labels) OR EXISTS "
                  "(SELECT 1 FROM o.labels l WHERE l.id = x.id + 1)",
    "arithmetic": "SELECT id / 2 AS half, id % 3 AS m, f / 4 AS q, greatest(id, grp) AS g, "
                  "least(id, grp) AS l, abs(-id) AS a, floor(amount) AS fl, "
                  "ceil(amount) AS c, round(amount, 1) AS r FROM s.e",
    "like": "SELECT name FROM s.t WHERE name LIKE 'a%' OR name ILIKE 'B%'",
    "group_by_all": "SELECT grp, count(*) AS n, max(name) AS top FROM s.t GROUP BY ALL",
    "aliased(a, b)": "SELECT id, name FROM s.t",
    "on_a_view": "SELECT lo, e FROM s.strings WHERE id > 1",
}

# a view whose Spark SQL has no DuckDB SQL of the same meaning -> the construct named
SPARK_ONLY = {
    "gathers": ("SELECT collect_list(name) AS names FROM s.t", "ARRAY_AGG"),
    "decimal_mean": ("SELECT avg(amount) AS mean FROM s.t", "average of decimals"),
    "text_to_int": ("SELECT CAST(CAST(id AS STRING) AS INT) AS i FROM s.t", "cast from text"),
    "at_a_snapshot": ("SELECT id FROM `s.t@v{latest}`", "s.t@v"),
}


def spark_tables(engine) -> None:  # noqa: ANN001
    engine.execute("CREATE SCHEMA IF NOT EXISTS s")
    engine.execute("CREATE SCHEMA IF NOT EXISTS o")
    engine.execute("""CREATE TABLE s.t AS SELECT * FROM VALUES
        (1, 'anna', 1.0BD, 1, DATE'2024-01-31'),
        (2, 'bob', 2.5BD, 1, DATE'2024-02-01'),
        (3, 'Cara', CAST(NULL AS DECIMAL(3, 2)), 2, DATE'2024-03-15'),
        (4, 'dan', 3.25BD, 2, DATE'2025-12-31')
        AS v(id, name, amount, grp, day)""")
    engine.execute("CREATE TABLE o.labels AS SELECT * FROM VALUES (1, 'one'), (3, 'three') "
                   "AS v(id, label)")
    engine.execute("""CREATE TABLE s.e AS SELECT * FROM VALUES
        (1, 2, 1.75BD, 2.5D, true, DATE'2024-01-07', TIMESTAMP'2024-01-07 23:30:00',
         named_struct('k', 'x'), array('a', 'b'), map('a', 1)),
        (2, 1, -2.5BD, -7.25D, false, DATE'2024-02-29', TIMESTAMP'2024-02-29 00:15:00',
         named_struct('k', CAST(NULL AS STRING)), array('c'), map('b', 2)),
        (3, 3, CAST(NULL AS DECIMAL(4, 2)), CAST(NULL AS DOUBLE), CAST(NULL AS BOOLEAN),
         CAST(NULL AS DATE), CAST(NULL AS TIMESTAMP), CAST(NULL AS STRUCT<k: STRING>),
         CAST(NULL AS ARRAY<STRING>), CAST(NULL AS MAP<STRING, INT>))
        AS v(id, grp, amount, f, flag, day, ts, info, tags, m)""")


def stored_views(lake) -> dict:  # noqa: ANN001
    return {v.view_name: v for v in lake.catalog.views("s")}


@pytest.mark.postgres_too
def test_our_views_run_in_duckdb_as_in_spark(engine, lake, duck):  # noqa: ANN001
    spark_tables(engine)
    for key, body in SPARK_VIEWS.items():
        engine.execute(f"CREATE VIEW s.{key} AS {body}")
    stored = stored_views(lake)
    failures = []
    for key in SPARK_VIEWS:
        name = view_name(key)
        view = stored[name]
        if view.dialect != "duckdb" or view.spark_sql != SPARK_VIEWS[key]:
            failures.append(f"{name}: stored as {view.dialect}: {view.sql}")
            continue
        df = engine.execute(f"SELECT * FROM s.{name}").df
        ours = sorted(spark_rows(df), key=repr)
        try:
            result = duck.execute(f"SELECT * FROM lake.s.{name}")
        except Exception as exc:  # noqa: BLE001 - collected, reported below
            failures.append(f"{name}: DuckDB fails on {view.sql}: {exc}")
            continue
        columns = [d[0] for d in result.description]
        theirs = sorted(duck_rows(duck, f"SELECT * FROM lake.s.{name}"), key=repr)
        if ours != theirs:
            failures.append(f"{name}: spark {ours} duckdb {theirs} ({view.sql})")
        if df.columns != columns:
            failures.append(f"{name}: columns {df.columns} duckdb {columns}")
    assert not failures, "\n".join(failures)


def test_a_view_duckdb_cannot_run_alike_stays_spark_sql_with_a_warning(engine, lake, caplog):  # noqa: ANN001
    spark_tables(engine)
    for name, (body, construct) in SPARK_ONLY.items():
        body = body.format(latest=lake.catalog.latest_snapshot().snapshot_id)
        with caplog.at_level(logging.WARNING, logger="dbt.adapters.ducklake"):
            caplog.clear()
            engine.execute(f"CREATE VIEW s.{name} AS {body}")
        view = stored_views(lake)[name]
        assert (view.dialect, view.sql, view.spark_sql) == ("spark", body, None), name
        warned = " ".join(r.getMessage() for r in caplog.records)
        assert f"s.{name}" in warned and construct.lower() in warned.lower(), warned
        assert engine.execute(f"SELECT * FROM s.{name}").df.collect() is not None


def test_our_view_changed_later_reads_as_it_was_in_both_engines(engine, lake, duck):  # noqa: ANN001
    spark_tables(engine)
    engine.execute("CREATE VIEW s.v AS SELECT id, upper(name) AS n FROM s.t WHERE grp = 1")
    before = lake.catalog.latest_snapshot().snapshot_id
    engine.execute("CREATE OR REPLACE VIEW s.v AS SELECT id, lower(name) AS n FROM s.t")
    engine.execute("ALTER VIEW s.v RENAME TO s.w")
    view = stored_views(lake)["w"]
    assert view.spark_sql == "SELECT id, lower(name) AS n FROM s.t"
    now = sorted(spark_rows(engine.execute("SELECT * FROM s.w").df))
    assert now == sorted(duck_rows(duck, "SELECT * FROM lake.s.w"))
    assert ("3", ) != now[2] and now[2] == (3, "cara")
    then = sorted(spark_rows(engine.execute(f"SELECT * FROM `s.v@v{before}`").df))
    assert then == [(1, "ANNA"), (2, "BOB")]
    assert then == sorted(duck_rows(duck, f"SELECT * FROM lake.s.v AT (VERSION => {before})"))
    # DuckDB renames and comments the view: its Spark text stays with it
    duck.execute("ALTER VIEW lake.s.w RENAME TO x")
    duck.execute("COMMENT ON VIEW lake.s.x IS 'renamed in DuckDB'")
    assert stored_views(lake)["x"].spark_sql == "SELECT id, lower(name) AS n FROM s.t"
    assert sorted(spark_rows(engine.execute("SELECT * FROM s.x").df)) == now
    # DuckDB replaces it: DuckDB's query is the view's now
    duck.execute("CREATE OR REPLACE VIEW lake.s.x AS SELECT 7 AS id")
    assert stored_views(lake)["x"].spark_sql is None
    assert spark_rows(engine.execute("SELECT * FROM s.x").df) == [(7,)]
