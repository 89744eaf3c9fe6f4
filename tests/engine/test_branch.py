"""Atomic publish, the library part: a private branch of the catalog (``lake/branch.py``)
written through the ordinary Python and SQL API, published as ONE snapshot
(``lake/publish.py``, ``lake/replay.py``), with DuckDB on the real lake as the oracle."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator

import pytest
from oracle import duck_rows, spark_rows
from sqlalchemy import text

from dbt.adapters.ducklake.lake.branch import Branch, branch_files, remove_stale
from dbt.adapters.ducklake.lake.errors import CommitConflictError
from dbt.adapters.ducklake.lake.options import set_option
from dbt.adapters.ducklake.spark import SparkLake
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark


@pytest.fixture
def branch(lake) -> Iterator[Branch]:  # noqa: ANN001
    br = Branch.open(lake.catalog)
    yield br
    br.discard()


def on(spark, catalog) -> tuple[SparkLake, Engine]:  # noqa: ANN001
    """A SparkLake and a SQL engine over ``catalog`` (the branch's or the lake's)."""
    lk = SparkLake(spark, catalog)
    return lk, Engine(spark, lk, ViewRegistry(spark, lk))


def run(engine: Engine, *statements: str) -> None:
    for statement in statements:
        engine.execute(statement)


def parquet_files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names
            if f.endswith(".parquet")}


def read_all(engine: Engine, table: str) -> list[tuple[object, ...]]:
    df = engine.execute(f"SELECT * FROM `{table}`").df
    assert df is not None
    return spark_rows(df)


def duck_all(duck, table: str) -> list[tuple[object, ...]]:  # noqa: ANN001
    return duck_rows(duck, f"SELECT * FROM lake.{table}")


def snapshot_count(duck) -> int:  # noqa: ANN001
    return duck.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0]


def test_publish_is_one_snapshot_and_invisible_before(spark, lake, duck, branch):  # noqa: ANN001
    _, base = on(spark, lake.catalog)
    run(base, "CREATE TABLE `main.src` AS SELECT id, id * 2 AS v FROM range(100)",
        "CREATE TABLE `main.old` AS SELECT id FROM range(5)")
    branch.discard()
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng,
        "CREATE TABLE `main.t` AS SELECT id, v FROM `main.src` WHERE id < 50",
        "INSERT INTO `main.t` SELECT id, v FROM `main.src` WHERE id >= 90",
        "INSERT INTO `main.src` SELECT 1000, 1",  # inlined
        "DELETE FROM `main.src` WHERE id < 10",
        "CREATE VIEW `main.v` AS SELECT id FROM `main.t` WHERE id > 40",
        "DROP TABLE `main.old`")
    expected = {name: read_all(eng, name) for name in ("main.t", "main.src", "main.v")}
    before = snapshot_count(duck)
    assert duck_rows(duck, "SELECT count(*) FROM lake.src") == [(100,)]
    assert duck_rows(duck, "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                           "'lake' ORDER BY 1") == [("old",), ("src",)]
    snap = br.publish(author="me", commit_message="build 1")
    assert snap is not None
    assert snapshot_count(duck) == before + 1
    for name, rows in expected.items():
        assert duck_all(duck, name.split(".")[1]) == rows, name
    tid = lake.catalog.table("main", "t").table_id
    src = lake.catalog.table("main", "src").table_id
    tokens = snap.changes
    assert f"inserted_into_table:{tid}" in tokens and 'created_table:"main"."t"' in tokens
    assert f"inlined_delete:{src}" in tokens and f"inlined_insert:{src}" in tokens
    assert 'created_view:"main"."v"' in tokens
    assert any(t.startswith("dropped_table:") for t in tokens)
    assert snap.author == "me" and snap.commit_message == "build 1"


def test_discard_leaves_lake_and_no_files(spark, lake, duck, branch):  # noqa: ANN001
    _, base = on(spark, lake.catalog)
    run(base, "CREATE TABLE `main.src` AS SELECT id FROM range(100)")
    branch.discard()
    files_before = parquet_files(lake.catalog.data_path)
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "INSERT INTO `main.src` SELECT id FROM range(200, 300)",
        "DELETE FROM `main.src` WHERE id < 50",
        "CREATE TABLE `main.t` AS SELECT id FROM range(20)")
    assert parquet_files(lake.catalog.data_path) != files_before
    snaps = lake.catalog.latest_snapshot()
    br.discard()
    br.discard()
    assert parquet_files(lake.catalog.data_path) == files_before
    assert lake.catalog.latest_snapshot() == snaps
    assert not os.path.exists(br.location)
    assert duck_rows(duck, "SELECT count(*) FROM lake.src") == [(100,)]


def test_nothing_changed_publishes_nothing(lake, branch):  # noqa: ANN001
    before = lake.catalog.latest_snapshot()
    assert branch.publish() is None
    assert lake.catalog.latest_snapshot() == before


def test_options_alone_publish_no_snapshot(lake, duck, branch):  # noqa: ANN001
    """A branch that only set options writes them on the lake without a snapshot, as
    DuckDB's ``set_option`` does (in or outside a transaction)."""
    duck.execute("CREATE TABLE lake.t AS SELECT 1 AS x")
    branch.discard()
    br = Branch.open(lake.catalog)
    set_option(br.catalog, "parquet_compression", "zstd")
    set_option(br.catalog, "parquet_row_group_size", 1000, table="t")
    before = lake.catalog.latest_snapshot()
    assert br.publish() is None
    assert lake.catalog.latest_snapshot() == before
    assert sorted(duck_rows(duck, "SELECT option_name, value, scope, scope_entry FROM "
                                  "lake.options() WHERE option_name LIKE 'parquet%'")) == [
        ("parquet_compression", "zstd", "GLOBAL", None),
        ("parquet_row_group_size", "1000", "TABLE", "main.t")]


