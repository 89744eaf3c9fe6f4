"""Lake views are untrusted input: a view that is more than a query over lake relations is
refused, naming the view and the construct, when it is created and when it is read.

A view row can be written by anyone who can write the catalog (a DuckDB user, another writer,
another dbt project), and every reader runs its query with the reader's rights. The views
below would run a shell command (``TRANSFORM ... USING``), read files by path or call Java
methods: each must be refused before Spark analyses it, and the marker file its command would
create must never appear.
"""

from __future__ import annotations

import pytest
from oracle import spark_rows

from dbt.adapters.ducklake.lake.errors import UnsafeViewError
from dbt.adapters.ducklake.sql import view_guard
from dbt.adapters.ducklake.sql.engine import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE SCHEMA IF NOT EXISTS s")
    engine.execute("CREATE TABLE s.t AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(id, name)")
    return engine


@pytest.fixture
def marker(tmp_path):  # noqa: ANN001, ANN201
    """A file the refused views' commands would create: it must never exist."""
    path = tmp_path / "ran"
    yield path
    assert not path.exists(), "a view's command ran"


def transform(marker) -> str:  # noqa: ANN001
    return f"SELECT TRANSFORM(id) USING 'touch {marker}' AS (x) FROM s.t"


def secret_file(tmp_path) -> str:  # noqa: ANN001
    path = tmp_path / "secret.txt"
    path.write_text("do not read me\n")
    return str(path)


# body -> the words the error must have (besides the view's name)
def refused_bodies(marker, tmp_path) -> dict[str, list[str]]:  # noqa: ANN001
    secret = secret_file(tmp_path)
    return {
        transform(marker): ["TRANSFORM", "command"],
        f"SELECT * FROM text.`{secret}`": ["files by path", secret],
        f"SELECT * FROM s.t JOIN parquet.`{tmp_path}` ON true": ["files by path"],
        "SELECT reflect('java.lang.System', 'getProperty', 'user.home') AS h": ["reflect"],
        "SELECT java_method('java.lang.System', 'getenv', 'HOME') AS h": ["java_method"],
        "SELECT id, sum(id) OVER w AS s FROM s.t "
        "WINDOW w AS (PARTITION BY reflect('java.lang.Math', 'abs', id))": ["reflect"],
        "SELECT id FROM s.t WHERE id IN (SELECT reflect('java.lang.Math', 'abs', 1))":
            ["reflect"],
        "SELECT IDENTIFIER('reflect')('java.lang.Math', 'abs', 1) AS x": ["IDENTIFIER"],
        "SELECT * FROM global_temp.sec_global": ["global_temp", "not a table or view of"],
        "SELECT * FROM sec_session_view": ["sec_session_view", "not a table or view of"],
        # the CTE x is not in scope where the first x is read: that x is the session's
        "SELECT * FROM sec_session_view UNION ALL "
        "(WITH sec_session_view AS (SELECT 1 AS a) SELECT * FROM sec_session_view)":
            ["sec_session_view"],
        "SELECT * FROM `s.missing`": ["s.missing", "not a table or view of"],
        "SELECT * FROM python_worker_logs()": ["python_worker_logs"],
        "SELECT * FROM s.t VERSION AS OF 1": ["VERSION AS OF"],
    }


@pytest.fixture
def session_views(spark):  # noqa: ANN001, ANN201
    """A session temp view and a global temp view: not lake relations."""
    spark.sql("CREATE OR REPLACE TEMP VIEW sec_session_view AS SELECT 1 AS a")
    spark.sql("CREATE OR REPLACE GLOBAL TEMP VIEW sec_global AS SELECT 1 AS a")
    yield
    spark.catalog.dropTempView("sec_session_view")
    spark.catalog.dropGlobalTempView("sec_global")


def assert_refused(info, view: str, words: list[str]) -> None:  # noqa: ANN001
    message = str(info.value)
    for word in [f"view {view}", *words]:
        assert word.lower() in message.lower(), message


