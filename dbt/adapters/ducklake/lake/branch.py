"""A private branch of a lake's catalog, published later as ONE snapshot (atomic publish).

:meth:`Branch.open` copies the lake's catalog at its latest snapshot (``branch.base``) into a
private, complete DuckLake catalog (``branch.catalog``) with the same data path and options, so
every existing read and write path works on it unchanged: a writer reads its own writes there,
with file skipping, inlining and schema evolution, while nobody else sees anything. Files are
written where the real lake would write them.

:meth:`Branch.publish` replays the branch's net change onto the real lake as exactly one
snapshot through :class:`~.commit.Transaction` (:mod:`.publish`): the same conflict check
against what others committed meanwhile, retries and "one snapshot or nothing". Nothing holds
the real catalog's write lock except that final commit.

Where the copy lives, and why:

* SQLite: a file next to the catalog, ``.<catalog name>.branch-<uuid7>.sqlite``, made with
  SQLite's online backup API (a consistent copy that holds only a read lock while it runs).
* PostgreSQL: a schema ``<metadata schema or public>__branch_<hex>`` in the same database,
  created with the catalog's bootstrap DDL and filled with ``INSERT ... SELECT`` from every
  ``ducklake_*`` table in one REPEATABLE READ transaction (consistent; takes no write lock).

Both record their owner (pid, host, process start time) in a ``ducklake_branch_owner`` table,
so :func:`remove_stale` can tell the branch of a killed process from a live one. A SIGKILLed
branch leaves its copy (dropped by :func:`remove_stale`) and its Parquet files, which no catalog
row of the real lake names: orphans that ``delete_orphaned_files`` (ours and DuckDB's) removes.
"""

from __future__ import annotations

import glob
import logging
import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Connection, text

from . import bootstrap
from .branch_delta import BaseState, branch_files, capture_base
from .catalog import Catalog
from .conflicts import quote_name
from .connect import parse_catalog
from .errors import CommitUnknownError, InvalidArgumentError
from .files import remove_file
from .models import Snapshot
from .publish import publish_branch

log = logging.getLogger("dbt.adapters.ducklake.lake")

OWNER_TABLE = "ducklake_branch_owner"
BRANCH_MARK = ".branch-"
SCHEMA_MARK = "__branch_"
STALE_AFTER = timedelta(days=1)
"""A branch whose owner cannot be checked (another host) is stale after this long."""


@dataclass(frozen=True)
class Owner:
    """The process that opened a branch: a branch whose owner is gone is stale."""

    pid: int
    host: str
    started: str  # the process's start time as the kernel counts it ("" when unknown)
    created: datetime

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(pid, socket.gethostname(), _process_start(pid),
                   datetime.now(timezone.utc))

    def alive(self) -> bool | None:
        """Whether the owner still runs; ``None`` when it cannot be told (another host)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return _process_start(self.pid) == self.started


def _process_start(pid: int) -> str:
    """Field 22 of ``/proc/<pid>/stat`` (start time in clock ticks since boot): a reused pid
    has another one. ``""`` where there is no ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]


