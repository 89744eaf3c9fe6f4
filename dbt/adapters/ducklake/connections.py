"""Connections: a DB-API-shaped cursor per thread over the profile's runtime (:mod:`.runtime`:
one SparkSession, lake and statement engine per profile).

Spark has no transactions and neither do we need them here: atomicity lives in the DuckLake
commit of each statement, so BEGIN and COMMIT are no-ops (as in dbt-spark).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from dbt.adapters.contracts.connection import AdapterResponse, Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.sql import SQLConnectionManager
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError

from .credentials import DuckLakeCredentials
from .lake.errors import DuckLakeError
from .lake.secrets import redact
from .publish_gate import current_runtime
from .runtime import Runtime, set_statement_node
from .spark import statement_sizing
from .spark.expressions import string

if TYPE_CHECKING:
    from .sql.engine import StatementResult

logger = AdapterLogger("DuckLake")


class DuckLakeCursor:
    """DB-API-shaped cursor: ``execute`` routes through the engine, results come from Spark."""

    def __init__(self, runtime: Runtime, node: str | None) -> None:
        self.runtime = runtime
        self.node = node
        self.result: StatementResult | None = None
        self._rows: list[tuple[Any, ...]] | None = None

    def execute(self, sql: str, bindings: Any = None) -> None:
        if bindings:
            sql = _bind(sql, bindings)
        set_statement_node(self.node)
        self._rows = None
        self.result = self.runtime.engine.execute(sql)

    @property
    def description(self) -> list[tuple[Any, ...]]:
        if self.result is None or self.result.df is None:
            return []
        return [(f.name, f.dataType.simpleString(), None, None, None, None, f.nullable)
                for f in self.result.df.schema.fields]

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self._rows is None:
            df = self.result.df if self.result else None
            self._rows = [] if df is None else _collect(df)
        return self._rows

    def fetchmany(self, size: int) -> list[tuple[Any, ...]]:
        if self._rows is None and self.result is not None and self.result.df is not None:
            return _collect(self.result.df.limit(size))
        return self.fetchall()[:size]

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    @property
    def rowcount(self) -> int:
        return self.result.rows_affected if self.result else -1

    def close(self) -> None:
        self.result = None


def _collect(df: Any) -> list[tuple[Any, ...]]:
    """``df``'s rows, run with the settings its inputs call for (a small statement as one
    stage, :func:`.statement_sizing.run_sized`), as a fetch from any cursor method is."""
    return [tuple(r) for r in statement_sizing.run_sized(
        df.sparkSession, df, lambda run: run.collect())]


def _bind(sql: str, bindings: Any) -> str:
    """Inline ``%s`` parameters as Spark SQL literals (dbt passes them only for seeds/tests);
    a string reads back as itself whatever the session's parser settings (:func:`.string`)."""
    import datetime as dt
    import math
    from decimal import Decimal

    def literal(value: Any) -> str:
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, float):
            # ``nan``/``inf`` would parse as column names, ``0.1`` as a decimal: spell a double
            return f"CAST('{value!r}' AS DOUBLE)" if not math.isfinite(value) else f"{value!r}D"
        if isinstance(value, (int, Decimal)):
            return str(value)
        if isinstance(value, dt.datetime):
            return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
        if isinstance(value, dt.date):
            return f"DATE '{value.isoformat()}'"
        # no backslash escapes: their meaning depends on
        # spark.sql.parser.escapedStringLiterals, which the session may set either way
        return string(str(value))

    parts = sql.split("%s")
    if len(parts) - 1 != len(bindings):
        raise DbtRuntimeError("wrong number of bindings for the statement")
    out = [parts[0]]
    for value, part in zip(bindings, parts[1:]):
        out.append(literal(value))
        out.append(part)
    return "".join(out)


class DuckLakeHandle:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    @property
    def runtime(self) -> Runtime:
        """The runtime of the invocation now running: the profile's, or in an atomic
        invocation its branch's (a connection may outlive an invocation in one process)."""
        return current_runtime(self.connection.credentials)

    def cursor(self) -> DuckLakeCursor:
        return DuckLakeCursor(self.runtime, self.connection.name)

    def close(self) -> None:
        pass

    def rollback(self) -> None:
        pass


class DuckLakeConnectionManager(SQLConnectionManager):
    TYPE = "ducklake"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        credentials: DuckLakeCredentials = connection.credentials
        try:
            current_runtime(credentials)
        except DbtRuntimeError:
            connection.state = ConnectionState.FAIL
            raise
        except Exception as exc:  # noqa: BLE001 - ours, or a driver's: passwords masked
            connection.state = ConnectionState.FAIL
            raise DbtDatabaseError(f"could not open the lake: {redact(str(exc))}") from None
        connection.handle = DuckLakeHandle(connection)
        connection.state = ConnectionState.OPEN
        return connection

    @classmethod
    def get_response(cls, cursor: DuckLakeCursor) -> AdapterResponse:
        result = cursor.result
        if result is None:
            return AdapterResponse(_message="OK")
        message = result.kind
        if result.message.endswith("cannot be altered in place"):
            logger.warning(result.message)  # a rebuild that could not keep the table's identity
        if result.snapshot is not None:
            message = f"{result.kind} (snapshot {result.snapshot.snapshot_id})"
        return AdapterResponse(_message=message, rows_affected=result.rows_affected,
                               code=result.kind)

    def cancel(self, connection: Connection) -> None:
        pass

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        try:
            yield
        except (DbtRuntimeError, DbtDatabaseError):
            raise
        except DuckLakeError as exc:
            raise DbtDatabaseError(redact(str(exc))) from exc
        except Exception as exc:
            raise DbtDatabaseError(redact(_spark_message(exc))) from exc

    def add_begin_query(self) -> None:
        pass

    def add_commit_query(self) -> None:
        pass

    def begin(self) -> None:
        pass

    def commit(self) -> None:
        pass

    @classmethod
    def data_type_code_to_name(cls, type_code: Any) -> str:
        return str(type_code)


def _spark_message(exc: BaseException) -> str:
    """Spark's error as a dbt user needs it: the error class and message (``[UNRESOLVED_COLUMN
    ...] ... Did you mean ...``) and where in the statement it is.

    Spark appends the analyzed plan, which shows the adapter's inner workings (temp views,
    hidden ``_ducklake_*`` columns, every data file path) rather than the user's query: that
    goes to dbt's debug log only. Errors without Spark's structure lose the JVM stack trace.
    """
    text = str(exc).strip()
    message = None
    try:
        message = exc.getMessage()  # type: ignore[attr-defined]  # PySparkException
    except Exception:  # noqa: BLE001 - not a Spark error with a message
        message = None
    if not message:
        lines = [line for line in text.splitlines() if not line.strip().startswith("at ")]
        return "\n".join(lines[:20]) or type(exc).__name__
    logger.debug(f"Spark's error in full: {text}")
    message = message.strip()
    first = text.splitlines()[0] if text else ""
    position = re.search(r"; line (\d+) pos (\d+)", first)
    fragment = None
    try:
        contexts = exc.getQueryContext() or []  # type: ignore[attr-defined]
        fragment = contexts[0].fragment() if contexts else None
    except Exception:  # noqa: BLE001 - no query context
        fragment = None
    if position:
        where = (f"at line {position.group(1)}, position {position.group(2)} of the "
                 "statement run")
        message += f"\n  {where}" + (f": {fragment}" if fragment else "")
    elif fragment:
        message += f"\n  at: {fragment}"
    return message
