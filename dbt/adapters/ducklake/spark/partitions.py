"""Partition keys as Spark expressions, so Spark can lay a write out one partition per file.

Spark groups rows by one hidden column, a hash of all key values of the row, and writes one
directory per group. The driver later labels each file with DuckDB's partition values (the
text of the transform results, :func:`..lake.partitions.partition_value`) from one of its
rows, and moves it to its hive path. Calendar fields of ``timestamptz`` columns are taken in
UTC, independent of the session time zone. Buckets run DuckLake's Murmur3 in an Arrow UDF:
Spark's own ``hash()`` is a different function.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from ..lake import murmur3
from ..lake.partitions import PartitionKey
from ..lake.types import LakeType

if TYPE_CHECKING:
    from pyspark.sql._typing import UserDefinedFunctionLike

PARTITION_COLUMN = "__ducklake_partition"
_DAY_US = 86_400_000_000
_HOUR_US = 3_600_000_000


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _bucket(lake_type: str, count: int) -> UserDefinedFunctionLike:
    """An Arrow UDF: the bucket of each value of a column of ``lake_type``.

    The hashing module travels by value, so workers need only numpy and pyarrow (importing
    the package would pull in dbt on every executor).
    """
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(murmur3)
    parsed = LakeType.parse(lake_type)
    kind, precision, scale = parsed.name, parsed.precision or 0, parsed.scale or 0
    bucket_array_of = murmur3.bucket_array_of

    def buckets(values: pa.Array) -> pa.Array:
        return bucket_array_of(values, kind, count, precision, scale)

    # pyspark's stubs require functionType; at run time it is inferred from the type hints
    return F.arrow_udf(buckets, IntegerType())  # type: ignore[call-overload]


def key_expression(key: PartitionKey) -> Column:
    """The transform of one key over the (conformed) column of the same name."""
    name = key.column.column_name
    col = F.col(_quoted(name))
    kind = key.column.type.name
    if key.transform == "identity":
        return col
    if key.transform == "bucket":
        assert key.bucket_count is not None
        return _bucket(key.column.column_type, key.bucket_count)(col)
    if kind == "timestamptz":  # an instant: take the calendar fields in UTC
        us = f"unix_micros({_quoted(name)})"
        if key.transform == "hour":
            return F.expr(f"div(pmod({us}, {_DAY_US}L), {_HOUR_US}L)")
        date = F.expr(f"date_from_unix_date(CAST(div({us} - pmod({us}, {_DAY_US}L), "
                      f"{_DAY_US}L) AS INT))")
    else:
        date = col
    if key.transform == "year":
        return F.year(date)
    if key.transform == "month":
        return F.month(date)
    if key.transform == "day":
        return F.dayofmonth(date)
    if kind == "date":
        return F.when(col.isNotNull(), F.lit(0))
    return F.hour(col)


def layout_column(keys: Sequence[PartitionKey]) -> Column:
    """One value per distinct tuple of key values: the directory Spark groups a row into.

    A digest of the JSON of the values keeps the directory name short and free of anything a
    path would need to escape; NULLs are left out of the JSON under their own field name, so
    ``(NULL, 1)`` and ``(1, NULL)`` differ.
    """
    values = F.struct(*[key_expression(k).alias(f"k{k.index}") for k in keys])
    return F.sha2(F.to_json(values), 256)


__all__ = ["PARTITION_COLUMN", "key_expression", "layout_column"]
