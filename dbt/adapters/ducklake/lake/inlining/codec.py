"""Values in DuckLake's inlined-data tables on SQLite and PostgreSQL catalogs.

DuckDB keeps small inserts as rows of ``ducklake_inlined_data_{table_id}_{schema_version}``, one
column per top-level table column, typed for the catalog backend (the specification's
https://ducklake.select/docs/stable/specification/tables/ducklake_inlined_data_tables). This module
maps between those backend values and Python values shaped like pyarrow's ``to_pylist`` output, so
the lake client can read rows DuckDB inlined and inline rows DuckDB reads back unchanged.

Everything here was checked against DuckDB 1.5.5 with the ``ducklake`` extension:

* Scalars that are stored as text use DuckDB's ``CAST(x AS VARCHAR)`` spelling: shortest
  round-trip floats (``1.5``, ``nan``, ``-inf``, ``-0.0``, ``1e+300``; FLOAT uses the shortest
  float32 digits), decimals with exactly ``scale`` digits, ``2024-01-15 12:30:00.123456`` with
  trailing fraction zeros dropped, TIMESTAMPTZ always in UTC with ``+00``, ``infinity`` and
  ``-infinity``, and ``(BC)`` dates.
* LIST and MAP columns hold DuckDB's VARCHAR cast of the value: ``[1, NULL]``, ``{k=1, 'x y'=2}``,
  ``[{'a': 1, 'b': x}]``. A string is written bare unless it is empty, equals ``null`` in any case,
  starts with whitespace, ends with whitespace (if longer than one byte) or contains one of
  ``"'(),:=[]{}``; quoted strings escape ``\\`` and ``'`` with a backslash. Blobs inside nested
  values print ``\\xNN`` for bytes outside printable ASCII and for ``"``, ``'`` and ``\\``.
* A list of JSON is read by DuckDB as one JSON document, elements minified. DuckDB 1.5.5 writes
  it in the quoted form above, which its reader rejects whenever an element needed quotes; we
  write the raw array (``[{"a": 1}, null]``), SQL NULL elements becoming JSON ``null``.
* Top-level STRUCT columns are written differently by DuckDB 1.5.5: ``Value::ToString`` of the
  struct, where every child is a SQL literal (``{'y': 'it''s', 'd': CAST('2024-01-02' AS DATE)}``)
  while LIST and MAP children keep the cast form. DuckDB's own reader cannot parse that text back
  when a child string holds a quote or backslash, or when a child needs a ``CAST``: it returns a
  wrong string or fails the whole table scan. :func:`decode_inlined` recovers the written value
  from both spellings. :func:`encode_inlined` writes the cast form, which DuckDB reads correctly;
  inside a top-level struct it quotes strings holding ``'`` or ``\\`` with double quotes, which
  DuckDB accepts and the SQL-literal spelling never uses, so the two spellings stay apart.
"""

from __future__ import annotations

import builtins
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, time, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any, NamedTuple, NoReturn

from ..errors import InvalidArgumentError, UnsupportedTypeError
from ..models import ColumnInfo
from ..types import TIMESTAMP_TYPES, LakeType
from ..value_text import (
    EPOCH_ORDINAL,
    INT_RANGES,
    TIMESTAMP_INFINITY,
    TIMESTAMP_UNIT_NS,
    blob_text,
    date_text,
    datetime_ns,
    decimal_text,
    float32_text,
    float64_text,
    interval_text,
    offset_text,
    time_ns,
    time_text,
    timestamp_text,
    to_float32,
)

__all__ = ["MonthDayNano", "decode_inlined", "encode_inlined", "inlined_column_type",
           "parquet_decoder", "parquet_int"]

SQLITE = "sqlite"
POSTGRES = "postgresql"

_DIALECTS = {"sqlite": SQLITE, "sqlite3": SQLITE, "postgresql": POSTGRES, "postgres": POSTGRES}

# Column types DuckDB emits in the inlined table's CREATE TABLE on PostgreSQL. Anything else
# (uint64, int128, uint128, date, all timestamps, nested types) is VARCHAR text.
_PG_TYPES = {
    "boolean": "BOOLEAN",
    "int8": "SMALLINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "INTEGER",
    "uint16": "INTEGER",
    "uint32": "BIGINT",
    "float32": "REAL",
    "float64": "DOUBLE PRECISION",
    "time": "TIME",
    "timetz": "TIME WITH TIME ZONE",
    "interval": "INTERVAL",
    "varchar": "BYTEA",
    "json": "BYTEA",
    "blob": "BYTEA",
    "uuid": "UUID",
}
# On SQLite these are BIGINT (booleans as 0/1), BLOB is BLOB, everything else is VARCHAR text.
_SQLITE_INTEGERS = frozenset(
    {"boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"}
)

_TEXT_INTEGERS = frozenset({"uint64", "int128", "uint128"})
_NEVER_INLINED = frozenset({"variant", "geometry"})

