"""Statement routing: queries run on Spark over lake tables registered as temp views; statements
that change lake relations are carried out by the lake engine and commit one snapshot each."""

from .engine import Engine, StatementResult

__all__ = ["Engine", "StatementResult"]
