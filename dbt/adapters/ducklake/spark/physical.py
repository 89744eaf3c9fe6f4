"""Columns Spark cannot write as they are, carried through compaction in their Parquet form.

DuckDB 1.5.5 stores UUID as FIXED_LEN_BYTE_ARRAY(16) with the UUID logical type, TIME and
TIMETZ as INT64 TIME(MICROS) (TIMETZ shifted to UTC), TIMESTAMP_NS as INT64 TIMESTAMP(NANOS),
UTINYINT..UBIGINT as INT32/INT64 with the UINT_8..UINT_64 converted types and (U)HUGEINT as
a plain DOUBLE. Spark has none of these types, but flush and compaction never need the values
as such: they move rows. So such a column is

* read in its *physical form*, the Spark type the scan already requests from Parquet
  (``spark_type(physical=True)``: the 16 bytes, the INT64, the DOUBLE; the unsigned integers
  as Spark's exact wider type), never converted to a logical form and back;
* written as the bare physical type (:func:`write_type`, :func:`written`: an unsigned value
  becomes its two's-complement bit pattern), whose data pages are the bytes DuckDB writes;
* then given DuckDB's annotation in the footer (:func:`..lake.parquet_footer.retype_file`).

Spark cannot write a FIXED_LEN_BYTE_ARRAY other than a decimal, so files with a uuid column
are written by pyarrow on the driver instead (:func:`.write.stage_arrow`).

Inlined rows (a flush) take their physical form on the driver (:func:`physical_value`), with
DuckDB's own conversions: (U)HUGEINT to DOUBLE as DuckDB's cast rounds, TIMETZ to UTC
microseconds modulo a day. Inlined rows that are read, not flushed, take the logical form of
``spark_type(column)`` instead (:func:`to_spark_value`: a TIME as text, a HUGEINT as a
decimal); both walk a nested value the same way (:func:`walk_value`).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StructField,
    StructType,
)

from ..lake.errors import UnsupportedTypeError
from ..lake.inlining.codec import parquet_decoder
from ..lake.models import ColumnInfo
from ..lake.types import INTEGER_TYPES
from ..lake.value_text import time_ns, time_text
from . import expressions as sql
from .types import FIELD_ID_KEY, convert, map_leaves, spark_type

# The Parquet physical type Spark writes for each such DuckLake type (uuid: see the module
# docstring).
WRITTEN_AS: dict[str, DataType] = {
    "uuid": BinaryType(),
    "time": LongType(),
    "timetz": LongType(),
    "timestamp_ns": LongType(),
    "int128": DoubleType(),
    "uint128": DoubleType(),
    "uint8": IntegerType(),
    "uint16": IntegerType(),
    "uint32": IntegerType(),
    "uint64": LongType(),
}

# Types no file of ours can carry, and why (the table is skipped with this reason).
UNWRITABLE = {
    "interval": "Spark cannot hold DuckDB's INTERVAL (months, days and time together)",
    "time_ns": "DuckDB 1.5.5 can neither write TIME_NS to Parquet nor read it back from a "
               "Parquet file",
    "variant": "writing DuckDB's VARIANT Parquet encoding is not supported",
    "geometry": "writing DuckDB's GEOMETRY Parquet encoding is not supported",
}

_MASK64 = 2**64 - 1
_TWO_64 = 18446744073709551616.0


def needs_physical(columns: Sequence[ColumnInfo]) -> bool:
    """Whether the table has a column to carry in its Parquet form; raises
    :class:`UnsupportedTypeError` for a type no file of ours can carry."""
    found = False
    for column in columns:
        for node in column.walk():
            name = node.type.name
            if name in UNWRITABLE:
                raise UnsupportedTypeError(
                    f"column {column.column_name!r} has type {node.type}: {UNWRITABLE[name]}")
            found = found or name in WRITTEN_AS
    return found


def needs_arrow(columns: Sequence[ColumnInfo]) -> bool:
    """Whether a file of the table must be written by pyarrow (a uuid anywhere)."""
    return any(node.type.name == "uuid" for column in columns for node in column.walk())


def write_type(column: ColumnInfo, field_ids: bool = True) -> DataType:
    """The Spark type written for a column, physical where :data:`WRITTEN_AS` says so."""
    kind = column.type.name
    if kind == "struct":
        return StructType([
            StructField(child.column_name, write_type(child, field_ids), True,
                        {FIELD_ID_KEY: child.column_id} if field_ids else {})
            for child in column.children])
    if kind == "list":
        return ArrayType(write_type(column.children[0], field_ids), True)
    if kind == "map":
        key, value = column.children
        return MapType(write_type(key, field_ids), write_type(value, field_ids), True)
    if kind in WRITTEN_AS:
        return WRITTEN_AS[kind]
    return spark_type(column, field_ids=field_ids)


def _reinterpreted(column: ColumnInfo) -> bool:
    return any(node.type.name.startswith("uint") and node.type.name != "uint128"
               for node in column.walk())


def written(expr: str, column: ColumnInfo) -> str:
    """SQL text of the physical value to write from a value in its physical form: unsigned
    integers become the signed integer of the same bits (what DuckDB's INT32/INT64 pages
    hold); the rest is as read."""
    return map_leaves(expr, column, _bits, _reinterpreted)


def _bits(expr: str, name: str) -> str:
    """An unsigned integer of lake type ``name`` as the signed integer of the same bits."""
    if name in ("uint8", "uint16"):
        return sql.cast(expr, "INT")
    if name == "uint32":
        return f"CAST(CASE WHEN {expr} >= {2**31} THEN {expr} - {2**32} ELSE {expr} END AS INT)"
    # uint64, carried as decimal(20,0)
    return f"CAST(CASE WHEN {expr} >= {2**63}BD THEN {expr} - {2**64}BD ELSE {expr} END " \
        "AS BIGINT)"


def sort_key(expr: Column, column: ColumnInfo) -> Column:
    """An expression over a :func:`written` value that sorts as the column's values do: an
    unsigned integer's bit pattern with its top bit flipped (the rest sort as written)."""
    if column.type.name == "uint32":
        return expr.bitwiseXOR(F.lit(-(2**31)))
    if column.type.name == "uint64":
        return expr.bitwiseXOR(F.lit(-(2**63)))
    return expr


