"""Writers that die, lose their catalog connection or run out of storage leave the lake intact.

Each test records what a reader sees (snapshots, catalog rows, the rows of every table, as read
by us and by DuckDB), breaks a write, and checks that nothing changed, that files the failed
write left behind are referenced by no snapshot, and that the lake still takes writes.
Leftover files are checked directly (files on disk minus files in the catalog, and DuckDB's
own orphan listing), and after a killed writer ``delete_orphaned_files`` removes exactly them.
"""

from __future__ import annotations

import datetime
import errno
import os
import re
import shutil
import subprocess

import pytest
from oracle import assert_same
from reliability.support import (
    kill_group,
    lake_state,
    leftovers,
    run_writer,
    start_writer,
    wait_for,
    writer_args,
)
from reliability.writer import rows as writer_rows
from sqlalchemy import text

from dbt.adapters.ducklake.lake import (
    CatalogConnectionError,
    DataFileError,
    faults,
)
from dbt.adapters.ducklake.lake import files as lake_files

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def seeded(spark, lake):  # noqa: ANN001, ANN201
    """``main.t`` with one Parquet file and a few inlined rows, as a writer would find it."""
    table = lake.create_table("main.t", spark.range(100).selectExpr("id", "concat('row ', id) "
                                                                   "AS label"))
    table.append(spark.createDataFrame([(500, "inlined"), (501, "inlined")], "id long, label "
                                                                             "string"))
    return table


def ids(table, version=None):  # noqa: ANN001, ANN201
    return sorted(r[0] for r in table.read(version=version).select("id").collect())


def duck_orphans(duck) -> set[str]:  # noqa: ANN001
    rows = duck.execute("SELECT * FROM ducklake_delete_orphaned_files('lake', cleanup_all => "
                        "true, dry_run => true)").fetchall()
    return {os.path.normpath(lake_files.strip_scheme(r[0])) for r in rows}


def assert_unchanged(lake, table, duck, before, rows_before) -> None:  # noqa: ANN001
    assert lake_state(lake.catalog) == before
    assert ids(table) == rows_before
    assert_same(duck, "t", table.read())
    assert duck.execute("SELECT count(*) FROM lake.t").fetchone() == (len(rows_before),)


def assert_still_writable(spark, table, duck, rows_before) -> None:  # noqa: ANN001
    table.append(spark.range(9000, 9020).selectExpr("id", "'after' AS label"))
    assert ids(table) == sorted(rows_before + list(range(9000, 9020)))
    assert_same(duck, "t", table.read())


PHASES = [
    pytest.param("spark_write", "sqlite", id="spark_write-sqlite"),
    pytest.param("files_staged", "sqlite", id="files_staged-sqlite"),
    pytest.param("files_published", "sqlite", id="files_published-sqlite"),
    pytest.param("catalog_transaction", "sqlite", id="catalog_transaction-sqlite"),
    pytest.param("files_published", "postgres", id="files_published-postgres",
                 marks=pytest.mark.postgres),
    pytest.param("catalog_transaction", "postgres", id="catalog_transaction-postgres",
                 marks=pytest.mark.postgres),
]


