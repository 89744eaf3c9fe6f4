"""Per-file column statistics, read from a Parquet footer as DuckDB 1.5.5 writes them.

One ``ducklake_file_column_stats`` row per column of a new data file (:func:`file_column_stats`),
taken from the footer alone: every write commits one, so no data page is read. Each bound must
be exact (see :mod:`.stats`), so whenever a footer cannot prove one (missing, deprecated or
truncated statistics, an unknown column order, a float column whose NaN content is unknown, a
type conversion DuckDB would not do exactly) the bound is NULL; bounds are spelled by
:mod:`.value_text`.

The footer is read twice: through pyarrow for the schema and counts, and as raw Thrift
(pyarrow's own serialization of the ``FileMetaData``, decoded by :mod:`.parquet_footer`) for
what pyarrow hides -- whether ``min_value``/``max_value`` (not the deprecated ``min``/``max``)
are set, ``is_min/max_value_exact``, the column orders, ``nan_count`` and the definition-level
histogram.
"""

from __future__ import annotations

import io
import json
import math
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq

from .models import FileColumnStats
from .parquet_footer import (
    CHUNK_META,
    FILE_META_ROW_GROUPS,
    META_STATISTICS,
    ROW_GROUP_COLUMNS,
    STATS_MAX_EXACT,
    STATS_MAX_VALUE,
    STATS_MIN_EXACT,
    STATS_MIN_VALUE,
    TList,
    TStruct,
    decode_struct,
)
from .stats import compare_encoded
from .types import FLOAT_TYPES, LakeType
from .value_text import (
    INT_RANGES,
    NO_FILE_BOUNDS,
    NS_PER_DAY,
    TIMESTAMP_INFINITY,
    TIMESTAMP_UNIT_NS,
    blob_hex,
    date_text,
    decimal_text,
    float32_text,
    float64_text,
    time_text,
    timestamp_text,
)

__all__ = ["file_column_stats"]

# parquet.thrift field ids read here, beyond those :mod:`.parquet_footer` names.
FILE_META_COLUMN_ORDERS = 7  # FileMetaData.column_orders: list<ColumnOrder>, one per leaf
COLUMN_ORDER_TYPE_DEFINED = 1  # ColumnOrder.TYPE_ORDER: min/max follow the logical type
META_SIZE_STATISTICS = 16  # ColumnMetaData.size_statistics: SizeStatistics
SIZE_DEFINITION_HISTOGRAM = 3  # SizeStatistics.definition_level_histogram: list<i64>
STATS_NULL_COUNT = 3  # Statistics.null_count: i64
STATS_NAN_COUNT = 9  # Statistics.nan_count: i64

_UNIT_NS = {"milliseconds": 10**6, "microseconds": 10**3, "nanoseconds": 1}


def _footer_thrift(metadata: pq.FileMetaData) -> TStruct | None:
    """The raw Thrift ``FileMetaData``, as pyarrow serializes it, or None if it cannot be had.

    pyarrow's ``FileMetaData`` is what every caller holds already (no file is read again).
    """
    try:
        sink = io.BytesIO()
        metadata.write_metadata_file(sink)
        data = sink.getvalue()
        if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
            return None
        size = int.from_bytes(data[-8:-4], "little")
        return decode_struct(data[-8 - size : -8])
    except Exception:  # noqa: BLE001 - any failure just means "no raw statistics"
        return None


def _fields(value: Any) -> dict[int, Any] | None:
    """A decoded struct as ``{field id: value}``; None if ``value`` is no struct."""
    return {f.fid: f.value for f in value.fields} if isinstance(value, TStruct) else None


def _items(value: Any) -> list[Any] | None:
    """The items of a decoded list or set; None if ``value`` is none."""
    return value.items if isinstance(value, TList) else None


@dataclass(frozen=True)
class _Kind:
    """What a Parquet leaf physically holds, as far as statistics are concerned."""

    kind: str
    signed: bool = True
    scale: int = 0
    unit_ns: int = 1
    utc: bool = False


_PHYS_WIDTH = {"INT32": 4, "INT64": 8, "FLOAT": 4, "DOUBLE": 8, "BOOLEAN": 1}


