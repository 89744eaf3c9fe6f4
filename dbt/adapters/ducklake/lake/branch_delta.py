"""A branch's net change since its base, read from its catalog (:mod:`.branch`).

The branch is a real DuckLake catalog that started as a copy of the lake at ``base``. Its net
change is read row by row from every catalog table (:class:`Delta`): versioned rows it added
(``begin_snapshot > base``, still live) and base rows it ended; rows both added and ended in
the branch cancel out (their files are garbage). The non-versioned tables follow their new
parents (file statistics, partition columns, name mappings, ...), and
``ducklake_table_stats`` / ``ducklake_table_column_stats`` / ``ducklake_metadata`` are
diffed against the values kept at the base (:class:`BaseState`). :func:`planned_tokens` is
the collapsed change set, as one DuckDB transaction would write it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

from .catalog import Catalog, checked_inlined_table, join_path
from .conflicts import parse_token, quote_name
from .errors import InvalidArgumentError
from .inlining.rows import _columns_of_version
from .models import Snapshot, parse_quoted_name, split_changes


@dataclass(frozen=True)
class BaseState:
    """What the catalog held at the branch's base that later writes in the branch overwrite
    in place (not versioned), kept in memory to compute the branch's delta at publish."""

    snapshot: Snapshot
    table_stats: dict[int, tuple[int, int, int]]  # table_id -> (records, next row id, bytes)
    column_stats: dict[tuple[int, int], tuple[Any, ...]]  # (table, column) -> row
    metadata: frozenset[tuple[Any, ...]]  # (key, value, scope, scope_id)
    scheduled: frozenset[int]  # ducklake_files_scheduled_for_deletion ids
    inlined_tables: frozenset[str]


# versioned table -> columns that identify one of its rows for ending it (with begin_snapshot)
VERSIONED: dict[str, tuple[str, ...]] = {
    "ducklake_schema": ("schema_id",),
    "ducklake_table": ("table_id",),
    "ducklake_view": ("view_id",),
    "ducklake_column": ("table_id", "column_id"),
    "ducklake_tag": ("object_id", "key"),
    "ducklake_column_tag": ("table_id", "column_id", "key"),
    "ducklake_partition_info": ("partition_id",),
    "ducklake_sort_info": ("sort_id",),
    "ducklake_macro": ("macro_id",),
    "ducklake_data_file": ("data_file_id",),
    "ducklake_delete_file": ("delete_file_id",),
}

# non-versioned table -> (parent column, "cat" or "file" counter): rows of new parents
CHILDREN: dict[str, tuple[str, str]] = {
    "ducklake_partition_column": ("partition_id", "cat"),
    "ducklake_sort_expression": ("sort_id", "cat"),
    "ducklake_macro_impl": ("macro_id", "cat"),
    "ducklake_macro_parameters": ("macro_id", "cat"),
    "ducklake_file_column_stats": ("data_file_id", "file"),
    "ducklake_file_variant_stats": ("data_file_id", "file"),
    "ducklake_file_partition_value": ("data_file_id", "file"),
    "ducklake_column_mapping": ("mapping_id", "file"),
    "ducklake_name_mapping": ("mapping_id", "file"),
}

MAINTENANCE_TOKENS = frozenset({"inline_flush", "flushed_inlined", "merge_adjacent",
                                "rewrite_delete", "compacted_table"})

Row = dict[str, Any]


@dataclass(frozen=True)
class InlinedTable:
    """One of the branch's inlined-data tables and what the branch did to its rows."""

    table_id: int
    table_name: str
    schema_version: int
    created: bool  # by the branch (else it existed at the base)
    columns: tuple[str, ...]
    column_ids: tuple[int, ...]  # of ``columns``: the table's columns at that schema version
    added: list[Row]
    ended_row_ids: list[tuple[int, int]]  # (row id, begin_snapshot) of base rows


