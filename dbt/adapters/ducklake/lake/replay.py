"""Writing a branch's :class:`~.publish.Delta` onto the real lake, inside one commit.

One :class:`Replay` per commit attempt (a retried commit replays again with fresh ids). Ids
are remapped as one DuckDB transaction would have allocated them: snapshot ids become the new
snapshot's; catalog ids the branch allocated (``>= base.next_catalog_id``: schemas, tables,
views, partitions, sort keys, macros) and file ids (``>= base.next_file_id``: data files,
delete files, name mappings) come fresh from the lake's counters, in the branch's order; column
ids are per table and stay. Row ids of fresh rows shift by what others inserted into the same
table meanwhile. Base rows the branch ended must still be live in the lake, or the publish is a
conflict. The steps follow DuckDB's batch order (ends, then new entries, data, deletes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Connection, text

from . import files as lake_files
from .branch_delta import VERSIONED, Dead, Delta, InlinedTable, Row, planned_tokens
from .catalog import Catalog, join_path
from .commit import ORDER, CommitContext, Transaction, insert_rows, leaf_ids, uuid7
from .conflicts import parse_token, quote_name
from .delete_files import ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN
from .errors import CommitConflictError, InvalidArgumentError
from .inlining.rows import create_inlined_table
from .models import ColumnInfo, FileColumnStats, TableColumnStats
from .stats import widen_table_column_stats
from .types import LakeType

# versioned catalog tables in the order their new rows are written, and their id columns
CATALOG_ORDER: tuple[tuple[str, dict[str, str]], ...] = (
    ("ducklake_schema", {"schema_id": "new_cat"}),
    ("ducklake_table", {"table_id": "new_cat", "schema_id": "cat"}),
    ("ducklake_view", {"view_id": "new_cat", "schema_id": "cat"}),
    ("ducklake_column", {"table_id": "cat"}),
    ("ducklake_tag", {"object_id": "cat"}),
    ("ducklake_column_tag", {"table_id": "cat"}),
    ("ducklake_partition_info", {"partition_id": "new_cat", "table_id": "cat"}),
    ("ducklake_sort_info", {"sort_id": "new_cat", "table_id": "cat"}),
    ("ducklake_macro", {"macro_id": "new_cat", "schema_id": "cat"}),
)
CHILD_IDS: dict[str, dict[str, str]] = {
    "ducklake_partition_column": {"partition_id": "cat", "table_id": "cat"},
    "ducklake_sort_expression": {"sort_id": "cat", "table_id": "cat"},
    "ducklake_macro_impl": {"macro_id": "cat"},
    "ducklake_macro_parameters": {"macro_id": "cat"},
    "ducklake_file_column_stats": {"data_file_id": "file", "table_id": "cat"},
    "ducklake_file_variant_stats": {"data_file_id": "file", "table_id": "cat"},
    "ducklake_file_partition_value": {"data_file_id": "file", "table_id": "cat"},
    "ducklake_column_mapping": {"mapping_id": "file", "table_id": "cat"},
    "ducklake_name_mapping": {"mapping_id": "file"},
}
TOKEN_ORDER = {**ORDER, "created_scalar_macro": 5, "created_table_macro": 5,
               "dropped_scalar_macro": 6, "dropped_table_macro": 6}


class Replay:
    """One attempt at writing a delta (see the module docstring)."""

    def __init__(self, ctx: CommitContext, tx: Transaction, delta: Delta) -> None:
        self.ctx, self.tx, self.delta = ctx, tx, delta
        self.cats: dict[int, int] = {}
        self.files: dict[int, int] = {}
        self.kept: set[str] = set()  # branch files the new snapshot references
        self.shifts: dict[int, int] = {}

    # ------------------------------------------------------------------ ids
    def cat(self, value: Any) -> Any:
        if value is None or int(value) < self.delta.base.next_catalog_id:
            return value
        if int(value) not in self.cats:
            raise Dead(value)
        return self.cats[int(value)]

    def new_cat(self, value: Any) -> Any:
        if value is not None and int(value) >= self.delta.base.next_catalog_id and \
                int(value) not in self.cats:
            self.cats[int(value)] = self.ctx.catalog_id()
        return self.cat(value)

    def file(self, value: Any) -> Any:
        if value is None or int(value) < self.delta.base.next_file_id:
            return value
        if int(value) not in self.files:
            raise Dead(value)
        return self.files[int(value)]

    def new_file(self, value: Any) -> Any:
        if value is not None and int(value) >= self.delta.base.next_file_id and \
                int(value) not in self.files:
            self.files[int(value)] = self.ctx.file_id()
        return self.file(value)

    def remap(self, row: Row, ids: dict[str, str]) -> Row:
        out = dict(row)
        for column, kind in ids.items():
            out[column] = getattr(self, kind)(row.get(column))
        if "begin_snapshot" in out:
            out["begin_snapshot"] = self.ctx.snapshot_id
            out["end_snapshot"] = None
        return out

    # ------------------------------------------------------------------ the steps
    def run(self) -> None:
        ctx = self.ctx
        tokens = planned_tokens(self.delta, self.cat, self.file, dry=True)
        if any(parse_token(t)[0].split("_")[0] in ("created", "dropped", "altered")
               for t in tokens) or any(t.created and t.added for t in self.delta.inlined):
            ctx.bump_schema()
        for row in self.delta.table_stats:  # before this commit moves next_row_id
            if int(row["table_id"]) < self.delta.base.next_catalog_id:
                self.shift(int(row["table_id"]))
        self.allocate_entries()
        self.end_rows()
        for table, ids in CATALOG_ORDER:
            self.add_rows(table, ids)
        for table, ids in CHILD_IDS.items():
            if not table.startswith(("ducklake_file_", "ducklake_column_mapping",
                                     "ducklake_name_mapping")):
                self.add_children(table, ids)
        self.inlined_tables()
        self.table_stats()
        self.data_files()
        for table in ("ducklake_file_column_stats", "ducklake_file_variant_stats",
                      "ducklake_file_partition_value", "ducklake_column_mapping",
                      "ducklake_name_mapping"):
            self.add_children(table, CHILD_IDS[table])
        self.inlined_rows()
        self.delete_files()
        self.inlined_deletes()
        self.scheduled()
        self.metadata()
        for tid in sorted(self.delta.versioned_tables):
            try:
                ctx.schema_version_rows.append(self.cat(tid))
            except Dead:
                continue
        for token in sorted(planned_tokens(self.delta, self.cat, self.file), key=_token_key):
            ctx.change(TOKEN_ORDER.get(parse_token(token)[0], 6), token)

    def allocate_entries(self) -> None:
        """Ids for new schemas, tables, views and macros in DuckDB 1.5.5's order for one
        transaction (observed): new schemas first; then schema by schema, the schema whose
        first new entry came last first, each schema's new tables and views in reverse order
        of creation; macros after them. The branch's ids are in creation order."""
        for row in sorted(self.delta.added["ducklake_schema"], key=lambda r: r["schema_id"]):
            self.new_cat(row["schema_id"])
        first = self.delta.base.next_catalog_id
        for tables in ((("ducklake_table", "table_id"), ("ducklake_view", "view_id")),
                       (("ducklake_macro", "macro_id"),)):
            by_schema: dict[int, list[int]] = {}
            for table, key in tables:
                for r in self.delta.added[table]:
                    if int(r[key]) >= first:
                        by_schema.setdefault(int(r["schema_id"]), []).append(int(r[key]))
            for ids in sorted(by_schema.values(), key=lambda ids: -min(ids)):
                for entry in sorted(ids, reverse=True):
                    self.new_cat(entry)

    def end_rows(self) -> None:
        ctx = self.ctx
        for table, rows in self.delta.ended.items():
            if table == "ducklake_delete_file":
                keys: tuple[str, ...] = ("delete_file_id",)
            else:
                keys = VERSIONED[table] + ("begin_snapshot",)
            for row in rows:
                where = " AND ".join(f"{k} = :{k}" for k in keys)
                done = ctx.exec(
                    f"UPDATE {ctx.t(table)} SET end_snapshot = :sid WHERE {where} AND "
                    "end_snapshot IS NULL", {"sid": ctx.snapshot_id,
                                             **{k: row[k] for k in keys}}).rowcount
                if done != 1:
                    raise CommitConflictError(
                        f"cannot publish the branch: the {table} row "
                        f"({', '.join(f'{k} {row[k]}' for k in keys)}) that it ends was "
                        "already ended or removed by another transaction. Nothing was "
                        "published.")

    def add_rows(self, table: str, ids: dict[str, str]) -> None:
        out = []
        for row in self.delta.added[table]:
            try:
                out.append(self.remap(row, ids))
            except Dead:
                continue
        insert_rows(self.ctx, table, out)

    def add_children(self, table: str, ids: dict[str, str]) -> None:
        out = []
        for row in self.delta.children[table]:
            try:
                out.append(self.remap(row, ids))
            except Dead:
                continue
        insert_rows(self.ctx, table, out)

    # ------------------------------------------------------------------ data
    def shift(self, table_id: int) -> int:
        """How far the row ids of fresh rows of a base table move: what others inserted
        into it since the base (their rows took the ids the branch used)."""
        if table_id not in self.shifts:
            base = self.delta.state.table_stats.get(table_id)
            now = self.ctx.lake.table_stats(table_id, self.ctx.conn)
            self.shifts[table_id] = (now.next_row_id if now else 0) - (base[1] if base else 0)
        return self.shifts[table_id]

    def base_next_row_id(self, table_id: int) -> int:
        base = self.delta.state.table_stats.get(table_id)
        return base[1] if base else 0

    def data_files(self) -> None:
        out = []
        for row in self.delta.added["ducklake_data_file"]:
            try:
                table_id = self.cat(row["table_id"])
            except Dead:
                continue
            new = self.remap(row, {"data_file_id": "new_file", "table_id": "cat",
                                   "partition_id": "cat", "mapping_id": "new_file"})
            if table_id < self.delta.base.next_catalog_id:
                self.check_row_ids(row)
                if new["row_id_start"] is not None and \
                        new["row_id_start"] >= self.base_next_row_id(table_id):
                    new["row_id_start"] += self.shift(table_id)
            self.kept.add(self.branch_path(row))
            out.append(new)
        insert_rows(self.ctx, "ducklake_data_file", out)

    def branch_path(self, row: Row) -> str:
        path = join_path(self.delta.table_dirs.get(int(row["table_id"]), ""), row["path"],
                         bool(row["path_is_relative"]))
        return path.removeprefix("file://")

    def check_row_ids(self, row: Row) -> None:
        """A file that embeds row ids at or past the base's next row id of a table others
        inserted into meanwhile cannot move: refuse (a conflict)."""
        table_id = int(row["table_id"])
        if self.shift(table_id) == 0:
            return
        path = self.branch_path(row)
        metadata, _, _ = lake_files.read_footer(path)
        if ROW_ID_COLUMN not in metadata.schema.names:
            return
        ids = lake_files.read_table(path, [ROW_ID_COLUMN]).column(0)
        top = pc.max(ids).as_py()
        if top is not None and top >= self.base_next_row_id(table_id):
            raise CommitConflictError(
                f"cannot publish the branch: table id {table_id} got rows from another "
                "transaction meanwhile, and a file the branch wrote keeps row ids of rows "
                "the branch itself inserted (an UPDATE or MERGE of new rows), which would "
                "collide. Nothing was published; rerun.")

    def table_stats(self) -> None:
        ctx = self.ctx
        base = self.delta.state
        for row in self.delta.table_stats:
            tid = int(row["table_id"])
            now = (int(row["record_count"]), int(row["next_row_id"]),
                   int(row["file_size_bytes"]))
            before = base.table_stats.get(tid)
            if before == now:
                continue
            try:
                target = self.cat(tid)
            except Dead:
                continue
            is_base = tid < self.delta.base.next_catalog_id
            current = ctx.lake.table_stats(target, ctx.conn) if is_base else None
            if current is None:
                ctx.exec(f"INSERT INTO {ctx.t('ducklake_table_stats')} VALUES (:t, :r, :n, :b)",
                         {"t": target, "r": now[0], "b": now[2],
                          "n": now[1] + (self.shift(tid) if is_base else 0)})
                continue
            old = before or (0, 0, 0)
            ctx.exec(f"UPDATE {ctx.t('ducklake_table_stats')} SET record_count = "
                     "record_count + :r, next_row_id = next_row_id + :n, file_size_bytes = "
                     "file_size_bytes + :b WHERE table_id = :t",
                     {"t": target, "r": now[0] - old[0], "n": now[1] - old[1],
                      "b": now[2] - old[2]})
        self.column_stats()

    def column_stats(self) -> None:
        ctx = self.ctx
        base = self.delta.state.column_stats
        for row in self.delta.column_stats:
            key = (int(row["table_id"]), int(row["column_id"]))
            values = tuple(row[c] for c in ("contains_null", "contains_nan", "min_value",
                                            "max_value", "extra_stats"))
            if base.get(key) == values:
                continue
            try:
                target = self.cat(key[0])
            except Dead:
                continue
            current = ctx.exec(
                f"SELECT contains_null, contains_nan, min_value, max_value, extra_stats FROM "
                f"{ctx.t('ducklake_table_column_stats')} WHERE table_id = :t AND "
                "column_id = :c", {"t": target, "c": key[1]}).first()
            if current is None:
                insert_rows(ctx, "ducklake_table_column_stats", [{**row, "table_id": target}])
                continue
            merged = values if tuple(current) == base.get(key) else \
                self.merged_stats(target, key[1], tuple(current), values)
            ctx.exec(f"UPDATE {ctx.t('ducklake_table_column_stats')} SET contains_null = :n, "
                     "contains_nan = :nan, min_value = :mn, max_value = :mx, extra_stats = :x "
                     "WHERE table_id = :t AND column_id = :c",
                     {"n": merged[0], "nan": merged[1], "mn": merged[2], "mx": merged[3],
                      "x": merged[4], "t": target, "c": key[1]})

    def merged_stats(self, table_id: int, column_id: int, theirs: tuple[Any, ...],
                     mine: tuple[Any, ...]) -> tuple[Any, ...]:
        """Both the branch and another writer widened a column's table-level stats."""
        columns = self.ctx.lake.columns(table_id, self.ctx.latest.snapshot_id, self.ctx.conn)
        types: dict[int, LakeType] = dict(leaf_ids(columns))
        if column_id not in types:
            return theirs
        current = TableColumnStats(table_id, column_id, _bool(theirs[0]), _bool(theirs[1]),
                                   theirs[2], theirs[3])
        has_values = mine[2] is not None or mine[3] is not None
        fresh = FileColumnStats(column_id, None, None if has_values else 0,
                                1 if mine[0] else 0, mine[2], mine[3], _bool(mine[1]))
        out = widen_table_column_stats(current, table_id, column_id, fresh, types[column_id],
                                       had_values=True)
        return (out.contains_null, out.contains_nan, out.min_value, out.max_value, theirs[4])

    # ------------------------------------------------------------------ deletes
    def delete_files(self) -> None:
        out = []
        for row in self.delta.added["ducklake_delete_file"]:
            try:
                self.cat(row["table_id"])
                self.file(row["data_file_id"])
            except Dead:
                continue
            new = self.remap(row, {"delete_file_id": "new_file", "table_id": "cat",
                                   "data_file_id": "file"})
            if row["partial_max"] is None:
                self.kept.add(self.branch_path(row))
            else:
                self.rewrite_delete_file(row, new)
            out.append(new)
        insert_rows(self.ctx, "ducklake_delete_file", out)

    def rewrite_delete_file(self, row: Row, new: Row) -> None:
        """A cumulative delete file embeds the snapshot of each deleted position; the
        branch's snapshots become the published one (a small file, rewritten)."""
        source = self.branch_path(row)
        content = lake_files.read_table(source)
        b, sid = self.delta.base.snapshot_id, self.ctx.snapshot_id
        snaps = content.column(SNAPSHOT_ID_COLUMN)
        fixed = pc.if_else(pc.greater(snaps, b), pa.scalar(sid, pa.int64()), snaps)
        index = content.schema.get_field_index(SNAPSHOT_ID_COLUMN)
        content = content.set_column(index, content.schema.field(index), fixed)
        name = f"ducklake-{uuid7()}-delete.parquet"
        path = source.rsplit("/", 1)[0] + "/" + name
        size, footer = lake_files.write_table(path, content)
        self.ctx.on_failure.append(lambda: lake_files.remove_file(path))
        self.tx.files_written.append(path)
        values = fixed.to_pylist()
        new.update(path=name, path_is_relative=True, file_size_bytes=size, footer_size=footer,
                   begin_snapshot=min(values), partial_max=max(values))

    def inlined_deletes(self) -> None:
        ctx = self.ctx
        for table_id, rows in sorted(self.delta.inlined_deletes.items()):
            try:
                target = self.cat(table_id)
            except Dead:
                continue
            batch = []
            for file_id, position in rows:
                try:
                    batch.append({"f": self.file(file_id), "r": position,
                                  "s": ctx.snapshot_id})
                except Dead:
                    continue
            if not batch:
                continue
            name = ctx.t(f"ducklake_inlined_delete_{target}")
            ctx.exec(f"CREATE TABLE IF NOT EXISTS {name}(file_id BIGINT, row_id BIGINT, "
                     "begin_snapshot BIGINT)")
            ctx.conn.execute(text(f"INSERT INTO {name} VALUES (:f, :r, :s)"), batch)

    def scheduled(self) -> None:
        """Base delete files the branch replaced: removed from the lake too (they must
        still be there) and scheduled for deletion; the branch's own are garbage."""
        ctx = self.ctx
        for row in self.delta.scheduled:
            fid = int(row["data_file_id"])
            if fid >= self.delta.base.next_file_id:
                continue
            done = ctx.exec(f"DELETE FROM {ctx.t('ducklake_delete_file')} WHERE "
                            "delete_file_id = :d", {"d": fid}).rowcount
            if done != 1:
                raise CommitConflictError(
                    f"cannot publish the branch: delete file {fid}, which the branch "
                    "replaced, was replaced or removed by another transaction meanwhile. "
                    "Nothing was published.")
            insert_rows(ctx, "ducklake_files_scheduled_for_deletion",
                        [{**row, "schedule_start": ctx.lake.encode_time(ctx.now)}])

    # ------------------------------------------------------------------ inlined rows
    def inlined_tables(self) -> None:
        """The inlined-data table each table the branch created or altered writes to, for
        the published schema version (DuckDB makes one per schema change). Rows the branch
        inlined under an earlier schema of its own move there, column by column id."""
        created = sorted({t.table_id for t in self.delta.inlined if t.created})
        self.targets: dict[str, tuple[str, dict[int, ColumnInfo]]] = {}
        for table_id in created:
            try:
                target = self.cat(table_id)
            except Dead:
                continue
            made = create_inlined_table(self.ctx, target)
            if made is None:
                raise InvalidArgumentError(
                    f"table id {table_id}'s rows cannot be inlined in this catalog; "
                    "nothing was committed")
            columns = self.ctx.lake.columns(target, self.ctx.snapshot_id, self.ctx.conn)
            for other in self.delta.inlined:
                if other.created and other.table_id == table_id:
                    self.targets[other.table_name] = (
                        made.table_name, {c.column_id: c for c in columns})

    def inlined_rows(self) -> None:
        ctx = self.ctx
        changed: set[int] = set()
        for table in self.delta.inlined:
            try:
                target_id = self.cat(table.table_id)
            except Dead:
                continue
            if not table.added and not table.ended_row_ids:
                continue
            target, names = table.table_name, dict(zip(table.columns, table.columns))
            if table.created:
                if table.table_name not in self.targets:
                    continue
                target, columns = self.targets[table.table_name]
                names = _renamed(table, columns)
            self.end_inlined(target, table)
            self.insert_inlined(target, target_id, table, names)
            changed.add(target_id)
        if changed:
            ctx.file_id()  # DuckDB bumps next_file_id for inlined data (readers' caches)

    def end_inlined(self, target: str, table: InlinedTable) -> None:
        ctx = self.ctx
        for row_id, begin in table.ended_row_ids:
            done = ctx.exec(f"UPDATE {ctx.t(target)} SET end_snapshot = :s WHERE row_id = :r "
                            "AND begin_snapshot = :b AND end_snapshot IS NULL",
                            {"s": ctx.snapshot_id, "r": row_id, "b": begin}).rowcount
            if done != 1:
                raise CommitConflictError(
                    f"cannot publish the branch: inlined row {row_id} of table id "
                    f"{table.table_id} was deleted by another transaction meanwhile. "
                    "Nothing was published.")

    def insert_inlined(self, target: str, target_id: int, table: InlinedTable,
                       names: dict[str, str]) -> None:
        if not table.added:
            return
        ctx = self.ctx
        first = self.base_next_row_id(table.table_id)
        is_base = table.table_id < self.delta.base.next_catalog_id
        shift = self.shift(table.table_id) if is_base else 0
        sources = ", ".join(quote_name(c) for c in names)
        targets = ", ".join(quote_name(c) for c in names.values())
        if ctx.lake.dialect == "postgresql":
            source = self.delta.branch_prefix + quote_name(table.table_name)
            ctx.exec(f"INSERT INTO {ctx.t(target)} (row_id, begin_snapshot, end_snapshot, "
                     f"{targets}) SELECT CASE WHEN row_id >= :first THEN row_id + :shift ELSE "
                     f"row_id END, :s, NULL, {sources} FROM {source} WHERE begin_snapshot > :b "
                     "AND end_snapshot IS NULL",
                     {"first": first, "shift": shift, "s": ctx.snapshot_id,
                      "b": self.delta.base.snapshot_id})
            return
        rows = [{**{new: r[old] for old, new in names.items()},
                 "row_id": r["row_id"] + shift if r["row_id"] >= first else r["row_id"],
                 "begin_snapshot": ctx.snapshot_id, "end_snapshot": None} for r in table.added]
        insert_rows(ctx, target, rows)

    # ------------------------------------------------------------------ options
    def metadata(self) -> None:
        """Options the branch set or removed (``set_option`` makes no snapshot)."""
        write_options(self.ctx.conn, self.ctx.lake, self.delta, self.cat)