def test_format_write_to_a_lake_a_guarded_branch_stages_is_refused(
        spark, lake, lake_target, duck):  # noqa: ANN001
    """While this process holds a guarded branch (an atomic dbt invocation), a
    ``format("ducklake")`` write to the lake itself would land beside it: refused, naming the
    guard, before any file is written; once the branch is gone the same write lands."""
    lake.create_table("main.g", spark.range(0).selectExpr("id"))
    writer = spark.range(3).write.format("ducklake").option("catalog", lake_target.catalog)
    if lake_target.metadata_schema:
        writer = writer.option("metadata_schema", lake_target.metadata_schema)
    br = Branch.open(lake.catalog, guard="the atomic dbt invocation x")
    before = lake.catalog.latest_snapshot()
    with pytest.raises(Exception, match=r'format\("ducklake"\) cannot write to main\.g of '
                                        r"this lake now: the atomic dbt invocation x"):
        writer.mode("append").save("main.g")
    assert lake.catalog.latest_snapshot() == before
    br.discard()
    writer.mode("append").save("main.g")
    assert duck_rows(duck, "SELECT count(*) FROM lake.g") == [(3,)]


def test_conflict_on_replaced_table(spark, lake, duck, branch):  # noqa: ANN001
    _, base = on(spark, lake.catalog)
    run(base, "CREATE TABLE `main.t` AS SELECT id FROM range(30)")
    branch.discard()
    files_before = parquet_files(lake.catalog.data_path)
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "INSERT OVERWRITE `main.t` SELECT id FROM range(100, 150)")
    duck.execute("INSERT INTO lake.t SELECT range FROM range(500, 520)")
    latest = lake.catalog.latest_snapshot()
    written = branch_files(br.catalog, br.state)
    assert written and all(os.path.exists(p) for p in written)
    with pytest.raises(CommitConflictError, match=r"main\.t.*snapshot"):
        br.publish()
    assert lake.catalog.latest_snapshot() == latest
    assert not any(os.path.exists(p) for p in written)
    assert files_before <= parquet_files(lake.catalog.data_path)
    assert duck_rows(duck, "SELECT count(*) FROM lake.t") == [(50,)]


