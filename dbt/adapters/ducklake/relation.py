"""Relations render as one quoted Spark identifier, `` `schema.table` ``: the temp-view name
under which the connection registers the lake table before a statement runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.base.relation import BaseRelation, Policy
from dbt_common.exceptions import DbtRuntimeError


@dataclass
class DuckLakeQuotePolicy(Policy):
    database: bool = False
    schema: bool = False
    identifier: bool = False


@dataclass
class DuckLakeIncludePolicy(Policy):
    database: bool = False
    schema: bool = True
    identifier: bool = True


@dataclass(frozen=True, eq=False, repr=False)
class DuckLakeRelation(BaseRelation):
    quote_policy: Policy = field(default_factory=lambda: DuckLakeQuotePolicy())
    include_policy: Policy = field(default_factory=lambda: DuckLakeIncludePolicy())
    quote_character: str = "`"
    require_alias: bool = False

    def _is_exactish_match(self, field: Any, value: Any) -> bool:
        """Lake names are case-insensitive (as in DuckDB and Spark)."""
        current = self.path.get_part(field)
        if current is None or value is None:
            return current is value
        return str(current).lower() == str(value).lower()

    def render(self) -> str:
        schema = self.path.schema if self.include_policy.schema else None
        identifier = self.path.identifier if self.include_policy.identifier else None
        if schema and identifier:
            name = f"{schema}.{identifier}"
        else:
            name = identifier or schema or ""
        return "`" + name.replace("`", "``") + "`"

    def snapshot_name(self, version: int) -> str:
        """The rendering of this relation pinned to a snapshot (time travel)."""
        name = f"{self.schema}.{self.identifier}@v{int(version)}"
        return "`" + name.replace("`", "``") + "`"


def lake_name(relation: BaseRelation) -> tuple[str, str]:
    """``(schema, table)`` of a relation naming a lake table or view. dbt types both parts as
    optional; the relations it hands to writes and lookups always carry both."""
    schema, identifier = relation.schema, relation.identifier
    if schema is None or identifier is None:
        raise DbtRuntimeError(f"{relation!r} names no lake relation: it needs a schema and a name")
    return schema, identifier
