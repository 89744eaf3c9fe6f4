"""The DuckLake catalog client: the lake's catalog read at any snapshot.

A :class:`Catalog` is a :class:`~.connect.CatalogDatabase` (engine, metadata schema, read and
write transactions) plus the lake's data path, and answers questions about the catalog at a
snapshot: snapshots, schemas, tables, views, columns, files, statistics and partitions. It
never imports Spark or dbt. Creating a lake is :mod:`.bootstrap`'s, options are
:mod:`.options`'s, and writes go through :class:`~.commit.Transaction`, which turns staged
changes into exactly one snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, text

from . import bootstrap
from . import paths as lake_paths
from .connect import CatalogDatabase, CatalogTarget, parse_catalog
from .errors import (
    CatalogConnectionError,
    FormatVersionError,
    InvalidArgumentError,
    NotFoundError,
    SnapshotNotFoundError,
    UnsafeCatalogNameError,
)
from .models import (
    SPARK_SQL_TAG,
    BranchStatement,
    ColumnInfo,
    DataFile,
    DeleteFile,
    InlinedDataTable,
    MacroInfo,
    MacroParameter,
    NameMapping,
    PartitionColumn,
    PartitionSpec,
    SchemaInfo,
    Snapshot,
    TableColumnStats,
    TableInfo,
    TableStats,
    ViewInfo,
)

FileRow = TypeVar("FileRow", DataFile, DeleteFile)


def visible(alias: str = "") -> str:
    """The DuckLake visibility predicate for versioned rows at snapshot ``:s``."""
    p = f"{alias}." if alias else ""
    return f"({p}begin_snapshot <= :s AND ({p}end_snapshot IS NULL OR :s < {p}end_snapshot))"


def to_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def parse_time(value: Any) -> datetime:
    """Catalog timestamps: datetimes on PostgreSQL, ISO text with an offset on SQLite."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def normalise_dir(path: str) -> str:
    """A directory path with ``/`` separators and one trailing ``/``."""
    path = path.replace("\\", "/")
    return path if path.endswith("/") else path + "/"


def is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


MAX_RETRY_COUNT = 10  # DuckDB's ducklake_max_retry_count default

# The columns of ``ducklake_table`` (alias ``e``) and ``ducklake_view`` (alias ``e``, with
# the Spark SQL tag ``g``) that :class:`TableInfo` and :class:`ViewInfo` hold, then the
# schema's name.
_TABLE_COLUMNS = ("e.table_id, e.table_uuid, e.begin_snapshot, e.end_snapshot, e.schema_id, "
                  "e.table_name, e.path, e.path_is_relative, s.schema_name")
_VIEW_COLUMNS = ("e.view_id, e.view_uuid, e.begin_snapshot, e.end_snapshot, e.schema_id, "
                 "e.view_name, e.dialect, e.sql, e.column_aliases, s.schema_name, g.value")


