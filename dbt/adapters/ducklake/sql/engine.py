"""Carry out one SQL statement: on Spark, or as a lake write that commits one snapshot.

Statements are parsed with Spark's own parser (never with regular expressions), so the SQL
accepted is exactly Spark SQL. Plans that write lake relations (CTAS, INSERT, DELETE, UPDATE,
CREATE VIEW, DROP, ALTER ... RENAME, schemas) are executed by the lake engine; the queries
inside them still run on Spark, over lake tables registered as temp views.

This module splits a script into statements, parses each and dispatches it by the class of
its plan: the handlers that define relations are in :mod:`.ddl`, those that change rows in
:mod:`.dml`, and what they share (session state, :class:`StatementResult`) in :mod:`.context`.
"""

from __future__ import annotations

from typing import Any

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import DataFrame

from ..lake.errors import InvalidArgumentError
from ..spark.expressions import java_class
from ..spark.lake import PartitionBy
from . import ddl, dml, functions
from .context import Handler, StatementContext, StatementResult, UnsupportedStatementError
from .names import LakeName, message_parameter
from .parsed_tree import parsed_tree
from .plans import statement_summary, writing_node

_HANDLERS: dict[str, Handler] = {**ddl.HANDLERS, **dml.HANDLERS, **functions.HANDLERS}

# Plans Spark carries out itself on session state (no lake write): run with the lake
# relations they name registered as temp views.
_COMMANDS = {"SetCommand", "ResetCommand", "CacheTable", "UncacheTable", "ShowTables",
             "ShowNamespaces", "DescribeRelation", "CreateTempViewUsing", "CreateViewCommand"}


class Engine(StatementContext):
    """Executes statements for one SparkSession and one lake."""

    # ------------------------------------------------------------------ entry point
    def execute(self, sql: str) -> StatementResult:
        statements = split_statements(sql)
        self._activate()
        result = StatementResult("EMPTY")
        for statement in statements:
            result = self._execute_one(statement)
        return result

    def _activate(self) -> None:
        """Make the session the active one of this thread's JVM thread, as ``spark.sql``
        does. Spark's parser reads SQL settings from the thread's active session
        (``SQLConf.get``); a py4j thread has none, so without this every statement was parsed
        with Spark's defaults instead of the session's settings (``${var}`` substitution and
        the ANSI mode of casts, which ``SET`` or ``spark.conf.set`` had changed, were
        ignored)."""
        java_class(self.spark, "org.apache.spark.sql.classic.SparkSession").setActiveSession(
            self.spark._jsparkSession)  # noqa: SLF001

    def _execute_one(self, sql: str) -> StatementResult:
        self.registry.refresh()
        sql = self._substitute(sql)
        alter = partition_alter(sql)
        if alter is not None:  # DuckDB's syntax, which Spark's parser rejects
            self.check_writable(f"`{statement_summary(sql)}`")
            return self.alter_partitioning(self.written_name(alter[0]), alter[1])
        plan, sql = self._parse(sql)
        kind = plan.getClass().getSimpleName()
        if self.read_only:
            self._check_read(plan, sql)
        if kind == "CreateViewCommand" and self._plain_temp_view(plan):
            return self._create_temp_view(plan, sql)
        handler = _HANDLERS.get(kind)
        if handler is None:
            if kind in _COMMANDS:
                return StatementResult(kind, df=self.registry.run_with_views(self.spark.sql, sql))
            return StatementResult("SELECT", df=self.registry.query(self.spark.sql, sql, plan))
        self.check_writable(f"`{statement_summary(sql)}`")
        return handler(self, plan, sql)

    def _substitute(self, sql: str) -> str:
        """The statement with Spark's ``${var}`` variables substituted, as its parser would
        (``spark.sql.variable.substitute``). Done once, up front, so that every position taken
        from a parse (the relation names rewritten to temp views, a type name corrected)
        indexes the text that is then changed and run."""
        if "${" not in sql:
            return sql
        substitution = java_class(self.spark,
                                  "org.apache.spark.sql.internal.VariableSubstitution")()
        return str(substitution.substitute(sql))

    def _check_read(self, plan: Any, sql: str) -> None:
        """On a pinned connection, refuse every statement that is not a read before anything
        runs: the lake engine's writes, and as much what Spark would carry out itself
        (``INSERT OVERWRITE DIRECTORY``, ``CREATE TABLE ... LOCATION``, ``ADD JAR``)."""
        node = writing_node(parsed_tree(self.spark, plan))
        if node is not None:
            self.check_writable(f"`{statement_summary(sql)}` (Spark's {node})")

    @staticmethod
    def _plain_temp_view(plan: Any) -> bool:
        return (plan.viewType().toString() == "LocalTempView"
                and plan.userSpecifiedColumns().isEmpty() and plan.comment().isEmpty()
                and plan.properties().isEmpty())

    def _create_temp_view(self, plan: Any, sql: str) -> StatementResult:
        """``CREATE [OR REPLACE] TEMPORARY VIEW v AS query`` (how dbt stages an incremental
        model's new rows): the query is planned here, with file skipping, and the view holds
        that plan; a view over a plan reads what the lake held when it was created, like every
        lake relation of the session."""
        df = self.dataframe(sql, lambda p: p.plan())
        name = plan.name().quotedString()
        if plan.replace():
            df.createOrReplaceTempView(name)
        else:
            try:
                df.createTempView(name)
            except AnalysisException:
                if not plan.allowExisting():
                    raise
        return StatementResult("CreateViewCommand")

    def _parse(self, sql: str) -> tuple[Any, str]:
        """Parse with Spark's parser. A type name Spark lacks but PostgreSQL and DuckDB users
        write (``TEXT``, ``INT8``, ...) is replaced by Spark's name at the position the parser
        reports, and the statement is parsed again; the corrected text is returned with it."""
        for _ in range(256):
            try:
                return self._parser.parsePlan(sql), sql
            except Exception as exc:  # noqa: BLE001 - py4j raises pyspark's captured ParseException
                fixed = _with_spark_type_name(exc, sql)
                if fixed is None:
                    raise _parse_error(exc, sql) from None
                sql = fixed
        raise ParseException(f"too many unsupported type names in: {sql[:200]}")

    # ------------------------------------------------------------------ called by the adapter
    def replace_table(self, name: LakeName, df: DataFrame,
                      not_null: list[str] | tuple[str, ...] = (),
                      partition_by: PartitionBy | None = None) -> StatementResult:
        """CREATE OR REPLACE TABLE from a DataFrame (:func:`.ddl.replace_table`)."""
        return ddl.replace_table(self, name, df, not_null, partition_by)

    def partitioning(self, name: LakeName) -> list[str]:
        """A table's partition spec as keys (:func:`.ddl.partitioning`)."""
        return ddl.partitioning(self, name)

    def alter_partitioning(self, name: LakeName,
                           partition_by: PartitionBy | None) -> StatementResult:
        """SET (a spec) or RESET (``None``) a table's partitioning
        (:func:`.ddl.alter_partitioning`)."""
        return ddl.alter_partitioning(self, name, partition_by)


