"""Partition specs: the transforms, parsing user specs, hive paths and catalog changes.

A DuckLake table has at most one live partition spec (``ducklake_partition_info`` with its
``ducklake_partition_column`` rows). It applies to files written after it was set; older files keep
the spec they were written with. The transforms are those of DuckDB 1.5.5
(duckdb/ducklake@v1.5-variegata src/storage/ducklake_partition_data.cpp): ``identity``, ``year``,
``month``, ``day``, ``hour`` (calendar fields, not Iceberg's counts since 1970) and ``bucket(N)``
(Iceberg's Murmur3 bucket). A file belongs to exactly one partition; its hive-style path and
``ducklake_file_partition_value`` rows say which.

User specs read like Spark's and DuckDB's ``PARTITIONED BY`` lists:
``["region", "year(ts)", "months(ts)", "bucket(4, id)"]`` or ``"region, years(ts)"``.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from . import murmur3
from .commit import CommitContext, Transaction
from .errors import InvalidArgumentError, NotFoundError, UnsupportedTypeError
from .models import ColumnInfo, PartitionSpec, TableRef
from .types import INTEGER_TYPES, TIMESTAMP_TYPES, UNSIGNED_TYPES, LakeType
from .value_text import inlined_value_text

TRANSFORMS = ("identity", "year", "month", "day", "hour", "bucket")
ACCEPTED = ("a column name (identity), year(col), month(col), day(col), hour(col), "
            "bucket(N, col); Spark's years/months/days/hours are accepted too")
# Spark's (and Iceberg's) plural spellings mean the same calendar field here.
_SPELLINGS = {"identity": "identity", "year": "year", "years": "year", "month": "month",
              "months": "month", "day": "day", "days": "day", "hour": "hour",
              "hours": "hour", "bucket": "bucket"}
NULL_DIRECTORY = "__HIVE_DEFAULT_PARTITION__"
_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~")
_CALENDAR_TYPES = frozenset({"date"}) | TIMESTAMP_TYPES
_BUCKET_TYPES = frozenset(("boolean", "float32", "float64", "decimal", "varchar", "json",
                           "blob", "date", "uuid") + INTEGER_TYPES + UNSIGNED_TYPES
                          ) | TIMESTAMP_TYPES
_NOT_PARTITIONABLE = frozenset({"variant", "geometry", "interval"})


@dataclass(frozen=True)
class PartitionField:
    """One key of a spec as the user wrote it: a column name and a transform."""

    column: str
    transform: str = "identity"
    bucket_count: int | None = None

    @property
    def transform_text(self) -> str:
        """The transform as ``ducklake_partition_column.transform`` spells it."""
        return f"bucket({self.bucket_count})" if self.transform == "bucket" else self.transform

    def __str__(self) -> str:
        if self.transform == "identity":
            return self.column
        if self.transform == "bucket":
            return f"bucket({self.bucket_count}, {self.column})"
        return f"{self.transform}({self.column})"


@dataclass(frozen=True)
class PartitionKey:
    """A key of a spec resolved against the table: the column, transform and hive name."""

    index: int
    column: ColumnInfo
    transform: str
    bucket_count: int | None
    name: str

    @property
    def transform_text(self) -> str:
        return f"bucket({self.bucket_count})" if self.transform == "bucket" else self.transform

    @property
    def field(self) -> PartitionField:
        return PartitionField(self.column.column_name, self.transform, self.bucket_count)


# ---------------------------------------------------------------------------------- parsing
def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, value) tokens: ``name`` (bare or quoted), ``int`` and punctuation."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "(),.":
            out.append((ch, ch))
            i += 1
        elif ch in "`\"":
            j, value = i + 1, []
            while True:
                if j >= len(text):
                    raise InvalidArgumentError(f"unterminated quoted name in partition spec "
                                               f"{text!r}")
                if text[j] == ch:
                    if j + 1 < len(text) and text[j + 1] == ch:
                        value.append(ch)
                        j += 2
                        continue
                    break
                value.append(text[j])
                j += 1
            out.append(("name", "".join(value)))
            i = j + 1
        elif ch.isdigit():
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            out.append(("int", text[i:j]))
            i = j
        elif ch.isalpha() or ch == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            out.append(("name", text[i:j]))
            i = j
        else:
            raise InvalidArgumentError(
                f"unexpected {ch!r} in partition spec {text!r}; accepted: {ACCEPTED}")
    return out


def _bad(item: str, why: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"partition key {item!r}: {why}; accepted: {ACCEPTED}")


def _column_name(tokens: list[tuple[str, str]], item: str) -> str:
    if any(kind == "." for kind, _ in tokens):
        raise _bad(item, "nested fields cannot be partition keys (only top-level columns)")
    if len(tokens) != 1 or tokens[0][0] != "name":
        raise _bad(item, "expected one column name")
    return tokens[0][1]


def _bucket_count(value: str, item: str) -> int:
    count = int(value)
    if count <= 0 or count > 2**31 - 1:
        raise _bad(item, f"the bucket count must be between 1 and {2**31 - 1}, not {count}")
    return count


def _parse_item(tokens: list[tuple[str, str]], item: str) -> PartitionField:
    if not tokens:
        raise _bad(item, "empty")
    if len(tokens) >= 3 and tokens[0][0] == "name" and tokens[1][0] == "(":
        if tokens[-1][0] != ")":
            raise _bad(item, "missing ')'")
        function = tokens[0][1].lower()
        transform = _SPELLINGS.get(function)
        if transform is None:
            raise _bad(item, f"unknown transform {tokens[0][1]!r}")
        args: list[list[tuple[str, str]]] = [[]]
        for token in tokens[2:-1]:
            if token[0] == ",":
                args.append([])
            else:
                args[-1].append(token)
        if transform == "bucket":
            if len(args) != 2:
                raise _bad(item, "bucket takes a bucket count and a column: bucket(N, col)")
            first, second = args
            if len(first) == 1 and first[0][0] == "int":
                return PartitionField(_column_name(second, item), "bucket",
                                      _bucket_count(first[0][1], item))
            if len(second) == 1 and second[0][0] == "int":  # bucket(col, N) as DuckDB allows
                return PartitionField(_column_name(first, item), "bucket",
                                      _bucket_count(second[0][1], item))
            raise _bad(item, "the bucket count must be a positive integer literal")
        if len(args) != 1:
            raise _bad(item, f"{function} takes exactly one column")
        return PartitionField(_column_name(args[0], item), transform)
    return PartitionField(_column_name(tokens, item))


def parse_partition_by(spec: str | Sequence[str | PartitionField]) -> tuple[PartitionField, ...]:
    """Parse a spec: a list of keys or one comma-separated string.

    >>> [str(f) for f in parse_partition_by(["region", "years(ts)", "bucket(4, id)"])]
    ['region', 'year(ts)', 'bucket(4, id)']
    """
    items: list[str | PartitionField] = [spec] if isinstance(spec, str) else list(spec)
    fields: list[PartitionField] = []
    for item in items:
        if isinstance(item, PartitionField):
            fields.append(item)
            continue
        if not isinstance(item, str):
            raise InvalidArgumentError(f"partition key {item!r} must be a string; accepted: "
                                       f"{ACCEPTED}")
        tokens = _tokens(item)
        depth = 0
        current: list[tuple[str, str]] = []
        for token in tokens:  # split at top-level commas
            if token[0] == "(":
                depth += 1
            elif token[0] == ")":
                depth -= 1
            if token[0] == "," and depth == 0:
                fields.append(_parse_item(current, item))
                current = []
            else:
                current.append(token)
        if depth != 0:
            raise _bad(item, "unbalanced parentheses")
        fields.append(_parse_item(current, item))
    if not fields:
        raise InvalidArgumentError(f"a partition spec needs at least one key; accepted: "
                                   f"{ACCEPTED}")
    return tuple(fields)


def parse_transform(text: str) -> tuple[str, int | None]:
    """A catalog transform string (``identity``, ``year``, ``bucket(16)``) split in two."""
    text = text.strip().lower()
    if text.startswith("bucket(") and text.endswith(")"):
        count = text[len("bucket("):-1].strip()
        if not count.isdigit() or int(count) == 0:
            raise InvalidArgumentError(f"invalid bucket partition transform {text!r}")
        return "bucket", int(count)
    if text not in TRANSFORMS or text == "bucket":
        raise UnsupportedTypeError(f"unknown partition transform {text!r} in the catalog")
    return text, None


# ---------------------------------------------------------------------------------- resolving
def key_names(fields: Sequence[tuple[str, str]]) -> list[str]:
    """Hive key names for (column, transform) pairs, as DuckDB picks them.

    The column name for identity, the transform name otherwise; a name already taken (case
    insensitively) gets ``_<column>`` appended, e.g. ``year`` and ``year_year``.
    """
    used: set[str] = set()
    names = []
    for column, transform in fields:
        prefix = column if transform == "identity" else transform
        name = prefix if prefix.lower() not in used else f"{prefix}_{column}"
        used.add(name.lower())
        names.append(name)
    return names


def _check_type(field: PartitionField, column: ColumnInfo) -> None:
    kind = column.type.name
    if column.type.nested or kind in _NOT_PARTITIONABLE:
        raise InvalidArgumentError(
            f"cannot partition by {field}: column {column.column_name!r} is "
            f"{column.column_type}; partition keys must be top-level scalar columns")
    allowed = {"identity": None, "year": _CALENDAR_TYPES, "month": _CALENDAR_TYPES,
               "day": _CALENDAR_TYPES, "hour": _CALENDAR_TYPES,
               "bucket": _BUCKET_TYPES}[field.transform]
    if allowed is not None and kind not in allowed:
        raise InvalidArgumentError(
            f"cannot partition by {field}: {field.transform} does not apply to column "
            f"{column.column_name!r} of type {column.column_type}")


def resolve(fields: Sequence[PartitionField], columns: Sequence[ColumnInfo]
            ) -> tuple[PartitionKey, ...]:
    """Match a spec to the table's top-level columns (case-insensitively) and check types."""
    by_name = {c.column_name.lower(): c for c in columns}
    resolved = []
    for field in fields:
        if "." in field.column and field.column.lower() not in by_name:
            raise InvalidArgumentError(
                f"cannot partition by {field}: nested fields cannot be partition keys (only "
                "top-level columns)")
        column = by_name.get(field.column.lower())
        if column is None:
            raise NotFoundError(
                f"cannot partition by {field}: no column {field.column!r}; the table has "
                + ", ".join(c.column_name for c in columns))
        _check_type(field, column)
        resolved.append((field, column))
    names = key_names([(c.column_name, f.transform) for f, c in resolved])
    return tuple(PartitionKey(i, c, f.transform, f.bucket_count, n)
                 for i, ((f, c), n) in enumerate(zip(resolved, names)))


