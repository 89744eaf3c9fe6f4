"""A model's ``table_options`` and ``sorted_by``: its table's lake options and sort order, as
the model's writes set them.

Named after DuckLake's options (``parquet_compression``, ``parquet_row_group_size``,
``target_file_size``, ``data_inlining_row_limit``, ...: ``lake.options.TABLE_OPTIONS``), so
that ``ducklake_set_option``, DuckDB's ``set_option`` and a model speak of the same thing.
dbt-spark's ``tblproperties`` is accepted under the same keys (a project moving from
Databricks keeps its config key; Delta's own properties have no meaning in a lake and fail,
listing the accepted keys). The options are stored with the commit that writes the table's
first data, and with each later write that finds them changed.
"""

from __future__ import annotations

from typing import Any

from dbt_common.exceptions import DbtRuntimeError

from .lake.errors import InvalidArgumentError
from .lake.options import normalise_table_options
from .lake.sort_order import parse_sorted_by


def table_options_of(config: Any, node: str) -> dict[str, str]:
    """The model's ``table_options`` (or ``tblproperties``), normalised; wrong shapes and
    unknown keys fail naming the accepted ones."""
    options = config.get("table_options") if config is not None else None
    properties = config.get("tblproperties") if config is not None else None
    if options and properties:
        raise DbtRuntimeError(
            f"{node} sets both table_options and tblproperties; they are the same setting "
            "(the table's lake options): keep one")
    raw = options or properties or {}
    key = "table_options" if options else "tblproperties"
    if not isinstance(raw, dict):
        raise DbtRuntimeError(
            f"{key} of {node} is a mapping of lake options, e.g. "
            f"{{parquet_compression: zstd, target_file_size: '128MB'}}; got {raw!r}")
    try:
        return normalise_table_options(raw)
    except InvalidArgumentError as exc:
        raise DbtRuntimeError(f"{key} of {node}: {exc}") from None


def sorted_by_of(config: Any, node: str) -> list[str] | None:
    """The model's ``sorted_by`` (a column, ``"ts desc"``, or a list of them) as a list;
    ``None`` when unset (the table's sort order is left as it is); ``[]`` resets it."""
    raw = config.get("sorted_by") if config is not None else None
    if raw is None:
        return None
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise DbtRuntimeError(
            f"sorted_by of {node} is a column or a list of them, each optionally followed by "
            f"asc/desc and nulls first/last, e.g. ['event_date', 'user_id desc']; got {raw!r}")
    try:
        parse_sorted_by(items)
    except InvalidArgumentError as exc:
        raise DbtRuntimeError(f"sorted_by of {node}: {exc}") from None
    return list(items)
