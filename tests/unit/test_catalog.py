"""The catalog client against real SQLite and PostgreSQL catalogs, with DuckDB as the oracle."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import sqlite3

import pytest
from conftest import duckdb_connect
from sqlalchemy.exc import OperationalError

from dbt.adapters.ducklake.lake import (
    Catalog,
    CatalogConnectionError,
    ColumnSpec,
    FormatVersionError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    Transaction,
)
from dbt.adapters.ducklake.lake.connect import SQLITE_BEGIN_ATTEMPTS, begin_sqlite, parse_catalog
from dbt.adapters.ducklake.lake.models import Snapshot
from dbt.adapters.ducklake.lake.snapshot_changes import tables_touched
from dbt.adapters.ducklake.lake.tables import create_schema, create_table


def open_lake(target) -> Catalog:  # noqa: ANN001
    return Catalog.open(target.catalog, target.data_path, **target.open_kwargs())


def test_new_lake_matches_duckdb(tmp_path):  # noqa: ANN001
    ours = tmp_path / "ours.sqlite"
    Catalog.open(f"sqlite:///{ours}", str(tmp_path / "d1")).close()
    theirs = tmp_path / "theirs.sqlite"
    duck = duckdb_connect()
    duck.execute(f"ATTACH 'ducklake:sqlite:{theirs}' AS l (DATA_PATH '{tmp_path}/d2/')")
    duck.close()

    def layout(path):  # noqa: ANN001, ANN202
        con = sqlite3.connect(path)
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        cols = {n: [(c[1], c[2].upper(), c[5]) for c in con.execute(f"PRAGMA table_info({n})")]
                for n in names}
        rows = {
            "snapshot": con.execute("SELECT snapshot_id, schema_version, next_catalog_id, "
                                    "next_file_id FROM ducklake_snapshot").fetchall(),
            "changes": con.execute("SELECT * FROM ducklake_snapshot_changes").fetchall(),
            "schema": con.execute("SELECT schema_id, begin_snapshot, end_snapshot, schema_name, "
                                  "path, path_is_relative FROM ducklake_schema").fetchall(),
            "meta": con.execute("SELECT key, scope, scope_id FROM ducklake_metadata "
                                "ORDER BY key").fetchall(),
            "version": con.execute("SELECT value FROM ducklake_metadata WHERE key IN "
                                   "('version', 'created_by', 'encrypted') ORDER BY key")
            .fetchall(),
        }
        return cols, rows

    assert layout(ours) == layout(theirs)
    assert len(layout(ours)[0]) == 28


def test_duckdb_uses_a_lake_we_created(lake_target):  # noqa: ANN001
    lake = open_lake(lake_target)
    tx = Transaction(lake)
    create_schema(tx, "s1")
    create_table(tx, "s1", "t", [ColumnSpec("id", "int64"), ColumnSpec("name", "varchar")])
    snap = tx.commit(author="me", commit_message="setup", commit_extra_info={"k": 1})
    assert snap.changes == ['created_schema:"s1"', 'created_table:"s1"."t"']
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    duck.execute("INSERT INTO lake.s1.t VALUES (1, 'a'), (2, 'b')")
    assert duck.execute("SELECT * FROM lake.s1.t ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
    info = duck.execute("SELECT author, commit_message, commit_extra_info FROM "
                        f"ducklake_snapshots('lake') WHERE snapshot_id = {snap.snapshot_id}"
                        ).fetchall()
    assert info == [("me", "setup", '{"k": 1}')]
    duck.close()
    latest = lake.latest_snapshot()
    assert latest.changes == [f"inlined_insert:{lake.table('s1', 't').table_id}"]
    assert [t.table_name for t in lake.tables("s1")] == ["t"]
    assert [c.column_name for c in lake.columns(lake.table("s1", "t").table_id)] == ["id", "name"]


def test_open_a_lake_duckdb_created(lake_target):  # noqa: ANN001
    duck = duckdb_connect()
    duck.execute(lake_target.duckdb_attach)
    duck.execute("CREATE SCHEMA lake.sales")
    duck.execute("CREATE TABLE lake.sales.orders (id INT, s STRUCT(a INT, b VARCHAR[]))")
    duck.execute("CREATE VIEW lake.sales.v AS SELECT id FROM lake.sales.orders")
    duck.close()
    lake = open_lake(lake_target)
    assert [s.schema_name for s in lake.schemas()] == ["main", "sales"]
    assert [v.view_name for v in lake.views("sales")] == ["v"]
    (col_id, col_s) = lake.columns(lake.table("sales", "orders").table_id)
    assert col_s.column_type == "struct"
    assert [c.column_name for c in col_s.children] == ["a", "b"]
    assert col_s.children[1].children[0].column_type == "int32" or \
        col_s.children[1].children[0].column_type == "varchar"


def test_other_format_versions_are_refused_untouched(tmp_path):  # noqa: ANN001
    path = tmp_path / "c.sqlite"
    Catalog.open(f"sqlite:///{path}", str(tmp_path / "data")).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE ducklake_metadata SET value = '0.4' WHERE key = 'version'")
    con.commit()
    con.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(FormatVersionError, match="'0.4'.*not modified"):
        Catalog.open(f"sqlite:///{path}")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_snapshot_resolution(lake_target):  # noqa: ANN001
    lake = open_lake(lake_target)
    times = []
    for name in ("a", "b", "c"):
        tx = Transaction(lake)
        create_schema(tx, name)
        times.append(tx.commit().snapshot_time)
    assert lake.snapshot(version=2).snapshot_id == 2
    assert lake.snapshot(timestamp=times[1]).snapshot_id == 2
    assert lake.snapshot(timestamp=times[1] + dt.timedelta(microseconds=1)).snapshot_id == 2
    assert lake.snapshot(timestamp=times[2].isoformat()).snapshot_id == 3
    assert lake.snapshot().snapshot_id == 3
    with pytest.raises(SnapshotNotFoundError, match="no snapshot with version 42"):
        lake.snapshot(version=42)
    with pytest.raises(SnapshotNotFoundError, match="at or before"):
        lake.snapshot(timestamp="2001-01-01 00:00:00+00")
    assert [s.snapshot_id for s in lake.snapshots()] == [0, 1, 2, 3]
    assert lake.snapshots()[1].changes == ['created_schema:"a"']
    assert [s.schema_name for s in lake.schemas(at=2)] == ["main", "a", "b"]


def test_snapshot_by_time_with_duckdbs_spelling_of_times(tmp_path):  # noqa: ANN001
    """DuckDB stores SQLite snapshot times with trailing zeros of the fraction trimmed (or no
    fraction at all); lookups by time compare them in the catalog, exactly at every edge."""
    from sqlalchemy import event

    lake = Catalog.open(f"sqlite:///{tmp_path / 'c.sqlite'}", str(tmp_path / "data"))
    con = sqlite3.connect(tmp_path / "c.sqlite")
    spelled = ["2026-01-01 10:00:00+00", "2026-01-01 10:00:00.1+00",
               "2026-01-01 10:00:00.14902+00", "2026-01-01 10:00:00.149021+00",
               "2026-01-01 10:00:01+00"]
    for sid, when in enumerate(spelled, start=1):
        con.execute("INSERT INTO ducklake_snapshot SELECT ?, ?, schema_version, "
                    "next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = 0",
                    (sid, when))
    con.commit()
    con.close()

    def at(when: str) -> int:
        return lake.snapshot(timestamp=when).snapshot_id

    def after(when: str) -> int:
        return lake.snapshot_at_or_after(when).snapshot_id

    assert at("2026-01-01 10:00:00+00") == 1
    assert at("2026-01-01 10:00:00.099999+00") == 1
    assert at("2026-01-01 10:00:00.1+00") == 2
    assert at("2026-01-01 10:00:00.149020+00") == 3
    assert at("2026-01-01 10:00:00.14902+00") == 3
    assert at("2026-01-01 10:00:00.149021+00") == 4
    assert at("2026-01-01 11:00:00.5+01:00") == 4  # 10:00:00.5 UTC
    assert at("2026-01-01 10:00:00.999999+00") == 4
    assert at("2026-01-01 10:00:01+00") == 5
    assert after("2026-01-01 10:00:00+00") == 1
    assert after("2026-01-01 10:00:00.000001+00") == 2
    assert after("2026-01-01 10:00:00.100000+00") == 2
    assert after("2026-01-01 10:00:00.149020+00") == 3
    assert after("2026-01-01 10:00:00.14902+00") == 3
    assert after("2026-01-01 10:00:00.149021+00") == 4
    assert after("2026-01-01 10:00:00.5+00") == 5
    with pytest.raises(SnapshotNotFoundError, match="at or after"):
        after("2100-01-01 00:00:00+00")
    # one lookup query, not a read of the whole history
    statements: list[str] = []
    event.listen(lake.engine, "before_cursor_execute",
                 lambda *args: statements.append(args[2]))
    at("2026-01-01 10:00:00.5+00")
    assert sum("snapshot_time" in sql and "ORDER BY" in sql for sql in statements) == 1
    assert all("snapshot_time" not in sql or "WHERE" in sql for sql in statements)
    lake.close()


def test_a_failing_follow_up_after_commit_keeps_the_landed_snapshot(tmp_path):  # noqa: ANN001
    """``after_commit`` hooks run once the snapshot has landed: one that fails is logged, and
    the commit still reports its snapshot and keeps the files it references."""
    lake = Catalog.open(f"sqlite:///{tmp_path / 'c.sqlite'}", str(tmp_path / "data"))
    kept = tmp_path / "data" / "kept.parquet"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(b"x")
    tx = Transaction(lake)
    create_schema(tx, "s")
    tx.files_written.append(str(kept))

    def fail() -> None:
        raise RuntimeError("boom")

    tx.add(99, lambda ctx: ctx.after_commit.append(fail))
    snapshot = tx.commit()
    assert lake.latest_snapshot().snapshot_id == snapshot.snapshot_id == 1
    assert kept.exists()
    lake.close()


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        ("sqlite:///rel/c.sqlite", "sqlite"),
        ("sqlite:rel/c.sqlite", "sqlite"),
        ("ducklake:sqlite:/abs/c.sqlite", "sqlite"),
        ("postgresql+psycopg://u@h:5432/db", "postgresql"),
        ("postgresql://u:secret@h/db", "postgresql"),
        ("postgres:dbname=db host=h user=u", "postgresql"),
    ],
)
def test_catalog_strings(text, dialect):  # noqa: ANN001
    target = parse_catalog(text, "/base")
    assert target.dialect == dialect
    assert "secret" not in target.display


def test_bad_catalogs_get_clear_errors(tmp_path):  # noqa: ANN001
    with pytest.raises(CatalogConnectionError, match="unknown catalog scheme 'mysql'.*sqlite:///"):
        Catalog.open("mysql://u@h/db", str(tmp_path))
    with pytest.raises(CatalogConnectionError, match="cannot connect to the DuckLake catalog"):
        Catalog.open("postgres:dbname=test host=127.0.0.1 port=1 connect_timeout=2", str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="data_path is required"):
        Catalog.open(f"sqlite:///{tmp_path}/new.sqlite")


def test_commit_retries_follow_the_lakes_max_retry_count(tmp_path, monkeypatch):  # noqa: ANN001
    """The profile's max_retry_count reaches every commit (through the Lake)."""
    from sqlalchemy.exc import IntegrityError

    from dbt.adapters.ducklake.lake.errors import CommitFailedError

    lake = Catalog.open(f"sqlite:///{tmp_path}/c.sqlite", str(tmp_path / "data"))
    lake.max_retry_count = 2
    attempts = []

    def lose(self, *args):  # noqa: ANN001, ANN202
        attempts.append(1)
        raise IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed: snapshot_id"))

    monkeypatch.setattr(Transaction, "_attempt", lose)
    monkeypatch.setattr(Transaction, "_wait", staticmethod(lambda *a: None))
    tx = Transaction(lake)
    create_schema(tx, "s")
    with pytest.raises(CommitFailedError, match="after 3 attempts"):
        tx.commit()
    assert len(attempts) == 3


