"""A table's sort order (DuckDB's ``ALTER TABLE ... SET SORTED BY``), as a write sets it.

DuckDB 1.5.5 keeps it in ``ducklake_sort_info (sort_id, table_id, begin_snapshot,
end_snapshot)`` and ``ducklake_sort_expression (sort_id, table_id, sort_key_index,
expression, dialect, sort_direction, null_order)``: a new order ends the live row and writes
a new one under a new catalog id, with a schema version bump and ``altered_table:<tid>`` (no
``ducklake_schema_versions`` row); a reset ends the live row only. New files are written
sorted by it (unless the ``sort_on_insert`` option is false), so each file's min/max cover a
narrow range and per-file statistics skip more files; compaction keeps the order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .catalog import Catalog
from .commit import CommitContext, Transaction
from .compaction import SortKey, sort_keys
from .errors import InvalidArgumentError
from .models import TableRef
from .tables import CREATES

SIMPLE = set("abcdefghijklmnopqrstuvwxyz0123456789_")


def parse_sorted_by(spec: str | Iterable[str]) -> tuple[SortKey, ...]:
    """``["id", "ts desc", "region asc nulls first"]`` (or one comma-separated string) as
    sort keys over plain column names; ASC and NULLS LAST by default, as DuckDB."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    keys = []
    for item in items:
        words = str(item).split()
        if not words:
            raise InvalidArgumentError(f"an empty sort key in sorted_by {spec!r}")
        name, rest = words[0], [w.upper() for w in words[1:]]
        descending = bool(rest) and rest[0] == "DESC"
        if rest and rest[0] in ("ASC", "DESC"):
            rest = rest[1:]
        if rest not in ([], ["NULLS", "FIRST"], ["NULLS", "LAST"]):
            raise InvalidArgumentError(
                f"cannot read the sort key {item!r}: write a column name, then optionally "
                "ASC or DESC, then optionally NULLS FIRST or NULLS LAST")
        keys.append(SortKey(_expression(name), "duckdb", descending, rest == ["NULLS", "FIRST"]))
    return tuple(keys)


def _expression(name: str) -> str:
    """A column name as DuckDB writes it in a sort expression (quoted unless plain)."""
    name = name.strip('`"')
    if set(name) <= SIMPLE and not name[:1].isdigit():
        return name
    return '"' + name.replace('"', '""') + '"'


def column_of(key: SortKey) -> str:
    """The column a plain sort key names."""
    text = key.expression.strip()
    if len(text) > 1 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"')
    return text


def kept_sort_order(lake: Catalog, table_id: int, columns: Iterable[str]) -> tuple[SortKey, ...]:
    """The live sort order of a table being replaced, for the table created in its place
    (``CREATE OR REPLACE`` without ``sorted_by``): its keys up to the first one naming a column
    the new table lacks, since a later key alone would sort by something else."""
    names = {c.lower() for c in columns}
    with lake.read() as conn:
        keys = sort_keys(lake, conn, table_id, lake.latest_snapshot(conn).snapshot_id)
    kept = []
    for key in keys:
        if column_of(key).lower() not in names:
            break
        kept.append(key)
    return tuple(kept)


def describe(keys: Sequence[SortKey]) -> list[str]:
    """Sort keys as ``sorted_by`` spells them (``["id", "ts DESC NULLS FIRST"]``)."""
    out = []
    for key in keys:
        text = column_of(key) + (" DESC" if key.descending else "")
        out.append(text + (" NULLS FIRST" if key.nulls_first else ""))
    return out


def stage_sort_order(tx: Transaction, ref: TableRef, keys: Sequence[SortKey]) -> None:
    """Stage the table's sort order (``[]``: reset it), as DuckDB's ``SET SORTED BY`` /
    ``RESET SORTED BY``; nothing when the table has that order already. Each key must name
    one of the table's columns."""

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        created_here = ref.table_id is None and ctx.table_ids.get(
            f"{table.schema_name}.{table.table_name}") == table.table_id
        live = [] if created_here else sort_keys(ctx.lake, ctx.conn, table.table_id,
                                                 ctx.latest.snapshot_id)
        if list(keys) == live:
            return
        names = {c.column_name.lower() for c in
                 ctx.lake.columns(table.table_id, ctx.snapshot_id, ctx.conn)}
        unknown = [column_of(k) for k in keys if column_of(k).lower() not in names]
        if unknown:
            raise InvalidArgumentError(
                f"sorted_by names {', '.join(unknown)}, which {table.schema_name}."
                f"{table.table_name} does not have; its columns: {', '.join(sorted(names))}")
        ctx.exec(f"UPDATE {ctx.t('ducklake_sort_info')} SET end_snapshot = :s "
                 "WHERE table_id = :t AND end_snapshot IS NULL",
                 {"s": ctx.snapshot_id, "t": table.table_id})
        if keys:
            _insert(ctx, table.table_id, keys)
        if not created_here:  # a new table's creation already counts as its change
            ctx.bump_schema()
            ctx.change(9, f"altered_table:{table.table_id}")

    tokens = [f"altered_table:{ref.table_id}"] if ref.table_id is not None else []
    tx.add(CREATES, op, *tokens)


def _insert(ctx: CommitContext, table_id: int, keys: Sequence[SortKey]) -> None:
    sort_id = ctx.catalog_id()
    ctx.exec(f"INSERT INTO {ctx.t('ducklake_sort_info')} VALUES (:i, :t, :s, NULL)",
             {"i": sort_id, "t": table_id, "s": ctx.snapshot_id})
    for index, key in enumerate(keys):
        ctx.exec(f"INSERT INTO {ctx.t('ducklake_sort_expression')} VALUES "
                 "(:i, :t, :k, :e, :d, :dir, :n)",
                 {"i": sort_id, "t": table_id, "k": index, "e": key.expression,
                  "d": key.dialect, "dir": "DESC" if key.descending else "ASC",
                  "n": "NULLS_FIRST" if key.nulls_first else "NULLS_LAST"})