@dataclass
class Delta:
    """The branch's net change, read from its catalog (ids still the branch's)."""

    state: BaseState
    added: dict[str, list[Row]] = field(default_factory=dict)
    ended: dict[str, list[Row]] = field(default_factory=dict)
    children: dict[str, list[Row]] = field(default_factory=dict)
    table_stats: list[Row] = field(default_factory=list)
    column_stats: list[Row] = field(default_factory=list)
    metadata: set[tuple[Any, ...]] = field(default_factory=set)
    scheduled: list[Row] = field(default_factory=list)
    inlined: list[InlinedTable] = field(default_factory=list)
    inlined_deletes: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    versioned_tables: set[int] = field(default_factory=set)  # ducklake_schema_versions
    branch_tokens: list[str] = field(default_factory=list)
    table_dirs: dict[int, str] = field(default_factory=dict)
    schema_names: dict[int, str] = field(default_factory=dict)  # every schema id's last name
    # catalog table -> (id, schema id, name) of every entry row the branch began
    entries: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    dialect: str = "sqlite"
    branch_prefix: str = ""

    @property
    def base(self) -> Snapshot:
        return self.state.snapshot

    @property
    def empty(self) -> bool:
        return not self.changes_rows and not self.options_changed

    @property
    def changes_rows(self) -> bool:
        """Whether the branch changed anything a snapshot records (all but options)."""
        return bool(any(self.added.values()) or any(self.ended.values())
                    or self.scheduled or any(t.added or t.ended_row_ids for t in self.inlined)
                    or any(self.inlined_deletes.values()))

    @property
    def options_changed(self) -> bool:
        """Whether the branch set or removed options (``set_option`` makes no snapshot)."""
        return self.metadata != set(self.state.metadata)


# ---------------------------------------------------------------------------------- reading
def read_delta(branch: Catalog, state: BaseState) -> Delta:
    """The branch's net change since ``state.snapshot``, in one read transaction."""
    b = state.snapshot
    delta = Delta(state, dialect=branch.dialect, branch_prefix=branch.prefix)
    t = branch.t
    with branch.read() as conn:
        for table in VERSIONED:
            delta.added[table], delta.ended[table] = _versioned(conn, t(table), table, b)
        for table, (parent, counter) in CHILDREN.items():
            first = b.next_catalog_id if counter == "cat" else b.next_file_id
            delta.children[table] = _rows(conn, f"SELECT * FROM {t(table)} WHERE "
                                                f"{parent} >= :f", {"f": first})
        delta.table_stats = _rows(conn, f"SELECT * FROM {t('ducklake_table_stats')}")
        delta.column_stats = _rows(conn, f"SELECT * FROM {t('ducklake_table_column_stats')}")
        delta.metadata = {tuple(r) for r in conn.execute(text(
            f"SELECT key, value, scope, scope_id FROM {t('ducklake_metadata')}")).all()}
        delta.scheduled = [r for r in _rows(
            conn, f"SELECT * FROM {t('ducklake_files_scheduled_for_deletion')}")
            if int(r["data_file_id"]) not in state.scheduled]
        delta.versioned_tables = {int(r[0]) for r in conn.execute(text(
            f"SELECT table_id FROM {t('ducklake_schema_versions')} WHERE begin_snapshot > :b"),
            {"b": b.snapshot_id}).all()}
        for (changes,) in conn.execute(text(
                f"SELECT changes_made FROM {t('ducklake_snapshot_changes')} "
                "WHERE snapshot_id > :b ORDER BY snapshot_id"), {"b": b.snapshot_id}).all():
            delta.branch_tokens.extend(
                split_changes(changes if isinstance(changes, str) else None))
        delta.inlined = _inlined_tables(branch, conn, state)
        delta.inlined_deletes = _inlined_deletes(branch, conn, b)
        delta.table_dirs = table_dirs(branch, conn)
        for table, key, name in (("ducklake_table", "table_id", "table_name"),
                                 ("ducklake_view", "view_id", "view_name"),
                                 ("ducklake_macro", "macro_id", "macro_name")):
            delta.entries[table] = [(int(r[0]), int(r[1]), str(r[2])) for r in conn.execute(
                text(f"SELECT {key}, schema_id, {name} FROM {t(table)} "
                     "WHERE begin_snapshot > :b"), {"b": b.snapshot_id}).tuples()]
        delta.schema_names = {int(r[0]): str(r[1]) for r in conn.execute(text(
            f"SELECT schema_id, schema_name FROM {t('ducklake_schema')} "
            "ORDER BY begin_snapshot")).all()}
    _refuse_maintenance(delta)
    return delta


def _rows(conn: Connection, sql: str, params: dict[str, Any] | None = None) -> list[Row]:
    return [dict(r._mapping) for r in  # noqa: SLF001 - SQLAlchemy's public row mapping
            conn.execute(text(sql), params or {}).all()]


