"""Macros (SQL functions) in the catalog, staged on a transaction as DuckDB 1.5.5 writes them.

``CREATE MACRO s.f(a DOUBLE, b := 5) AS a * 2 + b`` is one ``ducklake_macro`` row, one
``ducklake_macro_impl`` row (impl 0, dialect ``duckdb``, the body, type ``scalar``) and one
``ducklake_macro_parameters`` row per parameter (lake type or ``unknown``; default ``'NULL'``
of type ``unknown`` when there is none); token ``created_scalar_macro:"s"."f"``. A drop ends
the macro row (``dropped_scalar_macro:<id>``).

DuckDB parses **every** implementation of every visible macro with its own parser when it
loads the catalog, whatever the row's ``dialect`` says: an implementation DuckDB cannot parse
makes the whole lake unreadable to it. So the implementation written here is always DuckDB
SQL, and a function's Spark definition is kept in the ``spark_sql`` tag on the macro's id,
which DuckDB ignores (as for views, :data:`.models.SPARK_SQL_TAG`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .commit import CommitContext, Transaction, insert_rows, quote_name
from .errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from .models import SPARK_SQL_TAG, MacroParameter
from .tables import CREATES, DROPS, _schema

# changes_made order: after created tables and views (4), before data (7)
_CREATED, _DROPPED = 5, 6


def _end_macro(ctx: CommitContext, macro_id: int) -> None:
    for name, key in (("ducklake_macro", "macro_id"), ("ducklake_tag", "object_id")):
        ctx.exec(f"UPDATE {ctx.t(name)} SET end_snapshot = :s WHERE {key} = :id "
                 "AND end_snapshot IS NULL", {"s": ctx.snapshot_id, "id": macro_id})


def create_macro(tx: Transaction, schema_name: str, macro_name: str, sql: str,
                 parameters: Sequence[MacroParameter] = (), replace: bool = False,
                 spark_sql: str | None = None) -> None:
    """A scalar macro whose body ``sql`` is DuckDB SQL; ``spark_sql``, the definition this
    engine registers (kept in a tag). With ``replace`` a macro of that name ends in the same
    snapshot; without, it is an error."""
    if not macro_name:
        raise InvalidArgumentError("a function name cannot be empty")
    token = f"created_scalar_macro:{quote_name(schema_name)}.{quote_name(macro_name)}"

    def op(ctx: CommitContext) -> None:
        schema_id = _schema(ctx, schema_name)
        existing = [m for m in ctx.lake.macros(schema_name, ctx.latest.snapshot_id, ctx.conn)
                    if m.macro_name.lower() == macro_name.lower()]
        for macro in existing:
            if not replace:
                raise AlreadyExistsError(
                    f"function {schema_name}.{macro_name} already exists in the lake")
            _end_macro(ctx, macro.macro_id)
            kind = "table" if macro.kind == "table" else "scalar"
            ctx.change(_DROPPED, f"dropped_{kind}_macro:{macro.macro_id}")
        macro_id = ctx.catalog_id()
        insert_rows(ctx, "ducklake_macro", [{
            "schema_id": schema_id, "macro_id": macro_id, "macro_name": macro_name,
            "begin_snapshot": ctx.snapshot_id, "end_snapshot": None}])
        insert_rows(ctx, "ducklake_macro_impl", [{
            "macro_id": macro_id, "impl_id": 0, "dialect": "duckdb", "sql": sql,
            "type": "scalar"}])
        insert_rows(ctx, "ducklake_macro_parameters", [{
            "macro_id": macro_id, "impl_id": 0, "column_id": i,
            "parameter_name": p.name, "parameter_type": p.type,
            "default_value": p.default_value, "default_value_type": p.default_type,
        } for i, p in enumerate(parameters)])
        if spark_sql is not None:
            insert_rows(ctx, "ducklake_tag", [{
                "object_id": macro_id, "begin_snapshot": ctx.snapshot_id,
                "end_snapshot": None, "key": SPARK_SQL_TAG, "value": spark_sql}])
        ctx.bump_schema()
        ctx.change(_CREATED, token)

    tx.add(CREATES, op, token)


def drop_macro(tx: Transaction, schema_name: str, macro_name: str,
               if_exists: bool = False) -> None:
    def op(ctx: CommitContext) -> None:
        for macro in ctx.lake.macros(schema_name, ctx.latest.snapshot_id, ctx.conn):
            if macro.macro_name.lower() == macro_name.lower():
                _end_macro(ctx, macro.macro_id)
                ctx.bump_schema()
                kind = "table" if macro.kind == "table" else "scalar"
                ctx.change(_DROPPED, f"dropped_{kind}_macro:{macro.macro_id}")
                return
        if not if_exists:
            raise NotFoundError(
                f"function {schema_name}.{macro_name} does not exist in the lake")

    tx.add(DROPS, op)