_SPACE = " \t\n\v\f\r"  # C isspace(), which DuckDB uses to decide on quoting
_SPECIAL = frozenset("\"'(),:=[]{}")
_UTC = timezone.utc


class MonthDayNano(NamedTuple):
    """An INTERVAL as pyarrow's ``month_day_nano_interval`` gives it (same field names)."""

    months: int
    days: int
    nanoseconds: int


# --------------------------------------------------------------------------------------------
# Column types


def inlined_column_type(column: ColumnInfo, dialect: str) -> str:
    """The SQL type DuckDB gives this top-level column in an inlined-data table on ``dialect``.

    Spelled as DuckDB writes it in the ``CREATE TABLE`` it sends to the backend.
    """
    backend = _dialect(dialect)
    lt = _inlinable_type(column, backend)
    name = lt.name
    if backend == SQLITE:
        if name in _SQLITE_INTEGERS:
            return "BIGINT"
        return "BLOB" if name == "blob" else "VARCHAR"
    if name == "decimal":
        return f"DECIMAL({lt.precision},{lt.scale})"
    return _PG_TYPES.get(name, "VARCHAR")


def _inlinable_type(column: ColumnInfo, backend: str) -> LakeType:
    """The column's type, once checked to be one DuckDB inlines on ``backend``."""
    name = column.type.name
    if name in _NEVER_INLINED:
        raise UnsupportedTypeError(
            f"DuckDB never inlines tables with a {name} column; write such rows to Parquet"
        )
    if name == "time_ns" and backend == POSTGRES:
        # DuckDB 1.5.5 sends TIME_NS to PostgreSQL, which rejects the whole CREATE TABLE.
        raise UnsupportedTypeError(
            "DuckDB cannot create an inlined table with a time_ns column on PostgreSQL; "
            "write such rows to Parquet"
        )
    return column.type


def _dialect(dialect: str) -> str:
    try:
        return _DIALECTS[dialect.lower()]
    except (KeyError, AttributeError):
        raise InvalidArgumentError(
            f"unknown catalog dialect {dialect!r}; "
            "inlined values exist for 'sqlite' and 'postgresql'"
        ) from None


# --------------------------------------------------------------------------------------------
# Encoding


def encode_inlined(value: Any, column: ColumnInfo, dialect: str) -> Any:
    """The parameter to bind into this column's inlined-table cell so DuckDB reads ``value``.

    ``value`` is shaped like pyarrow's ``to_pylist`` output (maps as ``(key, value)`` pairs or a
    dict). NULL is ``None``. Values outside the column's range raise :class:`InvalidArgumentError`,
    because DuckDB would fail reading the whole table.
    """
    backend = _dialect(dialect)
    if value is None:
        return None
    lt = _inlinable_type(column, backend)
    name = lt.name
    if lt.nested:
        return _format_nested(value, column, sql_zone=name == "struct")
    if name == "boolean":
        flag = _as_bool(value)
        return int(flag) if backend == SQLITE else flag
    if name in INT_RANGES:
        number = _as_int(value, name)
        return str(number) if name in _TEXT_INTEGERS else number
    if name in ("float32", "float64"):
        real = _as_float(value, name == "float32")
        return _float_text(real, name == "float32") if backend == SQLITE else real
    if name == "decimal":
        text = _decimal_text(value, lt)
        return text if backend == SQLITE else Decimal(text)
    if name in ("varchar", "json"):
        string = _as_str(value, name)
        return string if backend == SQLITE else string.encode("utf-8")
    if name == "blob":
        return _as_bytes(value)
    if name == "uuid":
        ident = _as_uuid(value)
        return str(ident) if backend == SQLITE else ident
    if backend == POSTGRES and name == "time":
        return _as_time(value).replace(tzinfo=None)
    if backend == POSTGRES and name == "timetz":
        moment = _as_time(value)
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=_UTC)
    return _scalar_text(value, lt)


def _scalar_text(value: Any, lt: LakeType) -> str:
    """DuckDB's ``CAST(value AS VARCHAR)`` for a scalar of type ``lt``."""
    name = lt.name
    if name == "boolean":
        return "true" if _as_bool(value) else "false"
    if name in INT_RANGES:
        return str(_as_int(value, name))
    if name in ("float32", "float64"):
        return _float_text(_as_float(value, name == "float32"), name == "float32")
    if name == "decimal":
        return _decimal_text(value, lt)
    if name in ("varchar", "json"):
        return _as_str(value, name)
    if name == "blob":
        return blob_text(_as_bytes(value))
    if name == "uuid":
        return str(_as_uuid(value))
    if name == "date":
        return date_text(_as_date(value).toordinal() - EPOCH_ORDINAL)
    if name in ("time", "time_ns"):
        return time_text(time_ns(_as_time(value)))
    if name == "timetz":
        moment = _as_time(value)
        offset = (moment.utcoffset() if moment.tzinfo is not None else None) or timedelta(0)
        return time_text(time_ns(moment)) + offset_text(int(offset.total_seconds()))
    if name in TIMESTAMP_TYPES:
        return _timestamp_text(value, name)
    if name == "interval":
        return interval_text(*_as_interval(value))
    raise UnsupportedTypeError(f"cannot inline a value of type {lt}")