def test_create_view_refuses_what_is_not_a_query_over_the_lake(
        engine, lake, marker, tmp_path, session_views):  # noqa: ANN001
    for body, words in refused_bodies(marker, tmp_path).items():
        with pytest.raises(UnsafeViewError) as info:
            engine.execute(f"CREATE VIEW s.v AS {body}")
        assert_refused(info, "s.v", words)
    assert [v.view_name for v in lake.catalog.views("s")] == []


def test_a_stored_spark_view_is_refused_when_read(engine, lake, marker, tmp_path,
                                                   session_views):  # noqa: ANN001
    """Rows written straight into the catalog, as another writer would: dialect 'spark',
    and a DuckDB view carrying our ``spark_sql`` tag."""
    for i, (body, words) in enumerate(refused_bodies(marker, tmp_path).items()):
        lake.create_view(("s", f"spark_{i}"), body, dialect="spark")
        lake.create_view(("s", f"tagged_{i}"), "SELECT 1 AS x", dialect="duckdb",
                         spark_sql=body)
        for view in (f"s.spark_{i}", f"s.tagged_{i}"):
            with pytest.raises(UnsafeViewError) as info:
                engine.execute(f"SELECT * FROM {view}").df.collect()
            assert_refused(info, view, words)


def test_a_view_reading_a_refused_view_names_the_refused_one(engine, lake, marker):  # noqa: ANN001
    lake.create_view(("s", "evil"), transform(marker), dialect="spark")
    lake.create_view(("s", "outer"), "SELECT * FROM s.evil", dialect="spark")
    for statement in ("SELECT * FROM s.outer", "SELECT * FROM `s.outer`",
                      "CREATE VIEW s.again AS SELECT * FROM s.outer"):
        with pytest.raises(UnsafeViewError) as info:
            engine.execute(statement).df.collect()
        assert_refused(info, "s.evil", ["TRANSFORM"])


def test_a_duckdb_view_reading_files_is_refused(engine, duck, tmp_path):  # noqa: ANN001
    """A DuckDB user's view, translated to Spark SQL: a file read by path stays refused
    whichever way the translation spells it."""
    secret = secret_file(tmp_path)
    duck.execute(f"CREATE VIEW lake.s.files AS SELECT * FROM read_csv('{secret}')")
    duck.execute(f"COPY (SELECT 1 AS a) TO '{tmp_path}/x.parquet'")
    duck.execute(f"CREATE VIEW lake.s.pq AS SELECT * FROM '{tmp_path}/x.parquet'")
    # translated to parquet.`<path>`, which Spark reads by path
    duck.execute(f"CREATE VIEW lake.s.rp AS SELECT * FROM read_parquet('{tmp_path}/x.parquet')")
    for view in ("s.files", "s.pq", "s.rp"):
        with pytest.raises(UnsafeViewError) as info:
            engine.execute(f"SELECT * FROM {view}").df.collect()
        assert f"view {view}" in str(info.value)


def test_queries_over_the_lake_still_pass(engine, lake):  # noqa: ANN001
    """The constructs of a query (CTEs, a recursive one, subqueries, windows, generators,
    VALUES, set operations, hints, built-in functions) are not refused."""
    bodies = {
        "ctes": "WITH a AS (SELECT * FROM s.t), b AS (SELECT id FROM a WHERE id > 1) "
                "SELECT * FROM b",
        "recursive": "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r "
                     "WHERE n < 3) SELECT n FROM r",
        "subqueries": "SELECT id, (SELECT max(id) FROM s.t) AS top FROM s.t AS x WHERE "
                      "EXISTS (SELECT 1 FROM `s.t` y WHERE y.id = x.id) AND id IN "
                      "(SELECT id FROM s.t)",
        "window": "SELECT id, sum(id) OVER w AS running FROM s.t "
                  "WINDOW w AS (PARTITION BY name ORDER BY id)",
        "generators": "SELECT id, e FROM s.t LATERAL VIEW explode(array(id, id)) g AS e",
        "table_functions": "SELECT * FROM range(3) JOIN (SELECT explode(array(1)) AS y)",
        "values": "SELECT * FROM VALUES (1, upper('a')) AS v(a, b)",
        "sets": "SELECT id FROM s.t UNION SELECT id FROM s.t INTERSECT SELECT 1 EXCEPT "
                "SELECT 5",
        "hints": "SELECT /*+ BROADCAST(t) */ t.id, transform(array(id), x -> x + 1) AS l, "
                 "system.builtin.upper(name) AS u FROM s.t AS t DISTRIBUTE BY id",
        "lateral": "SELECT * FROM s.t, LATERAL (SELECT id + 1 AS next)",
        "snapshot": f"SELECT id FROM `s.t@v{lake.catalog.latest_snapshot().snapshot_id}`",
        "on_a_view": "SELECT * FROM s.ctes",
    }
    for name, body in bodies.items():
        engine.execute(f"CREATE VIEW s.{name} AS {body}")
    engine.registry.invalidate()  # read each afresh, from its stored row
    for name in bodies:
        assert spark_rows(engine.execute(f"SELECT * FROM s.{name}").df) is not None, name