class Catalog(CatalogDatabase):
    """A DuckLake lake: its catalog database plus its data path.

    Use :meth:`open`; it creates the lake when the catalog is empty, exactly as DuckDB 1.5.5
    does, and refuses a lake written in another format version without touching it.

    A question is asked in the caller's transaction (``conn``); one asked without it
    (``conn=None``, where allowed) opens a read transaction of its own.
    """

    def __init__(
        self,
        target: CatalogTarget,
        data_path: str,
        metadata_schema: str | None,
        data_inlining_row_limit: int | None,
    ) -> None:
        super().__init__(target, metadata_schema)
        # Commit retries on lost snapshot-id races (DuckDB's ducklake_max_retry_count).
        self.max_retry_count = MAX_RETRY_COUNT
        self.data_path = data_path
        # The connection-level inlining limit; see :func:`.options.inlining_row_limit`.
        self.data_inlining_row_limit = data_inlining_row_limit
        # Directories outside the data path whose Parquet files may be *read* (files that
        # DuckDB's ducklake_add_data_files registered from there). Catalog rows are not
        # trusted to name them: the caller does. Nothing there is ever written or deleted.
        self.read_paths: tuple[str, ...] = ()
        # A branch's catalog (:mod:`.branch`) keeps here its snapshots that deleted rows of
        # base tables, for the publish to re-plan them against rows others inserted
        # meanwhile; ``None`` for a lake (nothing recorded).
        self.branch_statements: list[BranchStatement] | None = None

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        catalog: str,
        data_path: str | None = None,
        *,
        metadata_schema: str | None = None,
        data_inlining_row_limit: int | None = None,
        create: bool = True,
        base_dir: str | None = None,
        override_data_path: bool = False,
        password: str | None = None,
        read_paths: Sequence[str] = (),
    ) -> Catalog:
        """Open the lake in ``catalog``, creating it when the catalog holds none.

        Args:
            catalog: a SQLAlchemy URL or DuckDB-style catalog string (see :mod:`.connect`).
            data_path: where Parquet files live. Required to create a lake; when opening an
                existing one it must match the stored path unless ``override_data_path``.
            metadata_schema: PostgreSQL schema holding the ``ducklake_*`` tables.
            data_inlining_row_limit: the connection-level inlining limit; the lake's own
                ``data_inlining_row_limit`` options take precedence, as in DuckDB.
            create: create a new lake when none exists (otherwise raise).
            base_dir: directory relative paths resolve against (default: cwd).
            password: the PostgreSQL password, when the catalog string holds none (it is
                never printed; libpq's ``PGPASSWORD`` and ``~/.pgpass`` work too).
            read_paths: directories outside the data path whose Parquet files the lake's
                catalog may name and that may be read (never written or deleted): files added
                from there by DuckDB's ``ducklake_add_data_files``. Any other path outside
                the data path that a catalog row names is refused.
        """
        target = parse_catalog(catalog, base_dir, password)
        if metadata_schema and target.dialect == "sqlite":
            raise InvalidArgumentError(
                "metadata_schema is only supported on a PostgreSQL catalog; "
                "a SQLite catalog keeps its tables in the main database"
            )
        if target.sqlite_path:
            parent = os.path.dirname(target.sqlite_path)
            if parent and not os.path.isdir(parent):
                if not create:
                    raise CatalogConnectionError(f"catalog directory {parent} does not exist")
                os.makedirs(parent, exist_ok=True)
        base = base_dir or os.getcwd()
        wanted = _absolute_data_path(data_path, base)
        lake = cls(target, wanted or "", metadata_schema, data_inlining_row_limit)
        try:
            meta = bootstrap.read_metadata(lake)
        except CatalogConnectionError:
            lake.engine.dispose()
            raise
        if meta is None:
            lake._create(wanted, create)
            return lake
        try:
            lake._adopt(meta, wanted, override_data_path)
        except (FormatVersionError, InvalidArgumentError):
            lake.engine.dispose()
            raise
        lake.allow_reads_from(*read_paths, base_dir=base)
        return lake

    def _create(self, data_path: str | None, create: bool) -> None:
        """A new lake in an empty catalog, when the caller allows it."""
        if not create:
            raise CatalogConnectionError(f"no DuckLake lake in catalog {self.target.display}")
        if not data_path:
            raise InvalidArgumentError(
                "data_path is required to create a new lake: pass the directory (or object "
                "store URL) where its Parquet files should live"
            )
        bootstrap.create_lake(self, data_path)
        if not is_remote(data_path):
            os.makedirs(data_path, exist_ok=True)

    def _adopt(self, meta: dict[str, str], wanted: str | None, override: bool) -> None:
        """Check an existing lake's ``ducklake_metadata`` (format version, encryption, the
        stored data path against the one asked for) and take its data path."""
        bootstrap.require_format_version(self, meta.get("version"))
        if meta.get("encrypted", "false") != "false":
            raise FormatVersionError(
                f"the lake in {self.target.display} is encrypted; encrypted lakes are not "
                "supported"
            )
        stored = meta.get("data_path", "")
        if stored and not is_remote(stored) and not os.path.isabs(stored):
            stored = normalise_dir(os.path.abspath(stored))
        if wanted and stored and normalise_dir(stored) != wanted and not override:
            raise InvalidArgumentError(
                f"data_path {wanted!r} differs from the lake's stored data path {stored!r}; "
                "drop data_path from the profile to use the stored one, or pass "
                "override_data_path=True"
            )
        self.data_path = normalise_dir(wanted if (wanted and override) else stored)

    def allow_reads_from(self, *directories: str, base_dir: str | None = None) -> None:
        """Also read Parquet files the catalog names below these directories (outside the
        data path: files added by ``ducklake_add_data_files``); never written or deleted."""
        base = base_dir or os.getcwd()
        for d in directories:
            root = normalise_dir(d if is_remote(d) else os.path.abspath(
                os.path.join(base, os.path.expanduser(d.removeprefix("file://")))))
            if root not in self.read_paths:
                self.read_paths += (root,)

    def check_file_path(self, path: str, relative: bool, what: str) -> None:
        """Refuse a data or delete file path from a catalog row that may point outside the
        data path (or the ``read_paths``), or at something other than a Parquet file: such
        rows come from other writers and are not trusted (:mod:`.paths`)."""
        lake_paths.check_file((self.data_path, *self.read_paths), path, relative, what)

    def checked_files(self, files: list[FileRow]) -> list[FileRow]:
        """``files`` (data or delete file rows) once each path is checked: every reader
        takes its files from here (:meth:`check_file_path`)."""
        for f in files:
            if isinstance(f, DataFile):
                what = f"ducklake_data_file {f.data_file_id} (table id {f.table_id})"
            else:
                what = f"ducklake_delete_file {f.delete_file_id} (table id {f.table_id})"
            self.check_file_path(f.path, f.path_is_relative, what)
        return files

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _reading(self, conn: Connection | None) -> Iterator[Connection]:
        """``conn`` itself, or a read transaction of its own when the caller has none."""
        if conn is not None:
            yield conn
            return
        with self.read() as own:
            yield own

    # ------------------------------------------------------------------ snapshots
    def _snapshot_select(self) -> str:
        return (
            "SELECT s.snapshot_id, s.snapshot_time, s.schema_version, s.next_catalog_id, "
            "s.next_file_id, c.changes_made, c.author, c.commit_message, c.commit_extra_info "
            f"FROM {self.t('ducklake_snapshot')} s LEFT JOIN "
            f"{self.t('ducklake_snapshot_changes')} c ON c.snapshot_id = s.snapshot_id"
        )

    @staticmethod
    def _snapshot(row: Sequence[Any]) -> Snapshot:
        return Snapshot(
            int(row[0]), parse_time(row[1]), int(row[2]), int(row[3]), int(row[4]),
            row[5], row[6], row[7], row[8],
        )

    def latest_snapshot(self, conn: Connection | None = None) -> Snapshot:
        with self._reading(conn) as conn:
            row = conn.execute(
                text(self._snapshot_select() + " WHERE s.snapshot_id = "
                     f"(SELECT MAX(snapshot_id) FROM {self.t('ducklake_snapshot')})")
            ).one()
        return self._snapshot(row)

    def find_snapshot(self, snapshot_id: int, conn: Connection | None = None) -> Snapshot | None:
        """The snapshot with this id, or ``None`` (never created, or expired)."""
        with self._reading(conn) as conn:
            row = conn.execute(
                text(self._snapshot_select() + " WHERE s.snapshot_id = :v"), {"v": snapshot_id}
            ).first()
        return None if row is None else self._snapshot(row)

    def snapshots(self, since: int | None = None) -> list[Snapshot]:
        """All snapshots (or those after ``since``), oldest first, with their changes."""
        where, params = "", {}
        if since is not None:
            where, params = " WHERE s.snapshot_id > :since", {"since": since}
        with self.read() as conn:
            rows = conn.execute(
                text(self._snapshot_select() + where + " ORDER BY s.snapshot_id"), params
            ).all()
        return [self._snapshot(r) for r in rows]

    def snapshots_with_extra_info(self, fragment: str) -> list[Snapshot]:
        """The snapshots whose ``commit_extra_info`` contains ``fragment``, newest first: the
        catalog filters, so the cost does not grow with the snapshots that do not match
        (SQLite's LIKE ignores ASCII case: callers check what they need)."""
        pattern = "%" + fragment.replace("\\", "\\\\").replace("%", "\\%") \
            .replace("_", "\\_") + "%"
        with self.read() as conn:
            rows = conn.execute(
                text(self._snapshot_select() + " WHERE c.commit_extra_info LIKE :p "
                     "ESCAPE '\\' ORDER BY s.snapshot_id DESC"), {"p": pattern}).all()
        return [self._snapshot(r) for r in rows]

    def snapshot(
        self,
        version: int | None = None,
        timestamp: datetime | str | None = None,
        conn: Connection | None = None,
    ) -> Snapshot:
        """Resolve a snapshot as DuckDB's ``AT (...)`` does.

        A version picks exactly that snapshot; a timestamp picks the latest snapshot at or
        before it; neither picks the latest. Unknown or expired snapshots raise
        :class:`SnapshotNotFoundError`.
        """
        with self._reading(conn) as conn:
            if version is not None and timestamp is not None:
                raise InvalidArgumentError("pass a snapshot version or a timestamp, not both")
            if version is not None:
                try:
                    version = int(version)
                except (TypeError, ValueError) as exc:
                    raise InvalidArgumentError(
                        f"snapshot version must be an integer, got {version!r}"
                    ) from exc
                found = self.find_snapshot(version, conn)
                if found is None:
                    raise SnapshotNotFoundError(
                        f"no snapshot with version {version} in the lake (it was never created "
                        f"or has been expired); {self._available(conn)}"
                    )
                return found
            if timestamp is not None:
                when = as_timestamp(timestamp)
                sid = self._snapshot_by_time(when, "<=", conn)
                if sid is None:
                    raise SnapshotNotFoundError(
                        f"no snapshot at or before {when.isoformat()} (the lake's history "
                        "starts later, or those snapshots have been expired); "
                        f"{self._available(conn)}"
                    )
                return self.snapshot(version=sid, conn=conn)
            return self.latest_snapshot(conn)

    def snapshot_at_or_after(self, timestamp: datetime | str,
                             conn: Connection | None = None) -> Snapshot:
        """The earliest snapshot at or after ``timestamp``: the start bound of a change feed
        given as a time (DuckDB's lower bound), so that it covers the commits after it."""
        with self._reading(conn) as conn:
            when = as_timestamp(timestamp)
            sid = self._snapshot_by_time(when, ">=", conn)
            if sid is None:
                raise SnapshotNotFoundError(
                    f"no snapshot at or after {when.isoformat()}; {self._available(conn)}")
            return self.snapshot(version=sid, conn=conn)

    def _snapshot_by_time(self, when: datetime, op: str, conn: Connection) -> int | None:
        """The latest snapshot at or before ``when`` (``op`` ``<=``) or the earliest at or
        after it (``>=``), in one query however long the history.

        SQLite holds the times as UTC text, ``2026-01-31 12:00:00.1234+00``, DuckDB trimming
        trailing zeros of the fraction and us writing six digits. Because ``+`` sorts before
        every digit and ``.``, text order is time order; only the bound's spelling decides
        ties, so ``<=`` compares with six digits (no spelling of the same instant is larger)
        and ``>=`` with no trailing zeros (none is smaller).
        """
        bound: Any = when
        if self.dialect == "sqlite":
            utc = when.astimezone(timezone.utc)
            bound = utc.strftime("%Y-%m-%d %H:%M:%S")
            fraction = f"{utc.microsecond:06d}"
            if op == ">=":
                fraction = fraction.rstrip("0")
            bound += ("." + fraction if fraction else "") + "+00"
        order = "DESC" if op == "<=" else "ASC"
        return cast("int | None", conn.execute(
            text(f"SELECT snapshot_id FROM {self.t('ducklake_snapshot')} WHERE snapshot_time "
                 f"{op} :t ORDER BY snapshot_time {order}, snapshot_id {order} LIMIT 1"),
            {"t": bound}).scalar())

    def _available(self, conn: Connection) -> str:
        """The snapshot range a caller can pick from, for error messages."""
        rows = conn.execute(
            text(f"SELECT snapshot_id, snapshot_time FROM {self.t('ducklake_snapshot')} "
                 "WHERE snapshot_id IN (SELECT MIN(snapshot_id) FROM "
                 f"{self.t('ducklake_snapshot')} UNION SELECT MAX(snapshot_id) FROM "
                 f"{self.t('ducklake_snapshot')}) ORDER BY snapshot_id")).all()
        if not rows:
            return "the lake holds no snapshots"
        (first, t0), (last, t1) = rows[0], rows[-1]
        return (f"available snapshots are {first} ({parse_time(t0).isoformat()}) to {last} "
                f"({parse_time(t1).isoformat()})")

    # ------------------------------------------------------------------ schemas, tables, views
    def _at(self, at: int | None, conn: Connection) -> int:
        return self.latest_snapshot(conn).snapshot_id if at is None else at

    def schemas(self, at: int | None = None, conn: Connection | None = None) -> list[SchemaInfo]:
        with self._reading(conn) as conn:
            rows = conn.execute(
                text(f"SELECT * FROM {self.t('ducklake_schema')} WHERE {visible()} "
                     "ORDER BY schema_id"),
                {"s": self._at(at, conn)},
            ).all()
        return [SchemaInfo(r[0], str(r[1]), r[2], r[3], r[4], r[5], bool(r[6])) for r in rows]

    def schema(self, name: str, at: int | None = None,
               conn: Connection | None = None) -> SchemaInfo:
        """A schema by name; names are case-insensitive, as in DuckDB and Spark."""
        found = _by_name(self.schemas(at, conn), name, lambda s: s.schema_name)
        if found is None:
            raise NotFoundError(f"schema {name!r} does not exist in the lake")
        return found

    def tables(
        self, schema_name: str | None = None, at: int | None = None,
        conn: Connection | None = None,
    ) -> list[TableInfo]:
        """Tables visible at ``at`` (latest by default), in one catalog query."""
        rows = self._entries("table", _TABLE_COLUMNS, schema_name, at, conn)
        return [
            TableInfo(r[0], str(r[1]), r[2], r[3], r[4], r[5], r[6], bool(r[7]), r[8])
            for r in rows
        ]

    def table(
        self, schema_name: str, table_name: str, at: int | None = None,
        conn: Connection | None = None,
    ) -> TableInfo:
        found = _by_name(self.tables(schema_name, at, conn), table_name, lambda t: t.table_name)
        if found is not None:
            return found
        raise NotFoundError(
            f"table {schema_name}.{table_name} does not exist in the lake"
            + (f" at snapshot {at}" if at is not None else "")
        )

    def tables_begun(self, since: int, until: int) -> set[int]:
        """The ids of the tables with a row begun after snapshot ``since`` up to ``until``:
        those created, and those renamed (a rename ends the table's row and begins one of
        the same id under the new name; its only token is ``created_table``)."""
        with self.read() as conn:
            rows = conn.execute(
                text(f"SELECT DISTINCT table_id FROM {self.t('ducklake_table')} "
                     "WHERE begin_snapshot > :a AND begin_snapshot <= :b"),
                {"a": since, "b": until}).all()
        return {int(r[0]) for r in rows}

    def relations(self, schema_name: str, at: int | None = None) -> list[tuple[str, str]]:
        """``(kind, name)`` of every table and view in a schema, in one catalog query."""
        with self.read() as conn:
            rows = conn.execute(
                text(self._entries_query("table", "'table', e.table_name", True)
                     + " UNION ALL "
                     + self._entries_query("view", "'view', e.view_name", True)),
                {"n": schema_name, "s": self._at(at, conn)},
            ).all()
        return [(r[0], r[1]) for r in rows]

    def _entries_query(self, kind: str, columns: str, in_schema: bool, join: str = "") -> str:
        """SELECT ``columns`` of the ``ducklake_{kind}`` rows (alias ``e``) visible at ``:s``
        whose schema (alias ``s``) is visible too, in the schema named ``:n`` (in any case)
        when ``in_schema``: tables and views are both such schema entries."""
        sql = (f"SELECT {columns} FROM {self.t('ducklake_' + kind)} e JOIN "
               f"{self.t('ducklake_schema')} s ON s.schema_id = e.schema_id AND "
               f"{visible('s')}{join} WHERE {visible('e')}")
        return sql + " AND LOWER(s.schema_name) = LOWER(:n)" if in_schema else sql

    def _entries(self, kind: str, columns: str, schema_name: str | None, at: int | None,
                 conn: Connection | None, join: str = "") -> Sequence[Sequence[Any]]:
        """The rows of :meth:`_entries_query` at ``at`` (latest by default), by id."""
        with self._reading(conn) as conn:
            params: dict[str, Any] = {"s": self._at(at, conn)}
            if schema_name is not None:
                params["n"] = schema_name
            sql = self._entries_query(kind, columns, schema_name is not None, join)
            return conn.execute(text(f"{sql} ORDER BY e.{kind}_id"), params).all()

    def table_by_id(self, table_id: int, at: int, conn: Connection) -> TableInfo | None:
        for table in self.tables(None, at, conn):
            if table.table_id == table_id:
                return table
        return None

    def views(
        self, schema_name: str | None = None, at: int | None = None,
        conn: Connection | None = None,
    ) -> list[ViewInfo]:
        """Views visible at ``at`` (latest by default), each with its Spark SQL tag."""
        rows = self._entries(
            "view", _VIEW_COLUMNS, schema_name, at, conn,
            join=f" LEFT JOIN {self.t('ducklake_tag')} g ON g.object_id = e.view_id "
                 f"AND g.key = '{SPARK_SQL_TAG}' AND {visible('g')}")
        return [ViewInfo(r[0], str(r[1]), r[2], r[3], r[4], r[5], r[6], r[7], r[8] or "", r[9],
                         r[10]) for r in rows]

    def macros(
        self, schema_name: str | None = None, at: int | None = None,
        conn: Connection | None = None,
    ) -> list[MacroInfo]:
        """Macros (SQL functions) visible at ``at`` (latest by default), each with its first
        implementation, its parameters and its Spark definition tag."""
        columns = ("e.macro_id, e.schema_id, e.macro_name, e.begin_snapshot, e.end_snapshot, "
                   "s.schema_name, i.dialect, i.sql, i.type, g.value")
        join = (f" JOIN {self.t('ducklake_macro_impl')} i ON i.macro_id = e.macro_id AND "
                f"i.impl_id = 0 LEFT JOIN {self.t('ducklake_tag')} g ON g.object_id = "
                f"e.macro_id AND g.key = '{SPARK_SQL_TAG}' AND {visible('g')}")
        with self._reading(conn) as conn:
            rows = self._entries("macro", columns, schema_name, at, conn, join=join)
            ids = [int(r[0]) for r in rows]
            params: dict[int, list[MacroParameter]] = {i: [] for i in ids}
            if ids:
                found = conn.execute(text(
                    "SELECT macro_id, parameter_name, parameter_type, default_value, "
                    f"default_value_type FROM {self.t('ducklake_macro_parameters')} WHERE "
                    f"impl_id = 0 AND macro_id IN ({', '.join(str(i) for i in ids)}) "
                    "ORDER BY macro_id, column_id")).all()
                for macro_id, name, kind, default, default_type in cast(
                        "Sequence[tuple[int, str, str | None, str | None, str | None]]", found):
                    params[int(macro_id)].append(MacroParameter(
                        name, kind or "unknown", default if default is not None else "NULL",
                        default_type or "unknown"))
        return [MacroInfo(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                          tuple(params[int(r[0])]), r[9]) for r in rows]

    # ------------------------------------------------------------------ columns and comments
    def comment(self, object_id: int, conn: Connection, at: int | None = None) -> str | None:
        row = conn.execute(
            text(f"SELECT value FROM {self.t('ducklake_tag')} WHERE object_id = :o AND "
                 f"key = 'comment' AND {visible()}"),
            {"o": object_id, "s": self._at(at, conn)}).first()
        return None if row is None else row[0]

    def column_comments(self, table_id: int, conn: Connection,
                        at: int | None = None) -> dict[int, str | None]:
        """Column id -> comment; ``None`` where a comment was removed (``IS NULL``)."""
        rows = cast("Sequence[tuple[int, str | None]]", conn.execute(
            text(f"SELECT column_id, value FROM {self.t('ducklake_column_tag')} WHERE "
                 f"table_id = :t AND key = 'comment' AND {visible()}"),
            {"t": table_id, "s": self._at(at, conn)}).all())
        return {int(c): v for c, v in rows}

    def columns(
        self, table_id: int, at: int | None = None, conn: Connection | None = None
    ) -> list[ColumnInfo]:
        """The top-level columns of a table at ``at``, each with its nested children."""
        with self._reading(conn) as conn:
            rows = conn.execute(
                text(f"SELECT * FROM {self.t('ducklake_column')} WHERE table_id = :t AND "
                     f"{visible()} ORDER BY column_order, column_id"),
                {"t": table_id, "s": self._at(at, conn)},
            ).all()
        return build_column_tree(rows)

    def max_column_id(self, table_id: int, conn: Connection) -> int:
        value = conn.execute(
            text(f"SELECT MAX(column_id) FROM {self.t('ducklake_column')} WHERE table_id = :t"),
            {"t": table_id},
        ).scalar()
        return int(value or 0)

    # ------------------------------------------------------------------ files
    def data_files(self, table_id: int, at: int, conn: Connection) -> list[DataFile]:
        rows = conn.execute(
            text(f"SELECT * FROM {self.t('ducklake_data_file')} WHERE table_id = :t AND "
                 f"{visible()} ORDER BY data_file_id"),
            {"t": table_id, "s": at},
        ).all()
        return self.checked_files([_data_file(r) for r in rows])

    def delete_files(self, table_id: int, at: int, conn: Connection) -> dict[int, DeleteFile]:
        """The delete file visible at ``at`` for each data file id (at most one each)."""
        rows = conn.execute(
            text(f"SELECT * FROM {self.t('ducklake_delete_file')} WHERE table_id = :t AND "
                 f"{visible()} ORDER BY delete_file_id"),
            {"t": table_id, "s": at},
        ).all()
        return {f.data_file_id: f for f in self.checked_files([_delete_file(r) for r in rows])}

    def inlined_data_tables(self, table_id: int, conn: Connection) -> list[InlinedDataTable]:
        rows = cast("Sequence[tuple[int, str, int]]", conn.execute(
            text(f"SELECT table_id, table_name, schema_version FROM "
                 f"{self.t('ducklake_inlined_data_tables')} WHERE table_id = :t "
                 "ORDER BY schema_version"),
            {"t": table_id},
        ).all())
        return [checked_inlined_table(a, b, c) for a, b, c in rows]

    def name_mappings(self, mapping_ids: Sequence[int],
                      conn: Connection) -> dict[int, list[NameMapping]]:
        if not mapping_ids:
            return {}
        ids = sorted(set(mapping_ids))
        marks, params = in_list(ids, "m")
        rows = conn.execute(
            text(f"SELECT mapping_id, column_id, source_name, target_field_id, parent_column, "
                 f"is_partition FROM {self.t('ducklake_name_mapping')} "
                 f"WHERE mapping_id IN ({marks}) ORDER BY mapping_id, column_id"),
            params,
        ).all()
        out: dict[int, list[NameMapping]] = {i: [] for i in ids}
        for r in rows:
            out[int(r[0])].append(
                NameMapping(int(r[0]), int(r[1]), r[2], int(r[3]),
                            None if r[4] is None else int(r[4]), bool(r[5]))
            )
        return out

    # ------------------------------------------------------------------ statistics
    def table_stats(self, table_id: int, conn: Connection) -> TableStats | None:
        row = conn.execute(
            text(f"SELECT table_id, record_count, next_row_id, file_size_bytes FROM "
                 f"{self.t('ducklake_table_stats')} WHERE table_id = :t"),
            {"t": table_id},
        ).first()
        return None if row is None else TableStats(*(int(v or 0) for v in row))

    def table_column_stats(self, table_id: int, conn: Connection) -> dict[int, TableColumnStats]:
        rows = conn.execute(
            text(f"SELECT table_id, column_id, contains_null, contains_nan, min_value, max_value "
                 f"FROM {self.t('ducklake_table_column_stats')} WHERE table_id = :t"),
            {"t": table_id},
        ).all()
        return {
            int(r[1]): TableColumnStats(int(r[0]), int(r[1]), to_bool(r[2]), to_bool(r[3]),
                                        r[4], r[5])
            for r in rows
        }

    def file_column_bounds(
        self, table_id: int, column_ids: Sequence[int], at: int, conn: Connection,
    ) -> dict[int, dict[int, tuple[str | None, str | None]]]:
        """Data file id -> {column id: (min_value, max_value)} for the files live at ``at``."""
        if not column_ids:
            return {}
        sql, params = self._file_column_stats("s.min_value, s.max_value", table_id, column_ids,
                                              at)
        rows = cast("Sequence[tuple[int, int, str | None, str | None]]",
                    conn.execute(text(sql), params).all())
        out: dict[int, dict[int, tuple[str | None, str | None]]] = {}
        for fid, cid, low, high in rows:
            out.setdefault(int(fid), {})[int(cid)] = (low, high)
        return out

    def file_column_stats_rows(
        self, table_id: int, column_ids: Sequence[int], at: int | None, conn: Connection,
    ) -> list[tuple[int, int, int | None, int | None, str | None, str | None, bool | None]]:
        """``(data file id, column id, null_count, value_count, min_value, max_value,
        contains_nan)`` of the given columns for the files live at ``at`` (every file of the
        table that has not been cleaned up when ``at`` is ``None``: the change feed reads
        files that later snapshots ended)."""
        if not column_ids:
            return []
        sql, params = self._file_column_stats(
            "s.null_count, s.value_count, s.min_value, s.max_value, s.contains_nan", table_id,
            column_ids, at)
        rows = conn.execute(text(sql), params).all()
        return [(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], to_bool(r[6])) for r in rows]

    def _file_column_stats(self, columns: str, table_id: int, column_ids: Sequence[int],
                           at: int | None) -> tuple[str, dict[str, Any]]:
        """The query for ``(data file id, column id, columns...)`` of
        ``ducklake_file_column_stats`` (alias ``s``) for the given columns of the files (alias
        ``f``) live at ``at`` (every file not cleaned up when ``None``), and its parameters."""
        marks, params = in_list(sorted(set(column_ids)), "c")
        sql = (f"SELECT s.data_file_id, s.column_id, {columns} FROM "
               f"{self.t('ducklake_file_column_stats')} s JOIN "
               f"{self.t('ducklake_data_file')} f ON f.data_file_id = s.data_file_id "
               f"WHERE s.table_id = :t AND s.column_id IN ({marks})")
        live = "" if at is None else " AND " + visible("f")
        return sql + live, {"t": table_id, "s": at, **params}

    # ------------------------------------------------------------------ partitions
    def file_partition_keys(self, table_id: int, at: int | None, conn: Connection
                            ) -> dict[int, list[tuple[int, str, str | None]]]:
        """Data file id -> ``(column id, transform, partition value)`` per partition key, for
        the partitioned files live at ``at`` (all of the table's files when ``None``)."""
        rows = cast("Sequence[tuple[int, int, str, str | None]]", conn.execute(
            text(self._partition_values("c.transform, ") + " WHERE v.table_id = :t"
                 + ("" if at is None else " AND " + visible("f"))),
            {"t": table_id, "s": at},
        ).all())
        out: dict[int, list[tuple[int, str, str | None]]] = {}
        for fid, cid, transform, value in rows:
            out.setdefault(int(fid), []).append(
                (int(cid), str(transform), None if value is None else str(value)))
        return out

    def file_partition_columns(self, file_ids: Sequence[int], conn: Connection
                               ) -> dict[int, dict[int, str | None]]:
        """Data file id -> {column id: partition value text} for the given files.

        Used for files whose name mapping marks a column ``is_partition``: its value is in
        the file's hive path, not in the file (``ducklake_add_data_files`` on hive files).
        """
        if not file_ids:
            return {}
        marks, params = in_list(sorted(set(file_ids)), "f")
        rows = cast("Sequence[tuple[int, int, str | None]]", conn.execute(
            text(self._partition_values() + f" WHERE v.data_file_id IN ({marks})"), params,
        ).all())
        out: dict[int, dict[int, str | None]] = {}
        for fid, cid, value in rows:
            out.setdefault(int(fid), {})[int(cid)] = value
        return out

    def _partition_values(self, transform: str = "") -> str:
        """SELECT data file id, column id, [``transform``] and partition value of the
        ``ducklake_file_partition_value`` rows (alias ``v``), each joined with its file
        (alias ``f``) and the key's column in the file's spec (alias ``c``)."""
        return (f"SELECT v.data_file_id, c.column_id, {transform}v.partition_value FROM "
                f"{self.t('ducklake_file_partition_value')} v JOIN "
                f"{self.t('ducklake_data_file')} f ON f.data_file_id = v.data_file_id JOIN "
                f"{self.t('ducklake_partition_column')} c ON c.partition_id = f.partition_id "
                "AND c.table_id = v.table_id AND c.partition_key_index = v.partition_key_index")

    def partition_spec(self, table_id: int, at: int, conn: Connection) -> PartitionSpec | None:
        row = conn.execute(
            text(f"SELECT partition_id FROM {self.t('ducklake_partition_info')} "
                 f"WHERE table_id = :t AND {visible()}"),
            {"t": table_id, "s": at},
        ).first()
        if row is None:
            return None
        cols = cast("Sequence[tuple[int, int, str]]", conn.execute(
            text(f"SELECT partition_key_index, column_id, transform FROM "
                 f"{self.t('ducklake_partition_column')} WHERE partition_id = :p AND "
                 "table_id = :t ORDER BY partition_key_index"),
            {"p": row[0], "t": table_id},
        ).all())
        if not cols:
            return None
        return PartitionSpec(int(row[0]), table_id,
                             tuple(PartitionColumn(int(a), int(b), c) for a, b, c in cols))

    # ------------------------------------------------------------------ paths
    def schema_dir(self, schema: SchemaInfo) -> str:
        """The schema's directory, refused (:class:`UnsafePathError`) outside the data path."""
        lake_paths.check_dir(self.data_path, self.data_path, schema.path,
                             schema.path_is_relative, f"schema {schema.schema_name!r}")
        return join_path(self.data_path, schema.path, schema.path_is_relative)

    def table_dir(self, schema: SchemaInfo, table: TableInfo) -> str:
        """The table's directory, where its new files are written: refused
        (:class:`UnsafePathError`) when its catalog rows put it outside the data path."""
        base = self.schema_dir(schema)
        lake_paths.check_dir(self.data_path, base, table.path, table.path_is_relative,
                             f"table {schema.schema_name}.{table.table_name}")
        return join_path(base, table.path, table.path_is_relative)



