"""Ordering and merging statistics bounds in the text encodings DuckDB 1.5.5 writes.

DuckDB prunes files with ``ducklake_file_column_stats`` and answers ``MIN``/``MAX`` of numeric
and temporal columns straight from ``ducklake_table_column_stats``, so every bound must be
*exact*: a bound narrower than the data silently drops rows, a wider one gives wrong
``MIN``/``MAX`` answers. NULL always means "unknown" and is always safe.

Bounds are text (:mod:`.value_text` spells them: file stats and the ``CAST(x AS VARCHAR)`` form
of inlined inserts), so ordering them needs the column type: :func:`sort_key` and
:func:`compare_encoded` parse a bound back to a value that orders as DuckDB orders the type, and
:func:`widen_table_column_stats` merges a new file's bounds into the table-level row. The bounds
of a file come from its Parquet footer (:mod:`.file_stats`).
"""

from __future__ import annotations

import math
import re
import uuid
from decimal import Decimal
from typing import Any

from .models import FileColumnStats, TableColumnStats
from .types import FLOAT_TYPES, LakeType
from .value_text import INT_RANGES, NS_PER_DAY, TIMESTAMP_UNIT_NS, days_from_civil

__all__ = [
    "compare_encoded",
    "sort_key",
    "widen_table_column_stats",
]

# ---------------------------------------------------------------------------------------------
# Comparing encoded values
# ---------------------------------------------------------------------------------------------

_DATE_RE = r"(\d+)-(\d{2})-(\d{2})( \(BC\))?"
_TIME_RE = r"(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
_OFFSET_RE = r"([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?"
_DATE_ONLY = re.compile(rf"^{_DATE_RE}$")
_TIME_ONLY = re.compile(rf"^{_TIME_RE}$")
_TIMESTAMP = re.compile(rf"^{_DATE_RE}(?: {_TIME_RE})?(?:{_OFFSET_RE})?$")
_HEX = re.compile(r"^(?:[0-9A-F]{2})*$")
_ESCAPE = re.compile(r"\\x([0-9A-Fa-f]{2})")
_BOOL_TEXT = {"0": 0, "1": 1, "false": 0, "true": 1}
_INFINITY = {"infinity": math.inf, "-infinity": -math.inf}


def _parse_days(groups: tuple[str | None, ...]) -> int:
    year_text, month_text, day_text, bc = groups
    assert year_text and month_text and day_text
    year = int(year_text)
    if bc:
        year = 1 - year
    month, day = int(month_text), int(day_text)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        raise ValueError("invalid date")
    return days_from_civil(year, month, day)


def _parse_time_groups(groups: tuple[str | None, ...]) -> int:
    hours, minutes, seconds, frac = groups
    if hours is None:
        return 0
    assert minutes is not None and seconds is not None
    nanos = int((frac or "").ljust(9, "0")) if frac else 0
    return (int(hours) * 3600 + int(minutes) * 60 + int(seconds)) * 10**9 + nanos


def _blob_bytes(text: str) -> bytes:
    """Bytes of a blob bound: upper-case hex (file stats) or ``\\xHH`` text (inlined stats).

    A bound made only of pairs of upper-case hex digits is read as hex; an inlined bound that
    happens to look like that (e.g. the bytes ``b'AB'``) is therefore misread -- DuckDB itself
    compares such bounds as plain strings and never answers MIN/MAX(blob) from them.
    """
    if _HEX.match(text):
        return bytes.fromhex(text)
    out = bytearray()
    pos = 0
    while pos < len(text):
        match = _ESCAPE.match(text, pos)
        if match:
            out.append(int(match.group(1), 16))
            pos = match.end()
        else:
            out.extend(text[pos].encode("utf-8"))
            pos += 1
    return bytes(out)


def sort_key(text: str, lake_type: LakeType) -> Any:
    """A Python value ordering like DuckDB orders the column type; ValueError if unknown.

    Integers, decimals, dates (days since 1970, infinities as ``math.inf``) and timestamps
    (nanoseconds since 1970, in UTC for timestamptz) are numbers; floats are ``(0, x)`` or
    ``(1, 0.0)`` for NaN; varchar is its UTF-8 bytes.
    """
    name = lake_type.name
    if name in INT_RANGES:
        return int(text)
    if name in FLOAT_TYPES:
        number = float(text)
        return (1, 0.0) if math.isnan(number) else (0, number)  # NaN sorts last in DuckDB
    if name == "decimal":
        exact = Decimal(text)
        if not exact.is_finite():
            raise ValueError(f"not a decimal: {text!r}")
        return exact
    if name == "boolean":
        return _BOOL_TEXT[text]
    if name in ("varchar", "json"):
        return text.encode("utf-8")
    if name == "blob":
        return _blob_bytes(text)
    if name == "uuid":
        return uuid.UUID(text).int
    if text in _INFINITY and (name == "date" or name in TIMESTAMP_UNIT_NS):
        return _INFINITY[text]
    if name == "date":
        match = _DATE_ONLY.match(text)
        if not match:
            raise ValueError(f"not a date: {text!r}")
        return _parse_days(match.groups())
    if name in ("time", "time_ns"):
        match = _TIME_ONLY.match(text)
        if not match:
            raise ValueError(f"not a time: {text!r}")
        return _parse_time_groups(match.groups())
    if name in TIMESTAMP_UNIT_NS:
        match = _TIMESTAMP.match(text)
        if not match:
            raise ValueError(f"not a timestamp: {text!r}")
        groups = match.groups()
        ns = _parse_days(groups[0:4]) * NS_PER_DAY + _parse_time_groups(groups[4:8])
        sign, hours, minutes, seconds = groups[8:12]
        if sign:
            offset = int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
            ns -= (offset if sign == "+" else -offset) * 10**9
        return ns
    raise ValueError(f"no value order known for {lake_type}")