@dataclass
class Branch:
    """A private copy of a lake's catalog; see the module docstring."""

    lake: Catalog
    catalog: Catalog
    base: Snapshot
    location: str  # the SQLite file or the PostgreSQL schema holding the copy
    state: BaseState
    closed: bool = False
    published: Snapshot | None = None
    _kept: set[str] = field(default_factory=set)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, lake: Catalog, guard: str | None = None) -> Branch:
        """Copy ``lake``'s catalog at its latest snapshot into a private catalog.

        With ``guard`` (what holds the branch, for messages: a dbt invocation), writes to
        the lake itself through ``format("ducklake")`` from this process and the processes
        below it (Spark's Python workers) are refused while the branch lives
        (:func:`guarding_branch`): they would land at once, beside the branch."""
        if lake.read_only_snapshot is not None:
            raise InvalidArgumentError(
                f"cannot branch a lake opened to read snapshot {lake.read_only_snapshot}: "
                "a branch is published by a commit; open the lake without a pinned snapshot")
        started = time.monotonic()
        owner = Owner.current()
        if lake.dialect == "sqlite":
            location, catalog = _copy_sqlite(lake, owner, guard)
        else:
            location, catalog = _copy_postgres(lake, owner, guard)
        try:
            for attr in ("max_retry_count", "read_paths"):
                setattr(catalog, attr, getattr(lake, attr))
            catalog.branch_statements = []  # what the publish may re-plan
            state = capture_base(catalog)
        except BaseException:
            _drop_copy(lake, location)
            catalog.close()
            raise
        log.info("branched the lake at snapshot %d into %s in %.2f s",
                 state.snapshot.snapshot_id, location, time.monotonic() - started)
        return cls(lake, catalog, state.snapshot, location, state)

    # ------------------------------------------------------------------ publishing
    def publish(self, author: str | None = None, commit_message: str | None = None,
                commit_extra_info: str | dict[str, Any] | None = None) -> Snapshot | None:
        """Commit the branch's net change on the real lake as ONE snapshot, then discard the
        branch. ``None`` (and nothing committed) when the branch changed nothing.

        Raises :class:`~.errors.CommitConflictError` naming the table and the other snapshot
        when another writer committed a conflicting change meanwhile; then nothing is
        committed and the branch (its copy and its files) is discarded.
        """
        self._check_open()
        try:
            snapshot, kept = publish_branch(self.lake, self.catalog, self.state, author,
                                            commit_message, commit_extra_info,
                                            self.catalog.branch_statements or ())
        except CommitUnknownError:
            self._drop(remove_files=False)  # the snapshot may reference them: keep them
            raise
        except BaseException:
            self.discard()
            raise
        self._kept = kept
        self.published = snapshot
        self.discard()
        return snapshot

    # ------------------------------------------------------------------ discarding
    def discard(self) -> None:
        """Drop the copy and remove the files written only by the branch. Idempotent."""
        self._drop(remove_files=True)

    def _drop(self, remove_files: bool) -> None:
        if self.closed:
            return
        try:
            if remove_files:
                for path in sorted(branch_files(self.catalog, self.state) - self._kept):
                    remove_file(path)
        finally:
            self.closed = True
            self.catalog.close()
            _drop_copy(self.lake, self.location)

    def __enter__(self) -> Branch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()

    def _check_open(self) -> None:
        if self.closed:
            raise InvalidArgumentError(
                f"the branch {self.location} was already published or discarded; open a new "
                "one with Branch.open(lake)")


# ---------------------------------------------------------------------------------- copying
def _copy_sqlite(lake: Catalog, owner: Owner, guard: str | None) -> tuple[str, Catalog]:
    source = lake.target.sqlite_path
    assert source is not None
    folder, name = os.path.split(source)
    path = os.path.join(folder, f".{name}{BRANCH_MARK}{_uuid7()}.sqlite")
    try:
        src = sqlite3.connect(source, timeout=60.0)
        dst = sqlite3.connect(path)
        try:
            src.backup(dst)  # one step: a consistent copy under a read lock
            dst.execute(f"CREATE TABLE {OWNER_TABLE}(pid BIGINT, host VARCHAR, "
                        "started VARCHAR, created VARCHAR, guard VARCHAR)")
            dst.execute(f"INSERT INTO {OWNER_TABLE} VALUES (?, ?, ?, ?, ?)",
                        (owner.pid, owner.host, owner.started, owner.created.isoformat(),
                         guard))
            dst.commit()
        finally:
            dst.close()
            src.close()
    except BaseException:
        _remove_sqlite(path)
        raise
    target = parse_catalog(f"sqlite:///{path}")
    return path, Catalog(target, lake.data_path, None, lake.data_inlining_row_limit)


