"""Small statements run with one shuffle partition, no adaptive execution and no whole-stage
code generation (:mod:`dbt.adapters.ducklake.spark.statement_sizing`); big ones, and settings a
model or a SET chose, are left as they are; the shared session's settings are always restored.
The engine tests (merge, time travel, changes) run with these settings on every statement."""

from __future__ import annotations

import threading
import uuid

import pytest

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError
from dbt.adapters.ducklake.spark import statement_sizing as sizing
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark

PARTITIONS = "spark.sql.shuffle.partitions"
AQE = "spark.sql.adaptive.enabled"


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def data_files(lake, name: str) -> int:  # noqa: ANN001
    return len(lake.table(name).state().data_files)


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_small_aggregate_is_written_by_one_task_and_the_settings_come_back(
        spark, lake, engine) -> None:  # noqa: ANN001
    before = {key: spark.conf.get(key, None) for key in sizing.SMALL_CONF}
    engine.execute("create table main.t as select id, id % 100 as k from range(1000)")
    engine.execute("create table main.agg as select k, count(*) as n from main.t group by k")
    # one shuffle partition: one task, one file (the tests' session has two partitions)
    assert data_files(lake, "main.agg") == 1
    rows = sorted(tuple(r) for r in engine.execute("select * from main.agg").df.collect())
    assert rows == [(k, 10) for k in range(100)]  # more rows than are inlined
    assert {key: spark.conf.get(key, None) for key in sizing.SMALL_CONF} == before


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_small_write_is_one_file(spark, lake, engine) -> None:  # noqa: ANN001
    """Literal rows are split over the session's two cores; a small statement writes them
    from one task, so the table has one file (and its reads one task)."""
    assert spark.sql("select * from range(100)").rdd.getNumPartitions() == 2
    engine.execute("create table main.t as select id, id % 7 as k from range(100)")
    engine.execute("create table main.u as select * from main.t where k <> 3")
    assert (data_files(lake, "main.t"), data_files(lake, "main.u")) == (1, 1)
    rows = engine.execute("select count(*), sum(id) from main.u").df.collect()
    assert tuple(rows[0]) == (86, sum(i for i in range(100) if i % 7 != 3))
    # rows laid out on purpose keep their layout: a file per task
    engine.execute("create table main.v as select /*+ REPARTITION(3) */ * from main.t")
    engine.execute("create table main.w as select id from range(0, 100, 1, 3)")
    lake.create_table("main.x", spark.range(100).repartition(3))
    assert [data_files(lake, f"main.{n}") for n in "vwx"] == [3, 3, 3]
    spark.conf.set(sizing.MAX_BYTES_CONF, "0")
    try:
        engine.execute("create table main.y as select id from range(100)")
        assert data_files(lake, "main.y") == 2  # Spark's settings: a file per task
    finally:
        spark.conf.unset(sizing.MAX_BYTES_CONF)


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_max_bytes_zero_keeps_sparks_settings(spark, lake, engine) -> None:  # noqa: ANN001
    spark.conf.set(sizing.MAX_BYTES_CONF, "0")
    try:
        engine.execute("create table main.t as select id, id % 100 as k from range(1000)")
        engine.execute("create table main.agg as select k, count(*) as n from main.t "
                       "group by k")
        assert data_files(lake, "main.agg") == 2  # the session's two shuffle partitions
    finally:
        spark.conf.unset(sizing.MAX_BYTES_CONF)


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_what_counts_as_small(spark, lake, engine) -> None:  # noqa: ANN001
    engine.execute("create table main.t as select id from range(100)")
    small = engine.execute("select * from main.t where id > 3").df
    assert sizing.is_small(spark, small)
    assert sizing.is_small(spark, spark.sql("select * from values (1, 'a') as v(i, s)"))
    # a CTE's reference is sized by its definition (dbt's accepted_values test has one)
    assert sizing.is_small(spark, engine.execute(
        "with c as (select id from main.t) select count(*) from c join c as d using (id)").df)
    assert not sizing.is_small(spark, spark.sql(
        "with c as (select id from range(1000000000)) select count(*) from c"))
    # a subquery's relations are not the plan's leaves: not sized, so not small
    assert not sizing.is_small(spark, engine.execute(
        "select * from main.t where id in (select id from main.t)").df)
    assert not sizing.is_small(spark, spark.range(10 ** 9).toDF("id"))
    spark.conf.set(sizing.MAX_BYTES_CONF, "1")
    try:
        assert not sizing.is_small(spark, small)
        spark.conf.set(sizing.MAX_BYTES_CONF, "lots")
        with pytest.raises(InvalidArgumentError, match="number of bytes"):
            sizing.is_small(spark, small)
    finally:
        spark.conf.unset(sizing.MAX_BYTES_CONF)