def test_concurrent_append_elsewhere_lands(spark, lake, duck, branch):  # noqa: ANN001
    _, base = on(spark, lake.catalog)
    run(base, "CREATE TABLE `main.src` AS SELECT id FROM range(30)",
        "CREATE TABLE `main.t` AS SELECT id FROM range(3)")
    branch.discard()
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "INSERT INTO `main.t` SELECT id FROM `main.src`",
        "CREATE TABLE `main.agg` AS SELECT count(*) AS n FROM `main.src`")
    duck.execute("INSERT INTO lake.src SELECT range FROM range(500, 520)")
    duck.execute("INSERT INTO lake.t SELECT range FROM range(900, 903)")
    snap = br.publish()
    assert snap is not None
    assert duck_rows(duck, "SELECT count(*) FROM lake.src") == [(50,)]
    assert duck_rows(duck, "SELECT count(*), count(DISTINCT rowid) FROM lake.t") == [(36, 36)]
    assert duck_rows(duck, "SELECT n FROM lake.agg") == [(30,)]


def test_remove_stale(lake):  # noqa: ANN001
    br = Branch.open(lake.catalog)
    assert remove_stale(lake.catalog) == []  # its owner (this process) is alive
    br.discard()


# ------------------------------------------------------------------------------ the oracle
BASE = (
    "CREATE TABLE `main.facts` AS SELECT id, id % 7 AS k, CAST(id AS STRING) AS s "
    "FROM range(200)",
    "CREATE TABLE `main.dim` AS SELECT id, concat('d', id) AS name FROM range(20)",
    "CREATE TABLE `main.small` AS SELECT 1 AS id, 'a' AS v",
    "CREATE VIEW `main.vv` AS SELECT id FROM `main.dim` WHERE id < 5",
    "CREATE TABLE `main.gone` AS SELECT 1 AS x",
)
BUILD = (
    "INSERT INTO `main.facts` SELECT id, id % 7, 'new' FROM range(200, 260)",
    "UPDATE `main.facts` SET s = 'upd' WHERE k = 3",
    "DELETE FROM `main.facts` WHERE k = 5",
    "DELETE FROM `main.facts` WHERE id IN (1, 2)",
    "MERGE INTO `main.dim` t USING (SELECT id, concat('m', id) AS name FROM range(15, 25)) s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
    "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
    "ALTER TABLE `main.dim` ADD COLUMNS (extra INT)",
    "INSERT INTO `main.dim` SELECT 100, 'late', 7",
    "INSERT INTO `main.small` SELECT 2, 'b'",
    "DELETE FROM `main.small` WHERE id = 1",
    "COMMENT ON TABLE `main.facts` IS 'the facts'",
    "CREATE TABLE `main.fresh` AS SELECT id, id * 10 AS v FROM range(30)",
    "INSERT INTO `main.fresh` SELECT 99, 990",
    "UPDATE `main.fresh` SET v = -1 WHERE id = 0",
    "DROP TABLE `main.gone`",
    "CREATE OR REPLACE TABLE `main.vv` AS SELECT id FROM `main.dim` WHERE id < 3",
    "CREATE VIEW `main.v2` AS SELECT k, count(*) AS n FROM `main.facts` GROUP BY k",
    "CREATE TABLE `main.tmp` AS SELECT 1 AS x",
    "DROP TABLE `main.tmp`",
    "CREATE TABLE `main.parts` PARTITIONED BY (k) AS SELECT id, CAST(id % 3 AS STRING) AS k "
    "FROM range(40)",
    "INSERT INTO `main.parts` SELECT id, 'x' FROM range(40, 60)",
    "CREATE TABLE `main.nested` AS SELECT id, array(id, id + 1) AS l, map('k', id) AS m, "
    "named_struct('a', id, 'b', CAST(id AS STRING)) AS st FROM range(25)",
    "ALTER TABLE `main.dim` RENAME COLUMN name TO label",
)
RELATIONS = ("facts", "dim", "small", "fresh", "vv", "v2", "parts", "nested")


