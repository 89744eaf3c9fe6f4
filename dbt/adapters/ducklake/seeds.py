"""Seeds: a CSV (as dbt's agate table) loaded into a lake table in one snapshot."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from dbt.adapters.base.relation import BaseRelation
from dbt_common.exceptions import DbtRuntimeError

from .relation import lake_name
from .runtime import Runtime

if TYPE_CHECKING:
    import agate


def load_seed(runtime: Runtime, relation: BaseRelation, agate_table: agate.Table,
              types: dict[str, str], full_refresh: bool, quote: Callable[[str], str],
              quote_columns: bool | None = None, delimiter: str = ",") -> int:
    """Create or replace a seed table from a CSV in one snapshot; returns the row count.

    ``types`` gives each column's Spark type (the seed's ``column_types`` or dbt's guess);
    values arrive as text and are cast by Spark, as a CSV read would.
    """
    from pyspark.sql import functions as F

    names = list(agate_table.column_names)
    if quote_columns is False:
        _check_seed_header(relation, names, delimiter)
    rows = [tuple(_seed_text(v) for v in row) for row in agate_table.rows]
    schema = ", ".join(f"{quote(n)} string" for n in names)
    df = runtime.spark.createDataFrame(rows, schema)
    df = df.select(*[F.col(quote(n)).cast(types[n]).alias(n) for n in names])
    lake = runtime.lake
    name = schema, identifier = lake_name(relation)
    info = runtime.engine.commit_info("SEED")
    if schema not in lake.schemas():  # dbt creates a run's schemas first: rarely here
        lake.create_schema(schema, if_not_exists=True, info=info)
    kinds = {n.lower(): k for k, n in lake.catalog.relations(schema)}
    if kinds.get(identifier.lower()) == "table" and not full_refresh:
        lake.table(name).replace(df, info=info)
    else:  # a new table, in the snapshot that drops a table or view of that name
        lake.create_table(name, df, or_replace=True, info=info)
    runtime.registry.lake_changed()
    return len(rows)


_UNQUOTED_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_seed_header(relation: BaseRelation, names: list[str], delimiter: str) -> None:
    """With ``quote_columns: false`` a seed's header must be plain identifiers. One that is not
    is nearly always a header split with the wrong ``delimiter`` (one column named
    ``id|name|...``), which would otherwise load silently as a single wide column."""
    for name in names:
        if _UNQUOTED_IDENTIFIER.fullmatch(name):
            continue
        found = [d for d in ("|", ";", "\t", ",") if d != delimiter and d in name]
        hint = (f"the header looks {found[0]!r}-delimited: set delimiter: '{found[0]}' in the "
                "seed's config" if found else "check the seed's delimiter")
        raise DbtRuntimeError(
            f"Syntax error in seed {relation}: column name {name!r} is not a valid unquoted "
            f"identifier (quote_columns is false; the header was split on {delimiter!r}). "
            f"{hint.capitalize()}, or set quote_columns: true to keep such names.")


def _seed_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        text = format(value, "f")
        return text
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)
