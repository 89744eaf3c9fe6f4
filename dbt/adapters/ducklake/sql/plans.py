"""Reading Spark's parsed logical plans, which reach Python as py4j handles on JVM objects.

The statement handlers (:mod:`.ddl`, :mod:`.dml`) take names, clauses and expressions from the
plans Spark's parser builds; these helpers turn the Scala collections and name nodes into
Python values, and an expression back into the text the user wrote. The temp-view registry
(:mod:`.temp_views`) finds the relations a statement names in its parsed plan's tree, read from
the JVM in one call (:mod:`.parsed_tree`, :func:`relation_names`), and the columns it
qualifies by schema and table by walking the plan itself (:func:`qualified_columns`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .names import quote
from .parsed_tree import ParsedNode


def source_text(expr: Any, sql: str) -> str:
    """An expression's own text in the statement, from the positions Spark's parser recorded.

    Spark's ``Expression.sql()`` cannot always be parsed again (an IN subquery prints as
    ``listquery()``), so the original text is used whenever its span is known.
    """
    span = _span(expr)
    if span is not None:
        return sql[span[0]: span[1] + 1]
    return expr.sql()


def _span(expr: Any) -> tuple[int, int] | None:
    """The widest [start, stop] the parser recorded over an expression and its children: a
    node's own origin can be narrower than its text (``a BETWEEN 1 AND 2`` records only
    ``BETWEEN 1 AND 2`` on the AND it builds, and ``a`` on its child)."""
    origin = expr.origin()
    start, stop = origin.startIndex(), origin.stopIndex()
    best = (start.get(), stop.get()) if start.isDefined() and stop.isDefined() else None
    children = expr.children()
    for i in range(children.size()):
        child = _span(children.apply(i))
        if child is not None:
            best = child if best is None else (min(best[0], child[0]), max(best[1], child[1]))
    return best


def seq(node: Any) -> list[Any]:
    """A Scala Seq as a Python list."""
    return [node.apply(i) for i in range(node.size())]


def name_parts(node: Any) -> list[str]:
    """Name parts of an unresolved identifier, relation or namespace, or of a Scala Seq."""
    for method in ("nameParts", "multipartIdentifier"):
        try:
            node = getattr(node, method)()
            break
        except Exception:  # noqa: BLE001 - py4j: no such method on this node
            continue
    return [node.apply(i) for i in range(node.size())]


# Commands that only read, or change nothing but this session's state (settings, temp views,
# the cache, session variables): a connection pinned to a snapshot may run them.
SESSION_COMMANDS = frozenset({
    "SetCommand", "ResetCommand", "SetCatalogAndNamespace", "CacheTable", "UncacheTable",
    "ClearCacheCommand$", "RefreshTable", "ShowTables", "ShowViews", "ShowNamespaces",
    "ShowColumns", "ShowFunctions", "ShowCreateTable", "ShowTableProperties",
    "ShowPartitions", "DescribeRelation", "DescribeColumn", "DescribeNamespace",
    "DescribeFunction", "DescribeQueryCommand", "ExplainCommand", "CreateTempViewUsing",
    "ListJarsCommand", "ListFilesCommand", "ListArchivesCommand", "CreateVariable",
    "SetVariable", "DropVariable",
})
# Statements that are not queries although Spark does not mark them ``Command``.
_STATEMENT_NODES = frozenset({"InsertIntoDir", "InsertIntoStatement", "Call",
                              "UnresolvedExecuteImmediate"})


def writing_node(tree: ParsedNode) -> str | None:
    """The class name of the first node of a parsed plan's tree that is not part of a query
    (nor a command of :data:`SESSION_COMMANDS`, nor a temp view), or ``None`` for a read.

    What is a query is decided by what Spark says a node is, not by the statement's text:
    Spark marks statements that do something as ``Command`` (or ``ParsedStatement``, or
    ``CTEInChildren``: :attr:`.ParsedNode.statement`); the few that write without that mark
    (``INSERT OVERWRITE DIRECTORY`` is ``InsertIntoDir``, ``INSERT INTO`` a parsed statement,
    ``EXECUTE IMMEDIATE`` runs a statement of its own, ``CALL`` a procedure) are named. The
    whole tree is walked: a ``WITH`` clause puts the statement under the CTE node.
    """
    def first(node: ParsedNode, root: bool) -> str | None:
        kind = node.class_name
        allowed = root and (kind in SESSION_COMMANDS or (
            kind == "CreateViewCommand" and node.names != ("PersistedView",)))
        if not allowed and (kind in _STATEMENT_NODES or node.statement):
            return kind
        for child in node.children:
            found = first(child, False)
            if found is not None:
                return found
        return None

    return first(tree, True)


def statement_summary(sql: str, limit: int = 80) -> str:
    """A statement as an error quotes it: without the comments before it (dbt's query
    comment would fill the line), on one line, cut at ``limit`` characters."""
    text = sql.strip()
    while text.startswith(("/*", "--")):
        end = text.find("*/") + 2 if text.startswith("/*") else text.find("\n") + 1
        text = text[end:].strip() if end > 1 else ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------- relations
@dataclass(frozen=True)
class Named:
    """The relation names in a parsed statement, ``(start, stop, name)`` by the parser's
    positions: one-part names, two-part names, and the CTE names (lower-cased); the start
    positions of the names that carry an alias (``FROM s.t AS x``), and the aliases
    (lower-cased)."""

    single: list[tuple[int, int, str]]
    qualified: list[tuple[int, int, tuple[str, str]]]
    ctes: set[str]
    aliased: set[int] = field(default_factory=set)
    aliases: set[str] = field(default_factory=set)


def relation_names(tree: ParsedNode) -> Named:
    """The relation names in a parsed plan's tree (or a part of one)."""
    named = Named([], [], set())
    _relations(tree, named)
    return named


