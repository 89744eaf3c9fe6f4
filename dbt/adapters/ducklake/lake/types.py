"""DuckLake column types as they are spelled in ``ducklake_column.column_type``.

The catalog stores one row per node of a column tree; a parent's type string is just
``struct``, ``list`` or ``map`` and its children are separate rows. This module only knows the
scalar spellings and how to parse them; the tree lives in :mod:`.models`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UnsupportedTypeError

NESTED = frozenset({"struct", "list", "map"})

SCALAR_TYPES = frozenset(
    {
        "boolean",
        "int8",
        "int16",
        "int32",
        "int64",
        "int128",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "uint128",
        "float32",
        "float64",
        "decimal",
        "time",
        "time_ns",
        "timetz",
        "date",
        "timestamp",
        "timestamp_s",
        "timestamp_ms",
        "timestamp_ns",
        "timestamptz",
        "interval",
        "varchar",
        "blob",
        "uuid",
        "json",
        "variant",
        "geometry",
    }
)

_ALIASES = {"timestamp_us": "timestamp"}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")

INTEGER_TYPES = ("int8", "int16", "int32", "int64", "int128")
UNSIGNED_TYPES = ("uint8", "uint16", "uint32", "uint64", "uint128")
FLOAT_TYPES = ("float32", "float64")
# The timestamp types: without a time zone, at each precision, and with one.
TIMESTAMP_TYPES = frozenset(
    {"timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamptz"}
)
TEMPORAL_TYPES = frozenset({"date", "time", "time_ns", "timetz"}) | TIMESTAMP_TYPES


@dataclass(frozen=True)
class LakeType:
    """One node's type: a scalar name, ``decimal`` with precision and scale, or a nested kind."""

    name: str
    precision: int | None = None
    scale: int | None = None

    @classmethod
    def parse(cls, text: str) -> LakeType:
        raw = text.strip().lower()
        match = _DECIMAL.match(raw)
        if match:
            precision, scale = int(match.group(1)), int(match.group(2))
            if not 1 <= precision <= 38 or scale > precision:
                raise UnsupportedTypeError(f"invalid decimal type {text!r}")
            return cls("decimal", precision, scale)
        raw = _ALIASES.get(raw, raw)
        if raw in SCALAR_TYPES and raw != "decimal" or raw in NESTED:
            return cls(raw)
        raise UnsupportedTypeError(
            f"unknown DuckLake column type {text!r}; DuckLake 1.0 knows "
            + ", ".join(sorted(SCALAR_TYPES | NESTED))
        )

    @property
    def nested(self) -> bool:
        return self.name in NESTED

    def __str__(self) -> str:
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        return self.name


def decimal(precision: int, scale: int) -> LakeType:
    return LakeType("decimal", precision, scale)


_INT_RANK = {name: i for i, name in enumerate(INTEGER_TYPES)}
_UINT_RANK = {name: i for i, name in enumerate(UNSIGNED_TYPES)}


def is_promotion(old: LakeType, new: LakeType) -> bool:
    """Whether DuckLake allows ``ALTER COLUMN ... TYPE`` from ``old`` to ``new`` in place.

    Mirrors DuckDB's rule that the promoted type must be the max of both (widening only):
    the signed and unsigned integer chains, unsigned to a wider signed integer, integers to
    floats, float32 to float64, and decimals that keep the scale and widen the integer part.
    """
    if old == new:
        return True
    a, b = old.name, new.name
    if a in _INT_RANK and b in _INT_RANK:
        return _INT_RANK[b] > _INT_RANK[a]
    if a in _UINT_RANK and b in _UINT_RANK:
        return _UINT_RANK[b] > _UINT_RANK[a]
    if a in _UINT_RANK and b in _INT_RANK:
        return _INT_RANK[b] > _UINT_RANK[a]
    if (a in _INT_RANK or a in _UINT_RANK) and b in FLOAT_TYPES:
        return True
    if a == "float32" and b == "float64":
        return True
    if a == "decimal" and b == "decimal":
        assert old.precision is not None and new.precision is not None
        assert old.scale is not None and new.scale is not None
        return new.scale >= old.scale and (new.precision - new.scale) >= (
            old.precision - old.scale
        )
    return False