def test_a_verdict_is_cached_per_text(spark):  # noqa: ANN001
    statement = "CREATE OR REPLACE TEMP VIEW `s.c` AS SELECT reflect('a', 'b') AS x"
    first = view_guard.statement_verdict(spark, "s.c", statement)
    assert first.refusal is not None and "reflect" in first.refusal
    assert view_guard.statement_verdict(spark, "s.c", statement) is first


@pytest.mark.parametrize("body, construct", [
    ("SELECT * FROM csv.`/etc`", "files by path"),
    ("SELECT * FROM `org.apache.spark.sql.execution.datasources.v2.text.TextDataSourceV2`"
     ".`/etc/hostname`", "files by path"),
    ("SELECT * FROM spark_catalog.default.t", "not a table or view of the lake"),
    ("SELECT from_protobuf(x, 'M', '/etc/passwd') FROM `s.t`", "from_protobuf"),
    ("SELECT try_reflect('java.lang.Runtime', 'getRuntime') AS r", "try_reflect"),
    ("SELECT * FROM sql_keywords()", "sql_keywords"),
    ("SELECT * FROM `s.t` LATERAL VIEW java_method('a', 'b') g AS x", "java_method"),
    ("SELECT (SELECT reflect('a', 'b')) AS x", "reflect"),
    ("SELECT TRANSFORM(*) USING 'cat' FROM `s.t`", "TRANSFORM"),
])
def test_verdicts_name_the_construct(spark, body, construct):  # noqa: ANN001
    statement = f"CREATE OR REPLACE TEMP VIEW `s.v` AS {body}"
    verdict = view_guard.statement_verdict(spark, "s.v", statement)
    assert verdict.refusal is not None and construct.lower() in verdict.refusal.lower(), \
        verdict


@pytest.mark.parametrize("body, parts", [
    ("SELECT session.my_udf(1) AS x", ("session", "my_udf")),
    ("SELECT my_udf(1) AS x", ("my_udf",)),
])
def test_a_function_not_built_in_is_refused_unless_the_lake_has_it(spark, body, parts):  # noqa: ANN001
    statement = f"CREATE OR REPLACE TEMP VIEW `s.v` AS {body}"
    verdict = view_guard.statement_verdict(spark, "s.v", statement)
    assert verdict.refusal is None and verdict.functions == {parts}
    with pytest.raises(UnsafeViewError, match="not a built-in function"):
        view_guard.check_view(spark, "s.v", statement, lambda _: True, lambda _: False)
    view_guard.check_view(spark, "s.v", statement, lambda _: True, lambda _: True)


def test_only_a_temp_view_over_a_query_is_checked_as_one(spark):  # noqa: ANN001
    for statement in ("DROP TABLE x", "SET spark.sql.runSQLOnFiles=true",
                      "CREATE OR REPLACE GLOBAL TEMP VIEW v AS SELECT 1"):
        verdict = view_guard.statement_verdict(spark, "s.v", statement)
        assert verdict.refusal is not None and "not a query" in verdict.refusal, verdict
