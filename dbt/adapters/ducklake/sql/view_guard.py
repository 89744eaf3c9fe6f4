"""A lake view's query is untrusted input: it is checked before Spark ever analyses it.

Anyone who can write a ``ducklake_view`` row (a writer of the catalog, a DuckDB user, another
dbt project) chooses the SQL every reader of the view runs, with the reader's rights. Spark
SQL can do more than query: ``SELECT TRANSFORM(...) USING 'sh -c ...'`` runs a command on the
driver and the executors, ``parquet.`/path``` reads any file the reader can read (Spark lists
and reads files while it *analyses* such a name), ``reflect``/``java_method`` call any static
Java method. So the statement that registers a view as a temp view is parsed with Spark's own
parser (parsing runs nothing) and its plan is walked before the text reaches ``spark.sql``.

The walk is an allow-list: the plan nodes a query is made of (projections, filters, joins,
aggregates, set operations, CTEs, subqueries, ...), Spark's built-in functions less those that
call Java or read files, a few generator table functions, and relations named by one part.
Anything else is refused, naming the construct. What the one-part names are (lake relations
registered as temp views, not session temp views or tables of Spark's catalog) is for the
caller to judge: :class:`Verdict` lists them.

A verdict depends only on the statement's text (and on whether names are case sensitive), so
it is cached per text: views are registered on every statement that reads them, and the walk
costs a few hundred calls into the JVM.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from ..lake.errors import UnsafeViewError, UnsupportedViewError
from ..spark.expressions import java_class
from .names import quote
from .plans import seq

# the parsed plan nodes a query over relations is made of (checked by class name)
_QUERY_PLANS = frozenset({
    "Project", "Filter", "Aggregate", "Join", "LateralJoin", "Sort", "GlobalLimit",
    "LocalLimit", "Offset", "Tail", "Distinct", "Union", "Intersect", "Except",
    "SubqueryAlias", "UnresolvedSubqueryColumnAliases", "UnresolvedRelation", "UnresolvedWith",
    "OneRowRelation", "LocalRelation", "UnresolvedInlineTable", "WithWindowDefinition",
    "Generate", "Sample", "RepartitionByExpression", "Repartition", "UnresolvedHint", "Pivot",
    "Unpivot", "UnresolvedHaving", "UnresolvedTableValuedFunction", "UnresolvedTVFAliases",
    "PipeOperator",
})

# refused plan nodes people write on purpose, described by what they do
_REFUSED_PLANS = {
    "ScriptTransformation": "uses a script transformation (SELECT TRANSFORM ... USING "
                            "'<command>'), which runs a command on the driver and the executors",
    "RelationTimeTravel": "uses VERSION AS OF / TIMESTAMP AS OF (time travel of Spark's own "
                          "tables; read a lake relation at a snapshot as `schema.table@v3`)",
    "PlanWithUnresolvedIdentifier": "uses IDENTIFIER(<expression>) as a relation name",
}

# subquery expressions: their plans are walked as plans
_SUBQUERIES = frozenset({"ScalarSubquery", "Exists", "ListQuery", "LateralSubquery"})

# expressions that are leaves by their class: their children are not asked for (a call into
# the JVM saved for most of a query's nodes)
_LEAVES = frozenset({"UnresolvedAttribute", "Literal", "UnresolvedStar",
                     "UnresolvedNamedLambdaVariable", "UnresolvedOrdinal"})

_REFUSED_EXPRESSIONS = {
    "ExpressionWithUnresolvedIdentifier": "uses IDENTIFIER(<expression>) as a function name",
    "FunctionTableSubqueryArgumentExpression": "passes a TABLE argument to a table function",
}

# built-in functions that run arbitrary code or read files: refused although built in
_REFUSED_FUNCTIONS = {
    "reflect": "calls a static Java method of the caller's choosing",
    "java_method": "calls a static Java method of the caller's choosing",
    "try_reflect": "calls a static Java method of the caller's choosing",
    "from_protobuf": "reads a descriptor file by path and loads a module by reflection",
    "to_protobuf": "reads a descriptor file by path and loads a module by reflection",
    "from_avro": "loads a module by reflection",
    "to_avro": "loads a module by reflection",
    "schema_of_avro": "loads a module by reflection",
}

# table functions that only generate rows from their arguments
_TABLE_FUNCTIONS = frozenset({
    "range", "explode", "explode_outer", "posexplode", "posexplode_outer", "inline",
    "inline_outer", "stack", "json_tuple", "variant_explode", "variant_explode_outer",
})

# the qualifiers under which Spark names its built-in functions
_BUILTIN_QUALIFIERS = ((), ("builtin",), ("system", "builtin"))

# Spark's file sources: a two-part name starting with one of these reads files by path
_FILE_FORMATS = frozenset({"parquet", "text", "csv", "json", "orc", "avro", "binaryfile",
                           "xml", "delta", "iceberg", "hive"})

_MAX_CACHED = 4096


@dataclass(frozen=True)
class Verdict:
    """What the check found in a statement: ``refusal`` names a construct that is not part
    of a query over relations (``None`` if there is none), ``relations`` the one-part
    relation names the query reads that no CTE in scope defines."""

    refusal: str | None
    relations: frozenset[str] = frozenset()
    # the names of the functions called that are not Spark's built-ins, as name parts: a
    # lake function (`schema.f`, schema.f or an unqualified one) or nothing allowed
    functions: frozenset[tuple[str, ...]] = frozenset()


class _Refused(Exception):
    """Internal: the walk met a construct it refuses (its description is the argument)."""


_verdicts: dict[tuple[str, bool], Verdict] = {}
_builtins: dict[str, bool] = {}
_lock = threading.Lock()


def check_view(spark: SparkSession, view: str, statement: str,
               lake_relation: Callable[[str], bool],
               lake_function: Callable[[list[str]], bool] | None = None,
               what: str = "view") -> None:
    """Refuse ``statement`` (``CREATE OR REPLACE TEMP VIEW ... AS <query>``, which registers
    the lake view ``view``) unless its query reads only lake relations with allowed
    constructs. ``lake_relation(name)`` says whether a one-part name the query reads is a
    lake relation registered as a temp view (it may register it); ``lake_function(parts)``
    whether a function it calls that is not built in is a lake function (it may register
    it). ``what`` is what is checked (``view``, ``function``), for the message.

    Raises:
        UnsafeViewError: naming the view and the construct refused.
        UnsupportedViewError: when the statement does not parse as Spark SQL.
    """
    verdict = statement_verdict(spark, view, statement)
    if verdict.refusal is not None:
        raise UnsafeViewError(_message(view, verdict.refusal, what))
    for name in sorted(verdict.relations):
        if not lake_relation(name):
            raise UnsafeViewError(_message(view, _not_lake(name), what))
    for parts in sorted(verdict.functions):
        if lake_function is None or not lake_function(list(parts)):
            raise UnsafeViewError(_message(view, _not_builtin(".".join(parts)), what))


def check_function(spark: SparkSession, function: str, statement: str,
                   lake_relation: Callable[[str], bool],
                   lake_function: Callable[[list[str]], bool] | None = None) -> None:
    """Refuse ``statement`` (``CREATE OR REPLACE TEMPORARY FUNCTION ... RETURN <body>``,
    which registers the lake function ``function``) unless it is a scalar SQL function
    whose body is an expression or a query :func:`check_view` allows and whose parameter
    defaults are constants. A function is lake content as a view is: its body runs with
    the rights of whoever calls it.

    Raises:
        UnsafeViewError: naming the function and the construct refused.
        UnsupportedViewError: when the statement does not parse as Spark SQL.
    """
    parser = spark._jsparkSession.sessionState().sqlParser()  # noqa: SLF001
    plan = _parsed(parser, statement, f"function {function}: its definition",
                   "recreate the function with a definition Spark can run")
    kind = plan.nodeName()
    if kind != "CreateSQLFunctionCommand" or not plan.isTemp() or plan.isTableFunc():
        raise UnsafeViewError(_message(function, f"is {kind}, not a scalar SQL function",
                                       "function"))
    body = plan.queryText().get() if plan.queryText().isDefined() else \
        f"SELECT {plan.exprText().get()}"
    check_view(spark, function, f"CREATE OR REPLACE TEMP VIEW `__ducklake_function` AS {body}",
               lake_relation, lake_function, "function")
    if plan.inputParamText().isDefined():
        for field in parser.parseRoutineParam(plan.inputParamText().get()).fields():
            default = field.getDefault()
            if default.isDefined() and not is_constant(parser.parseExpression(default.get())):
                raise UnsafeViewError(_message(
                    function, f"gives parameter {field.name()} the default {default.get()}, "
                    "which is not a constant", "function"))


def _parsed(parser: Any, statement: str, what: str, fix: str) -> Any:
    """``statement`` parsed by Spark's parser; text it cannot parse fails naming ``what``."""
    try:
        return parser.parsePlan(statement)
    except Exception as exc:  # noqa: BLE001 - py4j raises pyspark's ParseException
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsupportedViewError(
            f"{what} does not parse as Spark SQL ({first}); {fix}") from None