def keys_of_spec(spec: PartitionSpec, columns: Sequence[ColumnInfo]) -> tuple[PartitionKey, ...]:
    """The keys of a catalog spec, by column id (names follow renames of the columns)."""
    by_id = {c.column_id: c for c in columns}
    resolved = []
    for part in spec.columns:
        column = by_id.get(part.column_id)
        if column is None:
            raise NotFoundError(
                f"partition key {part.partition_key_index} of table {spec.table_id} refers "
                f"to column id {part.column_id}, which the table no longer has")
        transform, count = parse_transform(part.transform)
        resolved.append((part.partition_key_index, column, transform, count))
    names = key_names([(c.column_name, t) for _, c, t, _ in resolved])
    return tuple(PartitionKey(i, c, t, n_, name)
                 for (i, c, t, n_), name in zip(resolved, names))


# ---------------------------------------------------------------------------------- values
def hive_escape(text: str) -> str:
    """A partition value or key as DuckDB writes it into a path: URL-encoded UTF-8 bytes,
    keeping only ``A-Z a-z 0-9 - _ . ~``."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode())


def hive_directory(keys: Sequence[PartitionKey], values: Sequence[str | None]) -> str:
    """``key=value/...`` with a trailing slash; NULL is ``__HIVE_DEFAULT_PARTITION__``."""
    return "".join(f"{hive_escape(k.name)}="
                   f"{NULL_DIRECTORY if v is None else hive_escape(v)}/"
                   for k, v in zip(keys, values))


def _instant(value: Any, lake_type: LakeType) -> dt.datetime | dt.date:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value
    if isinstance(value, dt.date):
        return value
    raise UnsupportedTypeError(f"cannot take a calendar field of {value!r} ({lake_type})")


def _epoch_units(value: Any, lake_type: LakeType) -> int:
    """A timestamp as DuckDB stores it: units since 1970 (seconds .. nanoseconds)."""
    moment = _instant(value, lake_type)
    assert isinstance(moment, dt.datetime)
    delta = moment - dt.datetime(1970, 1, 1)
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    unit = lake_type.name
    if unit == "timestamp_s":
        return micros // 1_000_000
    if unit == "timestamp_ms":
        return micros // 1_000
    if unit == "timestamp_ns":
        return micros * 1_000 + (getattr(value, "nanosecond", 0) or 0)
    return micros


def bucket_hash(value: Any, lake_type: LakeType) -> int:
    """DuckDB's ``murmur3_32`` of one non-NULL value of a column type (by physical type)."""
    kind = lake_type.name
    if kind == "boolean":
        return murmur3.hash_long(1 if value else 0)
    if kind in ("int8", "int16", "int32", "int64"):
        return murmur3.hash_long(int(value))
    if kind in ("float32", "float64"):
        number = float(value)
        if kind == "float32":
            number = struct.unpack("<f", struct.pack("<f", number))[0]
        return murmur3.hash_long(murmur3.double_bits(number))
    if kind == "decimal" and (lake_type.precision or 18) <= 18:
        return murmur3.hash_long(int(Decimal(value).scaleb(lake_type.scale or 0)))
    if kind in ("varchar", "json"):
        return murmur3.murmur3_32(str(value).encode())
    if kind == "blob":
        return murmur3.murmur3_32(bytes(value))
    if kind == "date":
        if isinstance(value, dt.datetime):
            value = value.date()
        return murmur3.hash_long((value - dt.date(1970, 1, 1)).days)
    if kind in TIMESTAMP_TYPES:
        return murmur3.hash_long(_epoch_units(value, lake_type))
    # HUGEINT, unsigned integers, wide decimals and UUIDs hash their text (DuckDB's fallback)
    text = inlined_value_text(value, lake_type)
    if text is None:
        raise UnsupportedTypeError(f"cannot compute a bucket of {value!r} ({lake_type})")
    return murmur3.murmur3_32(text.encode())


