"""Lake relation names as Spark SQL spells them.

A relation renders as one quoted identifier, `` `schema.table` ``; time travel and the change
feed add a suffix (`` `schema.table@v42` ``, `` `schema.table@changes:3..7` ``, see
:class:`LakeName`), and the lake-wide views have names of their own (``@snapshots``). The
temp views registered under these names are :mod:`.temp_views`'s business; this module only
reads and writes the names, including the one Spark reports missing in an analysis error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException

from ..spark.expressions import split_identifier

_SUFFIX = re.compile(
    r"^(?P<base>.+?)@(?:v(?P<version>\d+)|ts:(?P<timestamp>.+)"
    r"|(?P<feed>changes|insertions|deletions):(?P<start>.*?)\.\.(?P<end>.*))$")
# lake-wide views that belong to no schema
SNAPSHOTS = "@snapshots"
CURRENT_SNAPSHOT = "@current_snapshot"


@dataclass(frozen=True)
class LakeName:
    """A lake relation as a view name: `` `schema.table` `` plus an optional suffix.

    ``@v42`` pins snapshot 42; ``@ts:<time>`` the latest snapshot at or before a time;
    ``@changes:<start>..<end>`` (also ``insertions``, ``deletions``) is the change feed
    between two bounds, each a snapshot id or a time (an empty end: the current snapshot).
    """

    schema: str
    name: str
    version: int | None = None
    timestamp: str | None = None
    feed: str | None = None
    start: str | None = None
    end: str | None = None

    @property
    def view_name(self) -> str:
        if not self.schema:
            return self.name
        base = f"{self.schema}.{self.name}"
        if self.version is not None:
            return f"{base}@v{self.version}"
        if self.timestamp is not None:
            return f"{base}@ts:{self.timestamp}"
        if self.feed is not None:
            return f"{base}@{self.feed}:{self.start or ''}..{self.end or ''}"
        return base

    @property
    def plain(self) -> bool:
        """Names the relation itself (current or pinned snapshot): writable."""
        return self.version is None and self.timestamp is None and self.feed is None


def parse_name(parts: list[str], default_schema: str | None = None) -> LakeName | None:
    """A lake name from Spark's name parts: [`s.t`], [`s.t@v3`], [`@snapshots`] or [s, t]."""
    if len(parts) == 1:
        text = parts[0]
        if text in (SNAPSHOTS, CURRENT_SNAPSHOT):
            return LakeName("", text)
        suffix: dict[str, str | int | None] = {}
        match = _SUFFIX.match(text)
        if match:
            text = match.group("base")
            if match.group("version") is not None:
                suffix["version"] = int(match.group("version"))
            elif match.group("timestamp") is not None:
                suffix["timestamp"] = match.group("timestamp")
            else:
                suffix.update(feed=match.group("feed"), start=match.group("start") or None,
                              end=match.group("end") or None)
        if "." in text:
            schema, name = text.split(".", 1)
            return LakeName(schema, name, **suffix)  # type: ignore[arg-type]
        if default_schema is not None:
            return LakeName(default_schema, text, **suffix)  # type: ignore[arg-type]
        return None
    if len(parts) == 2:
        return LakeName(parts[0], parts[1])
    return None


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# ---------------------------------------------------------------------- names in Spark's errors
def _condition(exc: AnalysisException) -> str | None:
    """Spark's error condition of ``exc`` (``getErrorClass`` on older PySpark)."""
    for attr in ("getCondition", "getErrorClass"):
        try:
            condition = getattr(exc, attr)()
        except Exception:  # noqa: BLE001
            continue
        if condition:
            return condition
    return None


def missing_relation(exc: AnalysisException) -> list[str] | None:
    """The name parts of the relation Spark could not find, if that is what failed."""
    condition = _condition(exc)
    if condition not in ("TABLE_OR_VIEW_NOT_FOUND", "VIEW_NOT_FOUND", "TABLE_NOT_FOUND"):
        return None
    name = message_parameter(exc, "relationName") or message_parameter(exc, "viewName") or \
        message_parameter(exc, "tableName")
    if not name:
        return None
    return split_identifier(name)


def missing_routine(exc: AnalysisException) -> list[str] | None:
    """The name parts of the function Spark could not resolve, if that is what failed."""
    if _condition(exc) != "UNRESOLVED_ROUTINE":
        return None
    name = message_parameter(exc, "routineName")
    return split_identifier(name) if name else None


def message_parameter(exc: Exception, key: str) -> str | None:
    """One message parameter of a Spark error, ``None`` if it has none of that name.

    Not PySpark's ``getMessageParameters()``: it copies the Java map into a dict through
    py4j, whose iteration ends on a Java ``NoSuchElementException`` that PySpark converts to
    a Python exception, a dozen calls into the JVM (more than the rest of a missed
    relation's registration). One ``get`` on the Java map is one call.
    """
    origin = getattr(exc, "_origin", None)
    if origin is None:
        return None
    try:
        from pyspark import SparkContext

        jvm: Any = SparkContext._jvm  # noqa: SLF001
        value = jvm.PythonErrorUtils.getMessageParameters(origin).get(key)
    except Exception:  # noqa: BLE001 - not a SparkThrowable
        return None
    return None if value is None else str(value)