def test_earlier_names_are_gone():
    """The package is unreleased: the catalog client's earlier name ``Lake`` and the façade's
    ``SparkLake.lake`` were dropped rather than carried (one name per concept)."""
    import dbt.adapters.ducklake.lake as lake_package
    from dbt.adapters.ducklake.spark import SparkLake

    assert not hasattr(lake_package, "Lake")
    assert not hasattr(SparkLake, "lake")



def test_dropping_a_function_another_writer_dropped_is_a_conflict() -> None:
    from dbt.adapters.ducklake.lake.conflicts import find_conflict

    assert find_conflict(["dropped_scalar_macro:7"], ["dropped_scalar_macro:7"]) == \
        "function 7 was dropped by another transaction"
    assert find_conflict(["dropped_scalar_macro:7"], ["dropped_scalar_macro:8"]) is None
    assert find_conflict(['created_scalar_macro:"s"."f"'], ['created_scalar_macro:"s"."f"'])


def _snap(snapshot_id: int, changes: str | None) -> Snapshot:
    return Snapshot(snapshot_id, dt.datetime(2026, 11, 29), 1, 10, 10, changes)


def test_tables_touched_reads_the_change_tokens():
    """The tables a run of snapshots changed, from their tokens; ``None`` (a reader drops
    every view) when the tokens cannot say: a gap, an empty change list, a dropped schema or
    view, a token nobody knows."""
    tokens = [_snap(5, 'created_table:"s"."new",inserted_into_table:7'),
              _snap(6, "deleted_from_table:3,inlined_insert:9"), _snap(7, "merge_adjacent:4")]
    renamed = [11]  # the tables whose catalog row began in the range: created or renamed
    assert tables_touched(tokens, 4, 7, lambda: renamed) == {3, 4, 7, 9, 11}
    assert tables_touched(tokens, 5, 6, lambda: 1 / 0) == {3, 9}  # asked for created only
    assert tables_touched(tokens, 4, 8, lambda: renamed) is None  # 8 missing: expired
    assert tables_touched([tokens[0], tokens[2]], 4, 7, lambda: renamed) is None  # 6 missing
    for changes in (None, "", "dropped_schema:2", "dropped_view:8", "altered_view:8",
                    "created_schema:\"x\",some_new_token:1", "inserted_into_table:x"):
        assert tables_touched([_snap(5, changes)], 4, 5, lambda: renamed) is None, changes
    assert tables_touched([], 5, 5, lambda: renamed) == frozenset()


