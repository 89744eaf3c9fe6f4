"""Skipping data files by their column bounds.

Every data file has min/max statistics per column in ``ducklake_file_column_stats``. A
statement that can only touch rows whose key lies in a known range (a MERGE whose source keys
span ``[low, high]``) need not read a file whose bounds lie wholly outside it. Pruning is only
done where the bounds are exact and ordered as the engine orders values: integers, decimals,
dates and timestamps without a zone. A file without bounds for a column is always kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .models import DataFile
from .stats import compare_encoded
from .types import LakeType

# Types whose file bounds are exact and compare by value (no truncation, no NaN, no zone).
PRUNABLE_TYPES = frozenset({
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int128",
    "uint128", "decimal", "date", "timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns",
})


@dataclass(frozen=True)
class KeyRange:
    """The values a statement can touch in one column, both ends included, DuckDB-encoded."""

    column_id: int
    lake_type: LakeType
    low: str
    high: str


# data file id -> column id -> (min_value, max_value), as the catalog stores them
FileBounds = Mapping[int, Mapping[int, tuple[str | None, str | None]]]


def prunable(lake_type: LakeType) -> bool:
    return lake_type.name in PRUNABLE_TYPES


def files_in_ranges(files: Sequence[DataFile], bounds: FileBounds,
                    ranges: Sequence[KeyRange]) -> list[DataFile]:
    """The files whose bounds overlap every range (a file lacking bounds is kept)."""
    return [f for f in files
            if all(_may_overlap(bounds.get(f.data_file_id, {}).get(r.column_id), r)
                   for r in ranges)]


def _may_overlap(bound: tuple[str | None, str | None] | None, key: KeyRange) -> bool:
    if bound is None:
        return True
    low, high = bound
    if low is None or high is None:
        # no bounds: all NULL (nothing equals a key) or not recorded; keep it to be safe
        return True
    try:
        return (compare_encoded(high, key.low, key.lake_type) >= 0
                and compare_encoded(low, key.high, key.lake_type) <= 0)
    except ValueError:
        return True
