"""DuckDB's text spelling of values: how DuckDB 1.5.5 prints each type.

A DuckLake keeps values as text in two places, and DuckDB reads both back:

* the ``min_value``/``max_value`` of ``ducklake_file_column_stats`` and
  ``ducklake_table_column_stats``, which DuckDB prunes files with and answers ``MIN``/``MAX``
  from, so a spelling must be exact;
* the VARCHAR cells of the inlined-data tables of a SQLite or PostgreSQL catalog, which DuckDB
  casts back to the column type.

The formatters here work on exact integers (days, nanoseconds, unscaled decimals, months, days
and microseconds) so that a value has one spelling however it arrived: decoded from a Parquet
footer, from pyarrow's ``as_py()`` or from a catalog cell. Where two spellings of a type differ,
both are here, named for the difference: file stats write booleans ``0``/``1`` and blobs in
upper-case hex (:func:`blob_hex`) where ``CAST(x AS VARCHAR)`` gives ``true``/``false`` and
``\\xHH`` escapes (:func:`blob_text`), hence :func:`encode_value` (file stats) and
:func:`inlined_value_text` (the table stats of inlined inserts); the inlining codec keeps the
integer digit of a DECIMAL(p, p) that DuckDB drops (:func:`decimal_text`).

Checked against DuckDB 1.5.5 by ``tests/unit/test_stats.py`` and
``tests/unit/test_inlining_codec.py``.
"""

from __future__ import annotations

import math
import struct
import uuid
from datetime import date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from .types import FLOAT_TYPES, LakeType

__all__ = [
    "DATE_INFINITY",
    "EPOCH_ORDINAL",
    "INT_RANGES",
    "NO_FILE_BOUNDS",
    "NS_PER_DAY",
    "TIMESTAMP_INFINITY",
    "TIMESTAMP_UNIT_NS",
    "blob_hex",
    "blob_text",
    "civil_from_days",
    "date_text",
    "datetime_ns",
    "days_from_civil",
    "decimal_text",
    "encode_value",
    "float32_text",
    "float64_text",
    "inlined_value_text",
    "interval_text",
    "offset_text",
    "time_ns",
    "time_text",
    "timestamp_text",
    "to_float32",
]

# ---------------------------------------------------------------------------------------------
# Limits and sentinels of DuckDB's physical representations
# ---------------------------------------------------------------------------------------------

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "int128": (-(2**127), 2**127 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "uint128": (0, 2**128 - 1),
}
# Types whose file-level bounds DuckDB 1.5.5 never writes (int128 is stored as DOUBLE).
NO_FILE_BOUNDS = frozenset({"int128", "uint128", "interval", "timetz"})

DATE_INFINITY = 2**31 - 1  # DuckDB date 'infinity'; '-infinity' is its negation
TIMESTAMP_INFINITY = 2**63 - 1  # DuckDB timestamp 'infinity' (any unit); '-infinity' negated
NS_PER_DAY = 86_400 * 10**9
# Nanoseconds per unit of each timestamp type (TIMESTAMP and TIMESTAMPTZ are microseconds).
TIMESTAMP_UNIT_NS = {
    "timestamp": 10**3,
    "timestamptz": 10**3,
    "timestamp_s": 10**9,
    "timestamp_ms": 10**6,
    "timestamp_ns": 1,
}
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()