def _parquet_kind(column: pq.ColumnSchema) -> _Kind | None:
    phys = column.physical_type
    logical = json.loads(column.logical_type.to_json())
    ltype = logical.get("Type")
    converted = column.converted_type
    if ltype == "Decimal" or converted == "DECIMAL":
        if phys in ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY") and column.scale >= 0:
            return _Kind("decimal", scale=column.scale)
        return None
    if phys == "BOOLEAN":
        return _Kind("bool") if ltype == "None" else None
    if phys in ("INT32", "INT64"):
        if ltype == "Int":
            return _Kind("int", signed=bool(logical.get("isSigned", True)))
        if ltype == "None" and converted in (None, "NONE"):
            return _Kind("int")
        if ltype == "Date" and phys == "INT32":
            return _Kind("date")
        if ltype == "Time" and logical.get("timeUnit") in _UNIT_NS:
            return _Kind(
                "time",
                unit_ns=_UNIT_NS[logical["timeUnit"]],
                utc=bool(logical.get("isAdjustedToUTC")),
            )
        if (
            ltype == "Timestamp"
            and phys == "INT64"
            and logical.get("timeUnit") in _UNIT_NS
            and not logical.get("is_from_converted_type")
        ):
            # Legacy converted-type-only timestamps are skipped: their UTC flag is ambiguous.
            return _Kind(
                "timestamp",
                unit_ns=_UNIT_NS[logical["timeUnit"]],
                utc=bool(logical.get("isAdjustedToUTC")),
            )
        return None
    if phys in ("FLOAT", "DOUBLE"):
        return _Kind("float32" if phys == "FLOAT" else "float64") if ltype == "None" else None
    if phys == "BYTE_ARRAY":
        if ltype in ("String", "Enum", "JSON"):
            return _Kind("string")
        return _Kind("binary") if ltype == "None" and converted in (None, "NONE") else None
    if phys == "FIXED_LEN_BYTE_ARRAY":
        if ltype == "UUID":
            return _Kind("uuid") if column.length == 16 else None
        return _Kind("binary") if ltype == "None" and converted in (None, "NONE") else None
    return None  # INT96 and anything unknown: no defined order


def _decode_raw(raw: bytes, kind: _Kind, phys: str) -> Any:
    """The exact value of a plain-encoded statistics bound (None if malformed)."""
    width = _PHYS_WIDTH.get(phys)
    if width is not None and len(raw) != width:
        return None
    k = kind.kind
    if k == "bool":
        return raw[0] != 0
    if k == "float32":
        return struct.unpack("<f", raw)[0]
    if k == "float64":
        return struct.unpack("<d", raw)[0]
    if k == "decimal":
        if phys in ("INT32", "INT64"):
            return int.from_bytes(raw, "little", signed=True)
        return int.from_bytes(raw, "big", signed=True) if raw else None
    if k in ("int", "date", "time", "timestamp"):
        return int.from_bytes(raw, "little", signed=kind.signed or k != "int")
    if k == "string":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if k in ("binary", "uuid"):
        return raw
    return None


def _encode_parquet(value: Any, kind: _Kind, lake_type: LakeType) -> str | None:
    """Text of a decoded footer bound as the lake column reads it, or None if not exact."""
    name, k = lake_type.name, kind.kind
    if value is None or name in NO_FILE_BOUNDS:
        return None
    if name in INT_RANGES:
        if k != "int":
            return None
        lo, hi = INT_RANGES[name]
        return str(value) if lo <= value <= hi else None
    if name == "boolean":
        return ("1" if value else "0") if k == "bool" else None
    if name == "float32":
        return None if k != "float32" or math.isnan(value) else float32_text(value)
    if name == "float64":
        return None if k not in FLOAT_TYPES or math.isnan(value) else float64_text(value)
    if name == "decimal":
        if k != "decimal":
            return None
        shift = (lake_type.scale or 0) - kind.scale
        if shift >= 0:
            unscaled = value * 10**shift
        elif value % 10**-shift:
            return None
        else:
            unscaled = value // 10**-shift
        if abs(unscaled) >= 10 ** (lake_type.precision or 38):
            return None
        return decimal_text(unscaled, lake_type)
    if name == "date":
        return date_text(value) if k == "date" else None
    if name in ("time", "time_ns"):
        if k != "time":
            return None
        ns = value * kind.unit_ns
        if not 0 <= ns <= NS_PER_DAY or (name == "time" and ns % 1000):
            return None
        return time_text(ns)
    if name in TIMESTAMP_UNIT_NS:
        # A zone mismatch makes DuckDB cast through the session TimeZone: not exact.
        if k != "timestamp" or kind.utc != (name == "timestamptz"):
            return None
        if value == TIMESTAMP_INFINITY:
            return "infinity"
        if value == -TIMESTAMP_INFINITY:
            return "-infinity"
        ns = value * kind.unit_ns
        if ns % TIMESTAMP_UNIT_NS[name]:
            return None
        return timestamp_text(ns, name == "timestamptz")
    if name in ("varchar", "json"):
        return value if k == "string" else None
    if name == "blob":
        return blob_hex(value) if k == "binary" else None
    if name == "uuid":
        return str(uuid.UUID(bytes=value)) if k == "uuid" else None
    return None


