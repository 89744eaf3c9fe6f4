"""Inlined rows in the catalog: the tables that hold them, and their inserts, ends and reads.

``ducklake_inlined_data_{table_id}_{schema_version}`` holds inlined rows with their row id and
snapshot range; ``ducklake_inlined_delete_{table_id}`` holds small deletes from Parquet files as
``(file_id, row_id = position in the file, begin_snapshot)``. Both follow DuckDB 1.5.5
(duckdb/ducklake@v1.5-variegata src/storage/ducklake_inlined_data.cpp; the specification's
https://ducklake.select/docs/stable/specification/tables/ducklake_inlined_data_tables) so that
either engine reads what the other wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, text

from ..catalog import Catalog, checked_inlined_table, inlined_table_name, visible
from ..commit import CommitContext, quote_name
from ..models import ColumnInfo, FileColumnStats, InlinedDataTable
from ..options import inlining_row_limit
from ..stats import compare_encoded
from ..value_text import inlined_value_text
from .codec import encode_inlined, inlined_column_type, inlined_decoder, parquet_decoder

RESERVED_COLUMN_NAMES = frozenset(
    {"row_id", "begin_snapshot", "end_snapshot", "_ducklake_internal_row_id",
     "_ducklake_internal_snapshot_id"}
)
POSTGRES_IDENTIFIER_LIMIT = 63


def can_inline(columns: Sequence[ColumnInfo], dialect: str) -> bool:
    """Whether DuckDB would inline rows of a table with these columns at all."""
    for col in columns:
        if col.column_name.lower() in RESERVED_COLUMN_NAMES:
            return False
        if dialect == "postgresql" and len(col.column_name.encode()) > POSTGRES_IDENTIFIER_LIMIT:
            return False
        for node in col.walk():
            if node.column_type in ("geometry", "variant"):
                return False
    return True


def create_inlined_table(ctx: CommitContext, table_id: int) -> InlinedDataTable | None:
    """Create and register the inlined-data table for the table's current schema version."""
    columns = ctx.lake.columns(table_id, ctx.snapshot_id, ctx.conn)
    dialect = ctx.lake.dialect
    if not can_inline(columns, dialect):
        return None
    name = inlined_table_name(table_id, ctx.schema_version)
    cols = ", ".join(
        f"{quote_name(c.column_name)} {inlined_column_type(c, dialect)}" for c in columns
    )
    ctx.exec(f"CREATE TABLE IF NOT EXISTS {ctx.t(name)}(row_id BIGINT, begin_snapshot BIGINT, "
             f"end_snapshot BIGINT, {cols})")
    exists = ctx.exec(f"SELECT 1 FROM {ctx.t('ducklake_inlined_data_tables')} WHERE "
                      "table_name = :n", {"n": name}).first()
    if not exists:
        ctx.exec(f"INSERT INTO {ctx.t('ducklake_inlined_data_tables')} VALUES (:t, :n, :v)",
                 {"t": table_id, "n": name, "v": ctx.schema_version})
    return InlinedDataTable(table_id, name, ctx.schema_version)


def on_schema_change(ctx: CommitContext, table_id: int) -> None:
    """After an ALTER, new inlined rows go to a table for the new schema version."""
    if ctx.lake.inlined_data_tables(table_id, ctx.conn) or inlining_row_limit(
        ctx.lake, ctx.conn, None, table_id
    ) > 0:
        create_inlined_table(ctx, table_id)


def current_inlined_table(ctx: CommitContext, table_id: int) -> InlinedDataTable | None:
    """The inlined table new rows go to, created (with a schema bump) when out of date."""
    tables = ctx.lake.inlined_data_tables(table_id, ctx.conn)
    latest_version = ctx.exec(
        f"SELECT MAX(schema_version) FROM {ctx.t('ducklake_schema_versions')} "
        "WHERE table_id = :t", {"t": table_id}).scalar()
    if tables and (latest_version is None or tables[-1].schema_version >= latest_version):
        return tables[-1]
    ctx.bump_schema()
    return create_inlined_table(ctx, table_id)


def insert_rows(
    ctx: CommitContext,
    table_id: int,
    columns: Sequence[ColumnInfo],
    rows: Sequence[dict[str, Any]],
    row_ids: Sequence[int],
) -> None:
    """Insert rows (dicts keyed by current top-level column name) with the given row ids."""
    target = current_inlined_table(ctx, table_id)
    assert target is not None, "caller checks can_inline first"
    dialect = ctx.lake.dialect
    names = [quote_name(c.column_name) for c in columns]
    params = [f":c{i}" for i in range(len(columns))]
    sql = (f"INSERT INTO {ctx.t(target.table_name)} (row_id, begin_snapshot, end_snapshot"
           + "".join(", " + n for n in names) + ") VALUES (:row_id, :sid, NULL"
           + "".join(", " + p for p in params) + ")")
    batch = []
    for row_id, row in zip(row_ids, rows):
        values = {f"c{i}": encode_inlined(row.get(c.column_name), c, dialect)
                  for i, c in enumerate(columns)}
        batch.append({"row_id": row_id, "sid": ctx.snapshot_id, **values})
    if batch:
        ctx.conn.execute(text(sql), batch)


