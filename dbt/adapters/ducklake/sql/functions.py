"""SQL functions stored in the lake: ``CREATE [OR REPLACE] FUNCTION s.f(x T) RETURNS T RETURN e``.

A function is a DuckLake macro (``lake/macros.py``): DuckDB gets its body as DuckDB SQL where
the view translator finds the same meaning (:func:`duckdb_body`), and otherwise a body that
raises an error naming the function, so that DuckDB lists it but never runs other SQL than
Spark would; the Spark definition (parameters, return type, determinism, body) is kept in the
macro's ``spark_sql`` tag, and every session that calls the function registers it from there
as a temporary function named `` `schema.f` `` (see ``ViewRegistry.register_function``).

Only scalar SQL functions: table functions, and functions in another language (a Java class,
Python), have no DuckLake form both engines can run and are refused naming what is accepted.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from ..lake.errors import UnsupportedViewError
from ..lake.models import MacroParameter
from ..spark.lake import SparkLake
from ..spark.types import lake_type
from .context import StatementContext, StatementResult, UnsupportedStatementError
from .names import quote
from .plans import function_calls, name_parts
from .temp_views import call_name_end
from .view_dialects import duckdb_query
from .view_guard import is_builtin

log = logging.getLogger("dbt.adapters.ducklake")

_ARGS = "__ducklake_function.__args"  # the relation a body's parameters are typed as


@dataclass(frozen=True)
class Parameter:
    """A function parameter as Spark declares it: its Spark type (``float``) and its
    default as written (``100``), if any."""

    name: str
    spark_type: str
    default: str | None = None


def spark_definition(parameters: Sequence[Parameter], returns: str, body: str,
                     deterministic: bool | None, comment: str | None) -> str:
    """What follows the name in ``CREATE TEMPORARY FUNCTION `s.f```: the definition the
    ``spark_sql`` tag keeps."""
    args = ", ".join(f"{quote(p.name)} {p.spark_type}"
                     + (f" DEFAULT {p.default}" if p.default is not None else "")
                     for p in parameters)
    text = f"({args}) RETURNS {returns}"
    if deterministic is not None:
        text += " DETERMINISTIC" if deterministic else " NOT DETERMINISTIC"
    if comment:
        text += " COMMENT '" + comment.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return f"{text} RETURN {body}"


def duckdb_body(function: str, body: str, is_query: bool, parameters: Sequence[Parameter],
                returns: str) -> str:
    """The body of ``function`` as a DuckDB macro expression with the same result, the
    result cast to ``returns`` as Spark casts it. Raises :class:`UnsupportedViewError`
    naming the construct when there is none: a query over relations, or a construct the
    view translator does not know to mean the same in DuckDB."""
    import sqlglot
    from sqlglot import exp

    if is_query:
        tree = sqlglot.parse_one(body, read="spark")
        if not isinstance(tree, exp.Select) or tree.find(exp.From, exp.Table) or \
                len(tree.expressions) != 1 or any(
                    tree.args.get(k) for k in ("where", "group", "having", "order", "limit")):
            raise UnsupportedViewError(
                f"function {function} has no DuckDB SQL with the same meaning (its body is a "
                "query over relations)")
        projection = tree.expressions[0]
        expression = (projection.this if isinstance(projection, exp.Alias)
                      else projection).sql("spark")
    else:
        expression = body
    query = f"SELECT CAST(({expression}) AS {returns}) AS r FROM `{_ARGS}`"
    schema, table = _ARGS.split(".")
    types = {p.name: p.spark_type for p in parameters}

    def columns(schema_name: str, table_name: str) -> dict[str, str] | None:
        return types if (schema_name, table_name) == (schema, table) else None

    try:
        # the body alone first: the translator judges a cast nested in another one (the
        # return type's) more loosely than one at the top of a projection
        duckdb_query(f"SELECT ({expression}) AS r FROM `{_ARGS}`", f"function {function}",
                     columns)
        translated = duckdb_query(query, f"function {function}", columns)
    except UnsupportedViewError as exc:
        raise UnsupportedViewError(str(exc).replace("view function", "function", 1)) from None
    select = sqlglot.parse_one(translated.replace("{DUCKLAKE_CATALOG}.", ""), read="duckdb")
    tables = list(select.find_all(exp.Table))
    if len(tables) != 1 or not isinstance(select, exp.Select):
        raise UnsupportedViewError(
            f"function {function} has no DuckDB SQL with the same meaning (its body reads a "
            "relation)")
    result = select.expressions[0]
    result = result.this if isinstance(result, exp.Alias) else result
    for column in result.find_all(exp.Column):
        column.set("table", None)
        column.set("db", None)
        column.set("catalog", None)
    return str(result.sql("duckdb"))


def spark_only_body(function: str) -> str:
    """A DuckDB macro body for a function DuckDB cannot run: an error naming it."""
    message = (f"function {function} is stored as Spark SQL only: its body has no DuckDB "
               "SQL with the same meaning; call it from Spark")
    return "error('" + message.replace("'", "''") + "')"


# ------------------------------------------------------------------ statements
def create_function(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    """``CREATE [OR REPLACE] FUNCTION s.f(...) RETURNS t [NOT] DETERMINISTIC RETURN ...``
    (Spark's SQL function): stored in the lake in one snapshot, after Spark has analysed it."""
    name = ctx.written_name(name_parts(plan.child()))
    shown = f"{name.schema}.{name.name}"
    language = str(plan.language().toString())
    if plan.isTableFunc() or language != "LanguageSQL":
        kind = "a table function" if plan.isTableFunc() else f"a {language} function"
        raise UnsupportedStatementError(
            f"function {shown} is {kind}; the lake stores scalar SQL functions only "
            "(CREATE FUNCTION f(x DOUBLE) RETURNS DOUBLE RETURN x * 2)")
    parameters = _parameters(ctx, plan)
    is_query = plan.queryText().isDefined()
    body = plan.queryText().get() if is_query else plan.exprText().get()
    prefix = "" if is_query else "SELECT "
    # two-part lake names (s.t) in the body pointed at their views, as in any statement
    text = _lake_calls_renamed(ctx, ctx.registry.prepared(prefix + body))
    body = text[len(prefix):] if text.startswith(prefix) else body
    deterministic = plan.isDeterministic()
    definition = spark_definition(
        parameters, str(plan.returnTypeText()), body,
        bool(deterministic.get()) if deterministic.isDefined() else None,
        str(plan.comment().get()) if plan.comment().isDefined() else None)
    if plan.ignoreIfExists() and any(m.macro_name.lower() == name.name.lower()
                                     for m in ctx.lake.functions(name.schema)):
        return StatementResult("CREATE FUNCTION", message="exists")
    # Checked (lake content is untrusted) and analysed by Spark before anything is stored.
    check = f"{shown}__ducklake_check"
    try:
        ctx.registry.create_function(check, definition, shown)
    finally:
        ctx.spark.sql(f"DROP TEMPORARY FUNCTION IF EXISTS {quote(check)}")
    duckdb = _macro_body(shown, body, is_query, parameters, str(plan.returnTypeText()))
    macro_parameters = tuple(_macro_parameter(ctx, p) for p in parameters)
    if plan.replace() and any(
            (m.macro_name, m.sql, m.parameters, m.spark_sql, m.kind)
            == (name.name, duckdb, macro_parameters, definition, "scalar")
            for m in ctx.lake.functions(name.schema)):
        # every `dbt run` replaces its functions: an identical one costs no snapshot (nor a
        # schema version, which makes every DuckDB reader load the catalog again)
        return StatementResult("CREATE FUNCTION", message="unchanged")
    snapshot = ctx.changed(ctx.lake.create_function(
        (name.schema, name.name), duckdb, macro_parameters, definition,
        replace=plan.replace(), info=ctx.commit_info("CREATE FUNCTION")))
    return StatementResult("CREATE FUNCTION", snapshot=snapshot)


def _macro_body(function: str, body: str, is_query: bool, parameters: Sequence[Parameter],
                returns: str) -> str:
    """What DuckDB's macro runs: :func:`duckdb_body`, or :func:`spark_only_body` with a
    warning naming the construct."""
    try:
        return duckdb_body(function, body, is_query, parameters, returns)
    except UnsupportedViewError as exc:
        log.warning("%s: DuckDB lists it but calling it there raises an error", exc)
    except Exception:  # a translation's failure never fails the function
        log.warning("function %s: its DuckDB translation failed; it is stored as Spark SQL "
                    "only", function, exc_info=True)
    return spark_only_body(function)


def _lake_calls_renamed(ctx: StatementContext, text: str) -> str:
    """``text`` (a function's body as a query) with its calls of lake functions named as
    their temp functions (`` `s.g`(x) `` for ``s.g(x)``, or ``g(x)`` in the profile's
    schema): inside a function's body Spark resolves a two-part name in its own catalog
    only, and a stored body must not depend on who reads it."""
    plan = ctx.spark._jsparkSession.sessionState().sqlParser().parsePlan(text)  # noqa: SLF001
    edits = []
    for start, parts in function_calls(plan):
        if len(parts) == 1 and ("." in parts[0] or is_builtin(ctx.spark, parts[0].lower())):
            continue  # `s.g` already, or Spark's own
        found = ctx.registry.function_name(parts)
        if found is None or not any(m.macro_name.lower() == found[1].lower()
                                    for m in ctx.lake.functions(found[0])):
            continue
        stop = call_name_end(text, start)
        if stop is not None:
            edits.append((start, stop, quote(f"{found[0]}.{found[1]}")))
    for start, stop, name in sorted(edits, reverse=True):
        text = text[:start] + name + text[stop:]
    return text


def _parameters(ctx: StatementContext, plan: Any) -> list[Parameter]:
    if not plan.inputParamText().isDefined():
        return []
    jstruct = ctx.spark._jsparkSession.sessionState().sqlParser().parseRoutineParam(  # noqa: SLF001
        plan.inputParamText().get())
    struct = StructType.fromJson(json.loads(jstruct.json()))
    return [Parameter(f.name, f.dataType.simpleString(), f.metadata.get("default"))
            for f in struct.fields]


def _macro_parameter(ctx: StatementContext, parameter: Parameter) -> MacroParameter:
    """A parameter as DuckDB's macro stores it: lake type, default as a typed constant."""
    data_type = ctx.spark.createDataFrame([], f"x {parameter.spark_type}").schema.fields[0]
    kind = lake_type(data_type.dataType, parameter.name)
    if parameter.default is None:
        return MacroParameter(parameter.name, kind)
    value = ctx.spark.sql(
        f"SELECT CAST(({parameter.default}) AS STRING) AS v").collect()[0]["v"]
    if value is None:
        return MacroParameter(parameter.name, kind)
    return MacroParameter(parameter.name, kind, str(value), kind)


def drop_function(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    """``DROP FUNCTION [IF EXISTS] s.f``: the macro ends in one snapshot."""
    name = ctx.written_name(name_parts(plan.child()))
    snapshot = ctx.changed(ctx.lake.drop_function(
        (name.schema, name.name), if_exists=plan.ifExists(),
        info=ctx.commit_info("DROP FUNCTION")))
    return StatementResult("DROP FUNCTION", snapshot=snapshot,
                           message="OK" if snapshot else "absent")


def class_function(ctx: StatementContext, plan: Any, sql: str) -> StatementResult:
    """``CREATE FUNCTION f AS 'com.example.Udf'``: refused, naming what the lake stores."""
    parts = ".".join(name_parts(plan.child()))
    raise UnsupportedStatementError(
        f"function {parts} is a Java class ({plan.className()}); the lake stores scalar SQL "
        "functions only (CREATE FUNCTION f(x DOUBLE) RETURNS DOUBLE RETURN x * 2); register "
        "a class with CREATE TEMPORARY FUNCTION in a session instead")


def register_functions(spark: SparkSession, lake: SparkLake, schema: str | None = None,
                       version: int | None = None) -> list[str]:
    """The Python API's access to the lake's functions: register each (of ``schema``, at
    snapshot ``version``; all and the latest by default) in ``spark`` as the temp function
    `` `schema.f` ``, checked as every lake function is, for DataFrame expressions
    (``df.selectExpr("`main.f`(x)")``). Returns their names. DuckDB's own macros, which have
    no Spark definition, are left out. Call it again after the functions change."""
    from .temp_views import ViewRegistry

    registry = ViewRegistry(spark, lake, version)
    names = []
    for macro in lake.functions(schema, version):
        if macro.spark_sql is not None:
            name = registry.register_function([f"{macro.schema_name}.{macro.macro_name}"])
            if name is not None:
                names.append(name)
    return names


HANDLERS = {
    "CreateUserDefinedFunction": create_function,
    "DropFunction": drop_function,
    "CreateFunction": class_function,
}