def transform_value(key: PartitionKey, value: Any) -> int | Any:
    """The transform of one value (``None`` for NULL): an int, or the value for identity."""
    if value is None:
        return None
    lake_type = key.column.type
    if key.transform == "identity":
        return value
    if key.transform == "bucket":
        assert key.bucket_count is not None
        return murmur3.bucket(bucket_hash(value, lake_type), key.bucket_count)
    moment = _instant(value, lake_type)
    if key.transform == "year":
        return moment.year
    if key.transform == "month":
        return moment.month
    if key.transform == "day":
        return moment.day
    return moment.hour if isinstance(moment, dt.datetime) else 0


def partition_value(key: PartitionKey, value: Any) -> str | None:
    """The ``ducklake_file_partition_value`` text of one source value (``None`` for NULL):
    the transform result as DuckDB casts it to VARCHAR."""
    result = transform_value(key, value)
    if result is None:
        return None
    if key.transform != "identity":
        return str(int(result))
    text = inlined_value_text(result, key.column.type)
    if text is None:
        raise UnsupportedTypeError(
            f"cannot write the partition value {result!r} of column "
            f"{key.column.column_name!r} ({key.column.column_type})")
    return text


# ---------------------------------------------------------------------------------- catalog
def _same_spec(ctx: CommitContext, table_id: int, fields: Sequence[PartitionKey]) -> bool:
    current = ctx.lake.partition_spec(table_id, ctx.latest.snapshot_id, ctx.conn)
    wanted = [(k.column.column_id, k.transform_text) for k in fields]
    have = [(c.column_id, c.transform) for c in current.columns] if current else []
    return have == wanted


