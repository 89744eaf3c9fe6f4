"""Shared fixtures: a fresh lake per test on SQLite or PostgreSQL, one SparkSession, DuckDB.

PostgreSQL tests use the local server (database ``test``); each test gets its own metadata
schema, so pytest-xdist workers never share one. Without a server they skip, unless
``DUCKLAKE_REQUIRE_POSTGRES=1`` (set by CI) turns the skip into a failure.

One SparkSession per test process: the engine and reliability tests take it from the
``spark`` fixture, and dbt's functional tests reach the same JVM through the profile (the
adapter's ``getOrCreate``), with the same settings (``SPARK_TEST_CONF``) whichever comes first.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import jvm_archive
import pytest
from oracle import duckdb_connect

pytest_plugins = ["dbt.tests.fixtures.project"]

__all__ = ["duckdb_connect"]  # test modules import it from here

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
os.environ.setdefault("TZ", "UTC")
# Python workers (Arrow UDFs such as bucket partitioning) run this interpreter, not whatever
# python3 comes first on PATH.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

PG_HOST = os.environ.get("DUCKLAKE_PG_HOST", "127.0.0.1")
PG_PORT = os.environ.get("DUCKLAKE_PG_PORT", "5432")
PG_DB = os.environ.get("DUCKLAKE_PG_DB", "test")
PG_USER = os.environ.get("DUCKLAKE_PG_USER", "postgres")
REQUIRE_POSTGRES = os.environ.get("DUCKLAKE_REQUIRE_POSTGRES") == "1"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Spark settings for tests, which run thousands of queries over a few hundred rows each: few
# partitions (each is a task, and a file when written), no UI, no code generation at all
# (compiling each new query's Java costs more than it saves on tiny data: with whole-stage code
# generation off, Janino still compiled every projection and predicate, a fifth of the JVM's
# CPU in the schema sweep; interpreted expressions give the same results), and a JVM tuned for
# short work (the C1 compiler only: C2's optimising compiles cost more CPU than a test run wins
# back; one GC thread), and no adaptive query execution (it runs each exchange of a query as a
# job of its own and plans the rest again after it; a few hundred rows leave it nothing to
# adapt: 15% less time for dbt's snapshot, MERGE and schema-sweep tests; the cluster test
# keeps it on). Measured on the engine tests: 20% less time than Spark's defaults.
# Results are the same as with the defaults. With C1 only, the JVM reserves 48 MB for compiled
# code, which a long test process fills; a full code cache can fail a Spark thread fatally
# (the SparkContext stops), so it gets the size C2 would have.
SPARK_TEST_CONF = {
    "spark.driver.extraJavaOptions":
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=240m",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.sql.adaptive.enabled": "false",
}
# Spark's classes come from a class data sharing archive when one is built (jvm_archive.py).
SPARK_TEST_CONF["spark.driver.extraJavaOptions"] += jvm_archive.java_options(
    jvm_archive.archive_path())



def _cheap_behavior_flag_source() -> None:
    """dbt's adapter construction names the module that defined each behavior flag without a
    ``source`` by walking ``inspect.stack()`` (``dbt_common.behavior_flags``; the walk runs even
    for flags that give one: it is ``dict.get``'s default). Under pytest's deep stacks, where
    frames of generated code send ``inspect.getmodule`` through every loaded module, that cost
    60-100 ms per dbt invocation, about a tenth of the Python CPU of dbt's adapter suite
    (``test_utils.py``: 27.5 and 31.9 s of user time, 23.7 and 28.5 s with the walk below).
    The same answer, the first module up the stack other than ``behavior_flags``, from the
    frames' globals; what a flag is set to does not change."""
    from dbt_common import behavior_flags

    def default_source() -> str:
        frame = sys._getframe(1)
        while frame is not None:
            name = frame.f_globals.get("__name__")
            if name and name != behavior_flags.__name__:
                return name
            frame = frame.f_back
        return "Unknown"

    behavior_flags.BehaviorFlagRendered._default_source = staticmethod(default_source)


_cheap_behavior_flag_source()


def _slow_modules_first(items: list[pytest.Item]) -> None:
    """Modules with a slow test run first (each keeps its own order): with pytest-xdist's
    ``--dist loadscope`` the long modules then start at once on separate workers instead of
    leaving one worker busy at the end while the other is idle."""
    heavy = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in heavy)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """dbt writes ``manifest.json`` and ``run_results.json`` after every invocation unless
    ``DBT_WRITE_JSON`` is false: serialising the manifest took a sixth of the Python time of
    dbt's snapshot tests. Only the tests marked ``dbt_artifacts`` read them. Set before the
    item's fixtures, so a class's set-up invocations write them too (dbt reads the variable
    at each invocation, in this process and in the dbt processes a test starts)."""
    os.environ["DBT_WRITE_JSON"] = \
        "true" if item.get_closest_marker("dbt_artifacts") else "false"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the slow modules first (see :func:`_slow_modules_first`), and leave out the
    PostgreSQL cases of ``sqlite_mostly`` modules (see :func:`on_postgres_too`)."""
    _slow_modules_first(items)
    kept, dropped = [], []
    for item in items:
        (kept if on_postgres_too(item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def on_postgres_too(item: pytest.Item) -> bool:
    """Whether a test runs its PostgreSQL case.

    A module marked ``sqlite_mostly`` tests what Spark does (planning a MERGE, skipping files,
    partition values, views' SQL): the catalog only stores and returns the rows, as it does
    for every other module, so its PostgreSQL cases repeat the SQLite ones at a JVM's cost.
    There only the tests marked ``postgres_too`` run on PostgreSQL, the ones whose catalog
    rows differ by backend (inlined rows in typed tables, DuckDB's own writes to a
    PostgreSQL catalog). Every other module runs each test on both catalogs.
    """
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("lake_target") if callspec else None
    return backend != "postgres" or item.get_closest_marker("sqlite_mostly") is None \
        or item.get_closest_marker("postgres_too") is not None


def pytest_configure(config: pytest.Config) -> None:
    """Build the JVM class archive if it is missing (once, before any worker starts a JVM).

    With ``DUCKLAKE_TEST_INSTALLED=1`` (CI), the tests must exercise the installed wheel: a
    package that only works from the source tree must not pass."""
    archive = jvm_archive.archive_path()
    unit_only = config.args and all(
        os.path.relpath(os.path.abspath(a.split("::")[0]), REPO).startswith(
            os.path.join("tests", "unit")) for a in config.args)
    if archive and not unit_only and not hasattr(config, "workerinput") \
            and not os.path.isfile(archive) and jvm_archive.build(archive):
        os.environ[jvm_archive.ENV] = archive  # the same file for workers and subprocesses
        SPARK_TEST_CONF["spark.driver.extraJavaOptions"] += jvm_archive.java_options(archive)
    # The adapter's own Spark start (dbt subprocesses) uses the tests' archive, and never
    # starts a background build of its own.
    os.environ.setdefault("DUCKLAKE_JVM_ARCHIVE",
                          archive if archive and os.path.isfile(archive) else "off")
    if os.environ.get("DUCKLAKE_TEST_INSTALLED") != "1":
        return
    import dbt.adapters.ducklake as adapter
    from dbt.include import ducklake as include

    for path in (adapter.__file__, include.PACKAGE_PATH):
        if os.path.realpath(path).startswith(os.path.realpath(REPO) + os.sep):
            raise pytest.UsageError(
                f"DUCKLAKE_TEST_INSTALLED=1 but {path} is in the source tree: install the "
                "wheel (pip install dist/dbt_ducklake-*.whl) instead of an editable install")


def postgres_unavailable() -> str | None:
    """Why PostgreSQL cannot be used, or ``None`` when it can."""
    try:
        import psycopg

        with psycopg.connect(host=PG_HOST, port=PG_PORT, dbname=PG_DB, user=PG_USER,
                             connect_timeout=3):
            return None
    except Exception as exc:  # noqa: BLE001
        return f"PostgreSQL at {PG_HOST}:{PG_PORT}/{PG_DB} is not reachable: {exc}"


def skip_or_fail_without_postgres() -> None:
    reason = postgres_unavailable()
    if reason:
        if REQUIRE_POSTGRES:
            pytest.fail(f"DUCKLAKE_REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)


def postgres_profile_target(tmp_path_factory, threads: int) -> Iterator[dict]:  # noqa: ANN001
    """A dbt profile target whose lake lives on the local PostgreSQL server, in a metadata
    schema of its own (dropped afterwards, with any atomic-publish branch schema beside it):
    for a functional test class's ``dbt_profile_target`` fixture (``yield from``)."""
    skip_or_fail_without_postgres()
    import psycopg

    schema = f"lake_{uuid.uuid4().hex[:12]}"
    lake = tmp_path_factory.mktemp("lake")
    conninfo = f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}"
    yield {"type": "ducklake", "threads": threads, "master": "local[2]",
           "catalog": f"postgres:{conninfo}", "metadata_schema": schema,
           "data_path": f"{lake}/data/", "spark_conf": dict(SPARK_TEST_CONF)}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        branches = conn.execute(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE %s",
            (f"{schema}__branch%",)).fetchall()
        for name in [schema, *(row[0] for row in branches)]:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@dataclass
