"""Columns speak Spark type names (what queries return and models declare)."""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.column import SparkColumn


@dataclass
class DuckLakeColumn(SparkColumn):
    pass
