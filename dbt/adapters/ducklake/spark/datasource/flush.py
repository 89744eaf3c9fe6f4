"""The sink's ``flushInlinedRows``: once a table holds more inlined rows than that, the commit
that passed it is followed by a flush of them to Parquet, in its own snapshot.

This is ``SparkLake.flush_inlined_data`` (DuckDB's ``ducklake_flush_inlined_data``) for a
writer with no SparkSession: the sink's commit runs in a Python worker, so the rows are
written with pyarrow (:func:`..write.write_rows_file`), with the embedded row ids and
snapshot ids DuckDB writes, and staged with the same :func:`...lake.inlining.flush.stage_flush`.
The sink only writes tables whose columns pyarrow writes as they are (it refuses the others
before a batch runs), so the rows need no physical conversion.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from sqlalchemy import text

from ...lake import files as lake_files
from ...lake import options as lake_options
from ...lake.catalog import Catalog
from ...lake.commit import Transaction
from ...lake.delete_files import ROW_ID_COLUMN, SNAPSHOT_ID_COLUMN
from ...lake.inlining import rows as inlined_data
from ...lake.inlining.flush import FlushedFile, stage_flush
from ...lake.models import Snapshot
from .. import physical
from .. import write as spark_write
from ..table_state import load_state
from . import arrow_read


def inlined_row_count(lake: Catalog, table_id: int) -> int:
    """Rows the table's inlined tables hold (deleted ones too: a flush moves them as well)."""
    with lake.read() as conn:
        return sum(int(conn.execute(text(f"SELECT COUNT(*) FROM {lake.t(t.table_name)}"))
                       .scalar() or 0)
                   for t in lake.inlined_data_tables(table_id, conn))


def flush(lake: Catalog, schema_name: str, table_name: str, info: dict[str, Any],
          author: str | None = None) -> Snapshot | None:
    """Flush the table's inlined rows and inlined deletes to Parquet in one snapshot;
    ``None`` when it holds none. A failed flush leaves the lake as it was (its files are
    removed) and the batch it followed committed."""
    state = load_state(lake, schema_name, table_name)
    s, table_id = state.snapshot_id, state.table.table_id
    with lake.read() as conn:
        blocks = inlined_data.read_rows(lake, conn, table_id, "begin_snapshot <= :s",
                                        {"s": s})
        live = {f.data_file_id for f in state.data_files}
        file_deletes = {fid: entries for fid, entries in
                        inlined_data.read_file_deletes(lake, conn, table_id, s).items()
                        if fid in live}
        parquet = lake_options.parquet_options(lake, conn, state.schema.schema_id, table_id)
        tables = [t.table_name for t in lake.inlined_data_tables(table_id, conn)]
    if not blocks and not file_deletes:
        return None
    flushed: list[FlushedFile] = []
    paths: list[str] = []
    try:
        for block in blocks:
            new, path = _write_block(block, state.table_dir, parquet)
            paths.append(path)
            ended = tuple((pos, int(end)) for pos, end in enumerate(block.end_snapshots)
                          if end is not None)
            flushed.append(FlushedFile(new, lake_files.strip_scheme(path), ended))
        tx = Transaction(lake, lake.snapshot(version=s))
        tx.files_written.extend(paths)
        stage_flush(tx, table_id, s, flushed, tables, file_deletes)
        return tx.commit(author, "flushInlinedRows", info)
    except BaseException:
        for path in paths:
            lake_files.remove_file(path)
        raise


def _write_block(block: inlined_data.InlinedRows, table_dir: str,
                 parquet: lake_options.ParquetOptions) -> tuple[Any, str]:
    """One block's rows (ordered by row id, as read) as a file with their lineage."""
    from dataclasses import replace

    columns = list(block.columns)
    converters = [physical.spark_converter(c) for c in columns]
    data = {c.column_name: [to(v[i]) for v in block.values]
            for i, (c, to) in enumerate(zip(columns, converters))}
    schema = to_arrow_schema(arrow_read.spark_schema(columns), timezone="UTC")
    rows = spark_write.conform_arrow(pa.Table.from_pydict(data, schema=schema), columns)
    rows = rows.append_column(ROW_ID_COLUMN, pa.array(block.row_ids, pa.int64()))
    rows = rows.append_column(SNAPSHOT_ID_COLUMN, pa.array(block.begin_snapshots, pa.int64()))
    new, path = spark_write.write_rows_file(rows, table_dir, columns, parquet)
    return replace(new, row_id_start=min(block.row_ids), embeds_row_ids=True,
                   begin_snapshot=min(block.begin_snapshots),
                   partial_max=max(block.begin_snapshots), counts_as_insert=False), path