def _as_bool(value: Any) -> bool:
    if isinstance(value, (bool, int)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "t", "f", "1", "0"):
        return value.strip().lower() in ("true", "t", "1")
    raise InvalidArgumentError(f"cannot store {value!r} in a boolean column")


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, int):
        number = int(value)
    elif isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        number = int(value)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        raise InvalidArgumentError(f"cannot store {value!r} in an {name} column")
    low, high = INT_RANGES[name]
    if not low <= number <= high:
        raise InvalidArgumentError(f"{number} is out of range for an {name} column")
    return number


def _as_float(value: Any, single: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise InvalidArgumentError(f"cannot store {value!r} in a float column")
    number = float(value)
    return _f32(number) if single else number


def _f32(number: float) -> float:
    try:
        return to_float32(number)
    except OverflowError:
        raise InvalidArgumentError(f"{number!r} is out of range for a float32 column") from None


def _float_text(number: float, single: bool) -> str:
    return float32_text(number) if single else float64_text(number)


def _decimal_text(value: Any, lt: LakeType) -> str:
    assert lt.precision is not None and lt.scale is not None
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, float, str)):
        raise InvalidArgumentError(f"cannot store {value!r} in a {lt} column")
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except InvalidOperation:
        raise InvalidArgumentError(f"cannot store {value!r} in a {lt} column") from None
    if not number.is_finite():
        raise InvalidArgumentError(f"cannot store {value!r} in a {lt} column")
    with localcontext() as ctx:
        ctx.prec = 100
        exact = number.quantize(Decimal(1).scaleb(-lt.scale), rounding=ROUND_HALF_UP)
    sign, digits, _ = exact.as_tuple()  # the exponent is -scale now
    if len(digits) > lt.precision and exact != 0:
        raise InvalidArgumentError(f"{value!r} does not fit a {lt} column")
    unscaled = int("".join(map(str, digits)))
    return decimal_text(-unscaled if sign else unscaled, lt, integer_digit=True)


def _as_str(value: Any, name: str) -> str:
    if isinstance(value, str):
        return value
    if name == "json":
        return json.dumps(value, ensure_ascii=False)
    raise InvalidArgumentError(f"cannot store {value!r} in a varchar column")


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise InvalidArgumentError(f"cannot store {value!r} in a blob column")