# ---------------------------------------------------------------------------------------------
# Calendar
# ---------------------------------------------------------------------------------------------


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day number; year 0 is 1 BC like DuckDB."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def days_from_civil(year: int, month: int, day: int) -> int:
    """Inverse of :func:`civil_from_days`."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


# ---------------------------------------------------------------------------------------------
# Spellings of exact values
# ---------------------------------------------------------------------------------------------


def _civil_text(days: int) -> str:
    year, month, day = civil_from_days(days)
    if year <= 0:
        return f"{1 - year:04d}-{month:02d}-{day:02d} (BC)"
    return f"{year:04d}-{month:02d}-{day:02d}"


def date_text(days: int) -> str:
    """``2024-02-29`` of days since 1970 (``0044-03-15 (BC)``, ``infinity``, ``-infinity``)."""
    if days == DATE_INFINITY:
        return "infinity"
    if days == -DATE_INFINITY:
        return "-infinity"
    return _civil_text(days)


def _fraction_text(units: int, digits: int) -> str:
    """``.123`` of ``units`` of ``10**-digits`` s, trailing zeros trimmed; empty when zero."""
    return "." + f"{units:0{digits}d}".rstrip("0") if units else ""


def time_text(ns: int) -> str:
    """``HH:MM:SS[.fff]`` of nanoseconds since midnight (``24:00:00`` allowed, as in DuckDB)."""
    seconds, nanos = divmod(ns, 10**9)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{_fraction_text(nanos, 9)}"


def timestamp_text(ns: int, tz: bool) -> str:
    """``2024-01-15 12:30:00.5`` of nanoseconds since the epoch; ``tz``: TIMESTAMPTZ, in UTC
    with ``+00``. The infinities are the caller's: their sentinel depends on the unit."""
    days, rest = divmod(ns, NS_PER_DAY)
    return f"{_civil_text(days)} {time_text(rest)}{'+00' if tz else ''}"


def offset_text(seconds: int) -> str:
    """A TIMETZ offset: ``+05:30``, ``-08``; seconds only when there are some."""
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{sign}{hours:02d}"
    if minutes or secs:
        text += f":{minutes:02d}"
    if secs:
        text += f":{secs:02d}"
    return text


def interval_text(months: int, days: int, micros: int) -> str:
    """DuckDB's ``INTERVAL`` to ``VARCHAR`` cast (``1 year 2 months 3 days 04:05:06.5``);
    PostgreSQL reads it too."""
    parts: list[str] = []
    years = int(months / 12)  # C++ truncating division
    months -= years * 12
    for amount, unit in ((years, "year"), (months, "month"), (days, "day")):
        if amount:
            parts.append(f"{amount} {unit}{'' if abs(amount) == 1 else 's'}")
    if micros:
        sign = "-" if micros < 0 else ""
        micros = abs(micros)
        seconds, frac = divmod(micros, 10**6)
        hours, rest = divmod(seconds, 3600)
        minutes, secs = divmod(rest, 60)
        parts.append(f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}{_fraction_text(frac, 6)}")
    return " ".join(parts) if parts else "00:00:00"


def float64_text(value: float) -> str:
    """A DOUBLE: shortest round-trip digits (``0.1``, ``1e+16``), ``nan``, ``inf``, ``-inf``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)  # DuckDB prints doubles exactly like Python's repr


def to_float32(value: float) -> float:
    """``value`` rounded to float32; OverflowError beyond its range."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def float32_text(value: float) -> str:
    """A FLOAT (``value`` already a float32): the shortest decimal that round-trips through
    float32, laid out like Python's repr (``0.1`` rather than ``0.10000000149011612``)."""
    if math.isnan(value) or math.isinf(value):
        return float64_text(value)
    for digits in range(1, 10):
        text = f"{value:.{digits - 1}e}"
        try:
            if to_float32(float(text)) == value:
                return repr(float(text))
        except OverflowError:  # rounded past FLT_MAX
            continue
    return repr(value)  # unreachable: 9 significant digits always round-trip a float32


def decimal_text(unscaled: int, lake_type: LakeType, *, integer_digit: bool = False) -> str:
    """A DECIMAL of ``unscaled / 10**scale`` with exactly ``scale`` fraction digits.

    DuckDB drops the integer digit when precision == scale: DECIMAL(9,9) 0.5 is
    ``.500000000``. ``integer_digit`` keeps it (``0.500000000``), as the inlining codec writes
    decimals into SQLite cells and nested values: DuckDB reads either spelling back as the same
    value; only statistics must equal the rows DuckDB writes, byte for byte.
    """
    scale = lake_type.scale or 0
    if scale == 0:
        return str(unscaled)
    whole, frac = divmod(abs(unscaled), 10**scale)
    sign = "-" if unscaled < 0 else ""
    head = "" if lake_type.precision == scale and not integer_digit else str(whole)
    return f"{sign}{head}.{frac:0{scale}d}"


