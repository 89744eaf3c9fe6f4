"""Spark SQL text for the expressions a read builds, and projections of many of them in a
constant number of py4j calls.

A read of a table shapes every column of every group of files (types promoted, nested fields
matched by id, defaults for added columns, DuckDB's Parquet encodings decoded). Built with
PySpark's ``Column`` API, each ``F.col``, ``cast``, ``alias`` or ``getField`` is a py4j round
trip and each list of columns one more per element: a change feed over a few schema versions
made thousands of calls (about 0.1 ms each, plus the JVM's work per call) before Spark ran
anything. As SQL text the whole projection crosses to the JVM as one string
(:func:`select`) and is parsed there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DataType, DecimalType, MapType, StructType

if TYPE_CHECKING:  # annotations only: loading the adapter does not import pyarrow
    import pyarrow as pa

# Joins the expressions of a projection into the one string sent to the JVM; an expression
# that holds it (it cannot come from a catalog name or value in practice) falls back to
# PySpark's per-element conversion.
_SEPARATOR = "\x00"
_JAVA: dict[int, tuple[Any, Any]] = {}


def ident(name: str) -> str:
    """A column or field name as a quoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def split_identifier(text: str) -> list[str]:
    """Spark's multipart identifier text (`` `a.b`.`c` `` or ``a.b``) into its parts."""
    parts, current, quoted, i = [], [], False, 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted and i + 1 < len(text) and text[i + 1] == "`":
                current.append("`")
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def string(text: str) -> str:
    """A string literal that means the same whatever ``spark.sql.parser.escapedStringLiterals``
    says: text with a quote, a backslash or a control character is spelled as UTF-8 bytes."""
    if "'" in text or "\\" in text or any(ord(ch) < 32 for ch in text):
        return f"CAST(X'{text.encode().hex()}' AS STRING)"
    return f"'{text}'"