def write_options(conn: Connection, lake: Catalog, delta: Delta,
                  cat: Callable[[Any], Any]) -> None:
    """Write on the lake (in ``conn``'s transaction) the options the branch set or removed;
    ``cat`` maps a scope id of the branch to the lake's, raising :class:`Dead` for an object
    that is not published."""
    def run(sql: str, params: dict[str, Any]) -> None:
        conn.execute(text(sql), params)

    table = lake.t("ducklake_metadata")
    before = set(delta.state.metadata)
    after = delta.metadata
    for key, _, scope, scope_id in sorted(before - after, key=str):
        if not any(r[0] == key and r[2] == scope and r[3] == scope_id for r in after):
            run(f"DELETE FROM {table} WHERE key = :k AND " + _scope_match(scope, scope_id),
                _scope_params(key, scope, scope_id))
    for key, value, scope, scope_id in sorted(after - before, key=str):
        try:
            target = cat(scope_id) if scope in ("table", "schema") else scope_id
        except Dead:
            continue
        run(f"DELETE FROM {table} WHERE key = :k AND " + _scope_match(scope, target),
            _scope_params(key, scope, target))
        run(f"INSERT INTO {table} VALUES (:k, :v, :sc, :id)",
            {"k": key, "v": value, "sc": scope, "id": target})


