"""A DuckLake view's query in the other engine's SQL: as Spark runs it, and as DuckDB does.

DuckLake stores each view's SQL in the dialect it was written in (``ducklake_view.dialect``):
``spark`` for the views this adapter creates, ``duckdb`` for DuckDB's. Run as Spark SQL, a
DuckDB query can silently mean something else (``"name"`` is an identifier in DuckDB and a
string in Spark; lists start at 1 in DuckDB and at 0 in Spark), so a view in another dialect
is translated with sqlglot first, and one that cannot be translated faithfully fails with an
error naming the view, its dialect and the construct, never with different rows.

DuckDB binds a view's unqualified table names in the view's own schema, and writes the
lake's catalog qualifier as ``{DUCKLAKE_CATALOG}``; the translation does the same, so
the view reads the tables DuckDB's reads.

The other way round, a view created here is stored as DuckDB SQL (dialect ``duckdb``) when
every construct in it has the same meaning in DuckDB (:func:`duckdb_query`), with its Spark
text in a tag for this engine's own reads; a view that cannot be is stored as Spark SQL only.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, cast

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
    """The query of ``view`` (in schema ``schema_name``) as Spark SQL: the Spark text it
    was created from if it was created here, else its own query, translated if need be."""
    if view.spark_sql is not None:
        return view.spark_sql
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
    # (sqlglot 30 types the mapping as dict[str, object], which a nested dict is not)
    schema = MappingSchema(cast("dict[str, object]", known), dialect=dialect)
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


# ------------------------------------------------------------------ Spark SQL as DuckDB runs it
# A token no view can contain, put where DuckDB writes ``{DUCKLAKE_CATALOG}`` (sqlglot cannot
# print braces in a name).
_CATALOG_TOKEN = "ducklake_catalog_7c1f0e"


def duckdb_query(sql: str, view: str, columns: Columns | None = None,
                 output_names: Sequence[str] = ()) -> str:
    """``sql``, the Spark SQL query of ``view``, as DuckDB SQL that gives the same rows.

    Every construct must be one whose meaning is known to be the same in both engines, or
    one rewritten to it (:func:`_spark_meaning`); anything else raises
    :class:`UnsupportedViewError` naming it. ``columns`` gives the Spark types of the
    relations read (``{"id": "int"}``), for the rules that depend on a type, and
    ``output_names`` the view's column names as Spark names them, which DuckDB, which names
    an expression by its own spelling, is given as aliases.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ErrorLevel, SqlglotError, UnsupportedError

    try:
        tree = sqlglot.parse_one(sql, read=SPARK)
        if not isinstance(tree, exp.Query):
            raise UnsupportedError("not a query")
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            name = table.name
            if not table.db and "." in name and "@" not in name:  # `schema.table`, as dbt
                db, name = name.split(".", 1)                    # renders a relation
                table.set("db", exp.to_identifier(db, quoted=True))
                table.set("this", exp.to_identifier(name, quoted=True))
            if table.catalog or (not table.db and table.name.lower() not in ctes):
                # a one-part name is a temp view of the session, or a lake table at a
                # snapshot or its change feed (`s.t@v3`); another catalog is not the lake
                raise UnsupportedError(f"the relation {table.sql(SPARK)}")
        if columns is not None:
            try:
                tree = _typed(tree.copy(), SPARK, columns)
            except SqlglotError:  # untyped, the rules below refuse what needs a type
                log.debug("view %s: cannot type its query", view, exc_info=True)
        for node in tree.walk():
            if not isinstance(node, _translatable()):
                raise UnsupportedError(_construct(node))
        tree = tree.transform(_spark_meaning)
        _name_outputs(tree, output_names)
        for table in tree.find_all(exp.Table):
            if table.db:  # a lake table (one-part names are CTEs here)
                table.set("catalog", exp.to_identifier(_CATALOG_TOKEN))
        text = tree.sql(DUCKDB, unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as exc:
        construct = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsupportedViewError(
            f"view {view} has no DuckDB SQL with the same meaning ({construct})") from None
    return text.replace(_CATALOG_TOKEN + ".", CATALOG_PLACEHOLDER + ".")


def _construct(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return f"the function {node.name}"
    if isinstance(node, exp.Func):
        return f"the function {node.sql_name()}"
    return node.sql(SPARK) or type(node).__name__


# Constructs whose meaning is the same in Spark and DuckDB (sqlglot's DuckDB output spells
# them as DuckDB does: ``||`` for concat, explicit NULLS FIRST where Spark sorts so, ...).
_SAME_IN_DUCKDB = (
    "Select", "From", "Join", "Where", "Group", "Having", "Order", "Ordered", "Limit", "Offset",
    "Alias", "TableAlias", "Table", "Subquery", "CTE", "With", "Union", "Except", "Intersect",
    "Column", "Identifier", "Star", "Distinct", "Paren", "Tuple", "Dot", "Literal", "Boolean",
    "Null", "DataType", "DataTypeParam", "Var", "Window", "WindowSpec", "Qualify",
    "EQ", "NEQ", "GT", "GTE", "LT", "LTE", "NullSafeEQ", "NullSafeNEQ", "And", "Or", "Not",
    "Is", "In", "Between", "Exists", "Neg", "Mod", "DPipe",
    "Case", "If", "Coalesce", "Nullif", "Greatest", "Least", "Abs", "Floor", "Ceil",
    "Lower", "Upper", "Trim", "Replace", "StrPosition", "Count", "Sum", "Min", "Max",
    "RowNumber", "Rank", "DenseRank", "Lag", "Lead", "FirstValue", "LastValue",
    "CurrentDate", "CurrentTimestamp", "Year", "Month", "Day", "Hour", "Minute", "Second",
    "DateDiff", "TsOrDsToDate", "DayOfMonth", "ArraySize",
)
# Constructs whose meaning depends on types or arguments: :func:`_spark_meaning` rewrites or
# refuses them.
_REWRITTEN_FOR_DUCKDB = (
    "Add", "Sub", "Mul", "Cast", "Div", "Avg", "Round", "Substring", "Like", "ILike", "Bracket",
    "TsOrDsAdd", "DayOfWeek", "Concat", "ConcatWs", "Length",
)

@functools.cache
def _translatable() -> tuple[type, ...]:
    """sqlglot's classes of :data:`_SAME_IN_DUCKDB` and :data:`_REWRITTEN_FOR_DUCKDB`, on first
    use: importing sqlglot when this module is imported cost every dbt start 0.1 s."""
    from sqlglot import exp

    return tuple(getattr(exp, name) for name in _SAME_IN_DUCKDB + _REWRITTEN_FOR_DUCKDB)


_TEXT = frozenset({"VARCHAR", "TEXT", "CHAR", "NVARCHAR", "NCHAR"})
_DECIMALS = frozenset({"DECIMAL"})
_FLOATS = frozenset({"FLOAT", "DOUBLE"})
_NUMBERS = _INTEGERS | _DECIMALS | _FLOATS
_DATETIMES = frozenset({"DATE", "TIMESTAMP", "DATETIME", "TIMESTAMPTZ", "TIMESTAMPLTZ",
                        "TIMESTAMPNTZ"})
# what a cast to each kind of type may start from to mean the same in both engines: Spark
# and DuckDB spell doubles and timestamps differently as text, and DuckDB reads '2.5' as
# the integer 3 and 'yes' as no boolean
_CASTS = {
    "integer": _INTEGERS | {"BOOLEAN"},
    "decimal": _NUMBERS | _TEXT,
    "float": _NUMBERS | _TEXT,
    "text": _TEXT | _INTEGERS | _DECIMALS | {"BOOLEAN", "DATE"},
    "date": _DATETIMES | _TEXT,
    "timestamp": _DATETIMES | _TEXT,
    "boolean": _INTEGERS | {"BOOLEAN"},
}


def _cast_kind(name: str) -> str | None:
    if name in _INTEGERS:
        return "integer"
    if name in _DECIMALS:
        return "decimal"
    if name in _FLOATS:
        return "float"
    if name in _TEXT:
        return "text"
    if name == "DATE":
        return "date"
    if name in _DATETIMES:
        return "timestamp"
    if name == "BOOLEAN":
        return "boolean"
    return None


def _spark_type(node: Any) -> str:
    """:func:`_type`, but a number literal with a point is a DECIMAL, as Spark (and DuckDB)
    read it; sqlglot types it a DOUBLE."""
    from sqlglot import exp

    if isinstance(node, exp.Literal) and not node.is_string and "." in node.this \
            and "e" not in node.this.lower():
        return "DECIMAL"
    return _type(node)


_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 20}


def _decimal(node: Any) -> tuple[int, int] | None:
    """The (precision, scale) Spark gives a decimal expression, as far as known."""
    from sqlglot import exp

    if isinstance(node, (exp.Paren, exp.Neg)):
        return _decimal(node.this)
    if isinstance(node, exp.Literal) and not node.is_string:
        digits = node.this.lstrip("-")
        if "e" in digits.lower():
            return None
        whole, _, fraction = digits.partition(".")
        return max(len(whole.lstrip("0")) + len(fraction), 1), len(fraction)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        left, right = _decimal(node.this), _decimal(node.expression)
        if left is None or right is None:
            return None
        if isinstance(node, exp.Mul):
            return left[0] + right[0] + 1, left[1] + right[1]
        scale = max(left[1], right[1])
        return max(left[0] - left[1], right[0] - right[1]) + scale + 1, scale
    kind = node.type
    if kind is None:
        return None
    if kind.this.name == "DECIMAL":
        params = [int(p.this.name) for p in kind.expressions]
        return (params[0] if params else 18), (params[1] if len(params) > 1 else 0)
    digits = _INTEGER_DIGITS.get(kind.this.name)
    return (digits, 0) if digits is not None else None


def _spark_meaning(node: Any) -> Any:
    """``node`` rewritten so that DuckDB gives what Spark gives for it; constructs that cannot
    be are refused. Spark's ANSI errors (an index out of range, a division by zero) may be a
    NULL in DuckDB: an error is never a different row."""
    from sqlglot.errors import UnsupportedError

    for kinds, rule in _meaning_rules():
        if isinstance(node, kinds):
            try:
                return rule(node)
            except _Refused as why:
                raise UnsupportedError(f"{cast(Any, node).sql(SPARK)}: {why}") from None
    return node


def _spark_inner(node: Any) -> Any:
    """A part of a node :func:`_spark_meaning` replaced: sqlglot does not visit it again, so
    its own constructs are checked and rewritten here (a string cast to an integer inside
    another cast must be refused as it is alone)."""
    return node.transform(_spark_meaning)


class _Refused(Exception):
    """A construct whose meaning differs between the engines (the message says how)."""


@functools.cache
def _meaning_rules() -> tuple[tuple[tuple[type, ...], Callable[[Any], Any]], ...]:
    """Each kind of sqlglot node with a meaning of its own, and its rule (sqlglot is imported
    on first use: a process that never translates a view does not load it)."""
    from sqlglot import exp

    return (
        ((exp.Add, exp.Sub, exp.Mul), _arithmetic),
        ((exp.Cast,), _cast),
        ((exp.Div,), _division),
        ((exp.Avg,), _average),
        ((exp.Round,), _round),
        ((exp.Substring,), _substring),
        ((exp.Like, exp.ILike), _like),
        ((exp.Concat, exp.ConcatWs, exp.Length), _string_function),
        ((exp.TsOrDsAdd,), _date_add),
        ((exp.DayOfWeek,), _day_of_week),
        ((exp.Bracket,), _element),
    )


def _arithmetic(node: Any) -> Any:
    if "DECIMAL" in (_spark_type(node.this), _spark_type(node.expression)):
        # past 38 digits Spark rounds the result to fewer decimals; DuckDB does not
        digits = _decimal(node)
        if digits is None or digits[0] > 38:
            raise _Refused("decimal arithmetic whose result may exceed 38 digits")
    return node


def _cast(node: Any) -> Any:
    from sqlglot import exp

    target = node.to.this.name
    kind, source = _cast_kind(target), _type(node.this)
    if kind is None:
        raise _Refused(f"a cast to {target}")
    if source not in _CASTS[kind] and not (kind == "integer" and source in _NUMBERS):
        raise _Refused(f"a cast from {source.lower()} to {target}, which the engines "
                       "do differently")
    value = _spark_inner(node.this)
    if kind == "integer" and source not in _WHOLE:
        value = exp.Anonymous(this="TRUNC", expressions=[value])  # Spark truncates
    return exp.Cast(this=value, to=node.to.copy())  # sqlglot makes Spark's a TRY_CAST


def _division(node: Any) -> Any:
    if _spark_type(node.this) not in _INTEGERS | _FLOATS or \
            _spark_type(node.expression) not in _INTEGERS | _FLOATS:
        raise _Refused("a division of decimals (or of values of unknown type): Spark's is "
                       "a DECIMAL, DuckDB's a DOUBLE")
    return node


def _average(node: Any) -> Any:
    if _type(node.this) not in _INTEGERS | _FLOATS:
        raise _Refused("an average of decimals (or of values of unknown type): Spark's is "
                       "a DECIMAL, DuckDB's a DOUBLE")
    return node


def _round(node: Any) -> Any:
    if _type(node.this) not in _INTEGERS | _DECIMALS:
        raise _Refused("rounding a double (or a value of unknown type)")
    return node


def _substring(node: Any) -> Any:
    from sqlglot import exp

    start = node.args.get("start")
    if start is not None and not (isinstance(start, exp.Literal) and not start.is_string
                                  and int(start.this) > 0):
        raise _Refused("a substring whose start is not a positive number: Spark reads 0 as 1")
    return node


def _like(node: Any) -> Any:
    from sqlglot import exp

    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string) or "\\" in pattern.this:
        raise _Refused("a LIKE pattern that is not a literal without backslashes: Spark "
                       "escapes with a backslash, DuckDB does not")
    return node


