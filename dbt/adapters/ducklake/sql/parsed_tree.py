"""A parsed plan's tree as Python objects, read from the JVM in one call.

The statement engine finds the relations every statement names by walking the plan Spark's
parser built (:func:`.plans.relation_names`). Walked through py4j, each method call on a node is
a round trip to the JVM: a dbt snapshot's statement (60 nodes) took 40-110 ms, more than its
parse, and with dbt's threads waiting on one another, a fifth of a snapshot test's time. A
small Java class (``DuckLakeParsedTree.java``, beside this module) writes the tree out as text
instead (2 ms), compiled and cached by :mod:`..spark.jvm_classes`; this module reads the text
back into :class:`ParsedNode` objects. Should the class not compile (another Spark
version's API), the same tree is built through py4j, as slowly as before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..spark import jvm_classes
from ..spark.expressions import java_class

log = logging.getLogger("dbt.adapters.ducklake")

CLASS_NAME = "DuckLakeParsedTree"
_SOURCE = Path(__file__).with_name(f"{CLASS_NAME}.java")
_STATEMENT_TRAITS = ("org.apache.spark.sql.catalyst.plans.logical.Command",
                     "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement",
                     "org.apache.spark.sql.catalyst.plans.logical.CTEInChildren")


@dataclass(frozen=True)
class ParsedNode:
    """A node of a parsed plan: Spark's ``nodeName``, its class's simple name, whether Spark
    marks it a statement (``Command``, ``ParsedStatement`` or ``CTEInChildren``), the start and
    stop positions the parser recorded, its names (an ``UnresolvedRelation``'s name parts, a
    ``SubqueryAlias``'s alias, an ``UnresolvedWith``'s CTE names, a ``CreateViewCommand``'s
    view type), and the nodes below it by Spark's ``children``, ``innerChildren`` and
    ``subqueries`` (a subquery met earlier in the walk is left out)."""

    name: str
    class_name: str
    statement: bool = False
    start: int | None = None
    stop: int | None = None
    names: tuple[str, ...] = ()
    children: tuple[ParsedNode, ...] = ()
    inner_children: tuple[ParsedNode, ...] = ()
    subqueries: tuple[ParsedNode, ...] = ()


def parsed_tree(spark: Any, plan: Any) -> ParsedNode:
    """The tree of ``plan`` (a py4j handle on a parsed plan)."""
    writer = _writer(spark)
    if writer is not None:
        try:
            return decode(str(writer.write(plan)))
        except Exception:  # noqa: BLE001 - a node the class does not know: walk it instead
            log.debug("the parsed-tree class failed on a plan; it is walked through py4j",
                      exc_info=True)
    return _walked(spark, plan)


def decode(text: str) -> ParsedNode:
    """The tree ``DuckLakeParsedTree.write`` wrote as ``text``."""
    # each entry: the node's fields, and its three lists of nodes below, filled as they come
    stack: list[tuple[list[str], dict[str, list[ParsedNode]]]] = []
    root: ParsedNode | None = None
    for line in text.split("\n"):
        if not line:
            continue
        depth_text, edge, *fields = line.split("\t")
        depth = int(depth_text)
        while len(stack) > depth:
            root = _finish(stack, root)
        stack.append(([edge, *fields], {"c": [], "i": [], "s": []}))
    while stack:
        root = _finish(stack, root)
    if root is None:
        raise ValueError("an empty parsed tree")
    return root


def _finish(stack: list[tuple[list[str], dict[str, list[ParsedNode]]]],
            root: ParsedNode | None) -> ParsedNode | None:
    """Pop the deepest open node, built, into its parent's list (or as the root)."""
    (edge, name, class_name, statement, start, stop, *names), below = stack.pop()
    node = ParsedNode(
        _unescaped(name), _unescaped(class_name), statement == "1",
        int(start) if start else None, int(stop) if stop else None,
        tuple(_unescaped(n) for n in names),
        tuple(below["c"]), tuple(below["i"]), tuple(below["s"]))
    if not stack:
        return node
    stack[-1][1][edge].append(node)
    return root


def _unescaped(text: str) -> str:
    if "\\" not in text:
        return text
    out, chars = [], iter(text)
    for c in chars:
        if c == "\\":
            escaped = next(chars, "\\")
            c = {"t": "\t", "n": "\n"}.get(escaped, escaped)
        out.append(c)
    return "".join(out)


# ------------------------------------------------------------------ the class, once per JVM
def _writer(spark: Any) -> Any:
    """An instance of ``DuckLakeParsedTree`` in ``spark``'s JVM; ``None`` if it cannot be
    made there (then :func:`_walked` builds the tree)."""
    return jvm_classes.instance(spark, _SOURCE, CLASS_NAME)


# ------------------------------------------------------------- the same tree through py4j
def _walked(spark: Any, plan: Any) -> ParsedNode:
    """:func:`parsed_tree` by py4j calls, one or more per node: where the class cannot be
    made. The tree is the one the class writes."""
    loader = java_class(spark, "java.lang.Thread").currentThread().getContextClassLoader()
    forname = java_class(spark, "java.lang.Class").forName
    traits = [forname(name, True, loader) for name in _STATEMENT_TRAITS]
    return _walk(plan, traits, set())


def _walk(node: Any, traits: list[Any], seen: set[int]) -> ParsedNode:
    class_name = str(node.getClass().getSimpleName())
    origin = node.origin()
    start, stop = origin.startIndex(), origin.stopIndex()
    below: dict[str, list[ParsedNode]] = {"c": [], "i": [], "s": []}
    for edge, getter in (("c", "children"), ("i", "innerChildren"), ("s", "subqueries")):
        try:
            nodes = getattr(node, getter)()
            children = [nodes.apply(i) for i in range(nodes.size())]
        except Exception:  # noqa: BLE001 - py4j: no such edge on this node
            continue
        for child in children:
            key = child.hashCode()
            if edge == "s" and key in seen:
                continue
            seen.add(key)
            below[edge].append(_walk(child, traits, seen))
    return ParsedNode(
        str(node.nodeName()), class_name, any(t.isInstance(node) for t in traits),
        start.get() if start.isDefined() else None, stop.get() if stop.isDefined() else None,
        _names(node, class_name), tuple(below["c"]), tuple(below["i"]), tuple(below["s"]))


def _names(node: Any, class_name: str) -> tuple[str, ...]:
    if class_name == "UnresolvedRelation":
        parts = node.multipartIdentifier()
        return tuple(str(parts.apply(i)) for i in range(parts.size()))
    if class_name == "SubqueryAlias":
        return (str(node.alias()),)
    if class_name == "UnresolvedWith":  # (name, plan, ...) tuples
        ctes = node.cteRelations()
        return tuple(str(ctes.apply(i)._1()) for i in range(ctes.size()))
    if class_name == "CreateViewCommand":
        return (str(node.viewType().toString()),)
    return ()
