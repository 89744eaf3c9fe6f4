"""Columns speak Spark type names (what queries return and models declare)."""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.column import SparkColumn

from .lake.errors import DuckLakeError
from .lake.models import ColumnInfo
from .spark.types import spark_type

_INTEGERS = {"tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"}


@dataclass
class DuckLakeColumn(SparkColumn):
    def is_integer(self) -> bool:
        return self.dtype.lower() in _INTEGERS

    def is_numeric(self) -> bool:
        return self.dtype.lower().startswith(("decimal", "numeric", "dec("))

    def is_float(self) -> bool:
        return self.dtype.lower() in {"float", "double", "real"}

    def is_string(self) -> bool:
        dtype = self.dtype.lower()
        return dtype == "string" or dtype.startswith(("varchar", "char"))

    @classmethod
    def string_type(cls, size: int) -> str:
        return "string"

    def can_expand_to(self, other_column: SparkColumn) -> bool:  # type: ignore[override]
        """Never: a lake string has no length to widen (dbt would otherwise alter every
        string column of a snapshot to the type it already has, on every run)."""
        return False


def type_name(column: ColumnInfo) -> str:
    """A lake column's type as Spark names it (DuckLake's own name for a type Spark cannot
    hold, such as ``interval``)."""
    try:
        return spark_type(column).simpleString()
    except DuckLakeError:
        return column.column_type