@pytest.fixture
def oracle_lake(spark, lake_target, tmp_path) -> Iterator[SparkLake]:  # noqa: ANN001
    """A second, normal lake on the same backend, written statement by statement."""
    kwargs: dict[str, object] = {}
    if lake_target.backend == "sqlite":
        catalog = f"sqlite:///{tmp_path / 'oracle.sqlite'}"
    else:
        catalog = lake_target.catalog
        kwargs["metadata_schema"] = lake_target.metadata_schema + "_oracle"
    lk = SparkLake.open(spark, catalog, str(tmp_path / "oracle_data") + "/", **kwargs)
    yield lk
    lk.close()
    if lake_target.backend != "sqlite":
        with lk.catalog.engine.connect() as conn, conn.begin():
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{kwargs["metadata_schema"]}" CASCADE'))


def attach(duck, lk: SparkLake, alias: str) -> None:  # noqa: ANN001
    cat = lk.catalog
    if cat.dialect == "sqlite":
        source = f"sqlite:{cat.target.sqlite_path}"
        extra = ""
    else:
        source = "postgres:" + cat.target.display.removeprefix("postgres:")
        extra = f", METADATA_SCHEMA '{cat.metadata_schema}'"
    duck.execute(f"ATTACH 'ducklake:{source}' AS {alias} (DATA_PATH '{cat.data_path}'{extra})")


def test_published_build_equals_the_same_writes_done_directly(
        spark, lake, duck, oracle_lake):  # noqa: ANN001
    _, base = on(spark, lake.catalog)
    _, direct = on(spark, oracle_lake.catalog)
    run(base, *BASE)
    run(direct, *BASE, *BUILD)
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, *BUILD)
    own = {name: read_all(eng, f"main.{name}") for name in RELATIONS}
    before = lake.catalog.latest_snapshot()
    assert duck_all(duck, "facts") == duck_rows(duck, "SELECT * FROM lake.facts AT "
                                                      f"(VERSION => {before.snapshot_id})")
    snap = br.publish()
    assert snap is not None and snap.snapshot_id == before.snapshot_id + 1
    assert lake.catalog.latest_snapshot().snapshot_id == snap.snapshot_id
    attach(duck, oracle_lake, "oracle")
    for name in RELATIONS:
        published = duck_all(duck, name)
        assert published == duck_rows(duck, f"SELECT * FROM oracle.{name}"), name
        assert published == own[name], name
    for alias in ("lake", "oracle"):  # answered from the table statistics
        duck.execute(f"USE {alias}")
    stats = "SELECT count(*), min(id), max(id), min(s), max(s) FROM {}.facts"
    assert duck_rows(duck, stats.format("lake")) == duck_rows(duck, stats.format("oracle"))
    kinds = duck_rows(duck, "SELECT DISTINCT change_type FROM ducklake_table_changes("
                            f"'lake', 'main', 'facts', {snap.snapshot_id}, {snap.snapshot_id})")
    assert ("update_postimage",) in kinds and ("delete",) in kinds  # row lineage kept
    assert duck_rows(duck, "SELECT comment FROM duckdb_tables() WHERE database_name = 'lake' "
                           "AND table_name = 'facts'") == [("the facts",)]
    assert duck_rows(duck, "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                           "'lake' ORDER BY 1") == duck_rows(
        duck, "SELECT table_name FROM duckdb_tables() WHERE database_name = 'oracle' ORDER BY 1")


# ------------------------------------------------------------------------ DuckDB as the writer
DUCK_BASE = (
    "CREATE TABLE {db}.src AS SELECT range AS id, range % 3 AS k FROM range(100)",
    "CREATE TABLE {db}.other AS SELECT range AS id FROM range(50)",
    "CREATE TABLE {db}.old AS SELECT 1 AS x",
)
DUCK_BUILD = (
    "CREATE TABLE {db}.fresh AS SELECT range AS id FROM range(40)",
    "INSERT INTO {db}.src VALUES (1000, 1)",
    "DELETE FROM {db}.other WHERE id < 30",
    "CREATE VIEW {db}.v AS SELECT id FROM {db}.src",
    "DROP TABLE {db}.old",
    "ALTER TABLE {db}.src ADD COLUMN extra INTEGER",
    "COMMENT ON TABLE {db}.other IS 'c'",
    "CREATE SCHEMA {db}.s2",
    "CREATE TABLE {db}.s2.t AS SELECT range AS id, 'x' AS s FROM range(20)",
    "CREATE VIEW {db}.s2.w AS SELECT 1 AS one",
    "ALTER TABLE {db}.fresh SET PARTITIONED BY (id)",
    "CREATE MACRO {db}.main.add1(a) AS a + 1",
    "UPDATE {db}.src SET k = 9 WHERE id < 5",
)