def qualified_columns(plan: Any, tables: dict[tuple[str, str], str]
                      ) -> list[tuple[int, int, str, str]]:
    """The column references and stars of a parsed plan qualified by one of ``tables``
    (``(schema, table)`` -> view name): ``(start, stop, view name, the rest)``."""
    found: dict[int, tuple[int, int, str, str]] = {}
    _qualified_columns(plan, tables, found)
    return list(found.values())


# the parsed plan nodes that give the relation below them a name of their own
_ALIASING = {"SubqueryAlias", "UnresolvedSubqueryColumnAliases"}


def _relations(node: ParsedNode, named: Named, aliased: bool = False) -> None:
    """Collect the one- and two-part relation references of a parsed plan's tree, with their
    spans, and its CTE names and aliases; ``aliased`` when ``node``'s parent names it."""
    kind = node.name
    if kind == "SubqueryAlias":
        named.aliases.add(node.names[0].lower())
    if kind == "UnresolvedRelation" and len(node.names) <= 2 and node.start is not None \
            and node.stop is not None:
        start, stop = node.start, node.stop + 1
        if aliased:
            named.aliased.add(start)
        if len(node.names) == 1:
            named.single.append((start, stop, node.names[0]))
        else:
            named.qualified.append((start, stop, (node.names[0], node.names[1])))
    if kind == "UnresolvedWith":
        named.ctes.update(name.lower() for name in node.names)
    for child in node.children:
        _relations(child, named, kind in _ALIASING)
    for child in (*node.inner_children, *node.subqueries):
        _relations(child, named)


def _qualified_columns(node: Any, tables: dict[tuple[str, str], str],
                       found: dict[int, tuple[int, int, str, str]]) -> None:
    """Collect, in a parsed plan, the column references and stars qualified by one of
    ``tables`` (``(schema, table)`` -> view name): ``(start, stop, view name, the rest)`` by
    start position (a tree reached twice gives the same spans)."""
    try:
        expressions = seq(node.expressions())
    except Exception:  # noqa: BLE001 - py4j: not a plan node
        return
    for expression in expressions:
        stack = [expression]
        while stack:
            expr = stack.pop()
            kind = expr.nodeName()
            parts: list[str] | None = None
            if kind == "UnresolvedAttribute":
                parts = seq(expr.nameParts())
            elif kind == "UnresolvedStar" and expr.target().isDefined():
                parts = [*seq(expr.target().get()), "*"]
            origin = expr.origin()
            if parts and len(parts) >= 3 and origin.startIndex().isDefined() and \
                    origin.stopIndex().isDefined():
                view = tables.get((str(parts[0]).lower(), str(parts[1]).lower()))
                if view is not None:
                    rest = ".".join(p if p == "*" else quote(p) for p in parts[2:])
                    start = origin.startIndex().get()
                    found[start] = (start, origin.stopIndex().get() + 1, view, rest)
            stack.extend(seq(expr.children()))
    for getter in ("children", "innerChildren", "subqueries"):
        for child in seq(getattr(node, getter)()):
            _qualified_columns(child, tables, found)


def function_calls(plan: Any) -> list[tuple[int, list[str]]]:
    """The calls of functions by a one- or two-part name in a parsed plan, with the start of
    each in the statement's text: ``(start, name parts)``, subqueries included."""
    found: dict[int, list[str]] = {}

    def walk(node: Any) -> None:
        try:
            expressions = seq(node.expressions())
        except Exception:  # noqa: BLE001 - py4j: not a plan node
            return
        stack = list(expressions)
        while stack:
            expr = stack.pop()
            kind = expr.nodeName()
            if kind in ("ScalarSubquery", "Exists", "ListQuery", "LateralSubquery"):
                walk(expr.plan())
            elif kind == "UnresolvedFunction":
                parts = [str(p) for p in seq(expr.nameParts())]
                start = expr.origin().startIndex()
                if len(parts) <= 2 and start.isDefined():
                    found[start.get()] = parts
            stack.extend(seq(expr.children()))
        for getter in ("children", "innerChildren"):
            for child in seq(getattr(node, getter)()):
                walk(child)

    walk(plan)
    return sorted(found.items())
