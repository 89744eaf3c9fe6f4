"""MERGE INTO through the statement engine, checked against DuckDB after every statement."""

from __future__ import annotations

import pytest
from oracle import assert_same, duck_rows, spark_rows
from spies import counted, refused
from typed_rows import SCHEMA, make_rows

from dbt.adapters.ducklake.lake import SchemaMismatchError
from dbt.adapters.ducklake.spark import merge
from dbt.adapters.ducklake.spark.skipping import MIN_BYTES_CONF
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


@pytest.fixture
def key_range_taken(spark):  # noqa: ANN001, ANN201
    """The source's key range is taken and files are judged however small the table."""
    spark.conf.set(MIN_BYTES_CONF, "0")
    yield
    spark.conf.unset(MIN_BYTES_CONF)


@pytest.fixture
def collected_plans(spark, monkeypatch):  # noqa: ANN001, ANN201
    """The plans of the frames a statement collects with ``toArrow`` (the merge's outcome),
    as Spark explains them, with pushed filters spelled out in full."""
    from pyspark.sql.classic.dataframe import DataFrame

    plans: list[str] = []
    real_to_arrow = DataFrame.toArrow

    def to_arrow(self):  # noqa: ANN001, ANN202
        plans.append(spark._jvm.PythonSQLUtils.explainString(self._jdf.queryExecution(),
                                                             "simple"))
        return real_to_arrow(self)

    monkeypatch.setattr(DataFrame, "toArrow", to_arrow)
    spark.conf.set("spark.sql.maxMetadataStringLength", "1000")
    yield plans
    spark.conf.unset("spark.sql.maxMetadataStringLength")


@pytest.mark.postgres_too
@pytest.mark.parametrize("driver_rows", [merge.DRIVER_ROWS, 0], ids=["driver", "spark"])
def test_all_clause_kinds(spark, lake, duck, engine, monkeypatch, driver_rows):  # noqa: ANN001
    """Every clause kind, with the outcome collected to the driver (the few changed rows of a
    typical merge) and left in Spark (more than ``DRIVER_ROWS`` outcome rows)."""
    monkeypatch.setattr(merge, "DRIVER_ROWS", driver_rows)
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id * 10 AS BIGINT) AS v, "
                   "'old' AS tag FROM range(40)")
    table = lake.table("main.t")
    result = engine.execute("""
        MERGE INTO `main.t` AS t
        USING (SELECT id, id * 100 AS v FROM range(30, 50)) AS s
        ON t.id = s.id
        WHEN MATCHED AND s.id >= 38 THEN DELETE
        WHEN MATCHED THEN UPDATE SET v = s.v, tag = 'upd'
        WHEN NOT MATCHED AND s.id < 45 THEN INSERT (id, v, tag) VALUES (s.id, s.v, 'new')
        WHEN NOT MATCHED BY SOURCE AND t.id < 5 THEN DELETE
        WHEN NOT MATCHED BY SOURCE AND t.id >= 25 THEN UPDATE SET tag = 'gone'
    """)
    sid = result.snapshot.snapshot_id
    got = {r["id"]: (r["v"], r["tag"]) for r in table.read().collect()}
    assert len(got) == 40 - 2 - 5 + 5
    assert got[30] == (3000, "upd") and got[37] == (3700, "upd")
    assert 38 not in got and 39 not in got and 3 not in got
    assert got[42] == (4200, "new") and 45 not in got
    assert got[26] == (260, "gone") and got[10] == (100, "old")
    assert_same(duck, "t", table.read())
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 13, "update_postimage": 13, "delete": 7,
                       "insert": 5}