def partition_alter(sql: str) -> tuple[list[str], str | None] | None:
    """``(name parts, spec text | None)`` for DuckDB's ``ALTER TABLE t SET PARTITIONED BY
    (...)`` / ``ALTER TABLE t RESET PARTITIONED BY``; ``None`` for any other statement.

    Spark's parser rejects these statements, so they are recognised from sqlglot's tokens
    (quotes, comments and case handled by the tokenizer), never with a regular expression.
    """
    upper = sql.upper()
    if "ALTER" not in upper or "PARTITIONED" not in upper:  # cheap test before tokenizing
        return None
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    try:
        tokens = Spark().tokenize(sql)
    except Exception:  # noqa: BLE001 - let Spark's parser report the error
        return None
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    if len(tokens) < 5 or tokens[0].token_type != TokenType.ALTER or \
            tokens[1].token_type != TokenType.TABLE:
        return None
    i, parts = 2, []
    while i < len(tokens):
        token = tokens[i]
        if token.token_type in (TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING) and \
                token.text.upper() not in ("SET", "RESET"):
            parts.append(token.text)
            i += 1
            if i < len(tokens) and tokens[i].token_type == TokenType.DOT:
                i += 1
                continue
        break
    rest = tokens[i:]
    if not parts or len(rest) < 2 or rest[1].token_type != TokenType.PARTITION_BY:
        return None
    verb = rest[0].text.upper()
    if verb == "RESET" and len(rest) == 2:
        return parts, None
    if verb == "SET" and len(rest) >= 4 and rest[2].token_type == TokenType.L_PAREN and \
            rest[-1].token_type == TokenType.R_PAREN:
        return parts, sql[rest[2].end + 1:rest[-1].start]
    raise InvalidArgumentError(
        "expected ALTER TABLE <table> SET PARTITIONED BY (<keys>) or ALTER TABLE <table> "
        f"RESET PARTITIONED BY; got: {sql.strip()}")


# Type names of PostgreSQL and DuckDB that Spark's parser does not know, with Spark's own.
TYPE_ALIASES = {"TEXT": "STRING", "BPCHAR": "STRING", "INT2": "SMALLINT", "INT4": "INT",
                "INT8": "BIGINT", "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE", "BOOL": "BOOLEAN",
                "BYTEA": "BINARY", "BLOB": "BINARY"}


def _with_spark_type_name(exc: Exception, sql: str) -> str | None:
    """``sql`` with the unsupported type name Spark reported replaced, or None."""
    condition = getattr(exc, "getCondition", None)
    if condition is None or condition() != "UNSUPPORTED_DATATYPE":
        return None
    name = str(message_parameter(exc, "typeName") or "").strip('"').upper()
    if name not in TYPE_ALIASES:
        return None
    for context in exc.getQueryContext():  # type: ignore[attr-defined]
        start, stop = context.startIndex(), context.stopIndex()
        if 0 <= start <= stop < len(sql) and sql[start:stop + 1].upper() == name:
            return sql[:start] + TYPE_ALIASES[name] + sql[stop + 1:]
    return None


def _parse_error(exc: Exception, sql: str) -> Exception:
    text = str(exc).strip()
    if "ParseException" in type(exc).__name__ or "PARSE_SYNTAX_ERROR" in text:
        return ParseException(text) if not isinstance(exc, ParseException) else exc
    return exc


def split_statements(sql: str) -> list[str]:
    """Split on top-level semicolons, respecting quotes and comments (sqlglot's tokenizer)."""
    if ";" not in sql:
        return [sql]
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    try:
        tokens = Spark().tokenize(sql)
    except Exception:  # noqa: BLE001 - let Spark's parser report the error
        return [sql]
    out, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            piece = sql[start:token.start]
            if piece.strip():
                out.append(piece)
            start = token.end + 1
    tail = sql[start:]
    if tail.strip() and any(t.start >= start for t in tokens):
        out.append(tail)
    return out or [sql]


__all__ = ["Engine", "StatementResult", "UnsupportedStatementError", "AnalysisException"]
