"""A table's sort order as Spark sort columns, for the files a write or a compaction makes.

Only keys over plain column names order Spark's rows (DuckDB may store any expression);
a sort order with another key orders nothing, rather than by half its keys.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F

from ..lake.compaction import SortKey
from ..lake.models import ColumnInfo
from ..lake.sort_order import column_of
from . import physical
from .expressions import ident

log = logging.getLogger("dbt.adapters.ducklake")


def spark_order(keys: Sequence[SortKey], columns: Sequence[ColumnInfo],
                keep_physical: bool = False) -> list[Column]:
    """Spark sort columns for a DuckDB sort order over plain column names (others ignored);
    ``keep_physical``: over the values :func:`.write.conform_physical` gives."""
    names = {c.column_name.lower(): c.column_name for c in columns}
    by_name = {c.column_name: c for c in columns}
    out = []
    for key in keys:
        name = column_of(key)
        if key.dialect != "duckdb" or name.lower() not in names:
            log.info("sort key %r is not a plain column; compaction output is not sorted by it",
                     key.expression)
            return []
        col = F.col(ident(names[name.lower()]))
        if keep_physical:
            col = physical.sort_key(col, by_name[names[name.lower()]])
        if key.descending:
            col = col.desc_nulls_first() if key.nulls_first else col.desc_nulls_last()
        else:
            col = col.asc_nulls_first() if key.nulls_first else col.asc_nulls_last()
        out.append(col)
    return out



def sort_arrow(rows: pa.Table, keys: Sequence[SortKey],
               columns: Sequence[ColumnInfo]) -> pa.Table:
    """Driver-side rows in the table's sort order (the order :func:`spark_order` gives
    Spark's; NULLs placed as the first key says, for every key: Arrow places them once)."""
    if not keys or not spark_order(keys, columns) or rows.num_rows < 2:
        return rows
    names = {c.lower(): c for c in rows.column_names}
    order = [(names[column_of(k).lower()], "descending" if k.descending else "ascending")
             for k in keys]
    placement = "at_start" if keys[0].nulls_first else "at_end"
    return rows.take(pc.sort_indices(rows, sort_keys=order, null_placement=placement))