def test_a_source_larger_than_the_driver_outcome_is_merged_in_spark(  # noqa: ANN001
        spark, lake, duck, engine, monkeypatch, key_range_taken):
    """With a NOT MATCHED clause without a condition, every source row is a candidate insert:
    when the source's row count (from its key range) is above ``DRIVER_ROWS`` and its cache
    above ``DRIVER_BYTES``, the outcome is not probed on the driver but merged in Spark, with
    the same result."""
    monkeypatch.setattr(merge, "DRIVER_ROWS", 5)
    monkeypatch.setattr(merge, "DRIVER_BYTES", 0)
    monkeypatch.setattr(merge, "_probe_holds_every_source_row",
                        counted(merge._probe_holds_every_source_row))
    engine.execute("CREATE TABLE `main.t` AS SELECT id, 'old' AS v FROM range(40)")
    result = engine.execute("""MERGE INTO `main.t` t USING (SELECT id, 'new' AS v
                               FROM range(30, 50)) s ON t.id = s.id
                               WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN
                               INSERT *""")
    assert merge._probe_holds_every_source_row.calls == 1
    assert merge._probe_holds_every_source_row(
        [merge.MergeClause("matched", "update_star"),
         merge.MergeClause("not_matched", "insert_star")])
    assert merge._probe_holds_every_source_row(
        [merge.MergeClause("matched", "update_star", "s.v > 1"),
         merge.MergeClause("not_matched", "insert_star")])
    assert not merge._probe_holds_every_source_row(
        [merge.MergeClause("matched", "update_star"),
         merge.MergeClause("not_matched", "insert_star", "s.v > 1")])
    rows = lake.table("main.t").read()
    assert rows.count() == 50 and rows.where("v = 'new'").count() == 20
    assert_same(duck, "t", rows)
    sid = result.snapshot.snapshot_id
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 10, "update_postimage": 10, "insert": 10}