def _versioned(conn: Connection, name: str, table: str,
               base: Snapshot) -> tuple[list[Row], list[Row]]:
    """(rows added and still live, base rows ended) of one versioned table. A delete file
    rewritten by a later delete keeps the earliest deleting snapshot as its begin_snapshot,
    which may be the base's or older: new delete files are those with new file ids."""
    if table == "ducklake_delete_file":
        added = _rows(conn, f"SELECT * FROM {name} WHERE delete_file_id >= :f AND "
                            "end_snapshot IS NULL ORDER BY delete_file_id",
                      {"f": base.next_file_id})
        ended = _rows(conn, f"SELECT * FROM {name} WHERE delete_file_id < :f AND "
                            "end_snapshot > :b", {"f": base.next_file_id, "b": base.snapshot_id})
        return added, ended
    key = VERSIONED[table][0]
    added = _rows(conn, f"SELECT * FROM {name} WHERE begin_snapshot > :b AND end_snapshot "
                        f"IS NULL ORDER BY {key}, begin_snapshot", {"b": base.snapshot_id})
    ended = _rows(conn, f"SELECT * FROM {name} WHERE begin_snapshot <= :b AND end_snapshot "
                        f"> :b ORDER BY {key}", {"b": base.snapshot_id})
    return added, ended


def _inlined_tables(branch: Catalog, conn: Connection, state: BaseState) -> list[InlinedTable]:
    b = state.snapshot.snapshot_id
    out = []
    for tid, name, version in conn.execute(text(
            f"SELECT table_id, table_name, schema_version FROM "
            f"{branch.t('ducklake_inlined_data_tables')} ORDER BY table_id, schema_version"
    )).all():
        info = checked_inlined_table(tid, name, version)
        source = branch.t(info.table_name)
        columns = tuple(c for c in conn.execute(text(f"SELECT * FROM {source} LIMIT 0")).keys()
                        if c not in ("row_id", "begin_snapshot", "end_snapshot"))
        ids = tuple(c.column_id for c in _columns_of_version(branch, conn, info))
        added = _rows(conn, f"SELECT * FROM {source} WHERE begin_snapshot > :b AND "
                            "end_snapshot IS NULL ORDER BY row_id", {"b": b})
        ended = [(int(r[0]), int(r[1])) for r in conn.execute(text(
            f"SELECT row_id, begin_snapshot FROM {source} WHERE begin_snapshot <= :b AND "
            "end_snapshot > :b ORDER BY row_id"), {"b": b}).all()]
        out.append(InlinedTable(info.table_id, info.table_name, info.schema_version,
                                info.table_name not in state.inlined_tables, columns, ids,
                                added, ended))
    return out


def _inlined_deletes(branch: Catalog, conn: Connection,
                     base: Snapshot) -> dict[int, list[tuple[int, int]]]:
    """table id -> (file id, position) deletes the branch inlined (by the table's name)."""
    if branch.dialect == "sqlite":
        names = [r[0] for r in conn.execute(text(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND "
            "name LIKE 'ducklake_inlined_delete_%'")).all()]
    else:
        names = [r[0] for r in conn.execute(text(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = :s AND "
            "table_name LIKE 'ducklake_inlined_delete_%'"),
            {"s": branch.metadata_schema}).all()]
    out: dict[int, list[tuple[int, int]]] = {}
    for name in names:
        suffix = name.removeprefix("ducklake_inlined_delete_")
        if not suffix.isdigit():
            continue
        rows = conn.execute(text(
            f"SELECT file_id, row_id FROM {branch.t(quote_name(name))} WHERE "
            "begin_snapshot > :b ORDER BY file_id, row_id"), {"b": base.snapshot_id}).tuples()
        pairs = [(int(f), int(r)) for f, r in rows]
        if pairs:
            out[int(suffix)] = pairs
    return out


def _refuse_maintenance(delta: Delta) -> None:
    """Flushes and compactions rewrite files with embedded snapshot ids of the branch; they
    are not published (run them after the publish, on the lake)."""
    kinds = {parse_token(t)[0] for t in delta.branch_tokens} & MAINTENANCE_TOKENS
    partial = [r["data_file_id"] for r in delta.added["ducklake_data_file"]
               if r.get("partial_max") is not None]
    if kinds or partial:
        what = ", ".join(sorted(kinds)) or f"data files {partial} with embedded snapshot ids"
        raise InvalidArgumentError(
            f"the branch ran maintenance ({what}), which cannot be published as part of one "
            "snapshot; run flush_inlined_data, merge_adjacent_files and rewrite_data_files on "
            "the lake after the publish. Nothing was committed.")