def inlined_table_name(table_id: int, schema_version: int) -> str:
    """The name DuckLake gives the inlined-data table of a table's schema version."""
    return f"ducklake_inlined_data_{table_id}_{schema_version}"


def checked_inlined_table(table_id: Any, table_name: Any,
                          schema_version: Any) -> InlinedDataTable:
    """A ``ducklake_inlined_data_tables`` row whose name may go into SQL: table names cannot
    be bound parameters, and the row may come from anyone who can write the catalog, so the
    name must be exactly the one DuckLake derives from the row's ids.

    Raises:
        UnsafeCatalogNameError: naming the row, before any SQL uses it.
    """
    try:
        expected = inlined_table_name(int(table_id), int(schema_version))
    except (TypeError, ValueError):
        expected = None
    if expected is None or table_name != expected:
        raise UnsafeCatalogNameError(
            f"the ducklake_inlined_data_tables row (table_id {table_id!r}, schema_version "
            f"{schema_version!r}) names the table {table_name!r}, not "
            f"{expected or 'ducklake_inlined_data_<table_id>_<schema_version>'!r} as DuckLake "
            "does; the name is not put into SQL and nothing was done. Fix or delete that "
            "catalog row")
    return InlinedDataTable(int(table_id), expected, int(schema_version))


def in_list(values: Sequence[int], prefix: str) -> tuple[str, dict[str, int]]:
    """The bind markers ``:prefix0, :prefix1, ...`` for ``IN (...)`` and their parameters."""
    return (", ".join(f":{prefix}{n}" for n in range(len(values))),
            {f"{prefix}{n}": v for n, v in enumerate(values)})


