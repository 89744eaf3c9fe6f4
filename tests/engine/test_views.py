"""Views across the engines: the views DuckDB writes, read by Spark with DuckDB's meaning.

DuckDB is the oracle: for every view body of the matrix, ``SELECT * FROM view`` gives the same
rows (and, where the view names its columns, the same column names) in both engines.
"""

from __future__ import annotations

import pytest
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import UnsupportedViewError
from dbt.adapters.ducklake.lake.models import format_column_aliases, parse_column_aliases
from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.views import ViewRegistry

pytestmark = pytest.mark.spark

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
    views = {v.view_name: v for v in lake.lake.views("s")}
    assert views["aliased"].aliases == ["a", "b"]
    assert views["aliased"].column_aliases == format_column_aliases(["a", "b"])
    assert views["aliased"].aliases == parse_column_aliases(views["aliased"].column_aliases)
    # ours, with a column list: stored as DuckDB stores it, read back with those names
    engine.execute("CREATE VIEW s.ours (x, `y z`) AS SELECT id, name FROM s.t")
    ours = next(v for v in lake.lake.views("s") if v.view_name == "ours")
    assert ours.column_aliases == '"x","y z"'
    assert engine.execute("SELECT * FROM s.ours").df.columns == ["x", "y z"]
    # a rename keeps them
    engine.execute("ALTER VIEW s.ours RENAME TO s.ours2")
    assert engine.execute("SELECT * FROM s.ours2").df.columns == ["x", "y z"]


def test_a_duckdb_view_changed_later_reads_as_it_was(engine, lake, duck):  # noqa: ANN001
    duckdb_lake(duck)
    before = lake.lake.latest_snapshot().snapshot_id
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