class Dead(Exception):
    """A row refers to an object the branch created and dropped again: nothing to write."""



# ---------------------------------------------------------------------------------- tokens
def planned_tokens(delta: Delta, cat: Callable[[Any], Any], file: Callable[[Any], Any],
                   dry: bool = False) -> list[str]:
    """The ``changes_made`` tokens of the collapsed change set, as one DuckDB transaction
    writes them, with ids mapped by ``cat``; objects created and dropped in the branch leave
    none. ``dry``: ids may not be allocated yet (only the kinds matter)."""
    first_file = delta.base.next_file_id
    out: list[str] = []

    def add(kind: str, value: Any) -> None:
        if dry or not isinstance(value, int):
            out.append(f"{kind}:{value}")
            return
        try:
            out.append(f"{kind}:{cat(value)}")
        except Dead:
            pass

    _entry_tokens(delta, add)
    for row in delta.added["ducklake_data_file"]:
        add("inserted_into_table", int(row["table_id"]))
    deleted = {int(r["table_id"]) for r in delta.ended["ducklake_data_file"]}
    deleted |= {int(r["table_id"]) for r in delta.added["ducklake_delete_file"]
                if int(r["data_file_id"]) < first_file}
    for tid in sorted(deleted):
        add("deleted_from_table", tid)
    for tid in sorted({t.table_id for t in delta.inlined if t.added}):
        add("inlined_insert", tid)
    inlined_deleted = {t.table_id for t in delta.inlined if t.ended_row_ids}
    inlined_deleted |= {tid for tid, rows in delta.inlined_deletes.items()
                        if any(f < first_file for f, _ in rows)}
    for tid in sorted(inlined_deleted):
        add("inlined_delete", tid)
    dropped = {int(r["table_id"]) for r in delta.ended["ducklake_table"]} - {
        int(r["table_id"]) for r in delta.added["ducklake_table"]}
    dropped |= {int(r["view_id"]) for r in delta.ended["ducklake_view"]} - {
        int(r["view_id"]) for r in delta.added["ducklake_view"]}
    for token in delta.branch_tokens:
        kind, value = parse_token(token)
        if kind in ("altered_table", "altered_view") and value.isdigit() and \
                int(value) not in dropped:
            add(kind, int(value))
    return list(dict.fromkeys(out))


def _entry_tokens(delta: Delta, add: Callable[[str, Any], None]) -> None:
    """Dropped schemas, tables, views and macros; then the created ones in the order the
    branch created them (DuckDB writes a transaction's creations in statement order, a
    renamed new table under both names), leaving out what the branch dropped again."""
    for kind, table, key in (("schema", "ducklake_schema", "schema_id"),
                             ("table", "ducklake_table", "table_id"),
                             ("view", "ducklake_view", "view_id")):
        live = {int(r[key]) for r in delta.added[table]}
        for row in delta.ended[table]:
            if int(row[key]) not in live:
                add(f"dropped_{kind}", int(row[key]))
    gone = {int(r["macro_id"]) for r in delta.ended["ducklake_macro"]} - {
        int(r["macro_id"]) for r in delta.added["ducklake_macro"]}
    for token in delta.branch_tokens:
        kind, value = parse_token(token)
        if kind in ("dropped_scalar_macro", "dropped_table_macro") and value.isdigit() and \
                int(value) in gone:
            add(kind, int(value))
    for token in delta.branch_tokens:
        kind, value = parse_token(token)
        if kind.startswith("created_") and _survives(delta, kind, value):
            add(kind, value)


_ENTRY_TABLES = {"created_table": ("ducklake_table", "table_id"),
                 "created_view": ("ducklake_view", "view_id"),
                 "created_scalar_macro": ("ducklake_macro", "macro_id"),
                 "created_table_macro": ("ducklake_macro", "macro_id")}