_BLOB_PLAIN = frozenset(range(0x20, 0x7F)) - {0x22, 0x27, 0x5C}


def blob_text(data: bytes) -> str:
    """DuckDB's ``BLOB`` to ``VARCHAR`` cast: printable ASCII as is, everything else (and
    ``"``, ``'``, ``\\``) ``\\xHH``. Inlined cells and the stats of inlined rows use it."""
    return "".join(chr(b) if b in _BLOB_PLAIN else f"\\x{b:02X}" for b in data)


def blob_hex(data: bytes) -> str:
    """A blob bound in ``ducklake_file_column_stats``: upper-case hex, not the cast's escapes."""
    return data.hex().upper()


# ---------------------------------------------------------------------------------------------
# Python values -> exact integers
# ---------------------------------------------------------------------------------------------


def _exact_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal):
        return int(value) if value.is_finite() and value == value.to_integral_value() else None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return None


def datetime_ns(value: datetime) -> int:
    """Nanoseconds since the epoch of a datetime's wall clock (pandas nanoseconds included)."""
    days = value.toordinal() - EPOCH_ORDINAL
    seconds = value.hour * 3600 + value.minute * 60 + value.second
    nanos = value.microsecond * 1000 + int(getattr(value, "nanosecond", 0) or 0)
    return days * NS_PER_DAY + seconds * 10**9 + nanos


def time_ns(value: time) -> int:
    """Nanoseconds since midnight of a time's wall clock (its offset left out)."""
    seconds = value.hour * 3600 + value.minute * 60 + value.second
    return seconds * 10**9 + value.microsecond * 1000 + int(getattr(value, "nanosecond", 0) or 0)


# ---------------------------------------------------------------------------------------------
# Python values -> statistics text
# ---------------------------------------------------------------------------------------------

_BYTES_LIKE = (bytes, bytearray, memoryview)


def encode_value(value: Any, lake_type: LakeType) -> str | None:
    """Encode one value as DuckDB 1.5.5 writes it into ``ducklake_file_column_stats``.

    ``value`` is what pyarrow's ``as_py()`` returns for the column. Used for partition values
    and for the stats of rows we write ourselves. Returns None for NULL, for types whose bounds
    DuckDB does not write in file stats (int128, uint128, interval, timetz, nested, variant,
    geometry) and for values that the column type cannot hold exactly (DuckDB would round them,
    so no exact text exists). NaN encodes as ``'nan'``: callers computing min/max must leave
    NaN out and set ``contains_nan`` instead, as DuckDB does.
    """
    if value is None:
        return None
    name = lake_type.name
    if name in NO_FILE_BOUNDS:
        return None
    return _encode_common(value, lake_type)


def inlined_value_text(value: Any, lake_type: LakeType) -> str | None:
    """Encode one value as DuckDB 1.5.5 puts it into ``ducklake_table_column_stats`` for an
    *inlined* insert, i.e. as ``CAST(value AS VARCHAR)`` with timestamptz always in UTC.

    Differs from :func:`encode_value` for booleans (``true``/``false``), blobs (``\\x01``-style
    escapes, printable ASCII kept), and in covering int128/uint128, intervals (``1 month
    2 days 00:00:03``; pyarrow's ``MonthDayNano`` or a ``timedelta``) and timetz (an aware
    ``time``). NaN is ``'nan'`` (DuckDB keeps NaN as the largest value of an inlined batch).
    """
    if value is None:
        return None
    name = lake_type.name
    if name == "boolean":
        return ("true" if value else "false") if isinstance(value, (bool, int)) else None
    if name == "blob":
        return blob_text(bytes(value)) if isinstance(value, _BYTES_LIKE) else None
    if name == "interval":
        return _exact_interval_text(value)
    if name == "timetz":
        if not isinstance(value, time) or value.utcoffset() is None:
            return None
        ns = time_ns(value)
        offset = value.utcoffset()
        assert offset is not None
        if ns % 1000 or offset.microseconds:
            return None
        return time_text(ns) + offset_text(int(offset.total_seconds()))
    return _encode_common(value, lake_type)