def row_stats(columns: Sequence[ColumnInfo],
              rows: Sequence[dict[str, Any]]) -> list[FileColumnStats]:
    """Per-leaf statistics of inlined rows, in the text DuckDB derives by casting to VARCHAR.

    Nested leaves get unknown bounds (NULL), which is always safe.
    """
    out: list[FileColumnStats] = []
    for col in columns:
        if col.children or col.type.nested:
            for node in col.walk():
                if not node.children and not node.type.nested:
                    out.append(FileColumnStats(node.column_id, None, None, None, None, None,
                                               None))
            continue
        values = [r.get(col.column_name) for r in rows]
        present = [v for v in values if v is not None]
        encoded = [inlined_value_text(v, col.type) for v in present]
        lo = hi = None
        nan = None
        if col.type.name in ("float32", "float64"):
            nan = any(v != v for v in present)
            encoded = [e for v, e in zip(present, encoded) if v == v]
        known = [e for e in encoded if e is not None]
        if known and len(known) == len(encoded):
            lo, hi = known[0], known[0]
            for e in known[1:]:
                if compare_encoded(e, lo, col.type) < 0:
                    lo = e
                if compare_encoded(e, hi, col.type) > 0:
                    hi = e
        out.append(FileColumnStats(col.column_id, None, len(present), len(values) - len(present),
                                   lo, hi, nan))
    return out


def end_rows(ctx: CommitContext, table_id: int, row_ids: Sequence[int]) -> int:
    """Delete inlined rows by row id: set their ``end_snapshot`` (DuckDB's own UPDATE)."""
    total = 0
    ids = sorted(set(row_ids))
    for table in ctx.lake.inlined_data_tables(table_id, ctx.conn):
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join(f":r{i}" for i in range(len(chunk)))
            total += ctx.exec(
                f"UPDATE {ctx.t(table.table_name)} SET end_snapshot = :s WHERE row_id IN "
                f"({marks}) AND end_snapshot IS NULL AND begin_snapshot != :s",
                {"s": ctx.snapshot_id, **{f"r{i}": v for i, v in enumerate(chunk)}},
            ).rowcount
    return total


def end_all_rows(ctx: CommitContext, table_id: int) -> int:
    total = 0
    for table in ctx.lake.inlined_data_tables(table_id, ctx.conn):
        total += ctx.exec(
            f"UPDATE {ctx.t(table.table_name)} SET end_snapshot = :s WHERE "
            "end_snapshot IS NULL AND begin_snapshot != :s", {"s": ctx.snapshot_id}
        ).rowcount
    return total


def drop_empty_superseded_tables(lake: Catalog) -> list[str]:
    """Drop the inlined-data tables of older schema versions that hold no rows any more, with
    their ``ducklake_inlined_data_tables`` rows, as DuckDB does after a commit that flushed
    inlined data: the flush moved their rows to Parquet, and only the newest version's table
    takes new rows. Returns the names dropped."""
    registry = lake.t("ducklake_inlined_data_tables")
    dropped: list[str] = []
    with lake.write() as conn:
        rows = cast("Sequence[tuple[int, int, str]]", conn.execute(text(
            f"SELECT d.table_id, d.schema_version, d.table_name FROM {registry} d WHERE "
            f"d.schema_version < (SELECT MAX(d2.schema_version) FROM {registry} d2 "
            "WHERE d2.table_id = d.table_id)")).all())
        # every name is checked before any of them goes into SQL
        candidates = [checked_inlined_table(t, n, v) for t, v, n in rows]
        for table_id, name, schema_version in (
                (c.table_id, c.table_name, c.schema_version) for c in candidates):
            if conn.execute(text(f"SELECT COUNT(*) FROM {lake.t(name)}")).scalar():
                continue
            conn.execute(text(f"DELETE FROM {registry} WHERE table_id = :t AND "
                              "schema_version = :v"), {"t": table_id, "v": schema_version})
            conn.execute(text(f"DROP TABLE IF EXISTS {lake.t(name)}"))
            dropped.append(name)
    return dropped


def inlined_delete_table(table_id: int) -> str:
    return f"ducklake_inlined_delete_{table_id}"


def add_file_deletes(ctx: CommitContext, table_id: int,
                     positions: Mapping[int, Iterable[int]]) -> None:
    """Record small deletes from Parquet files in ``ducklake_inlined_delete_{table_id}``."""
    name = inlined_delete_table(table_id)
    ctx.exec(f"CREATE TABLE IF NOT EXISTS {ctx.t(name)}(file_id BIGINT, row_id BIGINT, "
             "begin_snapshot BIGINT)")
    batch = [{"f": fid, "r": int(pos), "s": ctx.snapshot_id}
             for fid, poss in positions.items() for pos in poss]
    if batch:
        ctx.conn.execute(text(f"INSERT INTO {ctx.t(name)} VALUES (:f, :r, :s)"), batch)