def leaves(columns: Sequence[ColumnInfo]) -> dict[tuple[str, ...], str]:
    """Parquet leaf path -> DuckLake type of every leaf written physically (the footer then
    gets DuckDB's annotation of that type); paths as Spark and pyarrow name them."""
    out: dict[tuple[str, ...], str] = {}

    def visit(column: ColumnInfo, path: tuple[str, ...]) -> None:
        kind = column.type.name
        if kind == "struct":
            for child in column.children:
                visit(child, path + (child.column_name,))
        elif kind == "list":
            visit(column.children[0], path + ("list", "element"))
        elif kind == "map":
            visit(column.children[0], path + ("key_value", "key"))
            visit(column.children[1], path + ("key_value", "value"))
        elif kind in WRITTEN_AS:
            out[path] = kind

    for column in columns:
        visit(column, (column.column_name,))
    return out


# --------------------------------------------------------------------------- physical values
def hugeint_double(value: int, kind: str = "int128") -> float:
    """The DOUBLE DuckDB 1.5.5 writes to Parquet for a HUGEINT or UHUGEINT: its cast adds the
    two 64-bit halves as doubles (rounding twice, unlike ``float(value)``), with a special
    case for small negative numbers. A result outside the type (a value within 2**73 of
    2**127) is refused: DuckDB writes it, but then cannot read its own file."""
    upper, lower = value >> 64, value & _MASK64
    if upper == -1:
        result = -float(_MASK64 - lower) - 1.0
    else:
        result = float(lower) + float(upper) * _TWO_64
    limit = 2.0**127 if kind == "int128" else 2.0**128
    if not -limit <= result < limit:
        raise UnsupportedTypeError(
            f"the {kind} value {value} is stored in Parquet as the DOUBLE {result!r}, which "
            f"is outside {kind}: DuckDB could not read the file back")
    return result


def physical_value(value: Any, column: ColumnInfo) -> Any:
    """A value decoded from the catalog by :func:`..lake.inlining.codec.parquet_decoder`, in
    the Python form of the column's physical Spark type (``spark_type(physical=True)``)."""
    return walk_value(value, column, _physical_leaf)


def physical_converter(column: ColumnInfo) -> Callable[[Any], Any]:
    """:func:`physical_value` for one column."""
    return lambda value: physical_value(value, column)


def _physical_leaf(value: Any, column: ColumnInfo) -> Any:
    kind = column.type.name
    if kind == "uuid":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        return (value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))).bytes
    if kind in ("time", "timetz", "timestamp_ns"):
        if not isinstance(value, int):
            raise TypeError(f"{kind} physical values are DuckDB's Parquet integers, not {value!r}")
        return value
    if kind in ("int128", "uint128"):
        return hugeint_double(int(value), kind)
    if kind == "uint64":
        return Decimal(int(value))
    if kind == "json" and not isinstance(value, str):
        return json.dumps(value)
    return value


