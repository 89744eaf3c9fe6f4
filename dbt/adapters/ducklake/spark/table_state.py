"""What the catalog says about one table at one snapshot, read in one catalog transaction.

:func:`load_state` reads a :class:`TableState`: the table, its columns (and their history),
its data files, delete files, inlined rows and inlined deletes, name mappings and the
columns held in hive paths. States are kept process-wide, per lake, for as long as they
stay valid (see :func:`load_state`), and are shared: derive new ones with
``dataclasses.replace`` (as :func:`inserted_since` does), never change them in place.

Nothing here builds a DataFrame: :mod:`.read` assembles the scan of a state, and
:mod:`.skipping` judges its files.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from ..lake import options as lake_options
from ..lake.catalog import Catalog, build_column_tree, join_path, visible
from ..lake.inlining import rows as inlined_data
from ..lake.models import (
    ColumnInfo,
    DataFile,
    DeleteFile,
    NameMapping,
    SchemaInfo,
    TableInfo,
    split_changes,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class TableState:
    """Everything the catalog says about one table at one snapshot."""

    snapshot_id: int
    schema: SchemaInfo
    table: TableInfo
    columns: list[ColumnInfo]
    table_dir: str
    data_files: list[DataFile]
    delete_files: dict[int, DeleteFile]
    inlined_deletes: dict[int, list[tuple[int, int]]]
    inlined: list[inlined_data.InlinedRows]
    column_history: list[Any] = field(default_factory=list)
    mappings: dict[int, list[NameMapping]] = field(default_factory=dict)
    inlining_row_limit: int = 10
    # data file id -> {column id: value text} for columns held in the file's hive path
    path_values: dict[int, dict[int, str | None]] = field(default_factory=dict)
    # data file id -> ids of the leaf columns the file holds (its column statistics), for
    # files written by a compaction (no ``row_id_start``): see :meth:`written_columns`
    file_columns: dict[int, frozenset[int]] = field(default_factory=dict)
    # file stats for skipping (:func:`.skipping.skipping_stats`), read on first use and shared by
    # the states derived from this one: what a snapshot's files hold never changes
    stats: dict[Any, Any] = field(default_factory=dict)
    # whole-table DataFrames of this very state (not copied by ``dataclasses.replace``: a
    # derived state holds other files)
    scans: dict[Any, DataFrame] = field(default_factory=dict, init=False, repr=False,
                                        compare=False)

    def path_of(self, data_file: DataFile) -> str:
        return join_path(self.table_dir, data_file.path, data_file.path_is_relative)

    def columns_at(self, snapshot: int, cache: dict[int, list[ColumnInfo]]) -> list[ColumnInfo]:
        if snapshot not in cache:
            rows = [r for r in self.column_history
                    if r[1] <= snapshot and (r[2] is None or snapshot < r[2])]
            cache[snapshot] = build_column_tree(rows)
        return cache[snapshot]

    def written_columns(self, data_file: DataFile,
                        cache: dict[int, list[ColumnInfo]]) -> list[ColumnInfo]:
        """The columns ``data_file`` was written with: the table's at its ``begin_snapshot``,
        except for a file DuckDB's ``rewrite_data_files`` wrote, which keeps the schema of the
        file it rewrote (older columns, names and types) although it begins at the rewrite.
        Its leaf columns (:attr:`file_columns`) then name the latest earlier schema that has
        exactly them; columns the file lacks read as their default, as DuckDB reads them."""
        columns = self.columns_at(data_file.begin_snapshot, cache)
        leaves = self.file_columns.get(data_file.data_file_id)
        if not leaves or _leaf_ids(columns) == leaves:
            return columns
        changes = {r[1] for r in self.column_history} | {
            r[2] for r in self.column_history if r[2] is not None}
        for snapshot in sorted(changes, reverse=True):
            if snapshot < data_file.begin_snapshot:
                older = self.columns_at(snapshot, cache)
                if _leaf_ids(older) == leaves:
                    return older
        return columns


def _leaf_ids(columns: Sequence[ColumnInfo]) -> frozenset[int]:
    return frozenset(n.column_id for c in columns for n in c.walk() if not n.children)


def file_column_ids(lake: Catalog, conn: Connection,
                 files: Sequence[DataFile]) -> dict[int, frozenset[int]]:
    """Data file id -> the leaf column ids of its column statistics, for the files a
    compaction wrote (``row_id_start`` NULL: rewritten, flushed, or merged with embedded row
    ids), whose columns may be those of an older schema (:meth:`TableState.written_columns`).
    """
    from sqlalchemy import bindparam

    ids = sorted({f.data_file_id for f in files if f.row_id_start is None})
    out: dict[int, set[int]] = {}
    for chunk in range(0, len(ids), 1000):
        query = text(f"SELECT data_file_id, column_id FROM "
                     f"{lake.t('ducklake_file_column_stats')} WHERE data_file_id IN :ids"
                     ).bindparams(bindparam("ids", expanding=True))
        for row in conn.execute(query, {"ids": ids[chunk:chunk + 1000]}):
            out.setdefault(int(row[0]), set()).add(int(row[1]))
    return {k: frozenset(v) for k, v in out.items()}


# Table states read recently, per lake: (schema, table, snapshot, latest snapshot) -> state.
# What a snapshot holds only changes when a later snapshot is committed (a compaction or flush
# rewrites how older snapshots are stored, and commits a snapshot doing so), so a state stays
# valid as long as the lake's latest snapshot is the one it was read under. A state of the
# latest snapshot stays valid longer: until a snapshot changes its table (see _untouched).
_STATES: weakref.WeakKeyDictionary[Catalog, OrderedDict[tuple[Any, ...], TableState]] = \
    weakref.WeakKeyDictionary()
# (lake, schema, table) -> (latest state, the latest snapshot it is known to be valid at)
_LATEST: weakref.WeakKeyDictionary[Catalog, dict[tuple[str, str], tuple[TableState, int]]] = \
    weakref.WeakKeyDictionary()
# changes_made tokens that name the table they change by id
_TABLE_CHANGES = frozenset({
    "inserted_into_table", "deleted_from_table", "inlined_insert", "inlined_delete",
    "flushed_inlined", "inline_flush", "merge_adjacent", "rewrite_delete", "altered_table",
    "dropped_table"})
# ... and those that cannot change a table's contents
_OTHER_CHANGES = frozenset({
    "created_schema", "created_view", "dropped_view", "altered_view", "created_scalar_macro",
    "created_table_macro", "dropped_scalar_macro", "dropped_table_macro"})
_STATES_PER_LAKE = 64
_STATES_LOCK = threading.Lock()


def load_state(lake: Catalog, schema_name: str, table_name: str, at: int | None = None,
               contents: bool = True) -> TableState:
    """Read the catalog state of a table at ``at`` (latest by default) in one transaction.

    ``contents=False`` reads only what a write needs (table, columns, directory, limit) and
    skips files and inlined rows: an append must not cost more as the table grows.

    A state with contents is kept while the lake's latest snapshot stays the same, and a
    state of the latest snapshot until a later snapshot changes its table: reading the same
    table again (a dbt run reads its upstream tables again and again, while each model
    commits its own) then costs one snapshot lookup instead of the file, delete and
    inlined-row queries. States are shared: derive new ones with ``dataclasses.replace``,
    never change them in place.
    """
    with lake.read() as conn:
        latest = lake.latest_snapshot(conn)
        snapshot = lake.snapshot(version=at, conn=conn) if at is not None and \
            at != latest.snapshot_id else latest
        s = snapshot.snapshot_id
        key = (schema_name, table_name, s, latest.snapshot_id)
        if contents:
            with _STATES_LOCK:
                states = _STATES.setdefault(lake, OrderedDict())
                hit = states.get(key)
                if hit is not None:
                    states.move_to_end(key)
                    return hit
                kept = _LATEST.setdefault(lake, {}).get((schema_name, table_name)) \
                    if s == latest.snapshot_id else None
            if kept is not None and _untouched(lake, conn, kept[0], kept[1], s):
                # the same contents, as of this snapshot (a write's transaction is based on
                # it, and the one it was read at may be expired meanwhile)
                state = kept[0] if kept[0].snapshot_id == s else replace(kept[0], snapshot_id=s)
                with _STATES_LOCK:
                    _LATEST[lake][(schema_name, table_name)] = (state, s)
                return state
        state = _read(lake, conn, schema_name, table_name, s, contents)
    if contents:
        _keep(lake, key, state, latest.snapshot_id)
    return state


def _read(lake: Catalog, conn: Connection, schema_name: str, table_name: str, s: int,
          contents: bool) -> TableState:
    """The catalog state of a table at snapshot ``s``, read on ``conn`` (no cache)."""
    schema = lake.schema(schema_name, s, conn)
    table = lake.table(schema_name, table_name, s, conn)
    columns = lake.columns(table.table_id, s, conn)
    if not contents:
        return TableState(
            snapshot_id=s, schema=schema, table=table, columns=columns,
            table_dir=lake.table_dir(schema, table), data_files=[], delete_files={},
            inlined_deletes={}, inlined=[],
            inlining_row_limit=lake_options.inlining_row_limit(
                lake, conn, schema.schema_id, table.table_id))
    data_files = lake.data_files(table.table_id, s, conn)
    history = conn.execute(
        lake_text(lake, "SELECT * FROM {ducklake_column} WHERE table_id = :t"),
        {"t": table.table_id}).all()
    state = TableState(
        snapshot_id=s, schema=schema, table=table, columns=columns,
        table_dir=lake.table_dir(schema, table), data_files=data_files,
        delete_files=lake.delete_files(table.table_id, s, conn),
        inlined_deletes=inlined_data.read_file_deletes(lake, conn, table.table_id, s),
        inlined=inlined_data.read_rows(lake, conn, table.table_id, visible(), {"s": s}),
        column_history=[tuple(r) for r in history],
        mappings=lake.name_mappings(
            [f.mapping_id for f in data_files if f.mapping_id is not None], conn),
        inlining_row_limit=lake_options.inlining_row_limit(lake, conn, schema.schema_id,
                                                           table.table_id),
    )
    hive = [f.data_file_id for f in data_files if f.mapping_id is not None and any(
        m.is_partition for m in state.mappings.get(f.mapping_id, []))]
    state.path_values = lake.file_partition_columns(hive, conn)
    state.file_columns = file_column_ids(lake, conn, data_files)
    return state


def _keep(lake: Catalog, key: tuple[str, str, int, int], state: TableState,
          latest: int) -> None:
    """Keep a state with contents just read (``key`` as :func:`load_state` looks it up), and
    as the latest state of its table (``key[:2]``) when it is of the ``latest`` snapshot."""
    with _STATES_LOCK:
        states = _STATES.setdefault(lake, OrderedDict())
        states[key] = state
        while len(states) > _STATES_PER_LAKE:
            states.popitem(last=False)
        if state.snapshot_id == latest:
            latest_states = _LATEST.setdefault(lake, {})
            latest_states[key[:2]] = (state, state.snapshot_id)
            while len(latest_states) > _STATES_PER_LAKE:
                latest_states.pop(next(iter(latest_states)))


def _untouched(lake: Catalog, conn: Connection, state: TableState, since: int, until: int) -> bool:
    """Whether no snapshot ``since < s <= until`` changed the table of ``state``, so that
    the state read at ``since`` is the table at ``until`` as well.

    Only changes that name another table by id, or touch no table, leave it untouched: a
    rename shows only the new name (``created_table``), so any table creation counts, as does
    a dropped schema or a change this reader does not know. A missing snapshot (expired in
    between) counts too, as its changes cannot be seen.
    """
    if until <= since:
        return until == since
    rows = conn.execute(text(
        f"SELECT changes_made FROM {lake.t('ducklake_snapshot_changes')} "
        "WHERE snapshot_id > :a AND snapshot_id <= :b"), {"a": since, "b": until}).all()
    if len(rows) != until - since:
        return False
    table_id = str(state.table.table_id)
    for (changes,) in rows:
        for token in split_changes(str(changes) if changes is not None else None):
            kind, _, value = token.partition(":")
            kind = kind.lower()
            if kind in _TABLE_CHANGES:
                if value.strip() == table_id:
                    return False
            elif kind not in _OTHER_CHANGES:
                return False
    return True


def inserted_since(state: TableState, since: int) -> TableState:
    """The part of ``state`` that snapshots after ``since`` inserted: their data files and
    inlined rows. A file may still hold older rows (flushed inlined data keeps each row's
    snapshot), so a scan of it is filtered on :data:`.read.SNAPSHOT_ID` too
    (:func:`.read.scan_inserted`).
    """
    inlined = []
    for part in state.inlined:
        keep = [i for i, begin in enumerate(part.begin_snapshots) if begin > since]
        if keep:
            inlined.append(replace(
                part, row_ids=[part.row_ids[i] for i in keep],
                begin_snapshots=[part.begin_snapshots[i] for i in keep],
                end_snapshots=[part.end_snapshots[i] for i in keep],
                values=[part.values[i] for i in keep]))
    return replace(state, data_files=[f for f in state.data_files if f.begin_snapshot > since],
                   inlined=inlined)


def lake_text(lake: Catalog, sql: str):  # noqa: ANN201 - sqlalchemy TextClause
    from sqlalchemy import text

    return text(sql.format(ducklake_column=lake.t("ducklake_column")))
