"""Spark I/O for DuckLake: read a table at any snapshot, write data files, commit snapshots."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .lake import CommitInfo, LakeTable, SparkLake

__all__ = ["CommitInfo", "LakeTable", "SparkLake"]


def __getattr__(name: str) -> object:
    """The façade's names, imported on first use (PEP 562): Spark's Python workers import
    :mod:`.datasource` alone, without the façade and everything it imports."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import lake

    return getattr(lake, name)