def _copy_postgres(lake: Catalog, owner: Owner, guard: str | None) -> tuple[str, Catalog]:
    main = lake.metadata_schema or "public"
    schema = f"{main}{SCHEMA_MARK}{uuid.uuid4().hex[:16]}"
    prefix = quote_name(schema) + "."
    conn = lake.engine.connect().execution_options(isolation_level="REPEATABLE READ")
    try:
        with conn.begin():
            names = _catalog_tables(conn, main)
            conn.execute(text("CREATE SCHEMA " + quote_name(schema)))
            for statement in bootstrap.create_statements("postgresql", prefix):
                conn.execute(text(statement))
            fixed = {name for name, _, _ in bootstrap.TABLES}
            for name in names:
                source = f"{quote_name(main)}.{quote_name(name)}"
                if name not in fixed:
                    conn.execute(text(f"CREATE TABLE {prefix}{quote_name(name)} "
                                      f"(LIKE {source} INCLUDING ALL)"))
                conn.execute(text(f"INSERT INTO {prefix}{quote_name(name)} "
                                  f"SELECT * FROM {source}"))
            conn.execute(text(f"CREATE TABLE {prefix}{OWNER_TABLE}(pid BIGINT, host VARCHAR, "
                              "started VARCHAR, created TIMESTAMPTZ, guard VARCHAR)"))
            conn.execute(text(f"INSERT INTO {prefix}{OWNER_TABLE} VALUES (:p, :h, :s, :c, :g)"),
                         {"p": owner.pid, "h": owner.host, "s": owner.started,
                          "c": owner.created, "g": guard})
    finally:
        conn.close()
    return schema, Catalog(lake.target, lake.data_path, schema, lake.data_inlining_row_limit)


def _catalog_tables(conn: Connection, schema: str) -> list[str]:
    rows = conn.execute(text(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = :s "
        "AND table_type = 'BASE TABLE' AND table_name LIKE 'ducklake\\_%' ORDER BY table_name"),
        {"s": schema}).all()
    return [r[0] for r in rows if r[0] != OWNER_TABLE]


# ---------------------------------------------------------------------------------- cleanup
def _drop_copy(lake: Catalog, location: str) -> None:
    if lake.dialect == "sqlite":
        _remove_sqlite(location)
        return
    with lake.engine.connect() as conn, conn.begin():
        conn.execute(text(f"DROP SCHEMA IF EXISTS {quote_name(location)} CASCADE"))


def _remove_sqlite(path: str) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def _read_owner(conn: Any, table: str) -> Owner | None:
    try:
        row = conn.execute(f"SELECT pid, host, started, created FROM {table}").fetchone()
    except Exception:  # noqa: BLE001 - a copy killed before its owner row was written
        return None
    if row is None:
        return None
    created = row[3] if isinstance(row[3], datetime) else datetime.fromisoformat(str(row[3]))
    return Owner(int(row[0]), str(row[1]), str(row[2] or ""), created)


def _stale(owner: Owner | None, age: timedelta, older_than: timedelta) -> bool:
    if owner is None:
        return age > timedelta(minutes=10)  # half-made copy: give a running copy time
    alive = owner.alive()
    if alive is None:
        return datetime.now(timezone.utc) - owner.created > older_than
    return not alive


def remove_stale(lake: Catalog, older_than: timedelta = STALE_AFTER) -> list[str]:
    """Drop branches of ``lake`` left by processes that are gone (killed before they
    published or discarded); a branch owned by another host is dropped once it is older than
    ``older_than``. Returns the copies dropped. Their Parquet files are orphans:
    ``delete_orphaned_files`` removes them."""
    if lake.dialect == "sqlite":
        return _remove_stale_sqlite(lake, older_than)
    return _remove_stale_postgres(lake, older_than)


def _remove_stale_sqlite(lake: Catalog, older_than: timedelta) -> list[str]:
    source = lake.target.sqlite_path
    assert source is not None
    folder, name = os.path.split(source)
    dropped = []
    for path in glob.glob(os.path.join(glob.escape(folder), f".{glob.escape(name)}"
                                       f"{BRANCH_MARK}*.sqlite")):
        try:
            age = timedelta(seconds=time.time() - os.path.getmtime(path))
            conn = sqlite3.connect(path, timeout=5.0)
            try:
                owner = _read_owner(conn, OWNER_TABLE)
            finally:
                conn.close()
        except (OSError, sqlite3.Error):
            continue
        if _stale(owner, age, older_than):
            _remove_sqlite(path)
            dropped.append(path)
    return dropped


