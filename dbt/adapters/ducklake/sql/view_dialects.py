"""A DuckLake view's query as Spark runs it.

DuckLake stores each view's SQL in the dialect it was written in (``ducklake_view.dialect``):
``spark`` for the views this adapter creates, ``duckdb`` for DuckDB's. Run as Spark SQL, a
DuckDB query can silently mean something else (``"name"`` is an identifier in DuckDB and a
string in Spark; lists start at 1 in DuckDB and at 0 in Spark), so a view in another dialect
is translated with sqlglot first, and one that cannot be translated faithfully fails with an
error naming the view, its dialect and the construct, never with different rows.

DuckDB binds a view's unqualified table names in the view's own schema, and writes the
lake's catalog qualifier as ``{DUCKLAKE_CATALOG}``; the translation does the same, so
the view reads the tables DuckDB's reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..lake.errors import UnsupportedViewError
from ..lake.models import ColumnInfo, ViewInfo

log = logging.getLogger("dbt.adapters.ducklake")

SPARK = "spark"
DUCKDB = "duckdb"
# how DuckDB writes a reference qualified by the lake's own catalog name (``lake.s.t``)
CATALOG_PLACEHOLDER = "{DUCKLAKE_CATALOG}"


# The columns of a lake table as DuckDB types (``{"id": "INTEGER"}``), ``None`` if the lake
# has no such table: what the translation knows of the tables a view reads.
Columns = Callable[[str, str], "dict[str, str] | None"]


def spark_query(view: ViewInfo, schema_name: str, columns: Columns | None = None) -> str:
    """The query of ``view`` (in schema ``schema_name``) as Spark SQL."""
    dialect = (view.dialect or SPARK).lower()
    if dialect == SPARK:
        return view.sql
    return translate(view.sql, dialect, schema_name, f"{schema_name}.{view.view_name}", columns)


def translate(sql: str, dialect: str, schema_name: str, view: str,
              columns: Columns | None = None) -> str:
    """``sql`` written in ``dialect`` as Spark SQL, its unqualified tables in ``schema_name``.

    With ``columns``, the query is typed first (sqlglot's optimizer, over the lake's column
    types), so that constructs whose meaning depends on a type translate faithfully.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ErrorLevel, SqlglotError
    from sqlglot.optimizer.qualify_tables import qualify_tables

    if dialect != DUCKDB:  # the rewrites below carry DuckDB's meanings, no other's
        raise UnsupportedViewError(
            f"view {view} is written in SQL dialect {dialect!r}, which cannot be translated to "
            "Spark SQL; views of dialect 'spark' or 'duckdb' can be read")
    text = sql.replace(CATALOG_PLACEHOLDER + ".", "")
    try:
        tree = sqlglot.parse_one(text, read=dialect)
        if not isinstance(tree, exp.Query):
            raise UnsupportedViewError(f"view {view} ({dialect}) is not a query: {sql}")
        for table in tree.find_all(exp.Table):
            if table.catalog:  # another attached database: not part of this lake
                raise UnsupportedViewError(
                    f"view {view} ({dialect}) reads {table.sql(dialect)}, a table of another "
                    "database; a lake view can read only the lake's tables")
        tree = qualify_tables(tree, db=schema_name)
        if columns is not None:
            try:
                tree = _typed(tree.copy(), dialect, columns)
            except SqlglotError:  # typing is best effort: untyped, the rules stay faithful
                log.debug("view %s: cannot type its query", view, exc_info=True)
        tree = tree.transform(_duckdb_meaning)
        return tree.sql("spark", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as exc:
        construct = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsupportedViewError(
            f"view {view} was written in {dialect} SQL and cannot be translated to Spark SQL "
            f"({construct}); recreate it in Spark SQL or rewrite that part. "
            f"Its query: {sql}") from None


def _typed(tree: Any, dialect: str, columns: Columns) -> Any:
    """``tree`` with its column references qualified by their table and every node typed, as
    far as the lake's tables allow (a view's or an unknown table's columns stay untyped).
    Stars stay stars and the query's output names stay as they were."""
    from sqlglot import exp
    from sqlglot.optimizer.annotate_types import annotate_types
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
    from sqlglot.optimizer.qualify_columns import qualify_columns
    from sqlglot.schema import MappingSchema

    known: dict[str, dict[str, dict[str, str]]] = {}
    for table in tree.find_all(exp.Table):
        if table.db and table.name:
            found = columns(table.db, table.name)
            if found:
                known.setdefault(table.db.lower(), {})[table.name.lower()] = {
                    name.lower(): kind for name, kind in found.items()}
    schema = MappingSchema(known, dialect=dialect)
    tree = normalize_identifiers(tree, dialect=dialect)
    bare = {id(p) for select in tree.find_all(exp.Select) for p in select.expressions
            if not isinstance(p, exp.Alias)}
    tree = qualify_columns(tree, schema, expand_alias_refs=False, expand_stars=False)
    for alias in list(tree.find_all(exp.Alias)):  # the names qualify_columns gave
        if id(alias.this) in bare:
            alias.replace(alias.this)
    return annotate_types(tree, schema=schema, dialect=dialect)


_INTEGERS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "UTINYINT", "USMALLINT", "UINT",
                       "UBIGINT"})
# types whose cast to an integer means the same in both engines
_WHOLE = _INTEGERS | {"BOOLEAN", "VARCHAR", "TEXT", "CHAR", "NVARCHAR", "NCHAR"}


def _type(node: Any) -> str:
    kind = node.type
    return kind.this.name if kind is not None else "UNKNOWN"


