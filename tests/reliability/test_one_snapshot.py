"""One snapshot or nothing, for every statement kind and every write of the Python API.

Each case runs a write on a lake holding a table (Parquet files, inlined rows, a delete), a
view and a partitioned table, twice broken, then whole:

* its data step fails (a query that raises at run time, as a bad cast or a failing UDF would);
* it dies just before the catalog's COMMIT (the commit's last fault point, where a killed
  process leaves an open catalog transaction that the database rolls back);
* it runs, and commits exactly one snapshot.

After each failure every ``ducklake_*`` row (inlined data tables included) is what it was, and
DuckDB reads the same rows as before. A failure that never reached the commit would make the
second check pass trivially, so each case asserts that the fault point was reached.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import duckdb_connect
from reliability.support import (
    files_on_disk,
    kill_group,
    leftovers,
    start_writer,
    wait_for,
    writer_args,
)
from sqlalchemy import inspect, text

from dbt.adapters.ducklake.lake import faults
from dbt.adapters.ducklake.lake.catalog import Catalog
from dbt.adapters.ducklake.spark.merge import MergeClause
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FAIL = "assert_true(id < 1000000, 'injected')"  # true for every row: used to pass
BOOM = "assert_true(id < 2, 'injected')"  # raises on the rows with id >= 2


class Killed(BaseException):
    """Stands in for the process dying: no handler of the writer's catches it."""


