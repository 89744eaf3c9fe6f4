"""Maintenance for dbt: run-operation arguments in, one-line summaries out.

The operations themselves live in :mod:`.spark.compaction`, :mod:`.lake.expiry`,
:mod:`.lake.cleanup` and :mod:`.spark.checkpoint`; this module only checks the arguments a
macro passes (names listed in errors), calls the :class:`~.spark.lake.SparkLake` method and
turns its frozen result into a dict dbt can log and a macro can inspect.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .lake.errors import InvalidArgumentError
from .spark.lake import SparkLake

# operation -> the keyword arguments it accepts
OPERATIONS: dict[str, tuple[str, ...]] = {
    "flush_inlined_data": ("schema", "table"),
    "merge_adjacent_files": ("schema", "table", "min_file_size", "max_file_size",
                             "max_compacted_files"),
    "rewrite_data_files": ("schema", "table", "delete_threshold"),
    "expire_snapshots": ("older_than", "versions", "dry_run"),
    "cleanup_old_files": ("older_than", "cleanup_all", "dry_run"),
    "delete_orphaned_files": ("older_than", "dry_run"),
    "checkpoint": (),
}
# operations that act on one table, usable in a model's post_commit_maintenance config
TABLE_OPERATIONS = ("flush_inlined_data", "merge_adjacent_files", "rewrite_data_files")


def run(lake: SparkLake, operation: str, arguments: Mapping[str, Any] | None = None) -> Any:
    """Run one maintenance operation; returns its frozen result."""
    if operation not in OPERATIONS:
        raise InvalidArgumentError(
            f"unknown maintenance operation {operation!r}; accepted: {', '.join(OPERATIONS)}")
    given = {k: v for k, v in (arguments or {}).items() if v is not None}
    unknown = sorted(set(given) - set(OPERATIONS[operation]))
    if unknown:
        accepted = ", ".join(OPERATIONS[operation]) or "none"
        raise InvalidArgumentError(
            f"{operation} does not take {', '.join(unknown)}; accepted arguments: {accepted}")
    if operation in ("merge_adjacent_files", "rewrite_data_files", "flush_inlined_data"):
        schema, table = given.pop("schema", None), given.pop("table", None)
        return getattr(lake, operation)(schema, table, **given)
    return getattr(lake, operation)(**given)


def post_commit(lake: SparkLake, schema: str, table: str,
                operations: Sequence[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A model's ``post_commit_maintenance``: table operations, in the order given.

    Each entry is an operation name, or a one-key mapping of the name to its arguments, e.g.
    ``{"merge_adjacent_files": {"max_compacted_files": 10}}``.
    """
    if isinstance(operations, str):
        operations = [operations]
    out = []
    for entry in operations:
        if isinstance(entry, Mapping):
            if len(entry) != 1:
                raise InvalidArgumentError(
                    "each post_commit_maintenance entry is an operation name or a mapping of "
                    f"one operation name to its arguments; got {dict(entry)!r}")
            name, args = next(iter(entry.items()))
            args = dict(args or {})
        else:
            name, args = str(entry), {}
        if name not in TABLE_OPERATIONS:
            raise InvalidArgumentError(
                f"post_commit_maintenance: unknown or lake-wide operation {name!r}; accepted: "
                f"{', '.join(TABLE_OPERATIONS)}")
        args.update(schema=schema, table=table)
        out.append(as_dict(run(lake, name, args)))
    return out


def as_dict(result: Any) -> dict[str, Any]:
    """A result dataclass as plain data, with its one-line summary."""
    data = dataclasses.asdict(result)
    data["summary"] = result.summary()
    return data


__all__ = ["OPERATIONS", "TABLE_OPERATIONS", "as_dict", "post_commit", "run"]
