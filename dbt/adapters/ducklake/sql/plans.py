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