def catalog_dump(lake: Catalog) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ``ducklake_*`` table, in a stable order."""
    with lake.read() as conn:
        names = [n for n in inspect(conn).get_table_names(schema=lake.metadata_schema)
                 if n.startswith("ducklake_")]
        out = {}
        for name in sorted(names):
            rows = conn.execute(text(f"SELECT * FROM {lake.t(name)}")).all()
            out[name] = sorted((tuple(r) for r in rows), key=repr)
    return out


def duck_view(duck) -> dict[str, list[tuple[Any, ...]]]:  # noqa: ANN001
    """Every table of the lake as DuckDB reads it."""
    tables = [r[0] for r in duck.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake'").fetchall()]
    return {t: sorted(duck.execute(f'SELECT * FROM lake."{t}"').fetchall(), key=repr)
            for t in sorted(tables)}


def source(spark, start: int, count: int, fail: bool):  # noqa: ANN001, ANN201
    check = BOOM if fail else FAIL
    return spark.range(start, start + count).selectExpr(
        "id", "CAST(id * 10 AS BIGINT) AS v", "'new' AS tag").where(f"{check} IS NULL")


# ------------------------------------------------------------------ the cases
# Each takes (spark, lake, engine, fail) and runs one statement or API call.
Case = Callable[[Any, Any, Engine, bool], object]


def sql(statement: str) -> Case:
    return lambda spark, lake, engine, fail: engine.execute(
        statement.format(check=BOOM if fail else FAIL))


CASES: dict[str, Case] = {
    "ctas": sql("CREATE TABLE `main.n` AS SELECT id, {check} AS x FROM range(5)"),
    "replace_same": sql("CREATE OR REPLACE TABLE `main.t` AS SELECT id, id * 10 AS v, "
                        "'new' AS tag FROM range(5) WHERE {check} IS NULL"),
    "replace_add_drop": sql("CREATE OR REPLACE TABLE `main.t` AS SELECT id, 1.5D AS w "
                            "FROM range(5) WHERE {check} IS NULL"),
    "replace_widen": sql("CREATE OR REPLACE TABLE `main.t` AS SELECT id, id * 1.5D AS v, "
                         "'x' AS tag FROM range(5) WHERE {check} IS NULL"),
    "replace_narrow": sql("CREATE OR REPLACE TABLE `main.t` AS SELECT id, CAST(id AS INT) AS v,"
                          " 'x' AS tag FROM range(5) WHERE {check} IS NULL"),
    "replace_struct": sql("CREATE OR REPLACE TABLE `main.t` AS SELECT id, id AS v, "
                          "named_struct('a', 1, 'b', 'x') AS tag FROM range(5) "
                          "WHERE {check} IS NULL"),
    "replace_partitioned": sql("CREATE OR REPLACE TABLE `main.p` PARTITIONED BY (k) AS "
                               "SELECT id, CAST(id % 2 AS STRING) AS k FROM range(6) "
                               "WHERE {check} IS NULL"),
    "view_to_table": sql("CREATE OR REPLACE TABLE `main.v` AS SELECT id FROM range(5) "
                         "WHERE {check} IS NULL"),
    "insert": sql("INSERT INTO `main.t` SELECT id, id, 'i' FROM range(100, 120) "
                  "WHERE {check} IS NULL"),
    "insert_inlined": sql("INSERT INTO `main.t` SELECT id, id, 'i' FROM range(3) "
                          "WHERE {check} IS NULL"),
    "insert_overwrite": sql("INSERT OVERWRITE `main.t` SELECT id, id, 'o' FROM range(10) "
                            "WHERE {check} IS NULL"),
    "insert_overwrite_partitions": sql("INSERT OVERWRITE `main.p` SELECT id, 'a' FROM range(4) "
                                       "WHERE {check} IS NULL"),
    "replace_where": sql("INSERT INTO `main.t` REPLACE WHERE id < 10 SELECT id, id, 'r' "
                         "FROM range(10) WHERE {check} IS NULL"),
    "replace_using": sql("INSERT INTO `main.t` REPLACE USING (id) SELECT id, id, 'u' "
                         "FROM range(20) WHERE {check} IS NULL"),
    "delete": sql("DELETE FROM `main.t` WHERE id % 3 = 0 AND {check} IS NULL"),
    "update": sql("UPDATE `main.t` SET v = v + 1 WHERE {check} IS NULL"),
    "merge": sql("MERGE INTO `main.t` d USING (SELECT id, id AS v, 'm' AS tag FROM "
                 "range(10, 60) WHERE {check} IS NULL) s ON d.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"),
    "truncate": sql("DELETE FROM `main.t` WHERE {check} IS NULL"),
    "api_append": lambda spark, lake, engine, fail:
        lake.table("main.t").append(source(spark, 500, 30, fail)),
    "api_overwrite": lambda spark, lake, engine, fail:
        lake.table("main.t").overwrite(source(spark, 0, 30, fail)),
    "api_replace_narrow": lambda spark, lake, engine, fail: lake.table("main.t").replace(
        source(spark, 0, 30, fail).selectExpr("id", "CAST(v AS INT) AS v")),
    "api_create_or_replace": lambda spark, lake, engine, fail: lake.create_table(
        "main.t", source(spark, 0, 30, fail), or_replace=True),
    "api_merge": lambda spark, lake, engine, fail: lake.table("main.t").merge(
        source(spark, 20, 60, fail), "t.id = s.id",
        [MergeClause("matched", "update_star"), MergeClause("not_matched", "insert_star")],
        "t", "s"),
    "api_delete": lambda spark, lake, engine, fail: lake.table("main.t").delete(
        f"id > 40 AND {BOOM if fail else FAIL} IS NULL"),
    "api_update": lambda spark, lake, engine, fail: lake.table("main.t").update(
        {"tag": "'u'"}, where=f"{BOOM if fail else FAIL} IS NULL"),
    "replace_struct_field": sql("CREATE OR REPLACE TABLE `main.s` AS SELECT id, named_struct("
                                "'x', id, 'y', 'new') AS st FROM range(5) WHERE {check} IS NULL"),
    "replace_struct_field_drop": sql("CREATE OR REPLACE TABLE `main.s` AS SELECT id, named_struct("
                                     "'y', 'kept') AS st FROM range(5) WHERE {check} IS NULL"),
    "seed": lambda spark, lake, engine, fail: seed(spark, lake, engine, fail, full_refresh=False),
    "seed_full_refresh": lambda spark, lake, engine, fail:
        seed(spark, lake, engine, fail, full_refresh=True),
    "snapshot_merge": lambda spark, lake, engine, fail: snapshot_merge(engine, fail),
}

# What the failing data step raises: a seed's failure is a value its column type refuses.
FAILURE = {"seed": "CAST_INVALID_INPUT", "seed_full_refresh": "CAST_INVALID_INPUT"}


def seed(spark, lake, engine: Engine, fail: bool, full_refresh: bool) -> None:  # noqa: ANN001
    """``dbt seed`` of a CSV over ``main.t`` (a narrowed ``v``: a new column of the table, or
    with ``--full-refresh`` a new table); a value ``v`` cannot be cast to fails it."""
    import agate
    from dbt.adapters.base.relation import BaseRelation

    from dbt.adapters.ducklake.credentials import DuckLakeCredentials
    from dbt.adapters.ducklake.runtime import Runtime
    from dbt.adapters.ducklake.seeds import load_seed

    text_type = agate.Text()
    rows = [[str(i), str(i * 10), "s"] for i in range(20)] + [["20", "x" if fail else "0", "s"]]
    table = agate.Table(rows, ["id", "v", "tag"], [text_type] * 3)
    # the profile's credentials: a seed's load reads none of them
    runtime = Runtime(spark, lake, engine.registry, engine,
                      DuckLakeCredentials(data_path=lake.catalog.data_path))
    load_seed(runtime, BaseRelation.create(schema="main", identifier="t"), table,
              {"id": "bigint", "v": "int", "tag": "string"}, full_refresh,
              quote=lambda n: f"`{n}`")


def snapshot_merge(engine: Engine, fail: bool) -> None:
    """``dbt snapshot``'s change: its staging rows as a temp view, applied by dbt's MERGE
    (close the changed rows' validity, insert the new versions)."""
    engine.execute(
        "CREATE OR REPLACE TEMP VIEW snapshot_staging AS SELECT id, id AS v, 'snap' AS tag, "
        "IF(id < 20, 'update', 'insert') AS change_type FROM range(10, 30) "
        f"WHERE {BOOM if fail else FAIL} IS NULL")
    try:
        engine.execute(
            "MERGE INTO `main.t` AS d USING snapshot_staging AS s ON s.id = d.id "
            "WHEN MATCHED AND d.tag <> 'closed' AND s.change_type = 'update' THEN UPDATE SET "
            "tag = 'closed' WHEN NOT MATCHED AND s.change_type = 'insert' THEN "
            "INSERT (id, v, tag) VALUES (s.id, s.v, s.tag)")
    finally:  # dbt's post_snapshot drops it (a session view: no snapshot)
        engine.execute("DROP VIEW IF EXISTS snapshot_staging")

# Statements without a data step: only the commit can fail.
CATALOG_ONLY: dict[str, Case] = {
    "create_view": sql("CREATE OR REPLACE VIEW `main.v` AS SELECT id FROM `main.t`"),
    "table_to_view": sql("CREATE OR REPLACE VIEW `main.t` AS SELECT 1 AS id"),
    "create_empty": sql("CREATE TABLE `main.e` (id BIGINT NOT NULL, s STRING)"),
    "drop_table": sql("DROP TABLE `main.t`"),
    "rename": sql("ALTER TABLE `main.t` RENAME TO `main.t2`"),
    "add_column": sql("ALTER TABLE `main.t` ADD COLUMNS (z INT)"),
    "drop_column": sql("ALTER TABLE `main.t` DROP COLUMN tag"),
    "widen_column": sql("ALTER TABLE `main.t` ALTER COLUMN v TYPE DOUBLE"),
    "partitioning": sql("ALTER TABLE `main.t` SET PARTITIONED BY (tag)"),
    "comment": sql("COMMENT ON TABLE `main.t` IS 'c'"),
    "flush": lambda spark, lake, engine, fail: lake.flush_inlined_data(),
    "merge_files": lambda spark, lake, engine, fail: lake.merge_adjacent_files(),
    "rewrite_files": lambda spark, lake, engine, fail: lake.rewrite_data_files(
        delete_threshold=0.01),
}


# On PostgreSQL, one case per commit path (the rest differ only in how the data is computed).
POSTGRES_CASES = {"replace_narrow", "replace_struct", "view_to_table", "api_create_or_replace",
                  "merge", "insert_inlined", "delete", "table_to_view", "flush", "merge_files",
                  "rewrite_files", "partitioning", "seed", "expire_snapshots",
                  "cleanup_old_files"}


Shape = tuple[bool, bool, bool]


def _seed(engine: Engine, shape: Shape) -> None:
    """``main.t`` with a Parquet file, inlined rows and a delete; with ``shape``, the
    partitioned ``main.p``, the view ``main.v`` and the struct table ``main.s`` for the cases
    that name them."""
    partitioned, view, struct = shape
    engine.execute("CREATE TABLE `main.t` AS SELECT id, id AS v, 'a' AS tag FROM range(50)")
    engine.execute("INSERT INTO `main.t` VALUES (900, 9, 'inl'), (901, 9, 'inl')")
    engine.execute("DELETE FROM `main.t` WHERE id = 7")
    if partitioned:
        engine.execute("CREATE TABLE `main.p` PARTITIONED BY (k) AS SELECT id, "
                       "CAST(id % 3 AS STRING) AS k FROM range(30)")
    if view:
        engine.execute("CREATE VIEW `main.v` AS SELECT id FROM `main.t` WHERE id < 5")
    if struct:
        engine.execute("CREATE TABLE `main.s` AS SELECT id, named_struct('x', id, 'y', 'a') "
                       "AS st FROM range(3)")


def _shape(request: pytest.FixtureRequest) -> Shape | None:
    case = getattr(request.node, "callspec", None) and request.node.callspec.params.get("case")
    return ("partition" in case, "view" in case, "struct_field" in case) if case else None


_TEMPLATES: dict[Shape, Path] = {}


def _template(spark, shape: Shape, tmp_path_factory) -> Path:  # noqa: ANN001
    """A seeded SQLite lake, built once per shape and module: each case starts from a copy
    (seeding it anew for each of the ~40 SQLite cases cost more than the cases themselves)."""
    if shape not in _TEMPLATES:
        from dbt.adapters.ducklake.spark import SparkLake

        root = tmp_path_factory.mktemp("seeded")
        template = SparkLake.open(spark, f"sqlite:///{root}/catalog.sqlite", f"{root}/data/")
        try:
            _seed(Engine(spark, template, ViewRegistry(spark, template)), shape)
        finally:
            template.close()
        _TEMPLATES[shape] = root
    return _TEMPLATES[shape]


@pytest.fixture
def seeded_target(request, spark, lake_target, tmp_path_factory):  # noqa: ANN001, ANN201
    """The test's lake target; on SQLite, holding a copy of the case's seeded template (its
    stored data path made the copy's own) before anything opens it."""
    shape = _shape(request)
    if lake_target.backend != "sqlite" and shape is not None \
            and request.node.callspec.params["case"] not in POSTGRES_CASES:
        pytest.skip("SQLite runs this case; PostgreSQL runs one case per commit path")
    if shape is not None and lake_target.backend == "sqlite":
        root = _template(spark, shape, tmp_path_factory)
        catalog = lake_target.catalog.removeprefix("sqlite:///")
        shutil.copyfile(root / "catalog.sqlite", catalog)
        shutil.copytree(root / "data", lake_target.data_path)
        with sqlite3.connect(catalog) as conn:
            conn.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'",
                         (lake_target.data_path,))
        conn.close()
    return lake_target


