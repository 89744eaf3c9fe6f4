"""A dbt model contract's CHECK, PRIMARY KEY and UNIQUE constraints, as the lake enforces them.

dbt gives constraints on columns (``columns: [{name, constraints: [{type, expression}]}]``)
and on the model (``constraints: [{type, columns, expression}]``). NOT NULL is a column
property of the lake table (set and checked with the data, see ``table.sql``); foreign keys
are left to dbt (not enforced, as dbt-spark). The rest become
:class:`~.spark.constraints.TableConstraints`, which the model's write is checked against
over the rows it would leave in the table, before its commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dbt_common.exceptions import DbtRuntimeError

from .spark.constraints import Check, TableConstraints, Unique

ENFORCED = ("check", "primary_key", "unique")
LEFT_TO_DBT = ("not_null", "foreign_key", "custom")


def table_constraints(model: Mapping[str, Any], node: str) -> TableConstraints:
    """The constraints of ``model`` (dbt's node as the materialization sees it) the lake
    enforces; each unknown or incomplete one fails naming it."""
    checks: list[Check] = []
    unique: list[Unique] = []
    columns = model.get("columns") or {}
    for column_name, column in columns.items():
        for constraint in _get(column, "constraints") or []:
            _add(constraint, node, checks, unique, default_columns=[
                _get(column, "name") or column_name])
    for constraint in model.get("constraints") or []:
        _add(constraint, node, checks, unique, default_columns=[])
    return TableConstraints(tuple(checks), tuple(unique))


def _add(constraint: Any, node: str, checks: list[Check], unique: list[Unique],
         default_columns: Iterable[str]) -> None:
    kind = str(_get(constraint, "type") or "").lower()
    name = _get(constraint, "name") or None
    if kind in LEFT_TO_DBT:
        return
    if kind not in ENFORCED:
        raise DbtRuntimeError(
            f"{node}: constraint type {kind!r} is not known; accepted: "
            f"{', '.join(ENFORCED + LEFT_TO_DBT)}")
    if kind == "check":
        expression = (_get(constraint, "expression") or "").strip()
        if not expression:
            raise DbtRuntimeError(f"{node}: a check constraint needs an expression, e.g. "
                                  "expression: \"id > 0\"")
        checks.append(Check(expression, name))
        return
    cols = tuple(_get(constraint, "columns") or default_columns)
    if not cols:
        raise DbtRuntimeError(f"{node}: a model-level {kind} constraint needs columns, "
                              "e.g. columns: [id]")
    unique.append(Unique(tuple(c.strip('`"') for c in cols), kind == "primary_key", name))


def _get(obj: Any, key: str) -> Any:
    """A field of a dbt node part, whether dbt hands it as a dict or an object."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)
