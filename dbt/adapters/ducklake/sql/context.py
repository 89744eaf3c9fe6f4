"""What every statement handler works with: Spark, the lake, the temp views, and the result.

The engine (:mod:`.engine`) parses and dispatches; the handlers of :mod:`.ddl` and :mod:`.dml`
carry statements out. Both need the same session state and the same few steps (a written
name checked, a relation looked up, the temp views invalidated after a commit), which live
here, below both, so that neither imports the other's module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..lake.errors import DuckLakeError, InvalidArgumentError, ReadOnlyError
from ..lake.models import Snapshot
from ..lake.options import normalise_table_options
from ..lake.sort_order import parse_sorted_by
from ..spark import statement_sizing
from ..spark.constraints import NO_CONSTRAINTS, TableConstraints
from ..spark.expressions import java_class
from ..spark.lake import CommitInfo, LakeTable, SparkLake
from .names import LakeName, parse_name
from .temp_views import ViewRegistry


@dataclass
class StatementResult:
    """What a statement did: a query's DataFrame, or a write's snapshot and row count."""

    kind: str
    df: DataFrame | None = None
    rows_affected: int = -1
    snapshot: Snapshot | None = None
    message: str = "OK"


class UnsupportedStatementError(DuckLakeError):
    """A statement that writes lake relations in a way the engine does not carry out yet."""


class StatementContext:
    """One SparkSession and one lake, as the statement handlers see them."""

    def __init__(self, spark: SparkSession, lake: SparkLake, registry: ViewRegistry,
                 commit_info: Callable[[str], CommitInfo] | None = None,
                 read_only: bool = False) -> None:
        self.spark = spark
        self.lake = lake
        self.registry = registry
        self.commit_info = commit_info or (lambda _kind: CommitInfo())
        self.read_only = read_only
        # (schema, table) lowercased -> the constraints its writes are checked against
        self.constraints: dict[tuple[str, str], TableConstraints] = {}
        # (schema, table) lowercased -> the table options its writes store and follow
        self.table_options: dict[tuple[str, str], dict[str, str]] = {}
        # (schema, table) lowercased -> the sort order its writes set (["id", "ts DESC"])
        self.sorted_by: dict[tuple[str, str], list[str]] = {}
        self._parser = spark._jsparkSession.sessionState().sqlParser()  # noqa: SLF001
        statement_sizing.gate(spark)  # the session's own settings, before any model's

    def check_writable(self, what: str = "this statement") -> None:
        """A connection pinned to a snapshot reads the past: it must not write. ``what`` names
        the statement or operation refused."""
        if self.read_only:
            raise ReadOnlyError.pinned(self.registry.pinned_version, what)

    def dataframe(self, sql: str, part: Callable[[Any], Any]) -> DataFrame:
        """The query inside a statement as a DataFrame, registering the lake relations it reads.

        The statement is parsed afresh for every attempt: Spark's analyzer marks the nodes of
        a plan it failed to analyse, so a failed plan cannot be analysed again.
        """
        datasets = java_class(self.spark, "org.apache.spark.sql.classic.Dataset")
        jss = self.spark._jsparkSession  # noqa: SLF001

        def build(text: str) -> DataFrame:
            jplan = part(self._parser.parsePlan(text))
            return DataFrame(datasets.ofRows(jss, jplan), self.spark)

        try:
            plan = part(self._parser.parsePlan(sql))
        except Exception:  # noqa: BLE001 - build raises it, with the registry's help
            plan = None
        return self.registry.query(build, sql, plan)

    def written_name(self, parts: list[str]) -> LakeName:
        """The lake relation a statement writes: a plain name, never a past snapshot or a
        change feed (those are read-only views)."""
        name = parse_name(parts)
        if name is not None and not name.plain:
            raise InvalidArgumentError(
                f"{name.view_name} is a past snapshot or a change feed of a lake table: it "
                "can be read, not written")
        if name is None:
            raise InvalidArgumentError(
                f"{'.'.join(parts)} is not a lake relation name; write `schema.table` "
                "(one quoted identifier, as dbt renders it) or schema.table")
        return name

    def changed(self, snapshot: Snapshot | None) -> Snapshot | None:
        """A statement changed the lake: the temp views of the tables it changed are stale."""
        self.registry.lake_changed()
        return snapshot

    def table(self, name: LakeName) -> LakeTable:
        return LakeTable(self.lake, name.schema, name.name, self.constraints_of(name),
                         self.table_options_of(name), self.sorted_by_of(name))

    def sorted_by_of(self, name: LakeName) -> list[str] | None:
        """The sort order the writes to ``name`` set (:meth:`expect_sorted_by`); ``None``:
        they leave the table's own."""
        return self.sorted_by.get((name.schema.lower(), name.name.lower()))

    def expect_sorted_by(self, name: LakeName, sorted_by: list[str] | None) -> None:
        """Have every later write to ``name`` set the table's sort order to ``sorted_by``
        with its commit (where it differs) and write its files in it; ``None`` stops it."""
        key = (name.schema.lower(), name.name.lower())
        if sorted_by is None:
            self.sorted_by.pop(key, None)
        else:
            parse_sorted_by(sorted_by)  # fails now on a malformed key
            self.sorted_by[key] = list(sorted_by)

    def table_options_of(self, name: LakeName) -> dict[str, str]:
        """The table options the writes to ``name`` store and follow
        (:meth:`expect_table_options`), none by default."""
        return self.table_options.get((name.schema.lower(), name.name.lower()), {})

    def expect_table_options(self, name: LakeName, options: Mapping[str, Any]) -> None:
        """Have every later write to ``name`` write its files by ``options`` (the table's
        own lake options) and store those the catalog does not hold with its commit; empty
        ones stop it. Unknown keys fail listing the accepted ones."""
        key = (name.schema.lower(), name.name.lower())
        normalised = normalise_table_options(options)
        if normalised:
            self.table_options[key] = normalised
        else:
            self.table_options.pop(key, None)

    def constraints_of(self, name: LakeName) -> TableConstraints:
        """The constraints the writes to ``name`` are checked against
        (:meth:`expect_constraints`), none by default."""
        return self.constraints.get((name.schema.lower(), name.name.lower()), NO_CONSTRAINTS)

    def expect_constraints(self, name: LakeName, constraints: TableConstraints) -> None:
        """Check every later write to ``name`` against ``constraints`` (a dbt model
        contract's), until they are replaced; empty ones stop the checks."""
        key = (name.schema.lower(), name.name.lower())
        if constraints:
            self.constraints[key] = constraints
        else:
            self.constraints.pop(key, None)

    def exists(self, name: LakeName) -> str | None:
        """``'table'``, ``'view'`` or ``None``."""
        lake = self.lake.catalog
        for kind, relation in lake.relations(name.schema):
            if relation.lower() == name.name.lower():
                return kind
        return None


Handler = Callable[[StatementContext, Any, str], StatementResult]
"""Carries out one kind of statement: ``handler(context, parsed plan, statement text)``."""