def literal(value: Any) -> str:
    """A Python value as SQL text, to be cast to its column's type by the caller."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "'NaN'"
        if math.isinf(value):
            return "'Infinity'" if value > 0 else "'-Infinity'"
        return f"'{value!r}'"  # a string cast to DOUBLE parses the shortest repr exactly
    if isinstance(value, Decimal):
        return f"'{value}'"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"X'{bytes(value).hex()}'"
    return string(str(value))


def type_sql(data_type: DataType) -> str:
    """A Spark type as DDL text (struct field names quoted, unlike ``simpleString``)."""
    if isinstance(data_type, StructType):
        fields = ", ".join(f"{ident(f.name)}: {type_sql(f.dataType)}" for f in data_type.fields)
        return f"STRUCT<{fields}>"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{type_sql(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{type_sql(data_type.keyType)}, {type_sql(data_type.valueType)}>"
    if isinstance(data_type, DecimalType):
        return f"DECIMAL({data_type.precision}, {data_type.scale})"
    return data_type.simpleString()


def cast(expr: str, data_type: DataType | str) -> str:
    target = data_type if isinstance(data_type, str) else type_sql(data_type)
    return f"CAST({expr} AS {target})"


def field(expr: str, name: str) -> str:
    """A struct field of ``expr``."""
    return f"({expr}).{ident(name)}"


def null_or(expr: str, value: str) -> str:
    """``value``, or NULL where ``expr`` (a struct being rebuilt) is NULL."""
    return f"CASE WHEN ({expr}) IS NULL THEN NULL ELSE {value} END"


def java_seq(spark: SparkSession, items: Sequence[str]) -> Any:
    """A Scala ``Seq[String]`` of ``items`` in about three py4j calls (py4j converts a
    Python list one element per round trip). ``None`` if an item holds the separator."""
    if any(_SEPARATOR in item for item in items):
        return None
    context = spark.sparkContext
    jvm = context._jvm  # noqa: SLF001 - no public API takes a Java array
    assert jvm is not None  # set while the SparkContext is alive
    classes = _JAVA.get(id(context))
    if classes is None or classes[0] is not jvm:
        splitter = jvm.java.util.regex.Pattern.compile(_SEPARATOR)
        classes = _JAVA[id(context)] = (jvm, (splitter, jvm.scala.collection.immutable.ArraySeq))
    splitter, array_seq = classes[1]
    return array_seq.unsafeWrapArray(splitter.split(_SEPARATOR.join(items), -1))


def java_class(spark: SparkSession, name: str) -> Any:
    """The JVM class of fully qualified ``name``, for its constructors and static methods, with
    no py4j call: ``jvm.org.apache.hadoop.fs.Path`` asks the JVM about each package on the
    way, and the JVM looks for a class of every such name in each of Spark's 280 jars before
    it answers (1-2 ms per name, every time)."""
    gateway = spark.sparkContext._gateway  # noqa: SLF001 - py4j's client, for JavaClass
    assert gateway is not None  # set while the SparkContext is alive
    return JavaClass(name, gateway._gateway_client)  # noqa: SLF001


def select(df: DataFrame, exprs: Sequence[str]) -> DataFrame:
    """``df.selectExpr(*exprs)``, with the expressions sent to the JVM as one string."""
    seq = java_seq(df.sparkSession, exprs) if len(exprs) > 2 else None
    if seq is None:
        return df.selectExpr(*exprs)
    return DataFrame(df._jdf.selectExpr(seq), df.sparkSession)  # noqa: SLF001


def broadcastable(df: DataFrame) -> bool:
    """Whether Spark's size estimate of ``df`` (exact for a cache it has filled) is within
    ``spark.sql.autoBroadcastJoinThreshold``: the size below which Spark broadcasts a join
    side of its own accord. A join hint that names the side to broadcast when this holds
    keeps Spark from broadcasting the other side instead, when an estimate from file sizes
    and projected columns makes that one look smaller."""
    limit = df.sparkSession._jsparkSession.sessionState().conf() \
        .autoBroadcastJoinThreshold()  # noqa: SLF001 - no public API gives the parsed size
    return limit >= 0 and size_in_bytes(df) <= limit


def size_in_bytes(df: DataFrame) -> int:
    """Spark's size estimate of ``df``'s rows: exact for a cache it has filled, else from file
    sizes and column widths."""
    size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()  # noqa: SLF001
    return int(str(size))  # a Scala BigInt, converted or not by py4j


def max_result_size(spark: SparkSession) -> int:
    """``spark.driver.maxResultSize`` in bytes (0: unbounded): the most a collect may bring to
    the driver; Spark fails the job beyond it."""
    # the session's configuration holds the context's (getConf() would copy all of it)
    text = spark.conf.get("spark.driver.maxResultSize", "1g") or "1g"
    parse = java_class(spark, "org.apache.spark.network.util.JavaUtils").byteStringAsBytes
    return int(parse(text))


def collect_within_result_size(df: DataFrame) -> pa.Table | None:
    """``df.toArrow()``, or ``None`` when its rows are more than ``spark.driver.maxResultSize``
    lets the driver collect (Spark stops the job as soon as they are)."""
    try:
        return df.toArrow()
    except Exception as exc:  # py4j's error, or PySpark's wrapping of it where it converts
        if "spark.driver.maxResultSize" in str(exc):
            return None
        raise


def cached(df: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``df`` persisted (unpersist this one), and a DataFrame that reads that cache directly.

    PySpark analyses a DataFrame's whole plan again for every transformation on it; a MERGE
    source (a dbt snapshot's staging query, an incremental model) and the target scan make
    plans whose analysis costs 0.1-0.3 s each time. The second frame's plan is the cache's
    ``InMemoryRelation`` alone (Spark's ``withCachedData``), with the same output columns, so
    further transformations analyse a leaf. Spark evaluates the cache once, as it would have.

    These caches live for one statement and are read once or twice, so their columns are
    not compressed (:func:`_uncompressed_session`) unless Spark expects them to be large.
    """
    spark = df.sparkSession
    dataset = java_class(spark, "org.apache.spark.sql.classic.Dataset")
    session = _uncompressed_session(df)
    if session is not None:
        # the same analysed plan, cached by a session whose configuration differs in that
        # setting alone; the cache is Spark's shared one, so this session reads it as its own
        df = DataFrame(dataset.ofRows(session, df._jdf.queryExecution().analyzed()),  # noqa: SLF001
                       spark)
    persisted = df.persist(StorageLevel.MEMORY_AND_DISK)
    plan = persisted._jdf.queryExecution().withCachedData()  # noqa: SLF001
    # no public API rebases a DataFrame
    jdf = dataset.ofRows(spark._jsparkSession, plan)  # noqa: SLF001
    return persisted, DataFrame(jdf, spark)


def _uncompressed_session(df: DataFrame) -> Any:
    """A clone of ``df``'s JVM session that caches columns uncompressed, or ``None`` when the
    session already does, or Spark estimates ``df`` above :data:`UNCOMPRESSED_CACHE_BYTES`.

    Spark compresses cached columns by default (``spark.sql.inMemoryColumnarStorage.
    compressed``): it gathers statistics for every value to choose an encoding, which took
    40% of the job that fills a 200,000-row MERGE source (0.3 s of 0.78 on a 2-core
    machine), for half the memory. A cache read once or twice before it is dropped does not
    win that back unless memory is short. The setting is read from the session that caches,
    when the cache is filled; a clone of the session (a few milliseconds) carries it for this
    cache alone, where setting it on the user's session would change it for every thread
    sharing that session.
    """
    spark = df.sparkSession
    if (spark.conf.get(_COMPRESSED, "true") or "true").lower() != "true" or \
            size_in_bytes(df) > UNCOMPRESSED_CACHE_BYTES:
        return None
    session = spark._jsparkSession.cloneSession()  # noqa: SLF001 - no public API clones
    session.conf().set(_COMPRESSED, "false")
    return session


_COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"
# Spark's size estimate (file sizes and column widths, often below the rows' real size)
# above which a statement's cache keeps Spark's compression: its memory may then be short.
UNCOMPRESSED_CACHE_BYTES = 1024 ** 3