class LakeTarget:
    """Where a test's lake lives, in our catalog syntax and in DuckDB's ATTACH syntax."""

    backend: str
    catalog: str
    data_path: str
    metadata_schema: str | None
    duckdb_attach: str

    def open_kwargs(self) -> dict[str, object]:
        return {"metadata_schema": self.metadata_schema} if self.metadata_schema else {}


@pytest.fixture(scope="module", autouse=True)
def fresh_dbt_adapters() -> Iterator[None]:
    """No dbt adapter outlives its test module. dbt keeps the last adapter it registered in
    the process (``dbtRunner`` leaves it), and dbt-tests-adapter's ``adapter`` fixture
    registers its own only when none is: a later module in the same worker then got the
    integration project's adapter and profile (a seed test created its table in schema
    ``shop``), depending on the order xdist gave the modules."""
    yield
    from dbt.adapters.factory import reset_adapters

    reset_adapters()


CATALOGS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@contextmanager
def new_lake_target(backend: str, root: Path) -> Iterator[LakeTarget]:
    """A new, empty lake under ``root`` (SQLite) or in a schema of its own (PostgreSQL),
    dropped afterwards."""
    data_path = str(root / "data") + "/"
    if backend == "sqlite":
        path = root / "catalog.sqlite"
        yield LakeTarget(
            "sqlite", f"sqlite:///{path}", data_path, None,
            f"ATTACH 'ducklake:sqlite:{path}' AS lake (DATA_PATH '{data_path}')",
        )
        return
    skip_or_fail_without_postgres()
    import psycopg

    schema = f"lake_{uuid.uuid4().hex[:12]}"
    conninfo = f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}"
    yield LakeTarget(
        "postgres", f"postgres:{conninfo}", data_path, schema,
        f"ATTACH 'ducklake:postgres:{conninfo}' AS lake "
        f"(DATA_PATH '{data_path}', METADATA_SCHEMA '{schema}')",
    )
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def copy_lake(source: LakeTarget, target: LakeTarget) -> None:
    """Make the new, empty ``target`` (same backend) a copy of the lake ``source``: its catalog
    and its data files, the stored data path made the copy's own. A test module that needs the
    same seeded lake in several tests seeds it once and copies it per test: a copy costs a few
    file and catalog-row copies, seeding costs Spark jobs."""
    if source.backend != target.backend:
        raise ValueError(f"copy_lake: a {source.backend} lake cannot be copied into a "
                         f"{target.backend} one")
    shutil.copytree(source.data_path, target.data_path)
    if source.backend == "sqlite":
        copy = target.catalog.removeprefix("sqlite:///")
        shutil.copyfile(source.catalog.removeprefix("sqlite:///"), copy)
        with closing(sqlite3.connect(copy)) as conn, conn:
            conn.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'",
                         (target.data_path,))
        return
    import psycopg

    src, dst = source.metadata_schema, target.metadata_schema
    with psycopg.connect(target.catalog.removeprefix("postgres:"), autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_type = 'BASE TABLE'", (src,)).fetchall()]
        conn.execute(f'CREATE SCHEMA "{dst}"')
        for name in tables:
            conn.execute(f'CREATE TABLE "{dst}"."{name}" (LIKE "{src}"."{name}" INCLUDING ALL)')
            conn.execute(f'INSERT INTO "{dst}"."{name}" SELECT * FROM "{src}"."{name}"')
        conn.execute(f'UPDATE "{dst}".ducklake_metadata SET value = %s WHERE key = '
                     "'data_path'", (target.data_path,))


@pytest.fixture(params=CATALOGS)
def lake_target(request: pytest.FixtureRequest, tmp_path) -> Iterator[LakeTarget]:  # noqa: ANN001
    with new_lake_target(request.param, tmp_path) as target:
        yield target


@pytest.fixture(scope="module", params=CATALOGS)
def module_lake_target(request: pytest.FixtureRequest,
                       tmp_path_factory) -> Iterator[LakeTarget]:  # noqa: ANN001
    """One lake per module and catalog, for tests that only read what the module set up."""
    with new_lake_target(request.param, tmp_path_factory.mktemp("lake")) as target:
        yield target


@pytest.fixture(scope="module")
def module_lake(spark, module_lake_target: LakeTarget):  # noqa: ANN001, ANN201 - SparkLake
    from dbt.adapters.ducklake.spark import SparkLake

    lk = SparkLake.open(spark, module_lake_target.catalog, module_lake_target.data_path,
                        **module_lake_target.open_kwargs())
    yield lk
    lk.close()


@pytest.fixture(scope="module")
def module_duck(module_lake_target: LakeTarget) -> Iterator[object]:
    con = duckdb_connect()
    con.execute(module_lake_target.duckdb_attach)
    yield con
    con.close()


@pytest.fixture
def duck(lake_target: LakeTarget) -> Iterator[object]:
    """DuckDB attached to the test's lake as ``lake``."""
    con = duckdb_connect()
    con.execute(lake_target.duckdb_attach)
    yield con
    con.close()


@pytest.fixture(scope="session")
def spark():  # noqa: ANN201 - SparkSession
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("dbt-ducklake-tests")
    for key, value in SPARK_TEST_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def lake(spark, lake_target: LakeTarget):  # noqa: ANN001, ANN201 - SparkLake
    """A SparkLake over the test's lake (engine and reliability tests)."""
    from dbt.adapters.ducklake.spark import SparkLake

    lk = SparkLake.open(spark, lake_target.catalog, lake_target.data_path,
                        **lake_target.open_kwargs())
    yield lk
    lk.close()


@pytest.fixture(scope="class")
def dbt_profile_target(tmp_path_factory):  # noqa: ANN001, ANN201
    """A fresh embedded lake (SQLite catalog) per functional test class."""
    lake = tmp_path_factory.mktemp("lake")
    return {
        "type": "ducklake",
        "catalog": f"sqlite:///{lake}/catalog.sqlite",
        "data_path": f"{lake}/data/",
        "threads": 4,
        "master": "local[2]",
        "spark_conf": dict(SPARK_TEST_CONF),
    }