def test_the_key_range_skips_pages_of_a_kept_file_and_positions_stay_exact(  # noqa: ANN001
        spark, lake, duck, engine, monkeypatch, key_range_taken, collected_plans):
    """The source's key range filters the target's rows as well as its files: Spark hands it
    to the Parquet reader, which skips the pages of a kept file outside it (a file of 200,000
    rows has ten pages per column), and the rows it reads keep their positions in the file:
    the rows the merge deletes and rewrites are the ones DuckDB sees updated."""
    monkeypatch.setattr(merge, "KEY_RANGE_MIN_ROWS_OUTSIDE", 0)  # however few rows it skips
    table = lake.create_table("main.t", spark.range(200_000).selectExpr(
        "id", "CAST(id AS STRING) AS v", "date_from_unix_date(CAST(id AS INT)) AS d").coalesce(1))
    assert len(table.state().data_files) == 1
    result = engine.execute("""MERGE INTO `main.t` t USING (
        SELECT id, 'new' AS v, CAST(NULL AS DATE) AS d FROM range(150000, 150010)
        UNION ALL SELECT 300000L, 'new', NULL) s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    scans = [line for plan in collected_plans for line in plan.splitlines()
             if "PushedFilters" in line]
    assert any("GreaterThanOrEqual(id,150000)" in line and "LessThanOrEqual(id,300000)" in line
               for line in scans), scans
    rows = table.read()
    assert sorted(r.id for r in rows.where("v = 'new'").collect()) == \
        [*range(150000, 150010), 300000]
    assert_same(duck, "t", rows)
    sid = result.snapshot.snapshot_id
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 10, "update_postimage": 10, "insert": 1}


def test_a_key_range_that_leaves_out_few_rows_is_not_put_on_the_scan(  # noqa: ANN001
        spark, lake, duck, engine, key_range_taken, collected_plans):
    """A source whose keys span the whole file (updates spread over it) could skip none of its
    pages: its range is not put on the target scan, whose generated code then carries no
    literal that changes with each merge's source."""
    table = lake.create_table("main.t", spark.range(200_000).selectExpr(
        "id", "CAST(id AS STRING) AS v").coalesce(1))
    engine.execute("""MERGE INTO `main.t` t USING (
        SELECT id * 1000 AS id, 'new' AS v FROM range(0, 200) UNION ALL
        SELECT 199999L, 'new' UNION ALL SELECT 300000L, 'new') s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    scans = [line for plan in collected_plans for line in plan.splitlines()
             if "PushedFilters" in line and "main/t/" in line]
    assert scans and not any("GreaterThanOrEqual(id" in line or "LessThanOrEqual(id" in line
                             for line in scans), scans
    rows = table.read()
    assert rows.count() == 200_001 and rows.where("v = 'new'").count() == 202
    assert_same(duck, "t", rows)


def test_a_metadata_scan_generates_the_same_code_at_each_snapshot(spark, lake):  # noqa: ANN001
    """A DELETE, UPDATE or MERGE reads its target with the metadata columns at the snapshot it
    starts from. Unless a file holds rows of later snapshots, that scan's plan spells no
    snapshot id: Spark compiles the code it generates for a plan once, and a literal that
    changed with every statement made each one a new class, run slowly until the JVM had
    compiled it again."""
    from dbt.adapters.ducklake.spark.read import FILE_ID, POSITION, ROW_ID, scan
    from dbt.adapters.ducklake.spark.table_state import load_state

    lake.set_option("data_inlining_row_limit", 0)
    table = lake.create_table("main.t", spark.range(1000).selectExpr("id", "id % 7 AS k"))
    table.append(spark.range(1000, 2000).selectExpr("id", "id % 7 AS k"))
    other = lake.create_table("main.other", spark.range(3))
    debug = spark._jvm.org.apache.spark.sql.execution.debug.package

    def generated_code() -> tuple[int, str]:
        state = load_state(lake.catalog, "main", "t")
        frame = scan(spark, state, metadata=True).where("k = 3").select(
            "id", FILE_ID, POSITION, ROW_ID)
        subtrees = debug.codegenStringSeq(frame._jdf.queryExecution().executedPlan())
        return state.snapshot_id, "".join(subtrees.apply(i)._2() for i in range(subtrees.size()))

    codegen = {"spark.sql.codegen.wholeStage": "true",  # the tests' session turns it off
               "spark.sql.codegen.factoryMode": "FALLBACK"}
    saved = {key: spark.conf.get(key) for key in codegen}
    for key, value in codegen.items():
        spark.conf.set(key, value)
    try:
        first, code = generated_code()
        other.append(spark.range(3, 6))  # a later snapshot; t's files are the same
        later, again = generated_code()
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)
    assert later > first and "processNext" in code
    assert again == code


@pytest.mark.parametrize("shape", ["star", "spelled", "partial"])
def test_dbt_merge_joins_the_source_keys_alone(spark, lake, duck, engine,  # noqa: ANN001
                                               collected_plans, shape):
    """dbt's merge (UPDATE SET * or every column set from the source, as dbt's merge strategy
    spells it; INSERT *; the source has every column) broadcasts only the source's keys: an
    updated row is its source row's candidate insert, with the row id of the target row it
    replaces. A source that lacks a column keeps the target's value there, so its join
    carries the source's values as before. DuckDB reads the same rows and sees updates as
    updates."""
    import re

    lake.set_option("data_inlining_row_limit", 0)
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id AS STRING) AS v, id * 2 AS w "
                   "FROM range(1000)")
    columns = "id, 'new' AS v" if shape == "partial" else "id, 'new' AS v, -1L AS w"
    update = "id = s.`id`, `v` = s.`v`, t.w = s.w" if shape == "spelled" else "*"
    result = engine.execute(f"""MERGE INTO `main.t` t USING (
        SELECT {columns} FROM range(990, 1010)) s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET {update} WHEN NOT MATCHED THEN INSERT *""")
    cached = [sorted(re.findall(r"(\w+)#", match)) for plan in collected_plans
              for match in re.findall(r"InMemoryTableScan \[([^\]]*)\]", plan)]
    keys_alone = ["__ducklake_source_row", "id"] in cached
    assert keys_alone == (shape != "partial"), cached
    rows = lake.table("main.t").read()
    assert rows.count() == 1010 and rows.where("v = 'new'").count() == 20
    expected_w = 995 * 2 if shape == "partial" else -1
    assert rows.where("id = 995").first()["w"] == expected_w
    assert_same(duck, "t", rows)
    sid = result.snapshot.snapshot_id
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 10, "update_postimage": 10, "insert": 10}


def test_a_metadata_scan_of_checked_local_files_filters_no_row(spark, lake):  # noqa: ANN001
    """Each row of a local file finds its file's catalog row by the file's size, checked against
    the catalog before the scan: no filter tests every row for them, so Spark looks them up
    only for the rows a statement keeps (a MERGE's matched rows)."""
    from dbt.adapters.ducklake.spark.read import FILE_ID, ROW_ID, scan
    from dbt.adapters.ducklake.spark.table_state import load_state

    lake.set_option("data_inlining_row_limit", 0)
    table = lake.create_table("main.t", spark.range(100).selectExpr("id"))
    table.append(spark.range(100, 300).selectExpr("id"))
    frame = scan(spark, load_state(lake.catalog, "main", "t"), metadata=True)
    plan = frame._jdf.queryExecution().optimizedPlan().toString()
    assert ".file_size]" in plan and "Filter" not in plan, plan
    rows = frame.select("id", FILE_ID, ROW_ID).collect()
    assert sorted(r[ROW_ID] for r in rows) == list(range(300))
    assert len({r[FILE_ID] for r in rows}) == len(load_state(lake.catalog, "main", "t").data_files)


@pytest.mark.parametrize("result_size", ["within", "beyond"])
def test_a_source_beyond_the_driver_rows_within_its_bytes_is_merged_on_the_driver(  # noqa: ANN001
        spark, lake, duck, engine, monkeypatch, key_range_taken, result_size):
    """A source of more than ``DRIVER_ROWS`` rows whose cache is within ``DRIVER_BYTES`` is
    collected whole with its pairs, in one job without a limit, and the driver writes the
    rows: no Spark write, no cache of the pairs. When the rows are beyond what
    ``spark.driver.maxResultSize`` lets the driver collect, the merge goes the Spark way,
    with the same result."""
    from dbt.adapters.ducklake.spark import write

    engine.execute("CREATE TABLE `main.t` AS SELECT id, 'old' AS v FROM range(40)")
    before = len(lake.table("main.t").state().data_files)
    monkeypatch.setattr(merge, "DRIVER_ROWS", 5)
    monkeypatch.setattr(merge.sql, "cached", counted(merge.sql.cached))
    if result_size == "within":
        monkeypatch.setattr(write, "stage", refused("a Spark write"))
        monkeypatch.setattr(merge.sql, "collect_within_result_size",
                            counted(merge.sql.collect_within_result_size))
    else:
        monkeypatch.setattr(merge.sql, "collect_within_result_size",
                            counted(lambda df: None))
    result = engine.execute("""MERGE INTO `main.t` t USING (SELECT id, 'new' AS v
                               FROM range(30, 70)) s ON t.id = s.id
                               WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN
                               INSERT *""")
    assert merge.sql.collect_within_result_size.calls == 1
    # the source; and the pairs, for the Spark way
    assert merge.sql.cached.calls == (1 if result_size == "within" else 2)
    rows = lake.table("main.t").read()
    assert rows.count() == 70 and rows.where("v = 'new'").count() == 40
    assert_same(duck, "t", rows)
    # the 30 new rows, beyond the inlining limit, are a file (pyarrow's, on the driver)
    assert len(lake.table("main.t").state().data_files) > before
    sid = result.snapshot.snapshot_id
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 10, "update_postimage": 10, "insert": 30}


def test_a_collect_beyond_the_result_size_is_none_and_other_errors_are_raised(  # noqa: ANN001
        spark, monkeypatch):
    """Spark fails a collect beyond ``spark.driver.maxResultSize``; that failure (and no
    other) makes ``collect_within_result_size`` answer ``None``."""
    from py4j.protocol import Py4JJavaError
    from pyspark.sql.classic.dataframe import DataFrame

    from dbt.adapters.ducklake.spark import expressions as sql

    assert sql.max_result_size(spark) == 1 << 30  # Spark's default, 1g
    df = spark.range(3)
    assert sql.collect_within_result_size(df).num_rows == 3
    jvm = spark.sparkContext._jvm
    for message, expected in (
            ("Job aborted due to stage failure: Total size of serialized results of 1 tasks "
             "(8.8 MiB) is bigger than spark.driver.maxResultSize (1024.0 KiB)", None),
            ("Job aborted due to stage failure: disk full", Py4JJavaError)):
        error = Py4JJavaError("An error occurred while calling o40.getResult.",
                              jvm.org.apache.spark.SparkException(message))

        def failing(self, error=error):  # noqa: ANN001, ANN202
            raise error

        monkeypatch.setattr(DataFrame, "toArrow", failing)
        if expected is None:
            assert sql.collect_within_result_size(df) is None
        else:
            with pytest.raises(expected, match="disk full"):
                sql.collect_within_result_size(df)


@pytest.mark.parametrize("broadcast", [True, False], ids=["broadcast", "shuffled"])
@pytest.mark.parametrize("driver_rows", [merge.DRIVER_ROWS, 0], ids=["driver", "spark"])
def test_a_matched_source_row_no_clause_applies_to_is_not_inserted(  # noqa: ANN001
        spark, lake, duck, engine, monkeypatch, driver_rows, broadcast):
    """A source row that matches a target row is not a NOT MATCHED row, even when no MATCHED
    clause applies to it: the inserts are the source rows outside every matched pair, whether
    the pairs are collected or stay in Spark, and whether the source is broadcast or the
    join shuffles both sides."""
    monkeypatch.setattr(merge, "DRIVER_ROWS", driver_rows)
    if not broadcast:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        engine.execute("CREATE TABLE `main.t` AS SELECT id, 'old' AS tag FROM range(40)")
        result = engine.execute("""
            MERGE INTO `main.t` AS t
            USING (SELECT id, CAST(id % 3 AS INT) AS r FROM range(30, 50)) AS s
            ON t.id = s.id
            WHEN MATCHED AND s.r = 0 THEN UPDATE SET tag = 'upd'
            WHEN NOT MATCHED AND s.r <> 1 THEN INSERT (id, tag) VALUES (s.id, 'new')
        """)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    rows = {r["id"]: r["tag"] for r in lake.table("main.t").read().collect()}
    assert {i for i, tag in rows.items() if tag == "upd"} == {30, 33, 36, 39}
    assert {i for i, tag in rows.items() if tag == "new"} == {41, 42, 44, 45, 47, 48}
    assert len(rows) == 46 and result.rows_affected == 4 + 6
    assert_same(duck, "t", lake.table("main.t").read())


def test_a_small_merge_is_written_on_the_driver(spark, lake, duck, monkeypatch):  # noqa: ANN001
    """A merge whose changed rows were collected, more than the inlining limit, writes them
    as files with pyarrow on the driver, without a Spark write and without caching the pairs
    it collected; DuckDB reads every type in them as in Spark's files and labels the
    updates."""
    from dbt.adapters.ducklake.spark import write

    table = lake.create_table("main.t", spark.createDataFrame(make_rows(0, 40), SCHEMA))
    before = len(table.state().data_files)

    monkeypatch.setattr(write, "stage", refused("a Spark write"))
    monkeypatch.setattr(merge.sql, "cached", counted(merge.sql.cached))
    result = table.merge(spark.createDataFrame(make_rows(25, 35), SCHEMA), "t.id = s.id",
                         [merge.MergeClause("matched", "update_star"),
                          merge.MergeClause("not_matched", "insert_star")], "t", "s")
    assert (result.updated, result.inserted) == (15, 20)
    assert merge.sql.cached.calls == 1  # the source; the pairs are read once, by the probe
    sid = result.snapshot.snapshot_id
    assert_same(duck, "t", table.read())
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 15, "update_postimage": 15, "insert": 20}
    files = duck_rows(duck, "SELECT count(*) FROM ducklake_list_files('lake', 't')")
    assert files[0][0] == before + 2  # one file of updated rows, one of new rows