def _stage(tx: Transaction, ref: TableRef, fields: Sequence[PartitionField] | None) -> None:
    from .inlining.rows import on_schema_change
    from .tables import CREATES, altered

    def op(ctx: CommitContext) -> None:
        table = ctx.resolve_table(ref)
        columns = ctx.lake.columns(table.table_id, ctx.snapshot_id, ctx.conn)
        keys = resolve(fields, columns) if fields else ()
        created_here = ctx.table_ids.get(f"{table.schema_name}.{table.table_name}") \
            == table.table_id and ref.table_id is None
        if fields is not None and not created_here and _same_spec(ctx, table.table_id, keys):
            return  # setting the spec a table already has changes nothing (as DuckDB)
        live = ctx.lake.partition_spec(table.table_id, ctx.latest.snapshot_id, ctx.conn)
        if fields is None and live is None and not created_here:
            return  # RESET of an unpartitioned table
        ctx.exec(f"UPDATE {ctx.t('ducklake_partition_info')} SET end_snapshot = :s "
                 "WHERE table_id = :t AND end_snapshot IS NULL",
                 {"s": ctx.snapshot_id, "t": table.table_id})
        partition_id = ctx.catalog_id()
        ctx.exec(f"INSERT INTO {ctx.t('ducklake_partition_info')} VALUES (:p, :t, :s, NULL)",
                 {"p": partition_id, "t": table.table_id, "s": ctx.snapshot_id})
        for key in keys:
            ctx.exec(f"INSERT INTO {ctx.t('ducklake_partition_column')} VALUES "
                     "(:p, :t, :i, :c, :x)",
                     {"p": partition_id, "t": table.table_id, "i": key.index,
                      "c": key.column.column_id, "x": key.transform_text})
        if created_here:
            ctx.bump_schema()  # the table's creation already counts as its change
            return
        altered(ctx, table.table_id)
        on_schema_change(ctx, table.table_id)

    tokens = [f"altered_table:{ref.table_id}"] if ref.table_id is not None else []
    tx.add(CREATES, op, *tokens)