@dataclass
class _Bound:
    """Running min or max over row groups: ``text`` while known, ``known`` False once lost."""

    text: str | None = None
    known: bool = True

    def add(self, text: str | None, lake_type: LakeType, want: int) -> None:
        if not self.known:
            return
        if text is None:
            self.known = False
        elif self.text is None:
            self.text = text
        else:
            try:
                if compare_encoded(text, self.text, lake_type) == want:
                    self.text = text
            except ValueError:
                self.known = False

    @property
    def value(self) -> str | None:
        return self.text if self.known else None


def _chunk_bounds(
    stats: Mapping[int, Any] | None,
    ordered: bool,
    arrow_has_min_max: bool,
    kind: _Kind | None,
    phys: str,
    lake_type: LakeType,
) -> tuple[str | None, str | None]:
    """Exact encoded (min, max) of one column chunk from its raw Thrift statistics.

    Only ``min_value``/``max_value`` under a type-defined column order count; the deprecated
    ``min``/``max`` (signed order, wrong for strings and unsigned types in old writers) do not;
    a bound flagged ``is_*_value_exact = false`` (truncated) does not either.
    """
    if not stats or not ordered or not arrow_has_min_max or kind is None:
        return None, None
    out: list[str | None] = []
    for value_field, exact_field in ((STATS_MIN_VALUE, STATS_MIN_EXACT),
                                     (STATS_MAX_VALUE, STATS_MAX_EXACT)):
        raw = stats.get(value_field)
        if not isinstance(raw, bytes) or stats.get(exact_field) is False:
            out.append(None)
            continue
        out.append(_encode_parquet(_decode_raw(raw, kind, phys), kind, lake_type))
    lo, hi = out
    if lo is not None and hi is not None:
        try:
            if compare_encoded(lo, hi, lake_type) > 0:
                return None, None  # inconsistent footer: trust neither
        except ValueError:
            return None, None
    return lo, hi


def file_column_stats(
    metadata: pq.FileMetaData,
    leaves: Mapping[str, tuple[int, LakeType]],
    nan_columns: Mapping[int, bool] | None = None,
) -> list[FileColumnStats]:
    """One ``ducklake_file_column_stats`` row per mapped Parquet leaf, from the footer alone.

    ``leaves`` maps a leaf's ``path_in_schema`` (``'a'``, ``'s.x'``, ``'l.list.element'``,
    ``'m.key_value.key'``) to its DuckLake ``(column_id, LakeType)``; other leaves (e.g. the
    hidden ``_ducklake_internal_row_id``) are skipped. Rows come in file leaf order.

    Aggregated over all row groups: ``column_size_bytes`` = sum of ``total_compressed_size``,
    ``null_count``, ``value_count`` = non-NULL values (``num_values - null_count``; None when
    the null count is unknown, never 0 unless every slot is NULL), min/max in DuckDB's text
    encoding or NULL when the footer does not prove them exactly.

    Floats: Parquet bounds leave NaN out and footers rarely say whether NaN occurs (only the
    optional ``nan_count``), so ``contains_nan`` is taken from ``nan_columns[column_id]`` when
    given, else from ``nan_count`` or an all-NULL column, else None -- and while it is None the
    float bounds are NULL too (a reader would otherwise prune NaN rows away).
    """
    footer = _Footer.of(metadata)
    result: list[FileColumnStats] = []
    for index in range(metadata.num_columns):
        mapped = leaves.get(metadata.schema.column(index).path)
        if mapped is None:
            continue
        column_id, lake_type = mapped
        totals = _LeafTotals()
        for rg_index in range(metadata.num_row_groups):
            totals.add_chunk(footer, rg_index, index, lake_type)
        result.append(totals.stats(column_id, lake_type, (nan_columns or {}).get(column_id)))
    return result


@dataclass(frozen=True)
class _Footer:
    """A file's footer as pyarrow shows it, with the raw Thrift parts pyarrow hides (column
    orders, exact-bound flags, NaN counts, definition-level histograms)."""

    metadata: pq.FileMetaData
    orders: list[Any] | None
    raw_groups: list[Any] | None

    @classmethod
    def of(cls, metadata: pq.FileMetaData) -> _Footer:
        thrift = _fields(_footer_thrift(metadata))
        orders = _items(thrift.get(FILE_META_COLUMN_ORDERS)) if thrift else None
        raw_groups = _items(thrift.get(FILE_META_ROW_GROUPS)) if thrift else None
        if raw_groups is not None and len(raw_groups) != metadata.num_row_groups:
            raw_groups = None
        return cls(metadata, orders, raw_groups)

    def ordered(self, index: int) -> bool:
        """Whether the leaf's min/max follow its type's defined order (not the old signed one)."""
        orders = self.orders
        return bool(orders is not None and index < len(orders)
                    and isinstance(orders[index], TStruct)
                    and orders[index].get(COLUMN_ORDER_TYPE_DEFINED) is not None)