def compare_encoded(a: str, b: str, lake_type: LakeType) -> int:
    """Compare two encoded bounds by value: -1, 0 or 1.

    Numbers and temporal values compare by value (floats: NaN last, ``-0.0 == 0.0``), varchar
    by UTF-8 bytes, blobs by bytes, uuids by their 128-bit value. Accepts both the file
    encoding and the inlined (VARCHAR cast) encoding. Raises ValueError for text that does not
    parse or types without an order here (interval, timetz, nested, variant, geometry).
    """
    try:
        ka, kb = sort_key(a, lake_type), sort_key(b, lake_type)
    except (KeyError, ArithmeticError) as exc:  # unknown boolean text, decimal.InvalidOperation
        raise ValueError(f"cannot compare {a!r} and {b!r} as {lake_type}") from exc
    return (ka > kb) - (ka < kb)


# ---------------------------------------------------------------------------------------------
# Merging file stats into table stats
# ---------------------------------------------------------------------------------------------


def _or3(a: bool | None, b: bool | None) -> bool | None:
    """Three-valued OR: True wins, otherwise unknown (None) wins over False."""
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def widen_table_column_stats(
    current: TableColumnStats | None,
    table_id: int,
    column_id: int,
    new: FileColumnStats,
    lake_type: LakeType,
    *,
    had_values: bool | None = None,
) -> TableColumnStats:
    """Merge one new file's stats into the table-level row, exactly.

    ``contains_null`` and ``contains_nan`` are OR-ed (three-valued: unknown stays unknown unless
    something is known True); ``min_value`` is the min of mins and ``max_value`` the max of
    maxes, compared by value with :func:`compare_encoded`.

    A NULL table-level bound is ambiguous: "no non-NULL value yet" or "unknown". DuckDB 1.5.5
    confuses the two and overwrites an unknown bound with the new file's range, producing a
    too-narrow bound and wrong ``MIN``/``MAX`` answers (``DuckLakeColumnStats::MergeStats`` in
    duckdb/ducklake@v1.5-variegata src/storage/ducklake_stats.cpp). Here the caller resolves it
    with ``had_values`` -- whether any non-NULL value of this column was committed to the table
    before ``new`` (in files or inlined rows):

    * ``had_values=False``: a NULL current bound means "no values yet"; the new bounds are
      adopted.
    * ``had_values=True`` or ``None`` (default, the safe choice): a NULL current bound means
      "unknown" and the result stays NULL.

    A non-NULL current bound is always merged normally; ``had_values`` is only consulted for
    NULL bounds. ``current=None`` means no row exists yet: the new file's stats start the row,
    unless ``had_values=True`` (a column whose earlier rows exist but were never counted, e.g.
    added by ALTER with a default), in which case the prior state is unknown. The result is
    also NULL when the new file has values but unknown bounds, or when a bound cannot be
    compared (e.g. interval).
    """
    if current is None:
        prior_nulls: bool | None = None if had_values else False
        prior_nan: bool | None = None if had_values else False
        prior_bounds: tuple[str | None, str | None] = (None, None)
        prior_state = "unknown" if had_values else "empty"
    else:
        prior_nulls, prior_nan = current.contains_null, current.contains_nan
        prior_bounds = (current.min_value, current.max_value)
        prior_state = ""

    new_nulls = None if new.null_count is None else new.null_count > 0
    contains_null = (
        new_nulls if current is None and not had_values else _or3(prior_nulls, new_nulls)
    )
    if lake_type.name in FLOAT_TYPES:
        contains_nan = (
            new.contains_nan
            if current is None and not had_values
            else _or3(prior_nan, new.contains_nan)
        )
    else:
        contains_nan = current.contains_nan if current is not None else None

    return TableColumnStats(
        table_id=table_id,
        column_id=column_id,
        contains_null=contains_null,
        contains_nan=contains_nan,
        min_value=_widen_bound(prior_bounds[0], new.min_value, -1, lake_type,
                               _bound_state(prior_state, prior_bounds[0], had_values),
                               new.value_count == 0),
        max_value=_widen_bound(prior_bounds[1], new.max_value, 1, lake_type,
                               _bound_state(prior_state, prior_bounds[1], had_values),
                               new.value_count == 0),
    )


def _bound_state(prior_state: str, current: str | None, had_values: bool | None) -> str:
    """What a table-level bound means: ``known``, ``empty`` (no value yet) or ``unknown``."""
    if prior_state:
        return prior_state
    if current is not None:
        return "known"
    return "empty" if had_values is False else "unknown"


def _widen_bound(current: str | None, fresh: str | None, want: int, lake_type: LakeType,
                 state: str, new_empty: bool) -> str | None:
    """The table's min (``want=-1``) or max (``want=1``) after a file with bound ``fresh``."""
    if new_empty:
        return current if state == "known" else None
    if fresh is None or state == "unknown":
        return None
    if state == "empty":
        return fresh
    assert current is not None
    try:
        return fresh if compare_encoded(fresh, current, lake_type) == want else current
    except ValueError:
        return None