def test_changes_made_match_one_duckdb_transaction(lake, duck, oracle_lake):  # noqa: ANN001
    """DuckDB writes the branch (it is a real DuckLake catalog), statement by statement; the
    published snapshot's changes_made equals DuckDB's for the same statements in ONE
    transaction on a lake with the same history."""
    attach(duck, oracle_lake, "oracle")
    for statement in DUCK_BASE:
        duck.execute(statement.format(db="lake"))
        duck.execute(statement.format(db="oracle"))
    br = Branch.open(lake.catalog)
    attach(duck, SparkLake(lake.spark, br.catalog), "br")
    for statement in DUCK_BUILD:
        duck.execute(statement.format(db="br"))
    duck.execute("DETACH br")
    duck.execute("BEGIN")
    for statement in DUCK_BUILD:
        duck.execute(statement.format(db="oracle"))
    duck.execute("COMMIT")
    snap = br.publish()
    assert snap is not None
    theirs = oracle_lake.catalog.latest_snapshot()
    assert (snap.snapshot_id, snap.schema_version, snap.next_catalog_id, snap.next_file_id) \
        == (theirs.snapshot_id, theirs.schema_version, theirs.next_catalog_id,
            theirs.next_file_id)
    assert snap.changes_made == theirs.changes_made
    for name in ("src", "other", "fresh", "v", "s2.t", "s2.w"):
        assert duck_all(duck, name) == duck_rows(duck, f"SELECT * FROM oracle.{name}"), name


RACE_BASE = (
    "CREATE TABLE `main.d` AS SELECT id, id % 7 AS k FROM range(100)",
    "CREATE TABLE `main.u` AS SELECT id, id % 7 AS k FROM range(100)",
    "CREATE TABLE `main.m` AS SELECT id, id % 7 AS k FROM range(100)",
    "CREATE TABLE `main.r` AS SELECT id, id % 7 AS k FROM range(100)",
)
# each table gets one DELETE, UPDATE, MERGE or REPLACE in the branch, and more rows
RACE_BUILD = (
    "DELETE FROM `main.d` WHERE k = 3",
    "INSERT INTO `main.d` SELECT id, 3 FROM range(500, 505)",
    "UPDATE `main.u` SET k = k + 100 WHERE k = 3",
    "MERGE INTO `main.m` t USING (SELECT id, -id AS k FROM range(95, 110)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET k = s.k WHEN NOT MATCHED THEN INSERT (id, k) "
    "VALUES (s.id, s.k)",
    "MERGE INTO `main.r` t USING (SELECT 3 AS k) s ON t.k = s.k WHEN MATCHED THEN DELETE",
)
# what the other writer inserts meanwhile: many rows (a Parquet file) and a few (inlined);
# some match the branch's conditions. Ids 95-109 are the MERGE's source: none inserted there.
RACE_OTHER = (
    "INSERT INTO {db}.{t} SELECT range + 1000, range % 7 FROM range(200)",
    "INSERT INTO {db}.{t} VALUES (2000, 3), (2001, 4)",
)