@dataclass
class _LeafTotals:
    """One leaf's statistics summed over row groups; ``None`` once a part is unknown."""

    size: int = 0
    nulls: int | None = 0
    values: int | None = 0
    nans: int | None = 0
    groups_with_values: int = 0
    lo: _Bound = field(default_factory=_Bound)
    hi: _Bound = field(default_factory=_Bound)

    def add_chunk(self, footer: _Footer, rg_index: int, index: int, lake_type: LakeType) -> None:
        column = footer.metadata.schema.column(index)
        chunk = footer.metadata.row_group(rg_index).column(index)
        self.size += chunk.total_compressed_size
        raw_meta = _chunk_meta(footer.raw_groups, rg_index, index)
        raw_stats = _fields(raw_meta.get(META_STATISTICS)) if raw_meta else None
        nulls = _chunk_nulls(chunk, raw_meta, raw_stats, column.max_definition_level)
        values = None if nulls is None else chunk.num_values - nulls
        if values is not None and values < 0:
            nulls = values = None
        self.nulls = None if nulls is None or self.nulls is None else self.nulls + nulls
        self.values = None if values is None or self.values is None else self.values + values
        if values == 0:
            return  # an all-NULL chunk adds nothing to the bounds or NaN count
        self.groups_with_values += 1
        nan_count = raw_stats.get(STATS_NAN_COUNT) if raw_stats is not None else None
        self.nans = self.nans + nan_count \
            if isinstance(nan_count, int) and self.nans is not None else None
        lo, hi = _chunk_bounds(raw_stats, footer.ordered(index), _arrow_trusts_min_max(chunk),
                               _parquet_kind(column), column.physical_type, lake_type)
        self.lo.add(lo, lake_type, -1)
        self.hi.add(hi, lake_type, 1)

    def stats(self, column_id: int, lake_type: LakeType,
              nan_known: bool | None) -> FileColumnStats:
        min_value, max_value = self.lo.value, self.hi.value
        if self.values == 0:
            min_value = max_value = None
        contains_nan: bool | None = None
        if lake_type.name in FLOAT_TYPES:
            if nan_known is not None:
                contains_nan = bool(nan_known)
            elif self.values == 0:
                contains_nan = False
            elif self.nans is not None and self.groups_with_values:
                contains_nan = self.nans > 0
            if contains_nan is None:
                min_value = max_value = None
        return FileColumnStats(
            column_id=column_id, column_size_bytes=self.size, value_count=self.values,
            null_count=self.nulls, min_value=min_value, max_value=max_value,
            contains_nan=contains_nan)


def _arrow_trusts_min_max(chunk: pq.ColumnChunkMetaData) -> bool:
    """pyarrow's own verdict (it distrusts min/max of writers with known statistics bugs)."""
    try:
        stats = chunk.statistics if chunk.is_stats_set else None
        return bool(stats is not None and stats.has_min_max)
    except Exception:  # noqa: BLE001 - statistics pyarrow cannot decode are not trusted
        return False


def _chunk_meta(
    raw_groups: list[Any] | None, rg_index: int, index: int
) -> dict[int, Any] | None:
    """The raw ``ColumnMetaData`` of one column chunk, if the footer has it."""
    group = _fields(raw_groups[rg_index]) if raw_groups is not None else None
    columns = _items(group.get(ROW_GROUP_COLUMNS)) if group else None
    if columns is None or index >= len(columns):
        return None
    chunk = _fields(columns[index])
    return _fields(chunk.get(CHUNK_META)) if chunk else None


def _chunk_nulls(
    chunk: pq.ColumnChunkMetaData,
    raw_meta: Mapping[int, Any] | None,
    raw_stats: Mapping[int, Any] | None,
    max_def: int,
) -> int | None:
    """NULL slots of a chunk: footer null_count, else the definition-level histogram."""
    if raw_stats is not None and isinstance(raw_stats.get(STATS_NULL_COUNT), int):
        return raw_stats[STATS_NULL_COUNT]
    if raw_meta is None and chunk.is_stats_set:
        arrow_stats = chunk.statistics
        if arrow_stats is not None and arrow_stats.has_null_count:
            return arrow_stats.null_count
    size_stats = _fields(raw_meta.get(META_SIZE_STATISTICS)) if raw_meta else None
    histogram = _items(size_stats.get(SIZE_DEFINITION_HISTOGRAM)) if size_stats else None
    if isinstance(histogram, list) and len(histogram) == max_def + 1 and max_def > 0:
        return sum(histogram) - histogram[max_def]
    if max_def == 0:
        return 0
    return None