def is_constant(expr: Any) -> bool:
    """Whether a parsed expression is a literal (``5``, ``'x'``, ``-1.5``, ``NULL``): what a
    function parameter's default may be, in Spark and in a DuckDB macro alike."""
    kind = expr.nodeName()
    if kind == "Literal":
        return True
    return kind in ("UnaryMinus", "UnaryPositive") and is_constant(expr.child())


def statement_verdict(spark: SparkSession, view: str, statement: str) -> Verdict:
    """The cached :class:`Verdict` of ``statement``, walking its parsed plan the first time."""
    case_sensitive = _case_sensitive(spark)
    key = (statement, case_sensitive)
    with _lock:
        known = _verdicts.get(key)
    if known is not None:
        return known
    parser = spark._jsparkSession.sessionState().sqlParser()  # noqa: SLF001
    plan = _parsed(parser, statement, f"view {view}: its query",
                   "recreate the view with a query Spark can run")
    walk = _Walk(spark, case_sensitive)
    try:
        walk.statement(plan)
        verdict = Verdict(None, frozenset(walk.relations), frozenset(walk.functions))
    except _Refused as refused:
        verdict = Verdict(str(refused))
    with _lock:
        if len(_verdicts) >= _MAX_CACHED:
            _verdicts.clear()
        _verdicts[key] = verdict
    return verdict