def _string_function(node: Any) -> Any:
    from sqlglot import exp

    values = node.expressions if not isinstance(node, exp.Length) else [node.this]
    if isinstance(node, exp.ConcatWs):
        values = values[1:]
    if any(_type(v) not in _TEXT for v in values):
        raise _Refused("a string function over values that are not all strings")
    return node


def _date_add(node: Any) -> Any:
    from sqlglot import exp

    # Spark's date_add is a DATE; DuckDB's DATE + INTERVAL is a TIMESTAMP, DATE + n a DATE
    date = exp.Cast(this=_spark_inner(node.this), to=exp.DataType.build("DATE"))
    return exp.Paren(this=exp.Add(this=date, expression=_spark_inner(node.expression)))


def _day_of_week(node: Any) -> Any:
    from sqlglot import exp

    # Spark counts Sunday as 1, DuckDB as 0
    return exp.Paren(this=exp.Add(this=exp.Anonymous(this="DAYOFWEEK", expressions=[
        exp.Cast(this=_spark_inner(node.this), to=exp.DataType.build("DATE"))]),
        expression=exp.Literal.number(1)))


def _element(node: Any) -> Any:
    from sqlglot import exp

    if len(node.expressions) != 1:
        raise _Refused("an element access with several indexes")
    kind, index = _type(node.this), node.expressions[0]
    if kind == "MAP":
        return exp.Anonymous(this="MAP_EXTRACT_VALUE",
                             expressions=[_spark_inner(node.this), _spark_inner(index)])
    if kind != "ARRAY":
        raise _Refused("an element of a value of unknown type")
    # l[i] counts from 0, element_at(l, i) from 1; DuckDB's list_extract from 1
    if isinstance(index, exp.Literal):
        index = index if node.args.get("offset") else exp.Literal.number(int(index.this) + 1)
    else:
        index = _spark_inner(index)
        if not node.args.get("offset"):
            index = exp.Paren(this=exp.Add(this=index, expression=exp.Literal.number(1)))
    return exp.Anonymous(this="LIST_EXTRACT", expressions=[_spark_inner(node.this), index])


def _name_outputs(tree: Any, names: Sequence[str]) -> None:
    """Alias the outermost select's columns with the names Spark gives them (``lower(email)``
    for an unnamed ``lower(email)``), where DuckDB would name them otherwise."""
    from sqlglot import exp
    from sqlglot.errors import UnsupportedError

    select = tree
    while isinstance(select, (exp.Union, exp.Except, exp.Intersect, exp.Subquery)):
        select = select.this
    if not names or not isinstance(select, exp.Select):
        return
    projections = select.expressions
    if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
           for p in projections):
        unnamed = [p for p in projections
                   if not isinstance(p, (exp.Star, exp.Column, exp.Alias))]
        if unnamed:
            raise UnsupportedError(f"{unnamed[0].sql(DUCKDB)} beside a *: name it with AS")
        return
    if len(projections) != len(names):
        return
    for projection, name in zip(projections, names, strict=True):
        named = isinstance(projection, (exp.Column, exp.Alias, exp.Dot))
        if not named or projection.alias_or_name != name:
            projection.replace(exp.alias_(projection.copy(), name, quoted=True))