def set_partitioning(tx: Transaction, ref: TableRef,
                     spec: str | Sequence[str | PartitionField]) -> tuple[PartitionField, ...]:
    """Stage ``ALTER TABLE ... SET PARTITIONED BY``: end the live spec, write a new one.

    Only files written afterwards follow it. Setting the spec a table already has is a no-op.
    Returns the parsed fields (checked against the columns again at commit).
    """
    fields = parse_partition_by(spec)
    _stage(tx, ref, fields)
    return fields


def reset_partitioning(tx: Transaction, ref: TableRef) -> None:
    """Stage ``ALTER TABLE ... RESET PARTITIONED BY``: as DuckDB, end the live spec and write
    a new ``ducklake_partition_info`` row without columns (it takes a catalog id)."""
    _stage(tx, ref, None)


def describe(keys: Sequence[PartitionKey]) -> list[str]:
    """The spec as user-facing keys, e.g. ``['region', 'year(ts)', 'bucket(4, id)']``."""
    return [str(k.field) for k in keys]


__all__ = [
    "ACCEPTED",
    "NULL_DIRECTORY",
    "TRANSFORMS",
    "PartitionField",
    "PartitionKey",
    "bucket_hash",
    "describe",
    "hive_directory",
    "hive_escape",
    "key_names",
    "keys_of_spec",
    "parse_partition_by",
    "parse_transform",
    "partition_value",
    "reset_partitioning",
    "resolve",
    "set_partitioning",
    "transform_value",
]