def _as_uuid(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        if isinstance(value, (bytes, bytearray)) and len(value) == 16:
            return uuid.UUID(bytes=bytes(value))
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidArgumentError(f"cannot store {value!r} in a uuid column") from None


def _as_date(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    raise InvalidArgumentError(f"cannot store {value!r} in a date column")


def _as_time(value: Any) -> time:
    if isinstance(value, time):
        return value
    raise InvalidArgumentError(f"cannot store {value!r} in a time column")


def _timestamp_text(value: Any, name: str) -> str:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        raise InvalidArgumentError(f"cannot store {value!r} in a {name} column")
    if moment.tzinfo is not None and moment.utcoffset() is not None:
        moment = moment.astimezone(_UTC)
    ns = datetime_ns(moment)  # pandas.Timestamp keeps nanoseconds
    return timestamp_text(ns - ns % TIMESTAMP_UNIT_NS[name], name == "timestamptz")


def _as_interval(value: Any) -> tuple[int, int, int]:
    """(months, days, microseconds): DuckDB keeps microseconds."""
    if isinstance(value, timedelta):
        return 0, value.days, value.seconds * 1_000_000 + value.microseconds
    try:
        months, days, nanos = (int(getattr(value, f)) for f in MonthDayNano._fields)
    except (AttributeError, TypeError, ValueError):
        try:
            months, days, nanos = (int(part) for part in value)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"cannot store {value!r} in an interval column") from None
    micros = abs(nanos) // 1000
    return months, days, -micros if nanos < 0 else micros


def _needs_quotes(text: str) -> bool:
    """DuckDB's rule for quoting a scalar inside a nested value's VARCHAR form."""
    if not text:
        return True
    if text[0] in _SPACE or (len(text) >= 2 and text[-1] in _SPACE):
        return True
    if text.isascii() and text.lower() == "null":
        return True
    return any(ch in _SPECIAL for ch in text)


def _quote(text: str, quote: str) -> str:
    escaped = text.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return quote + escaped + quote


def _leaf(text: str, sql_zone: bool) -> str:
    if not _needs_quotes(text):
        return text
    if sql_zone and ("'" in text or "\\" in text):
        return _quote(text, '"')
    return _quote(text, "'")


def _format_nested(value: Any, column: ColumnInfo, sql_zone: bool) -> str:
    """DuckDB's VARCHAR form of a nested value (``sql_zone``: inside a top-level struct chain)."""
    if value is None:
        return "NULL"
    lt = column.type
    if lt.name == "struct":
        if not isinstance(value, Mapping):
            raise InvalidArgumentError(
                f"struct column {column.column_name!r} needs a dict, got {value!r}"
            )
        names = {child.column_name for child in column.children}
        unknown = [key for key in value if key not in names]
        if unknown:
            raise InvalidArgumentError(
                f"struct column {column.column_name!r} has no field(s) {unknown}; "
                f"fields are {sorted(names)}"
            )
        fields = []
        for child in column.children:
            name = child.column_name
            key = _quote(name, '"' if sql_zone and _awkward(name) else "'")
            fields.append(f"{key}: {_format_nested(value.get(name), child, sql_zone)}")
        return "{" + ", ".join(fields) + "}"
    if lt.name == "list":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
            raise InvalidArgumentError(
                f"list column {column.column_name!r} needs a list, got {value!r}"
            )
        element = _child(column, "element")
        if element.type.name == "json":
            # DuckDB reads a JSON list as one JSON document; SQL NULL becomes JSON null.
            items = ("null" if v is None else _as_str(v, "json") for v in value)
            return "[" + ", ".join(items) + "]"
        return "[" + ", ".join(_format_nested(v, element, False) for v in value) + "]"
    if lt.name == "map":
        key_col, value_col = _child(column, "key"), _child(column, "value")
        entries = []
        for key, item in _map_items(value, column):
            if key is None:
                raise InvalidArgumentError(f"map column {column.column_name!r} has a NULL key")
            entries.append(
                f"{_format_nested(key, key_col, False)}={_format_nested(item, value_col, False)}"
            )
        return "{" + ", ".join(entries) + "}"
    return _leaf(_scalar_text(value, lt), sql_zone)


def _awkward(text: str) -> bool:
    return "'" in text or "\\" in text


def _map_items(value: Any, column: ColumnInfo) -> list[tuple[Any, Any]]:
    if isinstance(value, Mapping):
        return list(value.items())
    items = []
    try:
        for entry in value:
            if isinstance(entry, Mapping):
                items.append((entry["key"], entry["value"]))
            else:
                key, item = entry
                items.append((key, item))
    except (TypeError, ValueError, KeyError):
        raise InvalidArgumentError(
            f"map column {column.column_name!r} needs a dict or (key, value) pairs, got {value!r}"
        ) from None
    return items


def _child(column: ColumnInfo, name: str) -> ColumnInfo:
    for child in column.children:
        if child.column_name == name:
            return child
    if name == "element" and len(column.children) == 1:
        return column.children[0]
    if len(column.children) == 2 and name in ("key", "value"):
        return column.children[0 if name == "key" else 1]
    raise InvalidArgumentError(
        f"{column.column_type} column {column.column_name!r} has no {name!r} child"
    )


# --------------------------------------------------------------------------------------------
# Decoding


# Catalog cells whose Python type is already the decoded value's (SQLite and psycopg hand
# integers, floats and text over as int, float and str).
_DECODED_AS = {**dict.fromkeys(INT_RANGES, int), "float64": float, "varchar": str,
               "json": str}


def inlined_decoder(column: ColumnInfo, dialect: str) -> Callable[[Any], Any]:
    """:func:`decode_inlined` for one column, with the common cells passed through untouched:
    a read of many inlined rows decodes every cell, so the per-cell dispatch matters."""
    same = _DECODED_AS.get(column.type.name)

    def decode(raw: Any) -> Any:
        if raw is None or type(raw) is same:
            return raw
        return decode_inlined(raw, column, dialect)

    return decode


def decode_inlined(raw: Any, column: ColumnInfo, dialect: str) -> Any:
    """The Python value of one inlined-table cell, shaped like pyarrow's ``to_pylist`` output.

    struct → dict, list → list, map → list of ``(key, value)`` tuples, timestamptz → aware UTC
    datetime, other timestamps → naive datetime (nanoseconds truncated), uuid → ``uuid.UUID``,
    integers of any width → int, interval → :class:`MonthDayNano`. DuckDB's ``infinity`` dates and
    timestamps become ``date.max``/``datetime.max`` (``min`` for ``-infinity``), as DuckDB's own
    Python client returns them.
    """
    backend = _dialect(dialect)
    if raw is None:
        return None
    lt = _inlinable_type(column, backend)
    name = lt.name
    if lt.nested:
        return _Parser(_as_text(raw)).document(column)
    if name == "boolean":
        return _parse_bool(raw) if isinstance(raw, str) else bool(raw)
    if name in INT_RANGES:
        return int(raw.strip() if isinstance(raw, str) else raw)
    if name in ("float32", "float64"):
        number = float(raw.strip() if isinstance(raw, str) else raw)
        return _f32(number) if name == "float32" else number
    if name == "decimal":
        return raw if isinstance(raw, Decimal) else Decimal(str(raw).strip())
    if name in ("varchar", "json"):
        return _as_text(raw)
    if name == "blob":
        return raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    if name == "uuid":
        if isinstance(raw, uuid.UUID):
            return raw
        if isinstance(raw, (bytes, bytearray, memoryview)) and len(raw) == 16:
            return uuid.UUID(bytes=bytes(raw))
        return uuid.UUID(_as_text(raw))
    if name in ("time", "time_ns", "timetz") and isinstance(raw, time):
        return raw
    if name == "interval" and isinstance(raw, timedelta):
        # psycopg folds months into days (30 per month, 365 per year); the months are lost.
        return MonthDayNano(0, raw.days, (raw.seconds * 1_000_000 + raw.microseconds) * 1000)
    if name == "date" and isinstance(raw, date) and not isinstance(raw, datetime):
        return raw
    if name in TIMESTAMP_TYPES and isinstance(raw, datetime):
        return _normalise_timestamp(raw, name)
    return _from_text(_as_text(raw), lt)


# Types whose inlined value holds more than its Python form: a flush needs DuckDB's Parquet
# integer instead (TIME 24:00:00, TIMETZ offsets beyond the UTC shift, nanoseconds).
_PARQUET_INTS = frozenset({"time", "timetz", "timestamp_ns"})
_DAY_MICROS = 86_400_000_000


def parquet_decoder(column: ColumnInfo, dialect: str) -> Callable[[Any], Any]:
    """:func:`inlined_decoder`, except that TIME, TIMETZ and TIMESTAMP_NS values (nested ones
    too) come as the integers DuckDB's Parquet writer stores (:func:`parquet_int`): what a
    flush of the inlined rows must write, exactly."""
    if not any(node.type.name in _PARQUET_INTS for node in column.walk()):
        return inlined_decoder(column, dialect)
    if column.type.nested:
        def nested(raw: Any) -> Any:
            return None if raw is None else _Parser(_as_text(raw), exact=True).document(column)

        return nested

    def scalar(raw: Any) -> Any:
        return None if raw is None else parquet_int(raw, column.type)

    return scalar


def parquet_int(raw: Any, lt: LakeType) -> int:
    """DuckDB's Parquet value of an inlined TIME (microseconds since midnight, 24:00:00
    included), TIMETZ (the same shifted to UTC, modulo a day) or TIMESTAMP_NS (nanoseconds
    since the epoch; ``infinity`` is 2**63 - 1), from its text or PostgreSQL's ``time``."""
    name = lt.name
    if isinstance(raw, time):  # PostgreSQL's TIME and TIME WITH TIME ZONE columns
        micros = ((raw.hour * 60 + raw.minute) * 60 + raw.second) * 1_000_000 + raw.microsecond
        offset = raw.utcoffset() if name == "timetz" else None
        shift = 0 if offset is None else (offset.days * 86_400 + offset.seconds) * 1_000_000
        return (micros - shift) % _DAY_MICROS if name == "timetz" else micros
    text = _as_text(raw).strip()
    try:
        if name in ("time", "timetz"):
            clock = _CLOCK.match(text)
            rest = _OFFSET.fullmatch(text[clock.end():]) if clock else None
            if not clock or not rest:
                raise ValueError("not a time")
            hour, minute, second, micros = _clock(clock)
            micros += ((hour * 60 + minute) * 60 + second) * 1_000_000
            if name == "time":
                return micros
            zone = _offset(rest)
            offset = zone.utcoffset(None) if zone is not None else timedelta(0)
            return (micros - (offset.days * 86_400 + offset.seconds) * 1_000_000) % _DAY_MICROS
        if name == "timestamp_ns":
            word = text.lower()
            if word in _INFINITY:
                return _INFINITY[word] * TIMESTAMP_INFINITY
            day = _DATE.match(text)
            if not day or day.group(4):
                raise ValueError("not a timestamp")
            days = date(int(day.group(1)), int(day.group(2)), int(day.group(3))).toordinal()
            nanos = 0
            clock = _CLOCK.match(text, day.end() + 1) if text[day.end():day.end() + 1] in (
                " ", "T") else None
            if clock:
                digits = (clock.group(4) or "")[:9]
                nanos = ((int(clock.group(1)) * 60 + int(clock.group(2))) * 60
                         + int(clock.group(3) or 0)) * 10**9 + int(digits.ljust(9, "0") or 0)
            if text[clock.end() if clock else day.end():].strip():
                raise ValueError("unexpected text after the timestamp")
            return (days - EPOCH_ORDINAL) * 86_400 * 10**9 + nanos
    except ValueError as exc:
        raise InvalidArgumentError(f"cannot read {text!r} as {lt}: {exc}") from None
    raise UnsupportedTypeError(f"no Parquet integer for inlined values of type {lt}")


def _exact_from_text(text: str, lt: LakeType) -> Any:
    return parquet_int(text, lt) if lt.name in _PARQUET_INTS else _from_text(text, lt)


def _as_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw).decode("utf-8")
    return str(raw)