def _remove_stale_postgres(lake: Catalog, older_than: timedelta) -> list[str]:
    main = lake.metadata_schema or "public"
    dropped = []
    with lake.engine.connect() as conn:
        schemas = [r[0] for r in conn.execute(text(
            "SELECT schema_name FROM information_schema.schemata WHERE "
            "starts_with(schema_name, :p)"), {"p": main + SCHEMA_MARK}).all()]
        conn.rollback()
        for schema in schemas:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            cursor = raw.cursor()
            owner = _read_owner(cursor, f"{quote_name(schema)}.{OWNER_TABLE}")
            raw.rollback()
            if _stale(owner, timedelta(0), older_than):
                with conn.begin():
                    conn.execute(text(f"DROP SCHEMA IF EXISTS {quote_name(schema)} CASCADE"))
                dropped.append(schema)
    return dropped


# ---------------------------------------------------------------------------------- guard
def guarding_branch(lake: Catalog) -> str | None:
    """What guards ``lake`` against direct writes from this process: the ``guard`` of a
    branch of it opened by this process or one of its ancestors (Spark's Python workers run
    below the JVM, which runs below the Python process that opened the branch); ``None``
    when nothing does."""
    mine = _ancestors()
    for location in branch_copies(lake):
        guard, owner = _read_guard(lake, location)
        if guard and owner is not None and owner.host == socket.gethostname() and \
                (owner.pid, owner.started) in mine:
            return f"{guard} (branch {location})"
    return None


def _ancestors() -> set[tuple[int, str]]:
    """(pid, start time) of this process and every process above it."""
    out: set[tuple[int, str]] = set()
    pid = os.getpid()
    while pid > 1 and len(out) < 64:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[-1].split()
        except OSError:
            break
        out.add((pid, fields[19]))
        pid = int(fields[1])
    return out


def branch_copies(lake: Catalog) -> list[str]:
    """Every branch copy of ``lake`` (SQLite files or PostgreSQL schemas)."""
    if lake.dialect == "sqlite":
        source = lake.target.sqlite_path
        assert source is not None
        folder, name = os.path.split(source)
        return glob.glob(os.path.join(glob.escape(folder),
                                      f".{glob.escape(name)}{BRANCH_MARK}*.sqlite"))
    main = lake.metadata_schema or "public"
    with lake.engine.connect() as conn:
        return [r[0] for r in conn.execute(text(
            "SELECT schema_name FROM information_schema.schemata WHERE "
            "starts_with(schema_name, :p)"), {"p": main + SCHEMA_MARK}).all()]


def _read_guard(lake: Catalog, location: str) -> tuple[str | None, Owner | None]:
    query = "SELECT guard FROM {}"
    try:
        if lake.dialect == "sqlite":
            conn = sqlite3.connect(location, timeout=5.0)
            try:
                owner = _read_owner(conn, OWNER_TABLE)
                row = conn.execute(query.format(OWNER_TABLE)).fetchone()
            finally:
                conn.close()
        else:
            table = f"{quote_name(location)}.{OWNER_TABLE}"
            with lake.engine.connect() as sa_conn:
                raw = sa_conn.connection.dbapi_connection
                assert raw is not None
                owner = _read_owner(raw.cursor(), table)
                raw.rollback()
                cursor = raw.cursor()
                cursor.execute(query.format(table))
                row = cursor.fetchone()
                raw.rollback()
    except Exception:  # noqa: BLE001 - a copy being made or dropped, or of an older version
        return None, None
    return (str(row[0]) if row and row[0] else None), owner


def _uuid7() -> str:
    from .commit import uuid7

    return uuid7()


__all__ = ["Branch", "Owner", "branch_files", "branch_copies", "guarding_branch", "remove_stale"]