def test_delete_update_merge_racing_inserts_are_replanned_at_publish(
        spark, lake, duck, oracle_lake):  # noqa: ANN001
    """A DELETE, UPDATE or MERGE of the branch applies itself at publish to the rows another
    writer inserted meanwhile into its table, as it does when it commits late on its own:
    the published lake equals the same statements run one after the other after that
    writer's inserts (on another lake), in one snapshot, rows ids included."""
    _, base = on(spark, lake.catalog)
    _, direct = on(spark, oracle_lake.catalog)
    run(base, *RACE_BASE)
    run(direct, *RACE_BASE)
    attach(duck, oracle_lake, "oracle")
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, *RACE_BUILD)
    for db in ("lake", "oracle"):
        for t in ("d", "u", "m", "r"):
            for statement in RACE_OTHER:
                duck.execute(statement.format(db=db, t=t))
    run(direct, *RACE_BUILD)
    before = lake.catalog.latest_snapshot()
    snap = br.publish()
    assert snap is not None and snap.snapshot_id == before.snapshot_id + 1
    for t in ("d", "u", "m", "r"):
        query = "SELECT rowid, id, k FROM {db}.{t} ORDER BY rowid"
        assert duck_rows(duck, query.format(db="lake", t=t)) == \
            duck_rows(duck, query.format(db="oracle", t=t)), t
    assert duck_rows(duck, "SELECT count(*) FROM lake.d WHERE id >= 1000 AND k = 3") == [(0,)]
    assert duck_rows(duck, "SELECT k FROM lake.u WHERE id = 2000") == [(103,)]


def test_racing_insert_stays_a_conflict_where_no_replan_holds(spark, lake, duck):  # noqa: ANN001
    """Two statements deleting from one table (their order would matter), or a schema change
    by the other writer: the publish fails naming the table and the snapshot, lake unchanged."""
    _, base = on(spark, lake.catalog)
    run(base, "CREATE TABLE `main.t` AS SELECT id FROM range(100)",
        "CREATE TABLE `main.a` AS SELECT id FROM range(100)")
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "DELETE FROM `main.t` WHERE id < 50", "UPDATE `main.t` SET id = -id WHERE id > 90")
    duck.execute("INSERT INTO lake.t VALUES (1000)")
    other = lake.catalog.latest_snapshot().snapshot_id
    with pytest.raises(CommitConflictError,
                       match=rf"table main\.t .*snapshot {other}.*2 statements.*re-planned"):
        br.publish()
    assert duck_rows(duck, "SELECT count(*) FROM lake.t") == [(101,)]
    assert lake.catalog.latest_snapshot().snapshot_id == other
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "DELETE FROM `main.a` WHERE id < 50")
    duck.execute("ALTER TABLE lake.a ADD COLUMN c INTEGER")
    duck.execute("INSERT INTO lake.a VALUES (1000, 1)")
    other = lake.catalog.latest_snapshot().snapshot_id
    with pytest.raises(CommitConflictError, match=r"table main\.a .*snapshot"):
        br.publish()
    assert duck_rows(duck, "SELECT count(*) FROM lake.a") == [(101,)]
    assert lake.catalog.latest_snapshot().snapshot_id == other


def test_replacement_racing_inserts_lands_and_insert_overwrite_stays_a_conflict(
        spark, lake, duck, oracle_lake):  # noqa: ANN001
    """A branch's CREATE OR REPLACE TABLE (a dbt table model), columns added, replaces at
    publish the rows another writer inserted meanwhile, as it does committing late on its own
    and as DuckDB's CREATE OR REPLACE lands over another transaction's inserts: the lake
    equals the statement run after those inserts, row ids included. An INSERT OVERWRITE
    stays a conflict, as DuckDB's DELETE and INSERT in one transaction fail on another's
    insert ("attempting to delete from table ... but another transaction has inserted into
    it"): nothing published."""
    setup = ("CREATE TABLE `main.c` AS SELECT id, id % 7 AS k FROM range(100)",
             "CREATE TABLE `main.o` AS SELECT id, id % 7 AS k FROM range(100)")
    replace = ("CREATE OR REPLACE TABLE `main.c` AS "
               "SELECT id, id % 7 AS k, id * 2 AS v FROM range(10)")
    _, base = on(spark, lake.catalog)
    _, direct = on(spark, oracle_lake.catalog)
    run(base, *setup)
    run(direct, *setup)
    attach(duck, oracle_lake, "oracle")
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, replace)
    for db in ("lake", "oracle"):
        for statement in RACE_OTHER:
            duck.execute(statement.format(db=db, t="c"))
    run(direct, replace)
    assert br.publish() is not None
    query = "SELECT rowid, id, k, v FROM {db}.c ORDER BY rowid"
    assert duck_rows(duck, query.format(db="lake")) == duck_rows(duck, query.format(db="oracle"))
    assert duck_rows(duck, "SELECT count(*) FROM lake.c") == [(10,)]

    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "INSERT OVERWRITE `main.o` SELECT id, 0 FROM range(5)")
    duck.execute("INSERT INTO lake.o VALUES (1000, 1)")
    other = lake.catalog.latest_snapshot().snapshot_id
    with pytest.raises(CommitConflictError,
                       match=rf"table main\.o .*snapshot {other}.*INSERT OVERWRITE"):
        br.publish()
    assert duck_rows(duck, "SELECT count(*) FROM lake.o") == [(101,)]
    assert lake.catalog.latest_snapshot().snapshot_id == other


