"""Spies for tests that check how often the engine takes a path (a Spark write, a cache)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def counted(function: Callable[..., Any]) -> Any:
    """``function``, counting its calls in ``.calls``."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wrapper.calls += 1  # type: ignore[attr-defined]
        return function(*args, **kwargs)
    wrapper.calls = 0  # type: ignore[attr-defined]
    return wrapper


def refused(what: str) -> Callable[..., Any]:
    """A stand-in for a path a test says is not taken: calling it fails the test."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(what)
    return refuse


def scanned_rows(df: Any) -> list[int]:
    """The rows each ``format("ducklake")`` scan of ``df`` handed to Spark, from the plan's
    metrics, after collecting it: Spark filters rows above the scan, so only this count shows
    whether the scan skipped files."""
    df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    nodes, out = [plan], []
    while nodes:
        node = nodes.pop()
        if node.nodeName().startswith("BatchScan ducklake"):
            out.append(int(node.metrics().apply("numOutputRows").value()))
        if node.nodeName() == "AdaptiveSparkPlan":  # a leaf that holds the plan it ran
            nodes.append(node.executedPlan())
        children = node.children().iterator()
        while children.hasNext():
            nodes.append(children.next())
    return out