class _FlakyBegin:
    """A connection whose first ``failures`` BEGINs fail as SQLite does while DuckDB commits."""

    def __init__(self, failures: int, message: str = "disk I/O error") -> None:
        self.failures, self.message, self.statements = failures, message, []

    def exec_driver_sql(self, statement: str) -> None:
        self.statements.append(statement)
        if len(self.statements) <= self.failures:
            raise OperationalError(statement, {}, sqlite3.OperationalError(self.message))


def test_a_transient_sqlite_io_error_at_begin_is_retried() -> None:
    conn = _FlakyBegin(failures=2)
    begin_sqlite(conn, write=True, pause=0)
    assert conn.statements == ["BEGIN IMMEDIATE"] * 3


def test_a_lasting_or_other_sqlite_error_at_begin_is_raised() -> None:
    lasting = _FlakyBegin(failures=SQLITE_BEGIN_ATTEMPTS)
    with pytest.raises(OperationalError, match="disk I/O error"):
        begin_sqlite(lasting, write=False, pause=0)
    assert lasting.statements == ["BEGIN"] * SQLITE_BEGIN_ATTEMPTS
    other = _FlakyBegin(failures=1, message="attempt to write a readonly database")
    with pytest.raises(OperationalError, match="readonly"):
        begin_sqlite(other, write=True, pause=0)
    assert other.statements == ["BEGIN IMMEDIATE"]