# DuckDB's intervals as it writes them back (``INTERVAL 1 DAY`` is stored as ``to_days(...)``):
# DATE + INTERVAL is a TIMESTAMP in DuckDB and a DATE in Spark, and the operand's type is not
# known here, so interval arithmetic is refused rather than translated to another meaning.
_INTERVALS = frozenset({"to_years", "to_months", "to_weeks", "to_days", "to_hours", "to_minutes",
                        "to_seconds", "to_milliseconds", "to_microseconds", "to_centuries",
                        "to_decades", "to_millennia", "to_quarters"})


def _duckdb_meaning(node: Any) -> Any:
    """``node`` rewritten so that Spark gives what DuckDB gives for it, where the plain
    translation would not; constructs that cannot be are refused."""
    from sqlglot import exp
    from sqlglot.errors import UnsupportedError

    if isinstance(node, exp.Cast) and node.to.this.name in _INTEGERS:
        # DuckDB rounds a fraction cast to an integer (2.5 -> 3); Spark truncates it. ROUND
        # leaves an integer as it is, so a value of unknown type (a view's column) gets it too.
        if _type(node.this) not in _WHOLE:
            return exp.Cast(this=exp.Round(this=_inner(node.this)), to=node.to)
        return node
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        # DuckDB truncates a DATE or TIMESTAMP to a TIMESTAMP; Spark's is a TIMESTAMP with time
        # zone, which DuckDB gives only for a TIMESTAMPTZ
        kind = _type(node.this)
        if kind in ("DATE", "TIMESTAMP", "DATETIME"):
            return exp.Cast(this=exp.Anonymous(this="DATE_TRUNC", expressions=[
                exp.Literal.string(node.unit.name if node.unit else "DAY"), _inner(node.this)]),
                to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))
        if kind != "TIMESTAMPTZ":
            raise UnsupportedError(
                f"date_trunc of {node.this.sql('duckdb')}, whose type is not known: DuckDB "
                "gives a TIMESTAMP for a DATE or TIMESTAMP and Spark a TIMESTAMP WITH TIME ZONE")
        return node
    if isinstance(node, exp.DayOfWeek):
        # DuckDB counts Sunday as 0, Spark as 1
        return exp.Paren(this=exp.Sub(this=exp.Anonymous(this="DAYOFWEEK",
                                                        expressions=[_inner(node.this)]),
                                      expression=exp.Literal.number(1)))
    if isinstance(node, exp.Func):
        name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
        if name == "count_star" and not node.expressions:
            return exp.Count(this=exp.Star())
        if name in _INTERVALS:
            raise UnsupportedError(
                f"interval arithmetic ({node.sql('duckdb')}): DuckDB's DATE + INTERVAL is a "
                "TIMESTAMP where Spark's is a DATE")
    elif isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        # DuckDB's l[i] counts from 1 (-1 is the last element) and gives NULL out of range;
        # Spark's counts from 0 and fails: try_element_at has DuckDB's meaning. sqlglot has
        # already made a literal index 0-based (i - 1), which is undone here.
        index = node.expressions[0]
        if isinstance(index, exp.Slice) or (isinstance(index, exp.Literal) and index.is_string):
            return node  # a slice (Spark has none: its parser reports it) or a field/key name
        if isinstance(index, exp.Literal):
            index = exp.Literal.number(int(index.this) + 1)
        elif isinstance(index, exp.Neg) and isinstance(index.this, exp.Literal):
            index = exp.Literal.number(1 - int(index.this.this))
        return exp.Anonymous(this="try_element_at",
                             expressions=[_inner(node.this), _inner(index)])
    elif isinstance(node, exp.Interval):
        raise UnsupportedError(
            f"interval arithmetic ({node.sql('duckdb')}): DuckDB's DATE + INTERVAL is a "
            "TIMESTAMP where Spark's is a DATE")
    return node


def _inner(node: Any) -> Any:
    """A part of a node :func:`_duckdb_meaning` replaced: sqlglot does not visit it again."""
    return node.transform(_duckdb_meaning)


_DUCKDB_TYPES = {
    "boolean": "BOOLEAN", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER",
    "int64": "BIGINT", "int128": "HUGEINT", "uint8": "UTINYINT", "uint16": "USMALLINT",
    "uint32": "UINTEGER", "uint64": "UBIGINT", "uint128": "UHUGEINT", "float32": "FLOAT",
    "float64": "DOUBLE", "time": "TIME", "time_ns": "TIME_NS", "timetz": "TIMETZ",
    "date": "DATE", "timestamp": "TIMESTAMP", "timestamp_s": "TIMESTAMP_S",
    "timestamp_ms": "TIMESTAMP_MS", "timestamp_ns": "TIMESTAMP_NS",
    "timestamptz": "TIMESTAMPTZ", "interval": "INTERVAL", "varchar": "VARCHAR",
    "blob": "BLOB", "uuid": "UUID", "json": "JSON",
}


def duckdb_type(column: ColumnInfo) -> str:
    """The DuckDB spelling of a column's type (``INTEGER``, ``STRUCT(k VARCHAR)``, ...);
    ``UNKNOWN`` for a type sqlglot cannot reason about (variant, geometry)."""
    kind = column.type
    if kind.name == "decimal":
        return f"DECIMAL({kind.precision}, {kind.scale})"
    if kind.name == "list":
        return duckdb_type(column.children[0]) + "[]"
    if kind.name == "map":
        return f"MAP({duckdb_type(column.children[0])}, {duckdb_type(column.children[1])})"
    if kind.name == "struct":
        fields = ", ".join('"' + c.column_name.replace('"', '""') + '" ' + duckdb_type(c)
                           for c in column.children)
        return f"STRUCT({fields})"
    return _DUCKDB_TYPES.get(kind.name, "UNKNOWN")
