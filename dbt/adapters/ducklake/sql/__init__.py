"""Statement routing: queries run on Spark over lake tables registered as temp views; statements
that change lake relations are carried out by the lake engine and commit one snapshot each."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import Engine, StatementResult

__all__ = ["Engine", "StatementResult"]


def __getattr__(name: str) -> object:
    """The engine's names, imported on first use (PEP 562): loading the adapter imports
    :mod:`.names`, and the engine (with the lake's libraries) waits for a connection."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import engine

    return getattr(engine, name)