def _parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "t", "1"):
        return True
    if word in ("false", "f", "0"):
        return False
    raise InvalidArgumentError(f"cannot read {text!r} as a boolean")


def _from_text(text: str, lt: LakeType) -> Any:
    """The Python value of DuckDB's VARCHAR spelling of a scalar of type ``lt``."""
    name = lt.name
    try:
        if name == "boolean":
            return _parse_bool(text)
        if name in INT_RANGES:
            return int(text.strip())
        if name in ("float32", "float64"):
            number = float(text.strip())
            return _f32(number) if name == "float32" else number
        if name == "decimal":
            return Decimal(text.strip())
        if name in ("varchar", "json"):
            return text
        if name == "blob":
            return _blob_from_text(text)
        if name == "uuid":
            return uuid.UUID(text.strip())
        if name == "date":
            return _parse_date(text)
        if name in ("time", "time_ns", "timetz"):
            return _parse_time(text, name == "timetz")
        if name in TIMESTAMP_TYPES:
            return _parse_timestamp(text, name)
        if name == "interval":
            return _parse_interval(text)
    except (ValueError, InvalidOperation, ArithmeticError) as exc:
        raise InvalidArgumentError(f"cannot read {text!r} as {lt}: {exc}") from None
    raise UnsupportedTypeError(f"cannot read inlined values of type {lt}")


