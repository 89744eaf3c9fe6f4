"""The catalog database: turning a catalog string into a SQLAlchemy engine, and transactions.

Accepted forms, so users can paste what they already pass to DuckDB's ``ATTACH``:

* SQLAlchemy URLs: ``sqlite:///path/catalog.sqlite``, ``postgresql+psycopg://user@host/db``
  (``postgresql://`` and ``postgres://`` are read as psycopg 3).
* DuckDB strings: ``sqlite:path/catalog.sqlite``, ``postgres:dbname=lake host=localhost``,
  optionally prefixed with ``ducklake:``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.pool import QueuePool

from .conflicts import quote_name
from .errors import CatalogConnectionError, ReadOnlyError, first_line
from .secrets import (
    SECRET_KEYWORDS,
    decode_url_part,
    mask_catalog,
    mask_conninfo,
    remember,
    scrub_quoted,
    split_url,
)

ACCEPTED_FORMS = (
    "sqlite:///path/to/catalog.sqlite, sqlite:path/to/catalog.sqlite, "
    "postgresql+psycopg://user@host:5432/db, postgres:dbname=db host=localhost"
)

WRITE_OPTION = "ducklake_write"
"""Execution option marking a connection whose transaction takes SQLite's write lock up front."""

SQLITE_BEGIN_ATTEMPTS = 8
"""How often a SQLite ``BEGIN`` that failed with a transient I/O error is tried (see
:func:`begin_sqlite`)."""

SQLITE_POOL_SIZE = 4
"""SQLite connections kept open between transactions (see :func:`make_engine`)."""


@dataclass(frozen=True)
class CatalogTarget:
    """A parsed catalog string: the SQLAlchemy URL and driver arguments.

    The password (if any) is inside ``url`` or ``connect_args``; only ``display`` may be
    printed, and the repr shows nothing else.
    """

    url: URL
    dialect: str  # "sqlite" or "postgresql"
    connect_args: dict[str, Any]
    display: str  # safe to print: no password

    def __repr__(self) -> str:
        return f"CatalogTarget({self.display})"

    @property
    def sqlite_path(self) -> str | None:
        if self.dialect != "sqlite":
            return None
        return self.url.database


def parse_catalog(catalog: str, base_dir: str | None = None,
                  password: str | None = None) -> CatalogTarget:
    """Parse a catalog string; relative SQLite paths resolve against ``base_dir`` (or cwd).

    ``password``, when given, is the PostgreSQL password kept apart from the string (the
    profile's ``password`` key); a string that also holds one is refused. Errors show the
    string with its password masked (:func:`.secrets.mask_catalog`).
    """
    remember(password)
    shown = mask_catalog(catalog)
    text = catalog.strip()
    if text.startswith("ducklake:"):
        text = text[len("ducklake:") :]
    base = base_dir or os.getcwd()
    if text.startswith("sqlite:"):
        if password is not None:
            raise CatalogConnectionError(
                f"catalog {shown!r}: a SQLite catalog takes no password; remove the profile's "
                "password")
        rest = text[len("sqlite:") :]
        path = rest[3:] if rest.startswith("///") else rest
        if rest.startswith("//") and not rest.startswith("///"):
            raise CatalogConnectionError(
                f"catalog {shown!r}: a SQLite URL has three slashes (sqlite:///path)"
            )
        if not path or path == ":memory:":
            raise CatalogConnectionError(
                f"catalog {shown!r}: a SQLite catalog needs a file path "
                "(sqlite:///path/to/catalog.sqlite); an in-memory catalog cannot be shared"
            )
        path = os.path.abspath(os.path.join(base, os.path.expanduser(path)))
        return CatalogTarget(URL.create("sqlite", database=path), "sqlite", {"timeout": 60.0},
                             f"sqlite:{path}")
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if text.startswith(prefix):
            return _url_target(text, shown, password)
    if text.startswith(("postgres:", "postgresql:")):
        return _conninfo_target(text.split(":", 1)[1], shown, password)
    scheme = text.split(":", 1)[0]
    if ":" not in text or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        raise CatalogConnectionError(  # no scheme: say nothing of what the string holds
            f"the catalog string starts with no catalog scheme; use one of {ACCEPTED_FORMS}")
    raise CatalogConnectionError(
        f"catalog {shown!r}: unknown catalog scheme {scheme!r}; use one of {ACCEPTED_FORMS}"
    )