@pytest.mark.parametrize(("phase", "lake_target"), PHASES, indirect=["lake_target"])
def test_sigkill_in_each_phase_of_a_write(spark, lake, lake_target, duck, phase, tmp_path):  # noqa: ANN001
    table = seeded(spark, lake)
    before, rows_before = lake_state(lake.catalog), ids(table)
    files_before = leftovers(lake.catalog)
    assert files_before == set()
    signal = str(tmp_path / "reached")
    if phase == "spark_write":
        proc = start_writer(writer_args(lake_target, table="main.t", start=1000, count=200,
                                        mode="stall", signal=signal))
    else:
        proc = start_writer(writer_args(lake_target, table="main.t", start=1000, count=200),
                            DUCKLAKE_FAULT_PAUSE_AT=phase, DUCKLAKE_FAULT_SIGNAL=signal)
    wait_for(signal, proc)
    kill_group(proc)

    assert_unchanged(lake, table, duck, before, rows_before)
    left = leftovers(lake.catalog)
    table_dir = os.path.normpath(os.path.join(lake_target.data_path, "main", "t"))
    assert all(p.startswith(table_dir + os.sep) for p in left), left
    if phase in ("spark_write", "files_staged"):
        # Spark's output is still in the write's staging directory, never under a DuckLake name
        assert left and all("_ducklake_staging_" in p for p in left), left
    else:
        published = {p for p in left if os.path.basename(p).startswith("ducklake-")}
        assert published and all("_ducklake_staging_" not in p for p in left), left
        # DuckDB sees the same files as orphans: its cleanup (and ours) would remove them
        assert published <= duck_orphans(duck)
    # Our orphan cleanup removes what the killed writer left, and nothing the lake needs.
    cleaned = lake.delete_orphaned_files(
        older_than=datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1))
    assert {os.path.normpath(p) for p in cleaned.paths} >= {os.path.normpath(p) for p in left}
    assert leftovers(lake.catalog) == set()
    assert_unchanged(lake, table, duck, before, rows_before)
    assert_still_writable(spark, table, duck, rows_before)


# ------------------------------------------------------------------ catalog connection drops
def _terminate(conn) -> None:  # noqa: ANN001
    """End the catalog connection's server process from another connection, and wait."""
    import psycopg

    pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    params = conn.engine.url.translate_connect_args()
    dsn = conn.engine.dialect.create_connect_args(conn.engine.url)[1]
    with psycopg.connect(**{**params, **dsn}, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,)).fetchone()[0]


def drop_before_commit(conn) -> None:  # noqa: ANN001
    """The connection dies before the server got COMMIT: the transaction is rolled back."""
    _terminate(conn)


def drop_after_commit(conn) -> None:  # noqa: ANN001
    """The server commits, then the connection dies before we hear back (a lost ack)."""
    conn.connection.dbapi_connection.commit()
    _terminate(conn)
    conn.execute(text("SELECT 1"))  # the first use of the dead connection fails


@pytest.mark.postgres
@pytest.mark.parametrize("lake_target", ["postgres"], indirect=True)
@pytest.mark.parametrize("drop", [drop_before_commit, drop_after_commit],
                         ids=["before-server-commit", "after-server-commit"])
def test_connection_dropped_during_commit_lands_exactly_once(spark, lake, lake_target, duck,  # noqa: ANN001
                                                             drop, caplog):
    table = seeded(spark, lake)
    before, rows_before = lake_state(lake.catalog), ids(table)
    fired = []

    def once(conn) -> None:  # noqa: ANN001
        if not fired:
            fired.append(True)
            drop(conn)

    with faults.inject("catalog_transaction", once):
        snapshot = table.append(spark.range(1000, 1200).selectExpr("id", "'new' AS label"))
    assert fired
    snapshots = lake.snapshots()
    assert [s.snapshot_id for s in snapshots] == [s[0] for s in before.snapshots] + \
        [snapshot.snapshot_id]
    assert snapshots[-1].changes_made == snapshot.changes_made
    assert ids(table) == sorted(rows_before + list(range(1000, 1200)))
    assert_same(duck, "t", table.read())
    assert leftovers(lake.catalog) == set()
    expected = "snapshot %d landed" if drop is drop_after_commit else "did not land"
    assert any(expected.split(" %d")[0] in r.getMessage() for r in caplog.records)


@pytest.mark.postgres
@pytest.mark.parametrize("lake_target", ["postgres"], indirect=True)
def test_connection_that_keeps_dropping_fails_clearly_and_lands_nothing(spark, lake,  # noqa: ANN001
                                                                        lake_target, duck):
    table = seeded(spark, lake)
    before, rows_before = lake_state(lake.catalog), ids(table)
    with faults.inject("catalog_transaction", drop_before_commit), \
            pytest.raises(CatalogConnectionError,
                          match=r"connection failed while committing, 11 times .*terminat.*"
                                r"nothing was committed"):
        table.append(spark.range(1000, 1200).selectExpr("id", "'new' AS label"))
    assert_unchanged(lake, table, duck, before, rows_before)
    assert leftovers(lake.catalog) == set()


