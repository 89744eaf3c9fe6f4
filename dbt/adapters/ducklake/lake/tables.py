"""Catalog entries: schemas, tables, columns, views and comments, staged on a transaction.

Each function stages one change on a :class:`~.commit.Transaction`; ids are allocated when the
transaction commits. Row shapes and change tokens follow DuckDB 1.5.5 exactly (the tables of
https://ducklake.select/docs/stable/specification/tables/overview, written as
duckdb/ducklake@v1.5-variegata src/storage/ducklake_metadata_manager.cpp writes them).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from .catalog import visible
from .commit import (
    CommitContext,
    Transaction,
    column_rows,
    dir_name,
    insert_rows,
    quote_name,
    uuid7,
)
from .errors import AlreadyExistsError, InvalidArgumentError, NotFoundError, SchemaMismatchError
from .evolution import ColumnPath, find
from .inlining import rows as inlined_data
from .models import (
    SPARK_SQL_TAG,
    ColumnInfo,
    ColumnSpec,
    TableRef,
    ViewInfo,
    format_column_aliases,
)
from .options import inlining_row_limit, upsert_option
from .types import LakeType, is_promotion

# Batch phases, in DuckDB's batch order (see lake/commit.py's module docstring)
DROPS, CREATES, DATA, DELETES = 20, 30, 40, 50


def _name_taken(ctx: CommitContext, schema_id: int, name: str) -> bool:
    """Whether a table or view holds ``name`` once this commit's earlier changes are made
    (a relation this commit drops frees its name for one it creates)."""
    at = ctx.snapshot_id
    tables = {t.table_name.lower() for t in ctx.lake.tables(None, at, ctx.conn)
              if t.schema_id == schema_id}
    views = {v.view_name.lower() for v in ctx.lake.views(None, at, ctx.conn)
             if v.schema_id == schema_id}
    return name.lower() in tables or name.lower() in views


def _schema(ctx: CommitContext, name: str):  # noqa: ANN202 - SchemaInfo or a fresh id
    if name in ctx.schema_ids:
        return ctx.schema_ids[name]
    return ctx.lake.schema(name, ctx.latest.snapshot_id, ctx.conn).schema_id


def create_schema(tx: Transaction, name: str, if_not_exists: bool = False) -> None:
    if not name:
        raise InvalidArgumentError("a schema name cannot be empty")

    def op(ctx: CommitContext) -> None:
        existing = {s.schema_name.lower() for s in ctx.lake.schemas(ctx.latest.snapshot_id,
                                                                   ctx.conn)}
        if name.lower() in existing:
            if if_not_exists:
                return
            raise AlreadyExistsError(f"schema {name!r} already exists")
        schema_id = ctx.catalog_id()
        schema_uuid = uuid7()
        insert_rows(ctx, "ducklake_schema", [{
            "schema_id": schema_id, "schema_uuid": schema_uuid,
            "begin_snapshot": ctx.snapshot_id, "end_snapshot": None, "schema_name": name,
            "path": dir_name(name, schema_uuid) + "/", "path_is_relative": True,
        }])
        ctx.schema_ids[name] = schema_id
        ctx.bump_schema()
        ctx.change(3, f"created_schema:{quote_name(name)}")

    tx.add(CREATES, op, f"created_schema:{quote_name(name)}")


def drop_schema(tx: Transaction, name: str, cascade: bool = False,
                if_exists: bool = False) -> None:
    def op(ctx: CommitContext) -> None:
        at = ctx.latest.snapshot_id
        try:
            schema = ctx.lake.schema(name, at, ctx.conn)
        except NotFoundError:
            if if_exists:
                return
            raise
        tables = ctx.lake.tables(name, at, ctx.conn)
        views = ctx.lake.views(name, at, ctx.conn)
        if (tables or views) and not cascade:
            raise InvalidArgumentError(
                f"schema {name!r} is not empty ({len(tables)} tables, {len(views)} views); "
                "drop them first or drop the schema with cascade"
            )
        for table in tables:
            _end_table(ctx, table.table_id)
            ctx.change(1, f"dropped_table:{table.table_id}")
        for view in views:
            _end_view(ctx, view.view_id)
            ctx.change(2, f"dropped_view:{view.view_id}")
        ctx.exec(f"UPDATE {ctx.t('ducklake_schema')} SET end_snapshot = :s "
                 "WHERE schema_id = :id AND end_snapshot IS NULL",
                 {"s": ctx.snapshot_id, "id": schema.schema_id})
        ctx.bump_schema()
        ctx.change(0, f"dropped_schema:{schema.schema_id}")

    tx.add(DROPS, op)


def create_table(
    tx: Transaction,
    schema_name: str,
    table_name: str,
    columns: Sequence[ColumnSpec],
    inlining: bool = True,
    table_uuid: str | None = None,
) -> TableRef:
    """Stage a CREATE TABLE; returns a reference usable by later changes in ``tx``."""
    if not table_name:
        raise InvalidArgumentError("a table name cannot be empty")
    if not columns:
        raise SchemaMismatchError(f"table {schema_name}.{table_name} needs at least one column")
    seen: set[str] = set()
    for spec in columns:
        if spec.name.lower() in seen:
            raise SchemaMismatchError(
                f"column {spec.name!r} appears twice in table {schema_name}.{table_name}; "
                "DuckLake column names are case-insensitive and must be unique"
            )
        seen.add(spec.name.lower())
        for node in spec.walk():
            LakeType.parse(node.type)
    token = f"created_table:{quote_name(schema_name)}.{quote_name(table_name)}"

    def op(ctx: CommitContext) -> None:
        schema_id = _schema(ctx, schema_name)
        if _name_taken(ctx, schema_id, table_name):
            raise AlreadyExistsError(f"{schema_name}.{table_name} already exists in the lake")
        table_id = ctx.catalog_id()
        new_uuid = table_uuid or uuid7()
        insert_rows(ctx, "ducklake_table", [{
            "table_id": table_id, "table_uuid": new_uuid, "begin_snapshot": ctx.snapshot_id,
            "end_snapshot": None, "schema_id": schema_id, "table_name": table_name,
            "path": dir_name(table_name, new_uuid) + "/", "path_is_relative": True,
        }])
        rows, _ = column_rows(ctx, table_id, columns, 1)
        insert_rows(ctx, "ducklake_column", rows)
        ctx.table_ids[f"{schema_name}.{table_name}"] = table_id
        ctx.bump_schema()
        ctx.schema_version_rows.append(table_id)
        ctx.change(4, token)
        if inlining:
            limit = inlining_row_limit(ctx.lake, ctx.conn, schema_id, None)
            if limit > 0:
                inlined_data.create_inlined_table(ctx, table_id)

    tx.add(CREATES, op, token)
    return TableRef(None, schema_name, table_name)


def _end_table(ctx: CommitContext, table_id: int) -> None:
    for name, key in (
        ("ducklake_table", "table_id"), ("ducklake_partition_info", "table_id"),
        ("ducklake_column", "table_id"), ("ducklake_column_tag", "table_id"),
        ("ducklake_data_file", "table_id"), ("ducklake_delete_file", "table_id"),
        ("ducklake_tag", "object_id"), ("ducklake_sort_info", "table_id"),
    ):
        ctx.exec(f"UPDATE {ctx.t(name)} SET end_snapshot = :s WHERE {key} = :id "
                 "AND end_snapshot IS NULL", {"s": ctx.snapshot_id, "id": table_id})


def _end_view(ctx: CommitContext, view_id: int) -> None:
    for name, key in (("ducklake_view", "view_id"), ("ducklake_tag", "object_id")):
        ctx.exec(f"UPDATE {ctx.t(name)} SET end_snapshot = :s WHERE {key} = :id "
                 "AND end_snapshot IS NULL", {"s": ctx.snapshot_id, "id": view_id})


def drop_table(tx: Transaction, ref: TableRef) -> None:
    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        _end_table(ctx, table.table_id)
        ctx.bump_schema()
        ctx.change(1, f"dropped_table:{table.table_id}")

    tx.add(DROPS, op, *([f"dropped_table:{ref.table_id}"] if ref.table_id is not None else []))


def carry_over(tx: Transaction, old_table_id: int, new: TableRef) -> None:
    """The table ``new`` (created in ``tx`` under the name of the table ``old_table_id``,
    dropped in ``tx``) keeps what describes the old one: its tags (``comment`` and any other),
    the tags of its columns that the new table has by name, and its table-scoped options."""

    def op(ctx: CommitContext) -> None:
        table_id = ctx.resolve_table(new).table_id
        at = {"s": ctx.latest.snapshot_id, "o": old_table_id}
        tags = ctx.exec(f"SELECT key, value FROM {ctx.t('ducklake_tag')} WHERE object_id = :o "
                        f"AND {visible()}", at).all()
        insert_rows(ctx, "ducklake_tag", [{
            "object_id": table_id, "begin_snapshot": ctx.snapshot_id, "end_snapshot": None,
            "key": key, "value": value} for key, value in tags])
        old_ids = {c.column_id: c.column_name.lower()
                   for c in ctx.lake.columns(old_table_id, ctx.latest.snapshot_id, ctx.conn)}
        new_ids = {c.column_name.lower(): c.column_id
                   for c in ctx.lake.columns(table_id, ctx.snapshot_id, ctx.conn)}
        column_tags = ctx.exec(f"SELECT column_id, key, value FROM {ctx.t('ducklake_column_tag')} "
                               f"WHERE table_id = :o AND {visible()}", at).all()
        insert_rows(ctx, "ducklake_column_tag", [{
            "table_id": table_id, "column_id": new_ids[old_ids[column_id]],
            "begin_snapshot": ctx.snapshot_id, "end_snapshot": None, "key": key, "value": value,
        } for column_id, key, value in column_tags if old_ids.get(column_id) in new_ids])
        options = ctx.exec(f"SELECT key, value FROM {ctx.t('ducklake_metadata')} WHERE "
                           "scope = 'table' AND scope_id = :o", at).all()
        insert_rows(ctx, "ducklake_metadata", [{
            "key": key, "value": value, "scope": "table", "scope_id": table_id}
            for key, value in options])

    tx.add(CREATES, op)


def stage_table_options(tx: Transaction, ref: TableRef, options: Mapping[str, str]) -> None:
    """Store ``options`` (normalised: ``options.normalise_table_options``) for the table
    ``ref`` in ``tx``'s catalog transaction: with the commit that creates the table and
    writes its first data, or with the write that finds them changed, never apart from it.
    Like DuckDB's ``set_option`` the rows belong to no snapshot; they land only if the commit
    does."""
    if not options:
        return

    def op(ctx: CommitContext) -> None:
        table_id = ctx.resolve_table(ref).table_id
        for key, value in options.items():
            upsert_option(ctx.conn, ctx.lake, key, value, "table", table_id)

    tx.add(DATA, op)


def rename_table(tx: Transaction, ref: TableRef, new_name: str,
                 new_schema: str | None = None) -> None:
    """End the table row and write a new one with the same id, uuid and path (as DuckDB does)."""

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        schema_name = new_schema or table.schema_name
        schema_id = _schema(ctx, schema_name)
        if _name_taken(ctx, schema_id, new_name):
            raise AlreadyExistsError(f"{schema_name}.{new_name} already exists in the lake")
        ctx.exec(f"UPDATE {ctx.t('ducklake_table')} SET end_snapshot = :s WHERE table_id = :id "
                 "AND end_snapshot IS NULL", {"s": ctx.snapshot_id, "id": table.table_id})
        insert_rows(ctx, "ducklake_table", [{
            "table_id": table.table_id, "table_uuid": table.table_uuid,
            "begin_snapshot": ctx.snapshot_id, "end_snapshot": None, "schema_id": schema_id,
            "table_name": new_name, "path": table.path,
            "path_is_relative": table.path_is_relative,
        }])
        ctx.bump_schema()
        ctx.schema_version_rows.append(table.table_id)
        ctx.change(4, f"created_table:{quote_name(schema_name)}.{quote_name(new_name)}")

    tx.add(CREATES, op, *([f"altered_table:{ref.table_id}"] if ref.table_id is not None else []))


# ---------------------------------------------------------------------------------- columns
def _replace_column(ctx: CommitContext, old: ColumnInfo, **changes: object) -> None:
    ctx.exec(f"UPDATE {ctx.t('ducklake_column')} SET end_snapshot = :s WHERE table_id = :t "
             "AND column_id = :c AND end_snapshot IS NULL",
             {"s": ctx.snapshot_id, "t": old.table_id, "c": old.column_id})
    row: dict[str, object] = {
        "column_id": old.column_id, "begin_snapshot": ctx.snapshot_id, "end_snapshot": None,
        "table_id": old.table_id, "column_order": old.column_order,
        "column_name": old.column_name, "column_type": old.column_type,
        "initial_default": old.initial_default, "default_value": old.default_value,
        "nulls_allowed": old.nulls_allowed, "parent_column": old.parent_column,
        "default_value_type": old.default_value_type,
        "default_value_dialect": old.default_value_dialect,
    }
    row.update(changes)
    insert_rows(ctx, "ducklake_column", [row])


def altered(ctx: CommitContext, table_id: int) -> None:
    """Record a structural change of a table: new schema version, ``altered_table`` token."""
    ctx.bump_schema()
    if table_id not in ctx.schema_version_rows:
        ctx.schema_version_rows.append(table_id)
    ctx.change(9, f"altered_table:{table_id}")


def _find(columns: Sequence[ColumnInfo], name: str | ColumnPath) -> ColumnInfo:
    """A column by name, or a nested one by its path; a dotted name that is no top-level
    column's is read as a path (``s.x``: field ``x`` of struct ``s``), as Spark and DuckDB
    read ``ALTER TABLE t DROP COLUMN s.x``."""
    if isinstance(name, str):
        top = [c for c in columns if c.column_name.lower() == name.lower()]
        path: ColumnPath = (name,) if top or "." not in name else tuple(name.split("."))
    else:
        path = name
    try:
        return find(columns, path)
    except KeyError as missing:
        names = ", ".join(c.column_name for c in columns)
        raise NotFoundError(
            f"column {'.'.join(path)!r} does not exist ({missing.args[0]!r} is missing); "
            f"the table has {names}") from None


def _end_column(ctx: CommitContext, table_id: int, column: ColumnInfo) -> None:
    for node in column.walk():
        ctx.exec(f"UPDATE {ctx.t('ducklake_column')} SET end_snapshot = :s WHERE "
                 "table_id = :t AND column_id = :c AND end_snapshot IS NULL",
                 {"s": ctx.snapshot_id, "t": table_id, "c": node.column_id})


def alter_columns(
    tx: Transaction,
    ref: TableRef,
    add: Sequence[ColumnSpec] = (),
    drop: Sequence[str | ColumnPath] = (),
    retype: Sequence[tuple[str | ColumnPath, str]] = (),
    rename: Sequence[tuple[str, str]] = (),
    nullability: Sequence[tuple[str, bool]] = (),
    add_fields: Sequence[tuple[str | ColumnPath, ColumnSpec]] = (),
) -> None:
    """Stage ALTER TABLE changes, as one ``altered_table`` change: drops, type promotions,
    renames and nullability first, then new columns (ids from the table's highest + 1), then
    new struct fields (``add_fields``: the struct's path and the field), as
    :func:`.evolution.evolved` expects. Drops and promotions reach nested fields by path."""
    if not (add or drop or retype or rename or nullability or add_fields):
        return

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        columns = ctx.lake.columns(table.table_id, ctx.snapshot_id, ctx.conn)
        dropped = [_find(columns, name) for name in drop]
        for col in dropped:
            _end_column(ctx, table.table_id, col)
        for name, new_type in retype:
            col = _find(columns, name)
            old_t, new_t = col.type, LakeType.parse(new_type)
            if old_t.nested or new_t.nested or not is_promotion(old_t, new_t):
                raise SchemaMismatchError(
                    f"cannot change column {col.column_name!r} from {old_t} to {new_t} in place: "
                    "DuckLake only widens types (int8→int16→int32→int64, float32→float64, "
                    "integers to floats, wider decimals)"
                )
            _replace_column(ctx, col, column_type=str(new_t))
        for old_name, new_name in rename:
            _replace_column(ctx, _find(columns, old_name), column_name=new_name)
        for name, nulls_allowed in nullability:
            _replace_column(ctx, _find(columns, name), nulls_allowed=nulls_allowed)
        gone = {c.column_id for c in dropped}
        next_id = ctx.lake.max_column_id(table.table_id, ctx.conn) + 1
        if add:
            taken = {c.column_name.lower() for c in columns if c.column_id not in gone}
            for spec in add:
                if spec.name.lower() in taken:
                    raise AlreadyExistsError(f"column {spec.name!r} already exists")
            rows, next_id = column_rows(ctx, table.table_id, add, next_id)
            insert_rows(ctx, "ducklake_column", rows)
        for parent_name, spec in add_fields:
            parent = _find(columns, parent_name)
            if parent.type.name != "struct":
                raise SchemaMismatchError(
                    f"fields can only be added to structs; {parent.column_name!r} is a "
                    f"{parent.column_type}")
            if any(k.column_name.lower() == spec.name.lower() and k.column_id not in gone
                   for k in parent.children):
                raise AlreadyExistsError(
                    f"field {spec.name!r} already exists in {parent.column_name!r}")
            rows, next_id = column_rows(ctx, table.table_id, [spec], next_id,
                                        parent=parent.column_id)
            insert_rows(ctx, "ducklake_column", rows)
        altered(ctx, table.table_id)
        inlined_data.on_schema_change(ctx, table.table_id)

    tx.add(CREATES, op, *([f"altered_table:{ref.table_id}"] if ref.table_id is not None else []))


# ---------------------------------------------------------------------------------- views
def create_view(tx: Transaction, schema_name: str, view_name: str, sql: str,
                dialect: str = "spark", replace: bool = False,
                column_aliases: Sequence[str] = (), spark_sql: str | None = None) -> None:
    """A view whose query ``sql`` is written in ``dialect``; ``spark_sql``, when ``sql`` is
    a translation, is the Spark SQL it was made from, kept in a tag for this engine's reads."""
    token = f"created_view:{quote_name(schema_name)}.{quote_name(view_name)}"

    def op(ctx: CommitContext) -> None:
        schema_id = _schema(ctx, schema_name)
        existing = [v for v in ctx.lake.views(schema_name, ctx.latest.snapshot_id, ctx.conn)
                    if v.view_name == view_name]
        if existing and replace:
            _end_view(ctx, existing[0].view_id)
            ctx.change(2, f"dropped_view:{existing[0].view_id}")
        elif _name_taken(ctx, schema_id, view_name):
            raise AlreadyExistsError(f"{schema_name}.{view_name} already exists in the lake")
        view_id = ctx.catalog_id()
        insert_rows(ctx, "ducklake_view", [{
            "view_id": view_id, "view_uuid": str(uuid.uuid4()),
            "begin_snapshot": ctx.snapshot_id, "end_snapshot": None, "schema_id": schema_id,
            "view_name": view_name, "dialect": dialect, "sql": sql,
            "column_aliases": format_column_aliases(column_aliases),
        }])
        if spark_sql is not None:
            insert_rows(ctx, "ducklake_tag", [{
                "object_id": view_id, "begin_snapshot": ctx.snapshot_id, "end_snapshot": None,
                "key": SPARK_SQL_TAG, "value": spark_sql,
            }])
        ctx.bump_schema()
        ctx.change(4, token)

    tx.add(CREATES, op, token)


def rename_view(tx: Transaction, view: ViewInfo, new_name: str,
                new_schema: str | None = None) -> None:
    """End the view row and write one with the same id, uuid and query, as DuckDB renames
    a view: its tags (comment, Spark SQL) stay with the id."""
    schema_name = new_schema or view.schema_name

    def op(ctx: CommitContext) -> None:
        schema_id = _schema(ctx, schema_name)
        if _name_taken(ctx, schema_id, new_name):
            raise AlreadyExistsError(f"{schema_name}.{new_name} already exists in the lake")
        ctx.exec(f"UPDATE {ctx.t('ducklake_view')} SET end_snapshot = :s WHERE view_id = :id "
                 "AND end_snapshot IS NULL", {"s": ctx.snapshot_id, "id": view.view_id})
        insert_rows(ctx, "ducklake_view", [{
            "view_id": view.view_id, "view_uuid": view.view_uuid,
            "begin_snapshot": ctx.snapshot_id, "end_snapshot": None, "schema_id": schema_id,
            "view_name": new_name, "dialect": view.dialect, "sql": view.sql,
            "column_aliases": view.column_aliases,
        }])
        ctx.bump_schema()
        ctx.change(4, f"created_view:{quote_name(schema_name)}.{quote_name(new_name)}")

    tx.add(CREATES, op, f"altered_view:{view.view_id}")


def drop_view(tx: Transaction, schema_name: str, view_name: str) -> None:
    def op(ctx: CommitContext) -> None:
        for view in ctx.lake.views(schema_name, ctx.latest.snapshot_id, ctx.conn):
            if view.view_name == view_name:
                _end_view(ctx, view.view_id)
                ctx.bump_schema()
                ctx.change(2, f"dropped_view:{view.view_id}")
                return
        raise NotFoundError(f"view {schema_name}.{view_name} does not exist in the lake")

    tx.add(DROPS, op)


# ---------------------------------------------------------------------------------- comments
def set_comment(tx: Transaction, ref: TableRef, comment: str | None,
                column: str | None = None, view_id: int | None = None) -> None:
    """COMMENT ON TABLE / VIEW / COLUMN: a ``comment`` tag, versioned like DuckDB's."""

    def op(ctx: CommitContext) -> None:
        if view_id is not None:
            object_id, kind = view_id, "view"
        else:
            object_id, kind = ctx.resolve_table(ref).table_id, "table"
        if column is None:
            ctx.exec(f"UPDATE {ctx.t('ducklake_tag')} SET end_snapshot = :s WHERE object_id = :o "
                     "AND key = 'comment' AND end_snapshot IS NULL",
                     {"s": ctx.snapshot_id, "o": object_id})
            insert_rows(ctx, "ducklake_tag", [{
                "object_id": object_id, "begin_snapshot": ctx.snapshot_id,
                "end_snapshot": None, "key": "comment", "value": comment,
            }])
        else:
            columns = ctx.lake.columns(object_id, ctx.snapshot_id, ctx.conn)
            col = _find(columns, column)
            ctx.exec(f"UPDATE {ctx.t('ducklake_column_tag')} SET end_snapshot = :s WHERE "
                     "table_id = :t AND column_id = :c AND key = 'comment' AND "
                     "end_snapshot IS NULL",
                     {"s": ctx.snapshot_id, "t": object_id, "c": col.column_id})
            insert_rows(ctx, "ducklake_column_tag", [{
                "table_id": object_id, "column_id": col.column_id,
                "begin_snapshot": ctx.snapshot_id, "end_snapshot": None, "key": "comment",
                "value": comment,
            }])
        ctx.bump_schema()
        ctx.change(10 if kind == "view" else 9,
                   f"altered_{kind}:{object_id}")

    tx.add(CREATES, op)