class _Walk:
    """One walk over a parsed statement, collecting the one-part relation names it reads."""

    def __init__(self, spark: SparkSession, case_sensitive: bool) -> None:
        self.spark = spark
        self.case_sensitive = case_sensitive
        self.relations: set[str] = set()
        self.functions: set[tuple[str, ...]] = set()

    def statement(self, plan: Any) -> None:
        """The registering statement itself: a temp view over a query, nothing else."""
        kind = plan.nodeName()
        if kind != "CreateViewCommand" or plan.viewType().toString() != "LocalTempView":
            raise _Refused(f"is {kind}, not a query")
        for child in seq(plan.children()):
            self.plan(child, frozenset())

    def plan(self, node: Any, ctes: frozenset[str]) -> None:
        """A plan node, its expressions and its children; ``ctes`` are the CTE names in
        scope (as compared: lower-cased unless names are case sensitive)."""
        kind = node.nodeName()
        if kind == "UnresolvedWith":
            self._with(node, ctes)
            return
        if kind not in _QUERY_PLANS:
            raise _Refused(_REFUSED_PLANS.get(
                kind, f"uses {kind}, which is not part of a query over lake relations"))
        if kind == "UnresolvedRelation":
            self._relation(seq(node.multipartIdentifier()), ctes)
        elif kind == "UnresolvedTableValuedFunction":
            parts = [str(p) for p in seq(node.name())]
            if len(parts) != 1 or parts[0].lower() not in _TABLE_FUNCTIONS:
                raise _Refused(f"calls the table function {'.'.join(parts)}(...), which is "
                               f"not one of {', '.join(sorted(_TABLE_FUNCTIONS))}")
        elif kind == "WithWindowDefinition":  # a Scala Map: not among its expressions
            for spec in seq(node.windowDefinitions().values().toSeq()):
                self.expression(spec, ctes)
        subqueries = sum(self.expression(e, ctes) for e in seq(node.expressions()))
        if subqueries != node.innerChildren().size():
            raise _Refused(f"has a query inside {kind} where the check finds none")
        for child in seq(node.children()):
            self.plan(child, ctes)

    def _with(self, node: Any, ctes: frozenset[str]) -> None:
        """``WITH a AS (...), b AS (...) <query>``: each definition sees the ones before it
        and itself (a recursive CTE), the query sees them all."""
        scope = set(ctes)
        for pair in seq(node.cteRelations()):
            scope.add(self._key(str(pair._1())))
            self.plan(pair._2(), frozenset(scope))
        self.plan(node.child(), frozenset(scope))

    def _relation(self, parts: list[Any], ctes: frozenset[str]) -> None:
        names = [str(p) for p in parts]
        if len(names) == 1:
            if self._key(names[0]) not in ctes:
                self.relations.add(names[0])
            return
        raise _Refused(_not_lake(".".join(quote(n) for n in names), names))

    def expression(self, expr: Any, ctes: frozenset[str]) -> int:
        """Check an expression tree; the number of subquery expressions in it (each
        walked as a plan), which the caller compares with what Spark counts."""
        found, stack = 0, [expr]
        while stack:
            node = stack.pop()
            kind = node.nodeName()
            if kind in _LEAVES:
                continue
            if kind in _SUBQUERIES:
                found += 1
                self.plan(node.plan(), ctes)
            elif kind == "UnresolvedFunction":
                self._function([str(p) for p in seq(node.nameParts())])
            elif kind == "UnresolvedGenerator":
                name = node.name()
                if not name.database().isEmpty() or not name.catalog().isEmpty():
                    raise _Refused(f"calls the generator {name.unquotedString()}, which is not a "
                                   "built-in function of Spark")
                self._function([str(name.funcName())])
            elif kind in _REFUSED_EXPRESSIONS:
                raise _Refused(_REFUSED_EXPRESSIONS[kind])
            stack.extend(seq(node.children()))
        return found

    def _function(self, parts: list[str]) -> None:
        """Built-in functions only: a function of the session or of a catalog runs code its
        author chose, and a few built-ins do too."""
        *qualifier, name = parts
        builtin_qualifier = tuple(q.lower() for q in qualifier) in _BUILTIN_QUALIFIERS
        refused = _REFUSED_FUNCTIONS.get(name.lower())
        if refused is not None and builtin_qualifier:
            raise _Refused(f"calls the function {name}, which {refused}")
        if builtin_qualifier and _builtin(self.spark, name.lower()):
            return
        if len(parts) > 2 or (qualifier and builtin_qualifier):
            raise _Refused(_not_builtin(".".join(parts)))
        # possibly a lake function (`s.f`, s.f, or f in the session's function schema):
        # the caller decides
        self.functions.add(tuple(parts))

    def _key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()