# ------------------------------------------------------------------ Spark task failures
@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_failed_spark_tasks_are_retried_without_duplicates(spark, lake, lake_target, duck):  # noqa: ANN001
    table = seeded(spark, lake)
    rows_before = ids(table)
    result = run_writer(writer_args(lake_target, table="main.t", start=1000, count=5000,
                                    mode="fail_once", master="local[2,4]"))
    assert result.get("snapshot_id"), result
    got = ids(table)
    assert len(got) == len(set(got)), "duplicate rows"
    assert got == sorted(rows_before + list(range(1000, 6000)))
    assert_same(duck, "t", table.read())
    assert leftovers(lake.catalog) == set()
    # without retries (this process's session: local[2]) the same failure fails the write
    # and commits nothing
    before = lake_state(lake.catalog)
    with pytest.raises(Exception, match="injected failure on the first attempt"):
        table.append(writer_rows(spark, 7000, 500, "fail_once", None))
    assert lake_state(lake.catalog) == before


# ------------------------------------------------------------------ storage failures
def _private_mount(kind: str, directory: str) -> list[str] | None:
    """A command prefix running the writer with ``directory`` read-only or nearly full,
    in a private mount namespace; ``None`` when this machine does not allow it."""
    if not shutil.which("unshare") or subprocess.run(
            ["unshare", "-m", "true"], capture_output=True).returncode:
        return None
    if kind == "read_only":
        setup = f"mount --bind '{directory}' '{directory}' && " \
                f"mount -o remount,bind,ro '{directory}' '{directory}'"
    else:
        setup = f"mount -t tmpfs -o size=256k tmpfs '{directory}'"
    return ["unshare", "-m", "sh", "-c", setup + ' && exec "$@"', "sh"]


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
@pytest.mark.parametrize("kind", ["read_only", "full"])
def test_read_only_or_full_data_path_fails_clearly(spark, lake, lake_target, duck, kind):  # noqa: ANN001
    table = seeded(spark, lake)
    before, rows_before = lake_state(lake.catalog), ids(table)
    table_dir = os.path.join(lake_target.data_path, "main", "t")
    prefix = _private_mount(kind, table_dir)
    restore = None
    if prefix is None:
        if kind == "full" or os.geteuid() == 0:
            pytest.skip("cannot mount a private read-only or tiny file system here "
                        "(unshare -m is not permitted)")
        os.chmod(table_dir, 0o555)
        restore = table_dir
    try:
        result = run_writer(writer_args(lake_target, table="main.t", start=1000,
                                        count=300_000), prefix)
    finally:
        if restore:
            os.chmod(restore, 0o755)
    meaning = "not writable|read-only|permission denied" if kind == "read_only" else \
        "full .no space left on device"
    assert result.get("error") == "DataFileError", result


    assert re.search(f"cannot write Parquet files under .*main/t/: the data path is "
                     f"({meaning}).*Nothing was committed", result["message"]), result["message"]
    assert_unchanged(lake, table, duck, before, rows_before)
    assert leftovers(lake.catalog) == set()
    assert_still_writable(spark, table, duck, rows_before)


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_no_space_for_a_delete_file_fails_clearly(spark, lake, lake_target, duck, monkeypatch):  # noqa: ANN001
    table = seeded(spark, lake)
    before, rows_before = lake_state(lake.catalog), ids(table)

    def full(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lake_files.pq, "write_table", full)
    with pytest.raises(DataFileError, match="-delete.parquet: .*No space left on device.*"
                                            "nothing was committed"):
        table.delete("id < 30")  # part of a file: a delete file
    monkeypatch.undo()
    assert_unchanged(lake, table, duck, before, rows_before)
    assert leftovers(lake.catalog) == set()
