"""Lake options (``ducklake_metadata`` rows with a scope), as DuckDB's ``set_option`` keeps them.

An option is set globally, for a schema or for a table; a reader takes the most specific one
(table, then schema, then global, then the default). Values are validated and normalised the
way DuckDB 1.5.5 does before they are stored (always as text), so both engines read the same
setting. Setting an option creates no snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection
from sqlalchemy import text as sql_text

from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from .catalog import Catalog

PARQUET_COMPRESSIONS = ("uncompressed", "snappy", "gzip", "zstd", "brotli", "lz4", "lz4_raw")
TARGET_FILE_SIZE_DEFAULT = 512 * 1024 * 1024
REWRITE_DELETE_THRESHOLD_DEFAULT = 0.95
DELETE_OLDER_THAN_DEFAULT = "2 days"
DEFAULT_INLINING_ROW_LIMIT = 10
# DuckDB's zstd level when no option says (parquet-java's default too)
DEFAULT_ZSTD_LEVEL = 3


@dataclass(frozen=True)
class OptionSetting:
    """One stored option: its key, text value and scope (``None`` = global)."""

    key: str
    value: str
    scope: str | None  # None, 'schema' or 'table'
    scope_id: int | None
    scope_name: str | None = None  # schema name, or schema.table


@dataclass(frozen=True)
class ParquetOptions:
    """How new data files are written: the ``parquet_*`` options in effect for a table.

    Without a row group option the writer's own size holds (Spark: 128 MB; pyarrow on the
    driver: 1Mi rows), not DuckDB's 122,880 rows: groups that small made a 10M-row table
    build 20% slower in Spark and a full scan 5-8% slower, for the in-file skipping only a
    selective read gains. A table read that way sets ``parquet_row_group_size``.
    """

    compression: str = "snappy"
    compression_level: int = DEFAULT_ZSTD_LEVEL  # zstd's, as in DuckDB: no other codec's
    row_group_size: int | None = None  # rows; None: the writer's default
    row_group_size_bytes: int | None = None  # of the rows in memory; None: the writer's
    # rows per file a Spark write stops at, from an explicit target_file_size; None: no cap
    max_rows_per_file: int | None = None

    def rows_per_group(self, rows: int, nbytes: int) -> int | None:
        """Rows per row group for ``rows`` rows taking ``nbytes`` in memory: the row bound,
        lowered to the byte bound at the rows' average width (``None``: no bound set)."""
        if self.row_group_size_bytes is None or rows == 0 or nbytes <= 0:
            return self.row_group_size
        by_bytes = max(1, self.row_group_size_bytes * rows // nbytes)
        return by_bytes if self.row_group_size is None else min(self.row_group_size, by_bytes)


DEFAULT_PARQUET_OPTIONS = ParquetOptions()


# ------------------------------------------------------------------------------ parsing
_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
          "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4, "byte": 1, "bytes": 1}


def parse_size(value: Any) -> int:
    """A byte count from ``536870912``, ``'512MB'`` or ``'1.5GiB'`` (DuckDB's syntax)."""
    if isinstance(value, bool):
        raise InvalidArgumentError(
            f"a size must be a number of bytes or like '512MB', got {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
    unit = (match.group(2).lower() if match else "") or "b"
    if not match or unit not in _UNITS:
        raise InvalidArgumentError(
            f"cannot read {value!r} as a size; use bytes or a unit: "
            + ", ".join(u.upper() for u in ("KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB")))
    return int(float(match.group(1)) * _UNITS[unit])


_INTERVAL_UNITS = {
    "microsecond": timedelta(microseconds=1), "millisecond": timedelta(milliseconds=1),
    "second": timedelta(seconds=1), "minute": timedelta(minutes=1), "hour": timedelta(hours=1),
    "day": timedelta(days=1), "week": timedelta(weeks=1), "month": timedelta(days=30),
    "year": timedelta(days=365),
}
_INTERVAL_ALIASES = {"us": "microsecond", "ms": "millisecond", "s": "second", "sec": "second",
                     "secs": "second", "m": "minute", "min": "minute", "mins": "minute",
                     "h": "hour", "hr": "hour", "hrs": "hour", "d": "day", "w": "week",
                     "mon": "month", "mons": "month", "y": "year", "yr": "year", "yrs": "year"}


def parse_interval(value: Any) -> timedelta:
    """``'2 days'``, ``'1 week 3 hours'``, ``'90 minutes'`` or a timedelta (DuckDB intervals;
    a month counts 30 days, as DuckDB does when subtracting from a timestamp is not exact)."""
    if isinstance(value, timedelta):
        return value
    text = str(value).strip().lower()
    parts = re.findall(r"([0-9]*\.?[0-9]+)\s*([a-z]+)", text)
    if not parts or re.sub(r"([0-9]*\.?[0-9]+)\s*([a-z]+)", "", text).strip(" ,"):
        raise InvalidArgumentError(
            f"cannot read {value!r} as an interval; use e.g. '2 days', '1 week', '12 hours'")
    total = timedelta(0)
    for number, unit in parts:
        unit = _INTERVAL_ALIASES.get(unit, unit)
        if unit not in _INTERVAL_UNITS and unit.endswith("s"):
            unit = unit[:-1]
        if unit not in _INTERVAL_UNITS:
            raise InvalidArgumentError(
                f"unknown interval unit in {value!r}; use one of "
                + ", ".join(f"{u}s" for u in _INTERVAL_UNITS))
        total += float(number) * _INTERVAL_UNITS[unit]
    return total


def _bool(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip().lower()
    if text in ("true", "1", "t", "yes", "on"):
        return "true"
    if text in ("false", "0", "f", "no", "off"):
        return "false"
    raise InvalidArgumentError(f"expected a boolean (true/false), got {value!r}")


def _unsigned(value: Any) -> str:
    try:
        number = int(str(value).strip())
    except ValueError as exc:
        raise InvalidArgumentError(f"expected a non-negative integer, got {value!r}") from exc
    if number < 0:
        raise InvalidArgumentError(f"expected a non-negative integer, got {value!r}")
    return str(number)


def _positive(value: Any) -> str:
    text = _unsigned(value)
    if text == "0":
        raise InvalidArgumentError("the value cannot be 0")
    return text


def _compression(value: Any) -> str:
    codec = str(value).strip().lower()
    if codec not in PARQUET_COMPRESSIONS:
        raise InvalidArgumentError(
            f"unsupported Parquet codec {value!r}; supported: {', '.join(PARQUET_COMPRESSIONS)}")
    return codec


def _parquet_version(value: Any) -> str:
    text = str(value).strip().upper().removeprefix("V")
    if text not in ("1", "2"):
        raise InvalidArgumentError("only Parquet versions 1 and 2 are supported")
    return "V" + text


def _threshold(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"rewrite_delete_threshold must be a number, got {value!r}") \
            from exc
    if not 0 <= number <= 1:
        raise InvalidArgumentError("rewrite_delete_threshold must be between 0 and 1")
    return f"{number:.6f}"  # DuckDB stores std::to_string(double)


def _interval(value: Any) -> str:
    text = str(value)
    if text:
        parse_interval(text)
    return text


def _size(value: Any) -> str:
    return str(parse_size(value))


# key -> normaliser (validates and returns the stored text), as DuckDB's set_option
OPTIONS: dict[str, Callable[[Any], str]] = {
    "data_inlining_row_limit": _unsigned,
    "target_file_size": _size,
    "parquet_compression": _compression,
    "parquet_compression_level": _unsigned,
    "parquet_version": _parquet_version,
    "parquet_row_group_size": _positive,
    "parquet_row_group_size_bytes": lambda v: _positive(parse_size(v)),
    "hive_file_pattern": _bool,
    "per_thread_output": _bool,
    "require_commit_message": _bool,
    "rewrite_delete_threshold": _threshold,
    "delete_older_than": _interval,
    "expire_older_than": _interval,
    "auto_compact": _bool,
    "sort_on_insert": _bool,
    "write_deletion_vectors": _bool,
}


# The options a table's own scope takes from a dbt model (``table_options``): those that
# shape its files and their upkeep. The others are the lake's (commit messages, expiry).
TABLE_OPTIONS = ("data_inlining_row_limit", "target_file_size", "parquet_compression",
                 "parquet_compression_level", "parquet_row_group_size",
                 "parquet_row_group_size_bytes", "auto_compact", "rewrite_delete_threshold")


def normalise_table_options(options: Mapping[str, Any]) -> dict[str, str]:
    """A table's options (a dbt model's ``table_options``) as the text :func:`set_option`
    stores; a key that is not a table option fails listing those that are."""
    out = {}
    for key, value in options.items():
        name = str(key).strip().lower()
        if name not in TABLE_OPTIONS:
            raise InvalidArgumentError(
                f"unsupported table option {key!r}; accepted: {', '.join(TABLE_OPTIONS)}")
        out[name] = normalise(name, value)[1]
    return out


def table_scope_options(lake: Catalog, conn: Connection, table_id: int) -> dict[str, str]:
    """The options stored for the table itself (not inherited from its schema or the lake)."""
    return {key: value for key, value, scope, scope_id in stored_options(lake, conn)
            if scope == "table" and scope_id == table_id}


def normalise(key: str, value: Any) -> tuple[str, str]:
    """``(key, stored text)`` for an option, or :class:`InvalidArgumentError` naming the keys."""
    name = str(key).strip().lower()
    if name not in OPTIONS:
        raise InvalidArgumentError(
            f"unsupported option {key!r}; supported options: {', '.join(sorted(OPTIONS))}")
    if value is None:
        raise InvalidArgumentError(f"the {name} option cannot be NULL")
    try:
        return name, OPTIONS[name](value)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"invalid value for {name}: {exc}") from exc


def set_option(lake: Catalog, key: str, value: Any, schema: str | None = None,
               table: str | None = None) -> OptionSetting:
    """Set an option globally, for ``schema``, or for ``schema.table`` (schema defaults to main).

    Like DuckDB's ``CALL lake.set_option(...)``, this writes no snapshot.
    """
    name, text = normalise(key, value)
    schema_id = table_id = None
    scope_name = None
    with lake.read() as conn:
        if table is not None:
            found = lake.table(schema or "main", table, conn=conn)
            table_id, scope_name = found.table_id, f"{found.schema_name}.{found.table_name}"
        elif schema is not None:
            found_schema = lake.schema(schema, conn=conn)
            schema_id, scope_name = found_schema.schema_id, found_schema.schema_name
    store_option(lake, name, text, schema_id=schema_id, table_id=table_id)
    scope = "table" if table_id is not None else ("schema" if schema_id is not None else None)
    return OptionSetting(name, text, scope, table_id if table_id is not None else schema_id,
                         scope_name)


def list_options(lake: Catalog) -> list[OptionSetting]:
    """Every option stored in the lake (format keys such as ``version`` excluded)."""
    with lake.read() as conn:
        # keyed by int | None: a row's scope_id is None for a global option
        schemas: dict[int | None, str] = {s.schema_id: s.schema_name
                                          for s in lake.schemas(conn=conn)}
        tables: dict[int | None, str] = {t.table_id: f"{t.schema_name}.{t.table_name}"
                                         for t in lake.tables(conn=conn)}
        rows = stored_options(lake, conn)
    out = []
    for key, value, scope, scope_id in rows:
        if key not in OPTIONS:
            continue
        name = None
        if scope == "schema":
            name = schemas.get(scope_id)
        elif scope == "table":
            name = tables.get(scope_id)
        out.append(OptionSetting(key, value, scope, scope_id, name))
    return sorted(out, key=lambda o: (o.key, o.scope or "", o.scope_id or 0))


def store_option(lake: Catalog, key: str, value: Any, schema_id: int | None = None,
                 table_id: int | None = None) -> None:
    """Upsert an option at global, schema or table scope (no snapshot, as in DuckDB); the
    value is stored as given (booleans as ``true``/``false``): :func:`set_option` validates."""
    scope, scope_id = ("table", table_id) if table_id is not None else (
        ("schema", schema_id) if schema_id is not None else (None, None)
    )
    text_value = str(value).lower() if isinstance(value, bool) else str(value)
    with lake.write() as conn:
        upsert_option(conn, lake, key, text_value, scope, scope_id)


def upsert_option(conn: Connection, lake: Catalog, key: str, text_value: str, scope: str | None,
            scope_id: int | None) -> None:
    """Update the option's row at that scope, or insert one, on ``conn``."""
    if scope is None:
        where, params = "scope IS NULL", {}
    else:
        where, params = "scope = :sc AND scope_id = :sid", {"sc": scope, "sid": scope_id}
    metadata = lake.t("ducklake_metadata")
    updated = conn.execute(
        sql_text(f"UPDATE {metadata} SET value = :v WHERE key = :k AND {where}"),
        {"k": key, "v": text_value, **params}).rowcount
    if not updated:
        conn.execute(
            sql_text(f"INSERT INTO {metadata} (key, value, scope, scope_id) "
                     "VALUES (:k, :v, :sc, :sid)"),
            {"k": key, "v": text_value, "sc": scope, "sid": scope_id})


def stored_options(lake: Catalog,
                   conn: Connection) -> list[tuple[str, str, str | None, int | None]]:
    """Every ``ducklake_metadata`` row: ``(key, value, scope, scope_id)``."""
    rows = conn.execute(
        sql_text(f"SELECT key, value, scope, scope_id FROM {lake.t('ducklake_metadata')}")
    ).all()
    return [(r[0], r[1], r[2], None if r[3] is None else int(r[3])) for r in rows]


def option(lake: Catalog, conn: Connection, key: str, schema_id: int | None = None,
           table_id: int | None = None, default: str | None = None) -> str | None:
    """The effective value: table scope, then schema, then global, then ``default``."""
    return _effective(stored_options(lake, conn), key, schema_id, table_id, default)


def _effective(stored: list[tuple[str, str, str | None, int | None]], key: str,
               schema_id: int | None, table_id: int | None,
               default: str | None = None) -> str | None:
    """:func:`option` among rows :func:`stored_options` has read."""
    found: dict[tuple[str | None, int | None], str] = {}
    for k, value, scope, scope_id in stored:
        if k == key:
            found[(scope, scope_id)] = value
    for scope_key in (("table", table_id), ("schema", schema_id), (None, None)):
        if scope_key in found and (scope_key[0] is None or scope_key[1] is not None):
            return found[scope_key]
    return default


def inlining_row_limit(lake: Catalog, conn: Connection, schema_id: int | None = None,
                       table_id: int | None = None,
                       overrides: Mapping[str, str] | None = None) -> int:
    """How many rows a commit may inline: the lake's ``data_inlining_row_limit`` option, else
    the connection's setting (the profile's), else DuckDB's default. ``overrides`` are
    options the write stores for the table with its commit (a model's ``table_options``)."""
    value = (overrides or {}).get("data_inlining_row_limit") or option(
        lake, conn, "data_inlining_row_limit", schema_id, table_id)
    if value is not None:
        return int(value)
    if lake.data_inlining_row_limit is not None:
        return int(lake.data_inlining_row_limit)
    return DEFAULT_INLINING_ROW_LIMIT


def auto_compact(lake: Catalog, conn: Connection, schema_id: int, table_id: int) -> bool:
    """DuckDB's ``auto_compact``: whether a table takes part in flush, merge and rewrite."""
    return option(lake, conn, "auto_compact", schema_id, table_id, "true") == "true"


def target_file_size(lake: Catalog, conn: Connection, schema_id: int | None,
                     table_id: int | None, overrides: Mapping[str, str] | None = None) -> int:
    value = (overrides or {}).get("target_file_size") or option(
        lake, conn, "target_file_size", schema_id, table_id)
    return TARGET_FILE_SIZE_DEFAULT if value is None else parse_size(value)


def parquet_options(lake: Catalog, conn: Connection, schema_id: int | None,
                    table_id: int | None,
                    overrides: Mapping[str, str] | None = None) -> ParquetOptions:
    """The codec, zstd level and row group bounds new files of the table are written with
    (``parquet_compression``, ``parquet_compression_level``, ``parquet_row_group_size`` and
    ``parquet_row_group_size_bytes``), from one read of the options; ``overrides`` first."""
    stored = stored_options(lake, conn)

    def get(key: str) -> str | None:
        if overrides and key in overrides:
            return overrides[key]
        return _effective(stored, key, schema_id, table_id)

    level, rows, size = (get("parquet_compression_level"), get("parquet_row_group_size"),
                         get("parquet_row_group_size_bytes"))
    return ParquetOptions(
        compression=get("parquet_compression") or "snappy",
        compression_level=DEFAULT_ZSTD_LEVEL if level is None else int(level),
        row_group_size=None if rows is None else int(rows),
        row_group_size_bytes=None if size is None else parse_size(size))


def explicit_target_file_size(lake: Catalog, conn: Connection, schema_id: int | None,
                              table_id: int | None,
                              overrides: Mapping[str, str] | None = None) -> int | None:
    """``target_file_size`` where one is set for the table (its own, its schema's, the
    lake's, or ``overrides``), else ``None`` (compaction's default is not a write's cap)."""
    value = (overrides or {}).get("target_file_size") or option(
        lake, conn, "target_file_size", schema_id, table_id)
    return None if value is None else parse_size(value)


def rows_per_file(target_size: int, row_bytes: float) -> int:
    """The rows a file of ``target_size`` bytes holds at ``row_bytes`` a row (at least 1)."""
    return max(1, int(target_size // max(row_bytes, 1.0)))


def rewrite_delete_threshold(lake: Catalog, conn: Connection, schema_id: int,
                             table_id: int) -> float:
    value = option(lake, conn, "rewrite_delete_threshold", schema_id, table_id)
    return REWRITE_DELETE_THRESHOLD_DEFAULT if value is None else float(value)


__all__ = [
    "OPTIONS",
    "TABLE_OPTIONS",
    "OptionSetting",
    "ParquetOptions",
    "inlining_row_limit",
    "list_options",
    "normalise",
    "option",
    "parquet_options",
    "parse_interval",
    "parse_size",
    "set_option",
    "store_option",
    "stored_options",
]