def _token_key(token: str) -> tuple[int, int]:
    """DuckDB's order: by kind, ids ascending within a kind; names (``created_*``) keep the
    order of creation (the sort is stable)."""
    kind, value = parse_token(token)
    return TOKEN_ORDER.get(kind, 6), int(value) if value.isdigit() else 0


def _renamed(table: InlinedTable, final: dict[int, ColumnInfo]) -> dict[str, str]:
    """The inlined table's column names -> the published inlined table's, by column id.
    A column the branch added later reads as its ``initial_default`` in DuckDB; only a NULL
    one can be left out here."""
    names = {old: final[cid].column_name for old, cid in zip(table.columns, table.column_ids)
             if cid in final}
    missing = [c for cid, c in final.items() if cid not in table.column_ids and
               c.parent_column is None and c.initial_default is not None]
    if missing and table.added:
        raise InvalidArgumentError(
            f"the branch inlined rows into table id {table.table_id} before adding the column "
            f"{missing[0].column_name!r} with a default; publishing both in one snapshot is "
            "not supported. Nothing was committed.")
    return names


def _scope_match(scope: Any, scope_id: Any) -> str:
    return ("scope IS NULL" if scope is None else "scope = :sc") + " AND " + (
        "scope_id IS NULL" if scope_id is None else "scope_id = :id")


def _scope_params(key: str, scope: Any, scope_id: Any) -> dict[str, Any]:
    return {"k": key, "sc": scope, "id": scope_id}


def _bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


__all__ = ["Replay", "write_options"]