def test_sqlite_transactions_reuse_connections_and_see_other_writers(tmp_path):  # noqa: ANN001
    """A SQLite catalog keeps its connections open between transactions (a new one parses the
    catalog's schema first): they see another process's commit at their next transaction, and
    closing the lake leaves no descriptor of this process on the catalog file."""
    from duckdb_process import execute
    from sqlalchemy import event

    path = str(tmp_path / "catalog.sqlite")
    lake = Catalog.open(f"sqlite:///{path}", str(tmp_path / "data"))
    opened: list[object] = []
    event.listen(lake.engine, "connect", lambda *_: opened.append(1))
    before = lake.latest_snapshot().snapshot_id
    for _ in range(20):
        with lake.read() as conn:
            assert lake.latest_snapshot(conn).snapshot_id == before
        lake.latest_snapshot()
    assert len(opened) <= 1

    execute(f"ATTACH 'ducklake:sqlite:{path}' AS lake", "CREATE TABLE lake.main.t(i INT)")
    assert lake.latest_snapshot().snapshot_id == before + 1
    assert [t.table_name for t in lake.tables("main")] == ["t"]
    assert len(opened) <= 1

    lake.close()
    fds = "/proc/self/fd"
    if os.path.isdir(fds):
        assert not [fd for fd in os.listdir(fds)
                    if os.path.realpath(os.path.join(fds, fd)) == os.path.realpath(path)]