def test_a_setting_changed_from_the_sessions_own_is_left_alone(spark) -> None:  # noqa: ANN001
    gate = sizing.SizingGate(spark)
    before = spark.conf.get(PARTITIONS)
    aqe = spark.conf.get(AQE)
    spark.conf.set(PARTITIONS, "7")  # as a model's spark_conf would
    try:
        assert gate._enter(True)  # noqa: SLF001
        assert spark.conf.get(PARTITIONS) == "7"
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
        gate._leave(True)  # noqa: SLF001
        assert spark.conf.get(PARTITIONS) == "7"
        assert spark.conf.get(AQE) == aqe
    finally:
        spark.conf.set(PARTITIONS, before)


def test_a_big_statement_waits_for_the_small_ones_and_runs_with_the_sessions_settings(
        spark) -> None:  # noqa: ANN001
    gate = sizing.SizingGate(spark)
    base = spark.conf.get(PARTITIONS)
    assert gate._enter(True)  # noqa: SLF001
    assert spark.conf.get(PARTITIONS) == "1"
    seen: dict[str, object] = {}

    def big() -> None:
        small = gate._enter(False)  # noqa: SLF001
        seen["small"], seen["partitions"] = small, spark.conf.get(PARTITIONS)
        gate._leave(small)  # noqa: SLF001

    thread = threading.Thread(target=big)
    thread.start()
    with gate._cond:  # noqa: SLF001
        gate._cond.wait_for(lambda: gate._big_waiting == 1)  # noqa: SLF001
    assert thread.is_alive() and "small" not in seen
    gate._leave(True)  # noqa: SLF001
    thread.join()
    assert seen == {"small": False, "partitions": base}
    # while a big statement runs, a small one runs at once with the session's settings
    assert not gate._enter(False)  # noqa: SLF001
    assert not gate._enter(True)  # noqa: SLF001
    assert spark.conf.get(PARTITIONS) == base
    gate._leave(False)  # noqa: SLF001
    gate._leave(False)  # noqa: SLF001


def test_a_nested_execution_keeps_the_mode_its_thread_holds(spark) -> None:  # noqa: ANN001
    """A big execution inside a small one of the same thread would wait for itself."""
    gate = sizing.SizingGate(spark)
    with gate.running(spark.sql("select 1 as x")) as outer:
        assert outer
        with gate.running(spark.range(10 ** 9).toDF("id")) as inner:
            assert inner
    assert spark.conf.get(PARTITIONS) == gate._base[PARTITIONS]  # noqa: SLF001


SIZED = [
    "select * from main.t where id > 3",
    "select * from values (1, 'a') as v(i, s)",
    "with c as (select id from main.t) select count(*) from c join c as d using (id)",
    "with c as (select id from range(1000000000)) select count(*) from c",
    "select * from main.t where id in (select id from main.t)",
    "select /*+ REPARTITION(3) */ * from main.t",
    "select /*+ COALESCE(1) */ * from main.t",
    "select id from range(0, 10, 1, 3)",
    "select t.id from main.t as t join range(5) as r on t.id = r.id",
]


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_the_compiled_class_answers_as_the_py4j_walk(spark, lake, engine,  # noqa: ANN001
                                                     monkeypatch) -> None:
    """``DuckLakeStatementSize`` (one call per statement) and the walk through py4j that
    stands in where it cannot be compiled give the same sizes and layouts."""
    engine.execute("create table main.t as select id from range(100)")
    frames = [engine.execute(sql).df for sql in SIZED]
    assert sizing._helper(spark) is not None, "the class did not compile: see the debug log"
    compiled = [(sizing.input_bytes(spark, df), sizing.layout_is_implicit(spark, df))
                for df in frames]
    monkeypatch.setattr(sizing, "_helper", lambda spark: None)
    walked = [(sizing.input_bytes(spark, df), sizing.layout_is_implicit(spark, df))
              for df in frames]
    assert compiled == walked
    assert [size is not None for size, _ in compiled] == \
        [True, True, True, True, False, True, True, True, True]
    assert compiled[3][0] == 8 * 10 ** 9  # a CTE counts its definition's range
    assert [implicit for _, implicit in compiled] == \
        [True, True, True, True, True, False, False, False, True]


