"""DuckLake column types <-> Spark SQL types, and reading DuckDB's Parquet encodings.

Every mapping below was checked against files written by DuckDB 1.5.5 and read by Spark 4.3
(see the README's type table). Where Spark cannot read DuckDB's Parquet type directly, the
scan requests the *physical* type and a post-read expression converts it
(:func:`needs_conversion`, :func:`convert`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VarcharType,
)

from ..lake.errors import UnsupportedTypeError
from ..lake.models import ColumnInfo, ColumnSpec
from . import expressions as sql

FIELD_ID_KEY = "parquet.field.id"
"""StructField metadata key Spark reads and writes as the Parquet field id."""

try:  # Spark 4.0+
    from pyspark.sql.types import VariantType
except ImportError:  # pragma: no cover
    VariantType = None  # type: ignore[assignment,misc]

# The lake types that map to a Spark type both ways: a Spark column of the type is created as
# the lake type, and a column of the lake type reads back as the same Spark type.
_BOTH_WAYS: dict[str, DataType] = {
    "boolean": BooleanType(),
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float32": FloatType(),
    "float64": DoubleType(),
    "date": DateType(),
    "timestamp": TimestampNTZType(),
    "timestamptz": TimestampType(),
    "varchar": StringType(),
    "blob": BinaryType(),
}

# Reading: every scalar lake type Spark can read. Those without a Spark type of their own are
# read as one that holds all their values (an unsigned integer as the next wider signed one),
# as text, or as bytes; a table created from such a column gets the lake type of the Spark
# type (a uint8 column, read as SMALLINT, is created as int16).
_SCALAR_TO_SPARK: dict[str, DataType] = {
    **_BOTH_WAYS,
    "uint8": ShortType(),
    "uint16": IntegerType(),
    "uint32": LongType(),
    "uint64": DecimalType(20, 0),
    "int128": DecimalType(38, 0),
    "uint128": DecimalType(38, 0),
    "time": StringType(),
    "time_ns": StringType(),
    "timetz": StringType(),
    "timestamp_s": TimestampNTZType(),
    "timestamp_ms": TimestampNTZType(),
    "timestamp_ns": TimestampNTZType(),
    "json": StringType(),
    "uuid": StringType(),
    "geometry": BinaryType(),
}
if VariantType is not None:
    _SCALAR_TO_SPARK["variant"] = VariantType()

# What Spark must request from DuckDB's Parquet when it differs from the logical mapping.
_PHYSICAL: dict[str, DataType] = {
    "int128": DoubleType(),
    "uint128": DoubleType(),
    "time": LongType(),
    "timetz": LongType(),
    "timestamp_ns": LongType(),
    "uuid": BinaryType(),
}

# Writing: the one lake type each scalar Spark type is created as (decimals carry their
# precision and scale, see :func:`lake_type`). Spark's CHAR(n), VARCHAR(n) and the NULL type
# (an untyped ``NULL AS c``) have no lake type of their own: they become varchar.
_SPARK_TO_LAKE: dict[type[DataType], str] = {
    **{type(spark): lake for lake, spark in _BOTH_WAYS.items()},
    CharType: "varchar",
    VarcharType: "varchar",
    NullType: "varchar",
}

UNSUPPORTED = {
    "interval": "Spark cannot hold DuckDB's INTERVAL (months, days and time together)",
}


def spark_type(column: ColumnInfo, physical: bool = False, field_ids: bool = False) -> DataType:
    """The Spark type of a column tree (``physical``: the type to request from Parquet)."""
    kind = column.type
    if kind.name in UNSUPPORTED:
        raise UnsupportedTypeError(
            f"column {column.column_name!r} has type {kind}: {UNSUPPORTED[kind.name]}. "
            "Cast it in DuckDB (for example to VARCHAR) or leave it out of the query."
        )
    if kind.name == "struct":
        return StructType([
            StructField(child.column_name, spark_type(child, physical, field_ids), True,
                        {FIELD_ID_KEY: child.column_id} if field_ids else {})
            for child in column.children
        ])
    if kind.name == "list":
        (element,) = column.children
        return ArrayType(spark_type(element, physical, field_ids), True)
    if kind.name == "map":
        key, value = column.children
        return MapType(spark_type(key, physical, field_ids),
                       spark_type(value, physical, field_ids), True)
    if kind.name == "decimal":
        return DecimalType(kind.precision or 18, kind.scale or 0)
    if physical and kind.name in _PHYSICAL:
        return _PHYSICAL[kind.name]
    try:
        return _SCALAR_TO_SPARK[kind.name]
    except KeyError:
        raise UnsupportedTypeError(
            f"column {column.column_name!r} has type {kind}, which Spark cannot read"
        ) from None


def table_schema(columns: Sequence[ColumnInfo]) -> StructType:
    return StructType([
        StructField(c.column_name, spark_type(c), c.nulls_allowed) for c in columns
    ])


def needs_conversion(column: ColumnInfo) -> bool:
    return any(node.type.name in _PHYSICAL for node in column.walk())


def convert(expr: str, column: ColumnInfo, depth: int = 0) -> str:
    """SQL text turning a value read with :func:`spark_type` ``physical=True`` into its
    logical form."""
    return map_leaves(expr, column, _logical, needs_conversion, depth)


def _logical(expr: str, name: str) -> str:
    """SQL text of a scalar value of lake type ``name``, read as its physical type, in its
    logical form."""
    if name in ("int128", "uint128"):
        return sql.cast(expr, "DECIMAL(38, 0)")
    if name in ("time", "timetz"):
        text = _time_text(expr)
        return f"concat({text}, '+00')" if name == "timetz" else text
    if name == "timestamp_ns":
        # exact integer floor division (a double division loses digits beyond 2**53)
        micros = f"CAST(floor(CAST({expr} AS DECIMAL(20, 0)) / 1000) AS BIGINT)"
        return f"timestampadd(MICROSECOND, {micros}, " \
            "CAST('1970-01-01 00:00:00' AS TIMESTAMP_NTZ))"
    if name == "uuid":
        h = f"lower(hex({expr}))"
        return sql.null_or(expr, f"concat_ws('-', substring({h}, 1, 8), substring({h}, 9, 4), "
                                 f"substring({h}, 13, 4), substring({h}, 17, 4), "
                                 f"substring({h}, 21, 12))")
    return expr


def map_leaves(expr: str, column: ColumnInfo, leaf: Callable[[str, str], str],
               changes: Callable[[ColumnInfo], bool], depth: int = 0) -> str:
    """SQL text of ``expr`` with ``leaf(value, lake type name)`` applied to each scalar value
    in it, through structs (a NULL struct stays NULL), lists and maps; a column (or a map's
    keys) for which ``changes`` is false is left as it is. ``depth`` keeps the lambda
    variables of nested lists and maps apart.

    The one walk over a nested value that reading (:func:`convert`) and writing
    (:func:`.physical.written`) both take, each with its own ``leaf``."""
    if not changes(column):
        return expr
    name = column.type.name
    if name == "struct":
        fields = ", ".join(
            f"{map_leaves(sql.field(expr, c.column_name), c, leaf, changes, depth)} AS "
            f"{sql.ident(c.column_name)}" for c in column.children)
        return sql.null_or(expr, f"struct({fields})")
    if name == "list":
        (element,) = column.children
        x = f"__x{depth}"
        return f"transform({expr}, {x} -> {map_leaves(x, element, leaf, changes, depth + 1)})"
    if name == "map":
        key, value = column.children
        k, v = f"__k{depth}", f"__v{depth}"
        out = f"transform_values({expr}, ({k}, {v}) -> " \
            f"{map_leaves(v, value, leaf, changes, depth + 1)})"
        if changes(key):
            out = f"transform_keys({out}, ({k}, {v}) -> " \
                f"{map_leaves(k, key, leaf, changes, depth + 1)})"
        return out
    return leaf(expr, name)


def _time_text(micros: str) -> str:
    """``HH:MM:SS[.ffffff]`` (trailing zeros trimmed) from microseconds since midnight."""
    seconds = f"floor(({micros}) / 1000000)"
    frac = f"(({micros}) - {seconds} * 1000000)"
    hms = (f"concat(lpad(CAST(floor({seconds} / 3600) AS STRING), 2, '0'), ':', "
           f"lpad(CAST(floor(({seconds} % 3600) / 60) AS STRING), 2, '0'), ':', "
           f"lpad(CAST({seconds} % 60 AS STRING), 2, '0'))")
    fraction = f"regexp_replace(lpad(CAST({frac} AS STRING), 6, '0'), '0+$', '')"
    return f"CASE WHEN ({micros}) IS NULL THEN NULL WHEN {frac} = 0 THEN {hms} " \
        f"ELSE concat({hms}, '.', {fraction}) END"


# ---------------------------------------------------------------------------------- writing
def lake_type(data_type: DataType, column: str) -> str:
    """The DuckLake type string for a Spark type of a column being created.

    Not the inverse of :func:`spark_type`, on purpose: reading maps several lake types onto
    one Spark type (int16 and uint8 both read as SMALLINT; varchar, json, uuid and time as
    STRING), and writing creates the one lake type that reads back as the same Spark type
    (SMALLINT as int16, STRING as varchar). The types both directions share are stated once,
    in ``_BOTH_WAYS``.
    """
    for spark_class, lake in _SPARK_TO_LAKE.items():
        if isinstance(data_type, spark_class):
            return lake
    if isinstance(data_type, DecimalType):
        return f"decimal({data_type.precision},{data_type.scale})"
    if VariantType is not None and isinstance(data_type, VariantType):
        raise UnsupportedTypeError(
            f"column {column!r} is a VARIANT; writing Spark variants to DuckLake is not "
            "supported yet. Serialise it with to_json() first."
        )
    if isinstance(data_type, (StructType, ArrayType, MapType)):
        return {StructType: "struct", ArrayType: "list", MapType: "map"}[type(data_type)]
    raise UnsupportedTypeError(
        f"column {column!r} has Spark type {data_type.simpleString()}, which DuckLake cannot "
        "store; cast it to a supported type (see the README's type table)"
    )


def column_specs(schema: StructType, keep_nullability: bool = True,
                 not_null: Iterable[str] = ()) -> list[ColumnSpec]:
    """Column specs for ``CREATE TABLE`` from a Spark schema (nested types included).

    ``keep_nullability=False`` (tables built from a query) makes every column nullable, as
    DuckDB's CTAS does, except those named in ``not_null`` (a model contract).
    """
    required = {n.lower() for n in not_null}

    def spec(name: str, data_type: DataType, nullable: bool) -> ColumnSpec:
        kind = lake_type(data_type, name)
        children: tuple[ColumnSpec, ...] = ()
        if isinstance(data_type, StructType):
            children = tuple(spec(f.name, f.dataType, True) for f in data_type.fields)
        elif isinstance(data_type, ArrayType):
            children = (spec("element", data_type.elementType, True),)
        elif isinstance(data_type, MapType):
            children = (spec("key", data_type.keyType, False),
                        spec("value", data_type.valueType, True))
        return ColumnSpec(name, kind, nullable, children)

    return [spec(f.name, f.dataType,
                 (f.nullable if keep_nullability else True) and f.name.lower() not in required)
            for f in schema.fields]


def write_type(column: ColumnInfo, field_ids: bool = True) -> DataType:
    """The Spark type to write for a column, with field ids on struct children."""
    if column.type.name in ("uuid", "time", "timetz", "time_ns", "int128", "uint128",
                            "timestamp_ns", "interval", "variant", "geometry", "uint64",
                            "uint32", "uint16", "uint8"):
        raise UnsupportedTypeError(
            f"column {column.column_name!r} has type {column.type}; writing it from Spark is "
            "not supported. Write through DuckDB, or change the column's type."
        )
    return spark_type(column, physical=False, field_ids=field_ids)