def join_path(base: str, path: str, relative: bool) -> str:
    if not relative:
        return path
    return normalise_dir(base) + path


def as_timestamp(value: datetime | str) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    try:
        return parse_time(value)
    except ValueError as exc:
        raise InvalidArgumentError(
            f"cannot read {value!r} as a timestamp; use ISO 8601, e.g. 2026-01-31 12:00:00+00"
        ) from exc


def build_column_tree(rows: Sequence[Sequence[Any]]) -> list[ColumnInfo]:
    """Assemble ``ducklake_column`` rows into top-level columns with nested children."""
    nodes = [
        ColumnInfo(
            int(r[0]), int(r[1]), r[2], int(r[3]), int(r[4]), r[5], r[6], r[7], r[8],
            bool(r[9]) if r[9] is not None else True, None if r[10] is None else int(r[10]),
            r[11], r[12],
        )
        for r in rows
    ]
    by_parent: dict[int | None, list[ColumnInfo]] = {}
    for node in nodes:
        by_parent.setdefault(node.parent_column, []).append(node)

    def attach(node: ColumnInfo) -> ColumnInfo:
        kids = sorted(by_parent.get(node.column_id, []),
                      key=lambda c: (c.column_order, c.column_id))
        if not kids:
            return node
        from dataclasses import replace

        return replace(node, children=tuple(attach(k) for k in kids))

    return [attach(n) for n in by_parent.get(None, [])]