ONE_STAGE = [
    # dbt's accepted_values and unique tests: an aggregate inside the test's count
    "select count(*) from (with v as (select k, count(*) as n from main.t group by k) "
    "select * from v where k not in (0, 1, 2))",
    "select count(*) from (select id, count(*) from main.t group by id having count(*) > 1)",
    # relationships: a join; a window; a global sort; a union
    "select count(*) from (select c.k from main.t as c left join main.u as p on c.k = p.k "
    "where p.k is null)",
    "select id, rank() over (partition by k order by id desc) as r from main.t",
    "select * from main.t order by k desc, id",
    "select k, count(*) from (select k from main.t union all select k from main.u) group by k",
]


def exchanges(df) -> list[str]:  # noqa: ANN001
    """The exchanges (shuffles and broadcasts) of ``df``'s executed plan."""
    plan = df._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001
    return [line.strip() for line in plan.splitlines() if "Exchange" in line]


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_small_statement_runs_as_one_stage_with_the_same_rows(spark, lake, engine) -> None:  # noqa: ANN001
    """Aggregates, joins, windows, sorts and unions of small inputs plan no exchange (each
    input read into one partition, which every operator keeps); the rows are those Spark's
    own plan gives. ``main.u`` holds inlined rows beside a file (a union inside its scan)."""
    engine.execute("create table main.t as select id, id % 5 as k from range(200)")
    engine.execute("create table main.u as select id, id % 3 as k from range(50)")
    lake.table("main.u").append(spark.range(3).selectExpr("id", "id as k"))  # inlined
    for sql in ONE_STAGE:
        df = engine.execute(sql).df
        assert exchanges(df), sql  # Spark's own plan shuffles (or broadcasts)
        expected = [tuple(r) for r in df.collect()]
        with sizing.sized(spark, df) as small:
            assert small
            single = sizing.one_partition(spark, df)
            got = [tuple(r) for r in single.collect()]
            assert exchanges(single) == [], sql
        assert (sorted(got) if "order by k" not in sql else got) == \
            (sorted(expected) if "order by k" not in sql else expected), sql
    # rows laid out on purpose, and a plan that is one leaf, are left as they are
    laid_out = engine.execute("select /*+ REPARTITION(3) */ * from main.t").df
    assert sizing.one_partition(spark, laid_out) is laid_out
    leaf = spark.range(3)
    assert sizing.one_partition(spark, leaf) is leaf
    # a cached source (a MERGE's or an incremental model's) is still read from its cache
    cached = engine.execute("select k, count(*) as n from main.t group by k").df.cache()
    try:
        expected = sorted(tuple(r) for r in cached.collect())
        single = sizing.one_partition(spark, cached.where("n > 0"))
        plan = single._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001
        read = plan.split("InMemoryRelation")[0]  # what runs; below is what the cache holds
        assert "InMemoryTableScan" in read and "FileScan" not in read, plan
        assert sorted(tuple(r) for r in single.collect()) == expected
    finally:
        cached.unpersist()


def stages_of(spark, fetch) -> int:  # noqa: ANN001
    """How many stages the Spark jobs ``fetch()`` started ran."""
    sc, group = spark.sparkContext, f"ducklake-fetch-{uuid.uuid4()}"
    sc.setJobGroup(group, "a cursor fetch")
    try:
        fetch()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    return sum(len(tracker.getJobInfo(job).stageIds) for job in tracker.getJobIdsForGroup(group))


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_every_cursor_fetch_runs_a_small_statement_as_one_stage(spark, lake, engine) -> None:  # noqa: ANN001
    """dbt fetches through ``fetchall``, or ``fetchmany`` when a caller passes ``limit`` to
    ``adapter.execute``: each runs a small statement with the small settings, as one stage
    (the tests' session would shuffle the aggregate into two partitions)."""
    from dbt.adapters.ducklake.connections import DuckLakeCursor
    from dbt.adapters.ducklake.runtime import Runtime

    engine.execute("create table main.t as select id, id % 5 as k from range(200)")
    cursor = DuckLakeCursor(Runtime(spark, lake, engine.registry, engine, None), None)
    sql = "select k, count(*) as n from main.t group by k"
    assert exchanges(engine.execute(sql).df)  # Spark's own plan shuffles
    expected = {(k, 40) for k in range(5)}
    fetches = {"fetchall": (lambda: cursor.fetchall(), 5),
               "fetchmany": (lambda: cursor.fetchmany(3), 3),
               "fetchone": (lambda: [cursor.fetchone()], 1)}
    for name, (fetch, count) in fetches.items():
        cursor.execute(sql)
        rows: list = []
        assert stages_of(spark, lambda: rows.extend(fetch())) == 1, name  # noqa: B023
        assert len(rows) == count and set(rows) <= expected, (name, rows)