@pytest.fixture
def lake(spark, seeded_target):  # noqa: ANN001, ANN201 - SparkLake
    from dbt.adapters.ducklake.spark import SparkLake

    lk = SparkLake.open(spark, seeded_target.catalog, seeded_target.data_path,
                        **seeded_target.open_kwargs())
    yield lk
    lk.close()


@pytest.fixture
def duck(seeded_target):  # noqa: ANN001, ANN201
    con = duckdb_connect()
    con.execute(seeded_target.duckdb_attach)
    yield con
    con.close()


@pytest.fixture
def seeded(request, spark, lake, duck):  # noqa: ANN001, ANN201
    """The engine over the case's seeded lake (see :func:`_seed`)."""
    shape = _shape(request)
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    if lake.catalog.dialect != "sqlite":
        assert shape is not None
        _seed(engine, shape)
    return engine


def _run_broken(run: Callable[[], object], lake, duck, kill: bool,  # noqa: ANN001
                failure: str = "injected") -> None:
    before, duck_before = catalog_dump(lake.catalog), duck_view(duck)
    reached = []

    def die(**_: object) -> None:
        reached.append(True)
        raise Killed()

    if kill:
        with faults.inject("catalog_transaction", die), pytest.raises(Killed):
            run()
        assert reached, "the write never reached its commit"
    else:
        with pytest.raises(Exception, match=failure):
            run()
    assert catalog_dump(lake.catalog) == before
    assert duck_view(duck) == duck_before


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_failing_write_leaves_the_lake(case, spark, lake, duck, seeded):  # noqa: ANN001
    run = CASES[case]
    _run_broken(lambda: run(spark, lake, seeded, True), lake, duck, kill=False,
                failure=FAILURE.get(case, "injected"))
    _run_broken(lambda: run(spark, lake, seeded, False), lake, duck, kill=True)
    count = len(lake.snapshots())
    run(spark, lake, seeded, False)
    assert len(lake.snapshots()) == count + 1