def _data_file(r: Sequence[Any]) -> DataFile:
    return DataFile(
        int(r[0]), int(r[1]), int(r[2]), r[3], r[4], r[5], bool(r[6]), r[7], int(r[8]),
        int(r[9]), r[10], None if r[11] is None else int(r[11]), r[12], r[13], r[14], r[15],
    )


def _delete_file(r: Sequence[Any]) -> DeleteFile:
    return DeleteFile(
        int(r[0]), int(r[1]), int(r[2]), r[3], int(r[4]), r[5], bool(r[6]), r[7], int(r[8]),
        int(r[9]), r[10], r[11], r[12],
    )


def _by_name(items, name, key):  # noqa: ANN001, ANN202
    """The item named ``name``: an exact match first, else the case-insensitive one."""
    folded = None
    for item in items:
        if key(item) == name:
            return item
        if folded is None and key(item).lower() == name.lower():
            folded = item
    return folded


def _absolute_data_path(data_path: str | None, base: str) -> str | None:
    """``data_path`` as the lake stores it: a URL as given, a local path absolute (relative to
    ``base``, ``~`` expanded, ``file://`` dropped) with one trailing slash."""
    if not data_path:
        return None
    if is_remote(data_path):
        return normalise_dir(data_path)
    return normalise_dir(os.path.abspath(
        os.path.join(base, os.path.expanduser(data_path.removeprefix("file://")))))