def test_remove_stale_drops_copies_of_dead_or_old_owners(lake):  # noqa: ANN001
    """A copy whose owner process is gone is stale at once; one owned by another host only
    after ``older_than``; a live owner's copy stays."""
    live, dead, foreign = (Branch.open(lake.catalog) for _ in range(3))
    owner_table = (f'"{dead.location}".ducklake_branch_owner'
                   if lake.catalog.dialect != "sqlite" else "ducklake_branch_owner")
    for br, sql in ((dead, f"UPDATE {owner_table} SET pid = 999999999"),
                    (foreign, f"UPDATE {owner_table.replace(dead.location, foreign.location)} "
                              "SET host = 'elsewhere'")):
        with br.catalog.engine.connect() as conn, conn.begin():
            conn.execute(text(sql))
    assert remove_stale(lake.catalog) == [dead.location]
    assert remove_stale(lake.catalog, older_than=datetime.timedelta(0)) == [foreign.location]
    assert remove_stale(lake.catalog) == []
    live.publish()
    assert remove_stale(lake.catalog, older_than=datetime.timedelta(0)) == []
    for br in (dead, foreign):
        br.catalog.close()


def test_concurrent_delete_from_the_same_file_is_a_conflict(spark, lake, duck):  # noqa: ANN001
    _, base = on(spark, lake.catalog)
    run(base, "CREATE TABLE `main.t` AS SELECT id FROM range(100)",
        "CREATE TABLE `main.u` AS SELECT id FROM range(10)")
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "DELETE FROM `main.t` WHERE id % 2 = 0", "INSERT INTO `main.u` SELECT 10")
    duck.execute("DELETE FROM lake.t WHERE id % 3 = 0")  # every data file, as the branch
    latest = lake.catalog.latest_snapshot()
    with pytest.raises(CommitConflictError,
                       match=rf"snapshot {latest.snapshot_id} deleted rows .* main\.t"):
        br.publish()
    assert lake.catalog.latest_snapshot() == latest
    assert duck_rows(duck, "SELECT count(*) FROM lake.t") == [(66,)]
    assert duck_rows(duck, "SELECT count(*) FROM lake.u") == [(10,)]


def test_table_statistics_merge_with_a_concurrent_append(spark, lake, duck):  # noqa: ANN001
    """Both the branch and another writer widen the table-level statistics, which DuckDB
    answers MIN/MAX/COUNT from: the publish merges them."""
    _, base = on(spark, lake.catalog)
    run(base, "CREATE TABLE `main.t` AS SELECT id, CAST(id AS STRING) AS s FROM range(100)")
    br = Branch.open(lake.catalog)
    _, eng = on(spark, br.catalog)
    run(eng, "INSERT INTO `main.t` SELECT id, 'zz' FROM range(200, 220)")
    duck.execute("INSERT INTO lake.t SELECT range - 60, 'a' FROM range(20)")
    assert br.publish() is not None
    assert duck_rows(duck, "SELECT count(*), min(id), max(id), min(s), max(s) FROM lake.t") \
        == [(140, -60, 219, "0", "zz")]
    tid = lake.catalog.table("main", "t").table_id
    with lake.catalog.read() as conn:
        stats = lake.catalog.table_column_stats(tid, conn)
        table_stats = lake.catalog.table_stats(tid, conn)
    assert [(s.min_value, s.max_value) for s in stats.values()] == [("-60", "219"),
                                                                     ("0", "zz")]
    assert table_stats is not None
    assert (table_stats.record_count, table_stats.next_row_id) == (140, 140)