def _blob_from_text(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1 : i + 2] in ("x", "X") and len(text[i + 2 : i + 4]) == 2:
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            out.extend(text[i].encode("utf-8"))
            i += 1
    return bytes(out)


_DATE = re.compile(r"(\d{4,})-(\d{1,2})-(\d{1,2})(\s*\(BC\))?", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?")
_OFFSET = re.compile(r"\s*(?:(Z)|([+-])(\d{2}):?(\d{2})?:?(\d{2})?)?\s*$", re.IGNORECASE)
_INFINITY = {"infinity": 1, "+infinity": 1, "-infinity": -1}


def _year(match: re.Match[str], bc: bool, text: str) -> int:
    year = int(match.group(1))
    if bc or not 1 <= year <= 9999:
        raise UnsupportedTypeError(f"{text!r} is outside the years 1-9999 that Python can hold")
    return year


def _parse_date(text: str) -> date:
    word = text.strip().lower()
    if word in _INFINITY:
        return date.max if _INFINITY[word] > 0 else date.min
    match = _DATE.fullmatch(text.strip())
    if not match:
        raise InvalidArgumentError(f"cannot read {text!r} as a date")
    return date(_year(match, bool(match.group(4)), text), int(match.group(2)), int(match.group(3)))


def _clock(match: re.Match[str]) -> tuple[int, int, int, int]:
    digits = (match.group(4) or "")[:6]
    micros = int(digits.ljust(6, "0")) if digits else 0
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0), micros


def _offset(match: re.Match[str]) -> timezone | None:
    if match.group(1):
        return _UTC
    if not match.group(2):
        return None
    seconds = int(match.group(3)) * 3600 + int(match.group(4) or 0) * 60 + int(match.group(5) or 0)
    return timezone(timedelta(seconds=-seconds if match.group(2) == "-" else seconds))


def _parse_time(text: str, with_zone: bool) -> time:
    stripped = text.strip()
    clock = _CLOCK.match(stripped)
    rest = _OFFSET.fullmatch(stripped[clock.end() :]) if clock else None
    if not clock or not rest:
        raise InvalidArgumentError(f"cannot read {text!r} as a time")
    hour, minute, second, micros = _clock(clock)
    if hour == 24 and minute == second == micros == 0:
        moment = time.max  # DuckDB allows 24:00:00; Python cannot hold it
    else:
        moment = time(hour, minute, second, micros)
    if with_zone:
        return moment.replace(tzinfo=_offset(rest) or _UTC)
    return moment