@pytest.mark.parametrize("case", sorted(CATALOG_ONLY))
def test_a_write_killed_before_commit_leaves_the_lake(case, spark, lake, duck,  # noqa: ANN001
                                                      seeded):
    run = CATALOG_ONLY[case]
    if case == "rewrite_files":
        seeded.execute("DELETE FROM `main.t` WHERE id < 30")
    if case == "merge_files":
        for start in (100, 200):
            seeded.execute(f"INSERT INTO `main.t` SELECT id, id, 'f' FROM range({start}, "
                           f"{start + 20})")
    _run_broken(lambda: run(spark, lake, seeded, False), lake, duck, kill=True)
    count = len(lake.snapshots())
    run(spark, lake, seeded, False)
    assert len(lake.snapshots()) == count + 1


@pytest.mark.parametrize("op", ["replace", "create_or_replace"])
def test_sigkill_inside_the_commit_of_a_rebuild(op, spark, lake, lake_target, duck,  # noqa: ANN001
                                                tmp_path):
    """The same for a real death: a writer process (its JVM and Python workers) killed with
    SIGKILL while the catalog transaction of a rebuild that makes a new column (or replaces a
    view by a table) is open. The database rolls the transaction back."""
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id AS STRING) AS label "
                   "FROM range(20)")
    engine.execute("CREATE VIEW `main.v` AS SELECT id FROM `main.t`")
    before, duck_before = catalog_dump(lake.catalog), duck_view(duck)
    signal = str(tmp_path / "reached")
    proc = start_writer(writer_args(lake_target, table="main.t" if op == "replace" else "main.v",
                                    start=0, count=30, op=op),
                        DUCKLAKE_FAULT_PAUSE_AT="catalog_transaction",
                        DUCKLAKE_FAULT_SIGNAL=signal)
    wait_for(signal, proc)
    kill_group(proc)
    # it died in the commit that holds the new data (its files are written), not in one
    # before it: a drop committed on its own would have paused with no file written
    assert any(os.path.basename(p).startswith("ducklake-") for p in leftovers(lake.catalog))
    assert catalog_dump(lake.catalog) == before
    assert duck_view(duck) == duck_before