def physical_literal(text: str | None, column: ColumnInfo) -> str:
    """SQL text of a constant (a column default, a value from a hive path) of a scalar column
    of a :data:`WRITTEN_AS` type, in its physical form."""
    target = spark_type(column, physical=True)
    if text is None:
        return sql.cast("NULL", target)
    value = physical_value(parquet_decoder(column, "sqlite")(text), column)
    return sql.cast(sql.literal(value), target)


def promote(expr: str, old: ColumnInfo, new: ColumnInfo) -> str:
    """SQL text of a physical value written as scalar column ``old``, as the physical value of
    its promoted type ``new``: the value DuckDB reads (and its compaction would write) for the
    old file."""
    target = spark_type(new, physical=True)
    if old.type.name in ("int128", "uint128"):  # only ever promoted to a float
        return sql.cast(expr, target)
    value = convert(expr, old)
    if new.type.name not in ("int128", "uint128"):
        return sql.cast(value, target)
    if old.type.name in INTEGER_TYPES:  # negative: DuckDB's cast rounds -(-v - 1) - 1
        long = sql.cast(value, "BIGINT")
        return f"CASE WHEN {long} < 0 THEN -(CAST(-({long} + 1) AS DOUBLE)) - 1.0D " \
            f"ELSE CAST({long} AS DOUBLE) END"
    return sql.cast(value, "DOUBLE")  # below 2**64: DuckDB's cast is exact rounding


# ---------------------------------------------------------------------------- catalog values
def walk_value(value: Any, column: ColumnInfo, leaf: Callable[[Any, ColumnInfo], Any]) -> Any:
    """A value decoded from the catalog (a struct as a dict, or a tuple in field order; a map
    as a dict or as pairs) in the nested Python forms Spark takes (a struct as a tuple, a
    list as a list, a map as a dict), with ``leaf`` applied to every scalar that is not
    NULL: the one walk :func:`to_spark_value` and :func:`physical_value` share."""
    if value is None:
        return None
    kind = column.type.name
    if kind == "struct":
        if isinstance(value, dict):
            return tuple(walk_value(value.get(c.column_name), c, leaf) for c in column.children)
        return tuple(walk_value(v, c, leaf) for v, c in zip(value, column.children))
    if kind == "list":
        return [walk_value(v, column.children[0], leaf) for v in value]
    if kind == "map":
        key, item = column.children
        pairs = value.items() if isinstance(value, dict) else value
        return {walk_value(k, key, leaf): walk_value(v, item, leaf) for k, v in pairs}
    return leaf(value, column)


# Types whose decoded catalog values Spark takes as they are.
_AS_IS = frozenset({"boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "float32", "float64", "decimal", "varchar", "blob", "date", "timestamp",
                    "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamptz"})


def spark_converter(column: ColumnInfo) -> Callable[[Any], Any]:
    """:func:`to_spark_value` for one column; the identity where it would change nothing."""
    if column.type.name in _AS_IS:
        return _identity
    return lambda value: to_spark_value(value, column)


def _identity(value: Any) -> Any:
    return value


def to_spark_value(value: Any, column: ColumnInfo) -> Any:
    """A value decoded from the catalog, in the Python form Spark expects for the column
    (its logical form, ``spark_type(column)``; :func:`physical_value` gives the physical form)."""
    return walk_value(value, column, _spark_leaf)


def _spark_leaf(value: Any, column: ColumnInfo) -> Any:
    kind = column.type.name
    if kind in ("time", "timetz", "time_ns") and isinstance(value, dt.time):
        return _time_value_text(value, kind == "timetz")
    if kind in ("uuid", "time", "timetz", "time_ns"):
        return str(value)
    if kind in ("int128", "uint128", "uint64"):
        return Decimal(int(value))
    if kind == "json" and not isinstance(value, str):
        return json.dumps(value)
    return value


def _time_value_text(value: dt.time, zone: bool) -> str:
    """A TIME as the text Parquet-backed rows get (:func:`.types.convert`): DuckDB's
    ``CAST(t AS VARCHAR)`` (:func:`.value_text.time_text`); a TIMETZ is shifted to UTC and
    gets ``+00``."""
    if zone and value.tzinfo is not None:
        offset = value.utcoffset() or dt.timedelta(0)
        moment = dt.datetime.combine(dt.date(2000, 1, 1), value.replace(tzinfo=None)) - offset
        value = moment.time()
    text = time_text(time_ns(value))
    return text + "+00" if zone else text


__all__ = [
    "UNWRITABLE",
    "WRITTEN_AS",
    "physical_converter",
    "physical_literal",
    "physical_value",
    "hugeint_double",
    "leaves",
    "needs_arrow",
    "needs_physical",
    "promote",
    "sort_key",
    "spark_converter",
    "to_spark_value",
    "walk_value",
    "write_type",
    "written",
]