def _survives(delta: Delta, kind: str, value: str) -> bool:
    """Whether the entry a ``created_*`` token of the branch names is live at its end."""
    schema, pos = parse_quoted_name(value)
    if kind == "created_schema":
        return any(r["schema_name"] == schema for r in delta.added["ducklake_schema"])
    if kind not in _ENTRY_TABLES:
        return False
    name = value[pos + 1:]
    name = parse_quoted_name(name)[0] if name.startswith('"') else name
    table, key = _ENTRY_TABLES[kind]
    live = {int(r[key]) for r in delta.added[table]}
    return any(entry_id in live and delta.schema_names.get(schema_id) == schema
               and entry_name == name for entry_id, schema_id, entry_name in
               delta.entries.get(table, ()))


# ---------------------------------------------------------------------------------- base
def capture_base(catalog: Catalog) -> BaseState:
    t = catalog.t
    with catalog.read() as conn:
        snapshot = catalog.latest_snapshot(conn)
        stats = {int(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in conn.execute(text(
            f"SELECT table_id, record_count, next_row_id, file_size_bytes "
            f"FROM {t('ducklake_table_stats')}")).all()}
        column_stats = {(int(r[0]), int(r[1])): tuple(r[2:]) for r in conn.execute(text(
            f"SELECT table_id, column_id, contains_null, contains_nan, min_value, max_value, "
            f"extra_stats FROM {t('ducklake_table_column_stats')}")).all()}
        metadata = frozenset(tuple(r) for r in conn.execute(text(
            f"SELECT key, value, scope, scope_id FROM {t('ducklake_metadata')}")).all())
        scheduled = frozenset(int(r[0]) for r in conn.execute(text(
            f"SELECT data_file_id FROM {t('ducklake_files_scheduled_for_deletion')}")).all())
        inlined = frozenset(str(r[0]) for r in conn.execute(text(
            f"SELECT table_name FROM {t('ducklake_inlined_data_tables')}")).all())
    return BaseState(snapshot, stats, column_stats, metadata, scheduled, inlined)


# ---------------------------------------------------------------------------------- files
def table_dirs(catalog: Catalog, conn: Connection) -> dict[int, str]:
    """Every table's directory (its latest row), including dropped tables."""
    t = catalog.t
    schemas: dict[int, str] = {}
    for sid, path, rel in _triples(conn, f"SELECT schema_id, path, path_is_relative FROM "
                                         f"{t('ducklake_schema')} ORDER BY begin_snapshot"):
        schemas[int(sid)] = join_path(catalog.data_path, str(path), bool(rel))
    dirs: dict[int, str] = {}
    for tid, sid, path, rel in conn.execute(text(
            f"SELECT table_id, schema_id, path, path_is_relative FROM {t('ducklake_table')} "
            "ORDER BY begin_snapshot")).tuples():
        if int(sid) in schemas:
            dirs[int(tid)] = join_path(schemas[int(sid)], str(path), bool(rel))
    return dirs


def branch_files(catalog: Catalog, state: BaseState) -> set[str]:
    """Absolute paths of every data and delete file the branch wrote (file ids from the
    base's ``next_file_id`` on), live, ended or replaced."""
    t = catalog.t
    first = state.snapshot.next_file_id
    out: set[str] = set()
    with catalog.read() as conn:
        dirs = table_dirs(catalog, conn)
        for table in ("ducklake_data_file", "ducklake_delete_file"):
            key = "data_file_id" if table == "ducklake_data_file" else "delete_file_id"
            for tid, path, rel in _triples(conn, f"SELECT table_id, path, path_is_relative "
                                                 f"FROM {t(table)} WHERE {key} >= :f", first):
                if not rel:
                    out.add(str(path))
                elif int(tid) in dirs:
                    out.add(join_path(dirs[int(tid)], str(path), True))
        for _, path, rel in _triples(conn, f"SELECT data_file_id, path, path_is_relative FROM "
                                           f"{t('ducklake_files_scheduled_for_deletion')} "
                                           "WHERE data_file_id >= :f", first):
            out.add(join_path(catalog.data_path, str(path), bool(rel)))
    return {p.removeprefix("file://") for p in out}


def _triples(conn: Connection, sql: str, first: int = 0) -> list[tuple[int, Any, Any]]:
    return [(int(a), b, c) for a, b, c in conn.execute(text(sql), {"f": first}).tuples()]


__all__ = ["BaseState", "Dead", "Delta", "InlinedTable", "branch_files", "capture_base",
           "planned_tokens", "read_delta", "table_dirs"]