@pytest.mark.postgres_too
def test_star_clauses_and_small_merge_is_inlined(spark, lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id AS STRING) AS s FROM range(50)")
    engine.execute("""MERGE INTO `main.t` AS t USING (SELECT 3L AS id, 'three' AS s UNION ALL
                      SELECT 99L, 'new') AS u ON t.id = u.id
                      WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    assert sorted(lake.current_snapshot().changes) == ["inlined_delete:1", "inlined_insert:1"]
    assert_same(duck, "t", lake.table("main.t").read())


def test_several_source_rows_for_one_target_row_fail(spark, lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id FROM range(20)")
    before = len(lake.snapshots())
    with pytest.raises(SchemaMismatchError, match="more than one source row"):
        engine.execute("MERGE INTO `main.t` t USING (SELECT 1L AS id UNION ALL SELECT 1L) s "
                       "ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert len(lake.snapshots()) == before


def test_matched_and_not_matched_with_a_non_equi_condition(spark, lake, duck, engine):  # noqa: ANN001
    """The pruning join takes the whole ON condition: rows it keeps are exactly those the merge
    join matches, and source rows it matches nowhere are still inserted."""
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id AS BIGINT) AS v, 'old' AS tag "
                   "FROM range(30)")
    engine.execute("INSERT INTO `main.t` VALUES (100, 100, 'inl')")  # an inlined target row
    table = lake.table("main.t")
    engine.execute("""
        MERGE INTO `main.t` AS t
        USING (SELECT id, id * 2 AS v FROM range(20, 40) UNION ALL SELECT 100L, 7L) AS s
        ON t.id = s.id AND t.v < s.v
        WHEN MATCHED THEN UPDATE SET v = t.v + s.v, tag = concat(t.tag, '+')
        WHEN NOT MATCHED THEN INSERT (id, v, tag) VALUES (s.id, s.v, 'new')
    """)
    rows = {r["id"]: (r["v"], r["tag"]) for r in table.read().collect()}
    assert rows[20] == (60, "old+") and rows[29] == (87, "old+") and rows[5] == (5, "old")
    assert rows[35] == (70, "new") and rows[100] == (100, "inl")
    # (100, 7) matched nothing (7 < 100 fails), so it is a new row beside the old one
    assert len(rows) == 40 + 1 and table.read().count() == 42
    assert_same(duck, "t", table.read())


def test_empty_source_commits_nothing(spark, lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id FROM range(20)")
    before = len(lake.snapshots())
    engine.execute("MERGE INTO `main.t` t USING (SELECT id FROM range(0) ) s ON t.id = s.id "
                   "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *")
    assert len(lake.snapshots()) == before
    engine.execute("MERGE INTO `main.t` t USING (SELECT id FROM range(0)) s ON t.id = s.id "
                   "WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN DELETE")
    assert len(lake.snapshots()) == before + 1
    assert lake.table("main.t").read().count() == 17


def test_the_source_is_evaluated_once(spark, lake, duck, engine):  # noqa: ANN001
    """The source feeds the pruning join and the merge join: an expensive or non-deterministic
    model query must still run once (counted here by a Python UDF)."""
    from pyspark.sql.types import LongType

    calls = spark.sparkContext.accumulator(0)

    def counted(value):  # noqa: ANN001, ANN202
        calls.add(1)
        return value

    spark.udf.register("ducklake_test_counted", counted, LongType())
    engine.execute("CREATE TABLE `main.t` AS SELECT id, 0L AS v FROM range(2000)")
    engine.execute("""
        MERGE INTO `main.t` AS t
        USING (SELECT ducklake_test_counted(id) AS id, 1L AS v FROM range(1000, 3000)) AS s
        ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *
    """)
    assert calls.value == 2000
    rows = lake.table("main.t").read()
    assert rows.count() == 3000 and rows.where("v = 1").count() == 2000
    assert_same(duck, "t", rows)


def test_statement_caches_skip_compression_for_themselves_alone(spark, monkeypatch):  # noqa: ANN001
    """A statement's cache (a MERGE source, the rows an UPDATE or DELETE matches) is filled
    without Spark's column compression, which costs more than a cache read once or twice wins
    back: it takes more memory than the same rows cached compressed, holds the same rows, and
    leaves the session's setting as it was. A frame Spark estimates above the bound, or a
    session that already caches uncompressed, caches as the session does."""
    from dbt.adapters.ducklake.spark import expressions as sql

    setting = "spark.sql.inMemoryColumnarStorage.compressed"
    frame = spark.sql("SELECT id, 'the same text in every row' AS s, id % 3 AS k "
                      "FROM range(200000)")

    def cached_bytes(cache):  # noqa: ANN001, ANN202
        """Memory the cached RDDs take once ``cache`` (a frame to fill) is filled."""
        before = sum(i.memSize() for i in spark.sparkContext._jsc.sc().getRDDStorageInfo())
        persisted, rows = cache()
        try:
            assert sorted(rows.groupBy("k").count().collect()) == \
                [(0, 66667), (1, 66667), (2, 66666)]
            return sum(i.memSize() for i in spark.sparkContext._jsc.sc()
                       .getRDDStorageInfo()) - before
        finally:
            persisted.unpersist(blocking=True)

    plain = cached_bytes(lambda: (frame.persist(), frame))
    ours = cached_bytes(lambda: sql.cached(frame))
    assert ours > 1.5 * plain > 0
    assert spark.conf.get(setting) == "true"
    monkeypatch.setattr(sql, "UNCOMPRESSED_CACHE_BYTES", 0)
    assert cached_bytes(lambda: sql.cached(frame)) < ours / 1.5
    monkeypatch.undo()
    spark.conf.set(setting, "false")
    try:
        assert sql._uncompressed_session(frame) is None
        assert cached_bytes(lambda: sql.cached(frame)) == ours
    finally:
        spark.conf.set(setting, "true")


def test_files_outside_the_source_key_range_are_not_read(  # noqa: ANN001
        spark, lake, duck, engine, monkeypatch, key_range_taken):
    """The file statistics prune the merge: a file whose ids lie below every source id is
    never opened (moved away here, it would fail the read), and the result is unchanged."""
    import os
    import shutil

    monkeypatch.setattr(merge, "_prune_by_source_keys", counted(merge._prune_by_source_keys))

    engine.execute("CREATE TABLE `main.t` (id BIGINT, v STRING)")
    for start in (0, 1000, 2000, 3000):
        engine.execute(f"INSERT INTO `main.t` SELECT id, 'old' FROM range({start}, "
                       f"{start + 1000}) DISTRIBUTE BY 1")
    table = lake.table("main.t")
    state = table.state()
    first = min(state.data_files, key=lambda f: f.row_id_start)
    path = state.path_of(first)
    shutil.move(path, path + ".away")
    try:
        engine.execute("""MERGE INTO `main.t` t USING (SELECT id, 'new' AS v
                          FROM range(3500, 4500)) s ON t.id = s.id AND t.v <> 'x'
                          WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
        with pytest.raises(Exception, match="missing"):  # a merge reaching it does read it
            engine.execute("MERGE INTO `main.t` t USING (SELECT 5L AS id, 'x' AS v) s "
                           "ON t.id = s.id WHEN MATCHED THEN DELETE")
    finally:
        shutil.move(path + ".away", path)
    assert os.path.exists(path)
    assert merge._prune_by_source_keys.calls == 2
    rows = table.read()
    assert rows.count() == 4500
    assert rows.where("v = 'new'").count() == 1000
    assert_same(duck, "t", rows)


def test_a_bad_condition_fails_even_when_the_source_is_empty(spark, lake, engine):  # noqa: ANN001
    from pyspark.errors import AnalysisException

    engine.execute("CREATE TABLE `main.t` AS SELECT id FROM range(5)")
    before = len(lake.snapshots())
    with pytest.raises(AnalysisException, match="nosuchcolumn"):
        engine.execute("MERGE INTO `main.t` t USING (SELECT id FROM range(0)) s "
                       "ON t.nosuchcolumn = s.id WHEN NOT MATCHED THEN INSERT *")
    assert len(lake.snapshots()) == before


@pytest.mark.parametrize("partitioned", [False, True], ids=["plain", "partitioned"])
def test_updated_and_inserted_rows_written_in_one_write(spark, lake, duck, engine,  # noqa: ANN001
                                                         monkeypatch, partitioned):
    """More outcome rows than the driver takes and no inlining: updated and inserted rows are
    written by one Spark write into separate files. The updated rows' files carry their row
    ids and the inserted rows' files none (DuckDB would read a NULL there as the row id), so
    DuckDB and our reader agree on every row id, and the change feed shows updates as pre- and
    postimages and new rows as inserts."""
    import pyarrow.parquet as pq

    from dbt.adapters.ducklake.spark import write

    monkeypatch.setattr(merge, "DRIVER_ROWS", 0)
    writes = []
    stage = write.stage
    monkeypatch.setattr(write, "stage", lambda *a, **k: writes.append(k) or stage(*a, **k))
    lake.set_option("data_inlining_row_limit", 0)
    lake.create_table("main.t", spark.sql(
        "SELECT id, id % 3 AS grp, CAST(id AS STRING) AS s FROM range(60)").repartition(3),
        partition_by=["grp"] if partitioned else None)
    before = {r[0]: r[1] for r in duck_rows(duck, "SELECT id, rowid FROM lake.t")}
    writes.clear()
    result = engine.execute("""
        MERGE INTO `main.t` AS t
        USING (SELECT id, id % 3 AS grp, 'v2' AS s FROM range(50, 70)) AS u
        ON t.id = u.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    assert [k.get("split_new_rows") for k in writes] == [True]
    sid = result.snapshot.snapshot_id
    table = lake.table("main.t")
    assert_same(duck, "t", table.read())
    ours = {r["id"]: r["_ducklake_row_id"] for r in table.read(metadata=True).collect()}
    theirs = dict(duck_rows(duck, "SELECT id, rowid FROM lake.t"))
    assert ours == theirs
    assert all(theirs[i] == before[i] for i in range(60))  # updated rows kept their ids
    assert len(set(theirs.values())) == 70
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 10, "update_postimage": 10, "insert": 10}
    state = table.state()
    new_files = [f for f in state.data_files if f.begin_snapshot == sid]
    embeds = {}
    for f in new_files:
        names = pq.read_schema(state.path_of(f).removeprefix("file:")).names
        ids = {r["_ducklake_row_id"] for r in table.read(metadata=True).collect()
               if r["_ducklake_data_file_id"] == f.data_file_id}
        embeds[min(ids) >= 60] = "_ducklake_internal_row_id" in names
    assert embeds == {False: True, True: False}


def test_a_small_target_takes_no_key_range_job(spark, lake, duck, engine, monkeypatch):  # noqa: ANN001
    """Below the file-skipping threshold the target is read whole: the source's key range
    (a Spark job of its own) is not computed, and the merge's answer is the same."""
    monkeypatch.setattr(merge, "_prune_by_source_keys", counted(merge._prune_by_source_keys))
    engine.execute("CREATE TABLE `main.t` AS SELECT id, 'old' AS v FROM range(100)")
    engine.execute("""MERGE INTO `main.t` t USING (SELECT id, 'new' AS v FROM range(90, 110)) s
                      ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED
                      THEN INSERT *""")
    assert merge._prune_by_source_keys.calls == 0
    rows = lake.table("main.t").read()
    assert rows.count() == 110 and rows.where("v = 'new'").count() == 20
    assert_same(duck, "t", rows)


@pytest.mark.parametrize("shared", [False, True], ids=["sizes", "paths"])
@pytest.mark.parametrize("files", [4, 20], ids=["map", "join"])
def test_rows_find_their_file_by_size_or_path(spark, lake, duck, engine, files,  # noqa: ANN001
                                              shared):
    """A row's file values (file id, row id) are looked up by the file's size where no two
    files of the scan share one, and by path where some do (here: half the files are
    byte-identical pairs, the same rows appended twice); both for a literal map (up to 16
    files) and a broadcast join (more). Row ids, file ids and positions equal DuckDB's, and a
    MERGE over all files updates exactly its rows."""
    from collections import Counter

    from dbt.adapters.ducklake.spark.read import FILE_ID, POSITION, ROW_ID
    from dbt.adapters.ducklake.spark.table_state import load_state

    lake.set_option("data_inlining_row_limit", 0)
    # with ``shared``, the first half are pairs of identical files; the rest one size each
    specs = [(100 * (i // 2), 5) if shared and i < files // 2 else (1000 * i, 5 + i)
             for i in range(files)]
    frames = [spark.sql(f"SELECT id, 'a' AS v FROM range({start}, {start + n})").coalesce(1)
              for start, n in specs]
    table = lake.create_table("main.t", frames[0])
    for frame in frames[1:]:
        table.append(frame)
    state = load_state(lake.catalog, "main", "t")
    sizes = Counter(f.file_size_bytes for f in state.data_files)
    assert len(state.data_files) == files and (max(sizes.values()) > 1) == shared
    ours = spark_rows(table.read(metadata=True).select("id", ROW_ID, FILE_ID, POSITION))
    theirs = duck_rows(duck, "SELECT id, rowid, file_row_number FROM lake.t")
    assert sorted(r[:2] for r in ours) == sorted(r[:2] for r in theirs)
    ids = {f.data_file_id for f in state.data_files}
    assert {r[2] for r in ours} == ids and all(r[3] is not None for r in ours)
    engine.execute("""MERGE INTO `main.t` t USING (SELECT DISTINCT id FROM main.t) s
                      ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'b'""")
    rows = lake.table("main.t").read()
    assert rows.where("v = 'b'").count() == rows.count() == len(theirs)
    assert_same(duck, "t", rows)