def _encode_common(value: Any, lake_type: LakeType) -> str | None:
    """The encodings file stats and the VARCHAR cast agree on."""
    name = lake_type.name
    if name in INT_RANGES:
        number = _exact_int(value)
        lo, hi = INT_RANGES[name]
        return str(number) if number is not None and lo <= number <= hi else None
    if name == "boolean":
        return ("1" if value else "0") if isinstance(value, (bool, int)) else None
    if name in FLOAT_TYPES:
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            return None
        real = float(value)
        return float32_text(to_float32(real)) if name == "float32" else float64_text(real)
    if name == "decimal":
        return _exact_decimal_text(value, lake_type)
    if name == "date":
        if isinstance(value, datetime):
            if value.tzinfo is not None or datetime_ns(value) % NS_PER_DAY:
                return None
            value = value.date()
        if isinstance(value, date):
            return date_text(value.toordinal() - EPOCH_ORDINAL)
        return None
    if name in ("time", "time_ns"):
        if not isinstance(value, time):
            return None
        ns = time_ns(value)
        if value.utcoffset() or (name == "time" and ns % 1000):
            return None
        return time_text(ns)
    if name in TIMESTAMP_UNIT_NS:
        return _exact_timestamp_text(value, lake_type)
    if name in ("varchar", "json"):
        return value if isinstance(value, str) else None
    if name == "blob":
        return blob_hex(bytes(value)) if isinstance(value, _BYTES_LIKE) else None
    if name == "uuid":
        return _uuid_text(value)
    return None


def _exact_timestamp_text(value: Any, lake_type: LakeType) -> str | None:
    if not isinstance(value, datetime):
        return None
    tz = lake_type.name == "timestamptz"
    offset = value.utcoffset()
    if offset is not None:
        if not tz:
            return None  # a wall clock in a column without zone: DuckDB would cast via TimeZone
        value = value.replace(tzinfo=None) - offset
    # A naive value for a timestamptz column is taken as UTC (what pyarrow's instants mean).
    ns = datetime_ns(value)
    unit = TIMESTAMP_UNIT_NS[lake_type.name]
    if ns % unit:
        return None  # not representable at the column's precision: DuckDB would round it
    if abs(ns // unit) == TIMESTAMP_INFINITY:  # DuckDB's sentinel (pandas' Timestamp.max, _ns)
        return "infinity" if ns > 0 else "-infinity"
    return timestamp_text(ns, tz)


def _exact_decimal_text(value: Any, lake_type: LakeType) -> str | None:
    if isinstance(value, bool):
        return None
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        return None
    if not number.is_finite():
        return None
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    shift = exponent + (lake_type.scale or 0)  # exact integer arithmetic, no context rounding
    magnitude = int("".join(map(str, digits)) or "0")
    if shift >= 0:
        magnitude *= 10**shift
    elif magnitude % 10**-shift:
        return None  # more fractional digits than the scale: DuckDB would round
    else:
        magnitude //= 10**-shift
    unscaled = -magnitude if sign else magnitude
    if abs(unscaled) >= 10 ** (lake_type.precision or 38):
        return None
    return decimal_text(unscaled, lake_type)


def _uuid_text(value: Any) -> str | None:
    try:
        if isinstance(value, uuid.UUID):
            return str(value)
        if isinstance(value, str):
            return str(uuid.UUID(value))
        if isinstance(value, (bytes, bytearray)) and len(value) == 16:
            return str(uuid.UUID(bytes=bytes(value)))
    except ValueError:
        return None
    return None


def _exact_interval_text(value: Any) -> str | None:
    if isinstance(value, timedelta):  # DuckDB binds a timedelta as (days, micros)
        return interval_text(0, value.days, value.seconds * 10**6 + value.microseconds)
    months = getattr(value, "months", None)
    days = getattr(value, "days", None)
    nanos = getattr(value, "nanoseconds", None)
    if not all(isinstance(x, int) for x in (months, days, nanos)):
        return None
    assert isinstance(months, int) and isinstance(days, int) and isinstance(nanos, int)
    if nanos % 1000:
        return None
    return interval_text(months, days, nanos // 1000)