def _parse_timestamp(text: str, name: str) -> datetime:
    stripped = text.strip()
    word = stripped.lower()
    if word in _INFINITY:
        moment = datetime.max if _INFINITY[word] > 0 else datetime.min
        return moment.replace(tzinfo=_UTC) if name == "timestamptz" else moment
    day = _DATE.match(stripped)
    if not day:
        raise InvalidArgumentError(f"cannot read {text!r} as a timestamp")
    bc = bool(day.group(4))
    pos = day.end()
    hour = minute = second = micros = 0
    rest_text = stripped[pos:]
    sep = re.match(r"[ T]\s*", rest_text)
    if sep:
        clock = _CLOCK.match(rest_text, sep.end())
        if clock:
            hour, minute, second, micros = _clock(clock)
            rest_text = rest_text[clock.end() :]
    trailing_bc = re.match(r"\s*\(BC\)", rest_text, re.IGNORECASE)
    if trailing_bc:
        bc = True
        rest_text = rest_text[trailing_bc.end() :]
    rest = _OFFSET.fullmatch(rest_text)
    if not rest:
        raise InvalidArgumentError(f"cannot read {text!r} as a timestamp")
    moment = datetime(
        _year(day, bc, text), int(day.group(2)), int(day.group(3)), hour, minute, second, micros
    )
    zone = _offset(rest)
    try:
        if name == "timestamptz":
            return moment.replace(tzinfo=zone or _UTC).astimezone(_UTC)
        if zone is not None:
            return moment.replace(tzinfo=zone).astimezone(_UTC).replace(tzinfo=None)
    except OverflowError:
        raise UnsupportedTypeError(f"{text!r} is outside the range Python can hold") from None
    return moment


def _normalise_timestamp(moment: datetime, name: str) -> datetime:
    if name == "timestamptz":
        return moment.replace(tzinfo=_UTC) if moment.tzinfo is None else moment.astimezone(_UTC)
    if moment.tzinfo is not None:
        return moment.astimezone(_UTC).replace(tzinfo=None)
    return moment


_INTERVAL_PART = re.compile(
    r"([+-]?\d+(?:\.\d+)?)\s*(years?|mons?|months?|days?|hours?|mins?|minutes?|secs?|seconds?"
    r"|milliseconds?|microseconds?)\b"
    r"|([+-])?(\d+):(\d{2})(?::(\d{2})(?:\.(\d+))?)?"
    r"|\s+",
    re.IGNORECASE,
)
_MICROS_PER = {
    "hour": 3_600_000_000,
    "min": 60_000_000,
    "minute": 60_000_000,
    "sec": 1_000_000,
    "second": 1_000_000,
    "millisecond": 1000,
    "microsecond": 1,
}


def _parse_interval(text: str) -> MonthDayNano:
    """DuckDB's and PostgreSQL's interval text (``1 year 2 mons 3 days -04:05:06.5``)."""
    months = days = 0
    micros = Decimal(0)
    pos = 0
    stripped = text.strip()
    while pos < len(stripped):
        match = _INTERVAL_PART.match(stripped, pos)
        if not match or match.end() == pos:
            raise InvalidArgumentError(f"cannot read {text!r} as an interval")
        pos = match.end()
        if match.group(2):
            amount = Decimal(match.group(1))
            unit = match.group(2).lower().rstrip("s")
            if unit == "year":
                months += int(amount * 12)
            elif unit in ("mon", "month"):
                months += int(amount)
            elif unit == "day":
                days += int(amount)
            else:
                micros += amount * _MICROS_PER[unit]
        elif match.group(4):
            fraction = (match.group(7) or "")[:6].ljust(6, "0")
            span = (
                int(match.group(4)) * 3_600_000_000
                + int(match.group(5)) * 60_000_000
                + int(match.group(6) or 0) * 1_000_000
                + int(fraction)
            )
            micros += -span if match.group(3) == "-" else span
    return MonthDayNano(months, days, int(micros) * 1000)


