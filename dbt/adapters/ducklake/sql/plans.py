"""Reading Spark's parsed logical plans, which reach Python as py4j handles on JVM objects.

The statement handlers (:mod:`.ddl`, :mod:`.dml`) take names, clauses and expressions from the
plans Spark's parser builds; these helpers turn the Scala collections and name nodes into
Python values, and an expression back into the text the user wrote.
"""

from __future__ import annotations

from typing import Any


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
_STATEMENT_TRAITS = ("org.apache.spark.sql.catalyst.plans.logical.Command",
                     "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement",
                     "org.apache.spark.sql.catalyst.plans.logical.CTEInChildren")


def writing_node(spark: Any, plan: Any) -> str | None:
    """The class name of the first node of a parsed plan that is not part of a query (nor a
    command of :data:`SESSION_COMMANDS`, nor a temp view), or ``None`` for a read.

    What is a query is decided by what Spark says a node is, not by the statement's text:
    Spark marks statements that do something as ``Command``; the few that write without
    that mark (``INSERT OVERWRITE DIRECTORY`` is ``InsertIntoDir``, ``INSERT INTO`` a parsed
    statement, ``EXECUTE IMMEDIATE`` runs a statement of its own, ``CALL`` a procedure) are
    named, or carry ``ParsedStatement`` or ``CTEInChildren``. The whole tree is walked: a
    ``WITH`` clause puts the statement under the CTE node.
    """
    jvm = spark._jvm  # noqa: SLF001 - py4j's view of the JVM
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    traits = [jvm.java.lang.Class.forName(name, True, loader) for name in _STATEMENT_TRAITS]

    def first(node: Any, root: bool) -> str | None:
        kind = node.getClass().getSimpleName()
        allowed = root and (kind in SESSION_COMMANDS or (
            kind == "CreateViewCommand" and node.viewType().toString() != "PersistedView"))
        if not allowed and (kind in _STATEMENT_NODES or
                            any(trait.isInstance(node) for trait in traits)):
            return str(kind)
        for child in seq(node.children()):
            found = first(child, False)
            if found is not None:
                return found
        return None

    return first(plan, True)


def statement_summary(sql: str, limit: int = 80) -> str:
    """A statement as an error quotes it: without the comments before it (dbt's query
    comment would fill the line), on one line, cut at ``limit`` characters."""
    text = sql.strip()
    while text.startswith(("/*", "--")):
        end = text.find("*/") + 2 if text.startswith("/*") else text.find("\n") + 1
        text = text[end:].strip() if end > 1 else ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