# Maintenance that changes catalog rows without a snapshot: expiry, the two cleanups (which
# delete files only after their catalog write) and options. Each is prepared, killed just
# before its catalog COMMIT, then run whole.
FUTURE = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)


def _scheduled_files(spark, lake, engine: Engine) -> None:  # noqa: ANN001
    """A dropped table's files, scheduled for deletion by an expiry."""
    engine.execute("CREATE TABLE `main.gone` AS SELECT id FROM range(200)")
    engine.execute("DROP TABLE `main.gone`")
    lake.expire_snapshots(older_than=FUTURE)


def _orphan(spark, lake, engine: Engine) -> None:  # noqa: ANN001
    """A Parquet file in the table's directory that no snapshot names, a day old."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = lake.table("main.t").state(contents=False).table_dir + "ducklake-orphan.parquet"
    pq.write_table(pa.table({"id": [1]}), path)
    old = (dt.datetime.now() - dt.timedelta(days=2)).timestamp()
    os.utime(path, (old, old))


Prepare = Callable[[Any, Any, Engine], None]
MAINTENANCE: dict[str, tuple[Prepare | None, Callable[[Any], Any]]] = {
    "expire_snapshots": (None, lambda lake: lake.expire_snapshots(older_than=FUTURE)),
    "cleanup_old_files": (_scheduled_files,
                          lambda lake: lake.cleanup_old_files(cleanup_all=True)),
    "delete_orphaned_files": (_orphan,
                              lambda lake: lake.delete_orphaned_files(older_than=FUTURE)),
    "set_option": (None, lambda lake: lake.set_option("target_file_size", "1KB")),
}


@contextmanager
def _dying_writes(catalog: Catalog, reached: list[bool]) -> Iterator[None]:
    """Every catalog write transaction dies after its last statement, before its COMMIT (the
    database rolls it back, as it does for a killed process)."""
    original = catalog.write

    @contextmanager
    def write() -> Iterator[Any]:
        with original() as conn:
            yield conn
            reached.append(True)
            raise Killed()

    catalog.write = write  # type: ignore[method-assign]
    try:
        yield
    finally:
        del catalog.write


@pytest.mark.parametrize("case", sorted(MAINTENANCE))
def test_maintenance_killed_before_commit_changes_nothing(case, spark, lake, duck,  # noqa: ANN001
                                                          seeded):
    prepare, run = MAINTENANCE[case]
    if prepare is not None:
        prepare(spark, lake, seeded)
    before, duck_before = catalog_dump(lake.catalog), duck_view(duck)
    files = files_on_disk(lake.catalog.data_path)
    reached: list[bool] = []
    with _dying_writes(lake.catalog, reached), pytest.raises(Killed):
        run(lake)
    assert reached, "the operation never reached its commit"
    assert catalog_dump(lake.catalog) == before
    assert duck_view(duck) == duck_before
    assert files_on_disk(lake.catalog.data_path) == files, "a file went before the commit"
    snapshots = len(lake.snapshots())
    run(lake)
    # it did its work (orphan cleanup writes no row), and made no snapshot
    assert (catalog_dump(lake.catalog) != before) == (case != "delete_orphaned_files")
    assert len(lake.snapshots()) == (1 if case == "expire_snapshots" else snapshots)
    deleted = files - files_on_disk(lake.catalog.data_path)
    assert bool(deleted) == (case in ("cleanup_old_files", "delete_orphaned_files")), deleted