def _url_target(text: str, shown: str, password: str | None) -> CatalogTarget:
    """A PostgreSQL URL, read as psycopg 3. The user part ends at the last ``@``, so a
    password may hold any character; percent-escapes in it are decoded as SQLAlchemy does."""
    _, user, written, rest = split_url(text)
    try:
        url = make_url("postgresql+psycopg://" + rest)
    except Exception as exc:  # noqa: BLE001 - ArgumentError, or ValueError on a bad port
        raise CatalogConnectionError(
            f"catalog {shown!r}: cannot parse the PostgreSQL URL ({type(exc).__name__}); the "
            "form is postgresql+psycopg://user:password@host:5432/database") from None
    # Secrets in the query go to psycopg as arguments, out of the URL SQLAlchemy prints.
    connect_args: dict[str, Any] = {}
    for key in SECRET_KEYWORDS:
        if key in url.query:
            value = url.query[key]
            connect_args[key] = value if isinstance(value, str) else value[-1]
            remember(connect_args[key])
            url = url.difference_update_query([key])
    given = [p for p in (written, connect_args.get("password"), password) if p is not None]
    if len(given) > 1:
        raise CatalogConnectionError(
            f"catalog {shown!r}: the password is given twice (in the URL, its query or the "
            "profile's password key); keep one of them")
    if user is not None:
        url = url.set(username=decode_url_part(user))
    if written is not None or password is not None:
        secret = decode_url_part(written) if written is not None else password
        remember(secret)
        url = url.set(password=secret)
    return CatalogTarget(url, "postgresql", connect_args,
                         mask_catalog(url.render_as_string(hide_password=True)))