def _builtin(spark: SparkSession, name: str) -> bool:
    """Whether Spark has a built-in function ``name`` (cached: the registry is fixed)."""
    with _lock:
        known = _builtins.get(name)
    if known is None:
        registry = java_class(
            spark, "org.apache.spark.sql.catalyst.analysis.FunctionRegistry").builtin()
        identifier = java_class(spark, "org.apache.spark.sql.catalyst.FunctionIdentifier")
        known = bool(registry.functionExists(identifier.apply(name)))
        with _lock:
            _builtins[name] = known
    return known


is_builtin = _builtin  # for the function bodies' own name resolution (sql/functions.py)


def _case_sensitive(spark: SparkSession) -> bool:
    return str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"


def _not_lake(shown: str, parts: list[str] | None = None) -> str:
    """Why a relation name is refused: it reads files by path, or something not in the lake."""
    if parts is not None and len(parts) == 2 and (
            parts[0].lower() in _FILE_FORMATS or "." in parts[0]
            or any(c in parts[1] for c in "/\\:")):
        return f"reads files by path ({shown}), which reads whatever the reader may read"
    return (f"reads {shown}, which is not a table or view of the lake (a lake view can read only "
            "the lake's tables and views: not files by path, tables of Spark's own catalogs "
            "or temp views of a session)")


def _not_builtin(shown: str) -> str:
    return (f"calls the function {shown}, which is not a built-in function of Spark nor "
            "a function of the lake")


def _message(view: str, construct: str, what: str = "view") -> str:
    if what == "function":
        return (f"function {view} is refused: its body {construct}. A lake function is run "
                "by whoever calls it, with their rights, so its body may be only an "
                "expression or a query over the lake's tables, views and functions; "
                "recreate the function without it")
    return (f"{what} {view} is refused: its query {construct}. A lake view is run by "
            "whoever reads it, with their rights, so it may be only a query over the lake's "
            "tables and views; recreate the view without it")