class _Parser:
    """Reads DuckDB's VARCHAR form of a nested value, typed by the column tree.

    ``sql_zone`` is true inside a top-level struct and its struct children, where DuckDB 1.5.5
    writes SQL literals (``'it''s'``, ``CAST('…' AS DATE)``) instead of the cast form.
    """

    def __init__(self, text: str, exact: bool = False) -> None:
        self.s = text
        self.i = 0
        self.leaf_value = _exact_from_text if exact else _from_text

    def document(self, column: ColumnInfo) -> Any:
        value = self.value(column, column.type.name == "struct", "")
        self.skip()
        if self.i != len(self.s):
            self.fail("unexpected text after the value")
        return value

    # -- helpers

    def fail(self, message: str) -> NoReturn:
        raise InvalidArgumentError(
            f"cannot read inlined value {self.s!r}: {message} at offset {self.i}"
        )

    def skip(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in _SPACE:
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, ch: str) -> None:
        self.skip()
        if self.peek() != ch:
            self.fail(f"expected {ch!r}")
        self.i += 1

    def stop_follows(self, stops: str, at: int | None = None) -> bool:
        j = self.i if at is None else at
        while j < len(self.s) and self.s[j] in _SPACE:
            j += 1
        return j == len(self.s) if not stops else j < len(self.s) and self.s[j] in stops

    def opens(self, bracket: str, close: str) -> bool:
        """Past an opening ``bracket``: whether items follow (else past the ``close`` too)."""
        self.expect(bracket)
        self.skip()
        if self.peek() == close:
            self.i += 1
            return False
        return True

    def more(self, close: str) -> bool:
        """Past an item: True past a ``,`` (another item follows), False past ``close``."""
        self.skip()
        if self.peek() == ",":
            self.i += 1
            return True
        self.expect(close)
        return False

    def at_null(self, stops: str) -> bool:
        word = self.s[self.i : self.i + 4]
        return word.lower() == "null" and self.stop_follows(stops, self.i + 4)

    # -- grammar

    def value(self, column: ColumnInfo, sql_zone: bool, stops: str) -> Any:
        self.skip()
        if self.at_null(stops):
            self.i += 4
            return None
        name = column.type.name
        if name == "struct":
            return self.struct(column, sql_zone)
        if name == "list":
            return self.list(column)
        if name == "map":
            return self.map(column)
        return self.leaf_value(self.leaf(sql_zone, stops), column.type)

    def struct(self, column: ColumnInfo, sql_zone: bool) -> dict[str, Any]:
        out: dict[str, Any] = {child.column_name: None for child in column.children}
        by_name = {child.column_name: child for child in column.children}
        if not self.opens("{", "}"):
            return out
        position = 0
        while True:
            key = self.leaf(sql_zone, ":")
            self.expect(":")
            child = by_name.get(key)
            if child is None:
                if position >= len(column.children):
                    self.fail(f"struct field {key!r} is not in {sorted(by_name)}")
                child = column.children[position]
            out[child.column_name] = self.value(child, sql_zone, ",}")
            position += 1
            if not self.more("}"):
                return out

    def list(self, column: ColumnInfo) -> list[Any]:
        element = _child(column, "element")
        raw_json = element.type.name == "json"
        out: list[Any] = []
        if not self.opens("[", "]"):
            return out
        while True:
            self.skip()
            item = self.json_item() if raw_json else _NO_JSON
            out.append(self.value(element, False, ",]") if item is _NO_JSON else item)
            if not self.more("]"):
                return out

    def json_item(self) -> Any:
        """A raw JSON element of a JSON list, minified as DuckDB's JSON reader returns it."""
        if self.peek() == "'" or self.s.startswith("NULL", self.i):
            return _NO_JSON
        try:
            parsed, end = json.JSONDecoder().raw_decode(self.s, self.i)
        except ValueError:
            return _NO_JSON
        if not self.stop_follows(",]", end):
            return _NO_JSON
        self.i = end
        return json.dumps(parsed, separators=(",", ":"), ensure_ascii=False)

    def map(self, column: ColumnInfo) -> builtins.list[tuple[Any, Any]]:  # not _Parser.list
        key_col, value_col = _child(column, "key"), _child(column, "value")
        out: list[tuple[Any, Any]] = []
        if not self.opens("{", "}"):
            return out
        while True:
            key = self.value(key_col, False, "=")
            self.expect("=")
            out.append((key, self.value(value_col, False, ",}")))
            if not self.more("}"):
                return out

    def leaf(self, sql_zone: bool, stops: str) -> str:
        self.skip()
        ch = self.peek()
        if sql_zone and self.s[self.i : self.i + 5].upper() == "CAST(":
            return self.sql_cast()
        if ch == "'" and sql_zone:
            start = self.i
            text = self.sql_quoted()
            if text is not None and self.stop_follows(stops):
                return text
            self.i = start
        if ch in ("'", '"'):
            text = self.escaped_quoted(ch)
            if not self.stop_follows(stops):
                self.fail("expected a separator after a quoted string")
            return text
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in stops:
            self.i += 1
        return self.s[start : self.i].strip(_SPACE)

    def sql_quoted(self) -> str | None:
        """A SQL string literal (``''`` is a quote, backslash is literal); None if unterminated."""
        self.i += 1
        parts = []
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == "'":
                if self.s[self.i + 1 : self.i + 2] == "'":
                    parts.append("'")
                    self.i += 2
                    continue
                self.i += 1
                return "".join(parts)
            parts.append(ch)
            self.i += 1
        return None

    def escaped_quoted(self, quote: str) -> str:
        """A quoted string of the cast form: backslash escapes the next character."""
        self.i += 1
        parts = []
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == "\\" and self.i + 1 < len(self.s):
                parts.append(self.s[self.i + 1])
                self.i += 2
            elif ch == quote:
                self.i += 1
                return "".join(parts)
            else:
                parts.append(ch)
                self.i += 1
        self.fail("unterminated quoted string")

    def sql_cast(self) -> str:
        """``CAST('text' AS TYPE)`` as DuckDB's ``Value::ToSQLString`` writes it: the text."""
        self.i += 5
        self.skip()
        if self.peek() != "'":
            self.fail("expected a string literal in CAST")
        text = self.sql_quoted()
        if text is None:
            self.fail("unterminated string literal in CAST")
        depth = 1
        while self.i < len(self.s) and depth:
            depth += {"(": 1, ")": -1}.get(self.s[self.i], 0)
            self.i += 1
        if depth:
            self.fail("unterminated CAST")
        return text


_NO_JSON = object()