def _conninfo_target(conninfo: str, shown: str, password: str | None) -> CatalogTarget:
    """A libpq ``keyword=value`` string, as DuckDB's ``ATTACH 'postgres:...'`` takes it."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        args = conninfo_to_dict(conninfo)
    except Exception as exc:  # noqa: BLE001 - psycopg.ProgrammingError on malformed strings
        reason = scrub_quoted(first_line(exc), shown)
        raise CatalogConnectionError(
            f"catalog {shown!r}: cannot parse the libpq connection string: {reason}. Quote a "
            "value holding spaces or quotes with single quotes and escape ' and \\ inside "
            "it with a backslash (password='it\\'s'), or give the password apart (the "
            "profile's password key, or PGPASSWORD)"
        ) from None
    for key in SECRET_KEYWORDS:
        if args.get(key) is not None:
            remember(str(args[key]))
    if password is not None:
        if "password" in args:
            raise CatalogConnectionError(
                f"catalog {shown!r} holds a password and the profile gives one too "
                "(password); keep one of them")
        args["password"] = password
    return CatalogTarget(URL.create("postgresql+psycopg"), "postgresql", dict(args),
                         f"postgres:{mask_conninfo(conninfo)}")


def make_engine(target: CatalogTarget) -> Engine:
    """An engine whose transactions are explicit on both backends.

    On SQLite the driver's own transaction handling is switched off so that a commit can take
    the write lock with ``BEGIN IMMEDIATE`` before reading the latest snapshot: two writers then
    queue on the lock instead of failing on a lock upgrade.

    SQLite connections are pooled (a few kept open, as many more as threads need). A new
    connection parses the catalog's schema at its first statement, about 0.4 ms on a 2-core
    VM against 0.05 ms for a whole snapshot query (``docs/fixed-cost.md``, change 21), and a dbt
    node opens several read transactions. An idle connection holds no lock and sees other
    processes' commits at its next ``BEGIN``; :meth:`CatalogDatabase.close` closes them.
    """
    if target.dialect == "sqlite":
        engine = create_engine(target.url, connect_args=target.connect_args, poolclass=QueuePool,
                               pool_size=SQLITE_POOL_SIZE, max_overflow=-1)

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            begin_sqlite(conn, write=conn.get_execution_options().get(WRITE_OPTION, False))

        return engine
    return create_engine(
        target.url,
        connect_args=target.connect_args,
        pool_pre_ping=True,
        pool_size=2,
        max_overflow=8,
    )


def begin_sqlite(conn: Any, *, write: bool, pause: float = 0.05) -> None:
    """Open a SQLite transaction, taking the write lock up front when ``write``.

    A lock held by another writer is waited for by SQLite's busy timeout, but while a DuckDB
    process writes the same catalog file, ``BEGIN IMMEDIATE`` can also fail with
    ``disk I/O error`` (SQLITE_IOERR, seen as DuckDB committed to the catalog). Nothing has
    happened yet at ``BEGIN``, so it is tried again a few times, like a busy lock; any other
    error, and an I/O error that persists, is raised.
    """
    statement = "BEGIN IMMEDIATE" if write else "BEGIN"
    for attempt in range(SQLITE_BEGIN_ATTEMPTS):
        try:
            conn.exec_driver_sql(statement)
            return
        except OperationalError as exc:
            if "disk i/o error" not in str(exc).lower() or attempt + 1 == SQLITE_BEGIN_ATTEMPTS:
                raise
            time.sleep(pause * (attempt + 1))


class CatalogDatabase:
    """The database holding a lake's ``ducklake_*`` tables, and transactions on it.

    What every catalog reader and writer needs before it asks anything about the lake: the
    engine, the metadata schema the tables live in, and a read or write transaction.
    :class:`~.catalog.Catalog` adds the lake's data path and the questions.
    """

    def __init__(self, target: CatalogTarget, metadata_schema: str | None) -> None:
        self.target = target
        self.engine = make_engine(target)
        self.dialect = target.dialect
        self.metadata_schema = metadata_schema
        # The snapshot a pinned reader reads (the profile's snapshot_version or snapshot_time):
        # when set, no write transaction is opened, so nothing can be committed.
        self.read_only_snapshot: int | None = None
        # Identifiers cannot be bound parameters: quote them, doubling embedded quotes.
        self.prefix = quote_name(metadata_schema) + "." if metadata_schema else ""

    def close(self) -> None:
        """Close the connections kept open between transactions."""
        self.engine.dispose()

    def t(self, name: str) -> str:
        """A catalog table name qualified with the metadata schema."""
        return f"{self.prefix}{name}"

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction: every query inside sees the same catalog state."""
        conn = self._connect()
        try:
            if self.dialect == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn
        finally:
            conn.close()

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction; on SQLite it holds the write lock from its first statement.

        Refused with :class:`ReadOnlyError` on a catalog opened to read one snapshot: every
        commit, option and maintenance step writes through here, so none can slip through.
        """
        if self.read_only_snapshot is not None:
            raise ReadOnlyError.pinned(self.read_only_snapshot, "a write to the catalog")
        conn = self._connect(**{WRITE_OPTION: True})
        try:
            with conn.begin():
                yield conn
        finally:
            conn.close()

    def _connect(self, **options: Any) -> Connection:
        """A connection with ``options``, or :class:`CatalogConnectionError` naming the
        catalog (never its password)."""
        try:
            conn = self.engine.connect()
            return conn.execution_options(**options) if options else conn
        except (OperationalError, DBAPIError) as exc:
            raise CatalogConnectionError(
                f"cannot connect to the DuckLake catalog {self.target.display}: "
                f"{first_line(exc)}"
            ) from exc

    def encode_time(self, value: datetime) -> Any:
        """A timestamp as the backend stores it (text with ``+00`` on SQLite)."""
        if self.dialect == "sqlite":
            utc = value.astimezone(timezone.utc)
            return utc.strftime("%Y-%m-%d %H:%M:%S.%f") + "+00"
        return value

    def has_table(self, name: str, conn: Connection) -> bool:
        """Whether a catalog table (e.g. ``ducklake_inlined_delete_3``) exists."""
        if self.dialect == "sqlite":
            sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :n"
            params: dict[str, Any] = {"n": name}
        else:
            sql = ("SELECT 1 FROM information_schema.tables WHERE table_name = :n "
                   "AND table_schema = :sch")
            params = {"n": name, "sch": self.metadata_schema or "public"}
        return conn.execute(text(sql), params).first() is not None