# ---------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class InlinedRows:
    """Rows of one inlined table visible at a snapshot, keyed by column id."""

    column_ids: tuple[int, ...]
    columns: tuple[ColumnInfo, ...]  # as of the inlined table's schema version
    row_ids: list[int]
    begin_snapshots: list[int]
    end_snapshots: list[int | None]
    values: list[tuple[Any, ...]]


def _columns_of_version(lake: Catalog, conn: Connection,
                        table: InlinedDataTable) -> list[ColumnInfo]:
    row = conn.execute(
        text(f"SELECT MAX(begin_snapshot) FROM {lake.t('ducklake_schema_versions')} "
             "WHERE table_id = :t AND schema_version <= :v"),
        {"t": table.table_id, "v": table.schema_version},
    ).scalar()
    if row is None:
        row = conn.execute(
            text(f"SELECT MAX(snapshot_id) FROM {lake.t('ducklake_snapshot')} "
                 "WHERE schema_version <= :v"), {"v": table.schema_version}).scalar()
    return lake.columns(table.table_id, int(row or 0), conn)


def read_rows(
    lake: Catalog, conn: Connection, table_id: int, where: str, params: dict[str, Any],
    exact: bool = False,
) -> list[InlinedRows]:
    """Inlined rows of a table matching ``where`` (over begin_snapshot / end_snapshot).

    ``exact`` (a flush): TIME, TIMETZ and TIMESTAMP_NS values come as the integers DuckDB
    writes to Parquet (:func:`.codec.parquet_decoder`), not as Python times, which
    lose nanoseconds, 24:00:00 and the offset of a TIMETZ.
    """
    out = []
    for table in lake.inlined_data_tables(table_id, conn):
        result = conn.execute(text(f"SELECT * FROM {lake.t(table.table_name)} WHERE {where} "
                                   "ORDER BY row_id, begin_snapshot"), params)
        names = list(result.keys())
        raw = result.all()
        if not raw:
            continue
        version_columns = _columns_of_version(lake, conn, table)
        by_name = {c.column_name: c for c in version_columns}
        physical = names[3:]
        cols = [by_name.get(n) for n in physical]
        if any(c is None for c in cols) and len(physical) == len(version_columns):
            cols = list(version_columns)
        keep = [(i, c) for i, c in enumerate(cols) if c is not None]
        kept_cols = tuple(c for _, c in keep)
        decoder = parquet_decoder if exact else inlined_decoder
        decoders = [(3 + i, decoder(c, lake.dialect)) for i, c in keep]
        values = [tuple(decode(r[i]) for i, decode in decoders) for r in raw]
        out.append(InlinedRows(
            tuple(c.column_id for c in kept_cols), kept_cols,
            [int(r[0]) for r in raw], [int(r[1]) for r in raw],
            [None if r[2] is None else int(r[2]) for r in raw], values,
        ))
    return out


def read_file_deletes(
    lake: Catalog, conn: Connection, table_id: int, at: int
) -> dict[int, list[tuple[int, int]]]:
    """Inlined deletes from Parquet files visible at ``at``: file id -> [(position, snapshot)]."""
    name = inlined_delete_table(table_id)
    if not lake.has_table(name, conn):
        return {}
    rows = cast("Sequence[tuple[int, int, int]]", conn.execute(
        text(f"SELECT file_id, row_id, begin_snapshot FROM {lake.t(name)} "
             "WHERE begin_snapshot <= :s"), {"s": at}).all())
    out: dict[int, list[tuple[int, int]]] = {}
    for fid, pos, sid in rows:
        out.setdefault(int(fid), []).append((int(pos), int(sid)))
    return out


def live_size(lake: Catalog, table_id: int, conn: Connection,
              at: int | None = None) -> tuple[int, int]:
    """(rows, bytes) of a table at a snapshot (latest by default): live files minus their
    deletes (delete files and inlined deletes) plus live inlined rows.

    ``ducklake_table_stats.record_count`` only ever grows, so it is no row count.
    """
    s = lake.latest_snapshot(conn).snapshot_id if at is None else at
    files = lake.data_files(table_id, s, conn)
    live = {f.data_file_id for f in files}
    rows = sum(f.record_count for f in files)
    size = sum(f.file_size_bytes for f in files)
    rows -= sum(d.delete_count for fid, d in lake.delete_files(table_id, s, conn).items()
                if fid in live)
    for fid, entries in read_file_deletes(lake, conn, table_id, s).items():
        if fid in live:
            rows -= len(entries)
    for table in lake.inlined_data_tables(table_id, conn):
        rows += int(conn.execute(
            text(f"SELECT COUNT(*) FROM {lake.t(table.table_name)} WHERE {visible()}"),
            {"s": s}).scalar() or 0)
    return rows, size
