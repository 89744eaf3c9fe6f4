"""Give Spark-written Parquet files the field ids DuckDB's ``ducklake`` extension maps columns by.

DuckDB matches Parquet ``field_id`` s to DuckLake column ids. Spark 4.x writes ids on top-level
columns and struct children only, never on a list's ``element`` or a map's ``key``/``value``,
so DuckDB reads list elements as NULL and fails on maps. :func:`set_field_ids` repairs a
finished file by rewriting only the footer of
``PAR1 | pages, page indexes, bloom filters | FileMetaData | u32 LE length | PAR1``: every offset
in the footer is absolute and points before it, so a footer of another length can replace it.

The footer is Thrift compact protocol. Rather than a schema-bound binding (pyarrow ships none,
and a binding drops fields it does not know), the small codec below decodes any struct to a
generic tree of ``(field id, type, value)`` and re-encodes it canonically, as parquet-java and
parquet-cpp write it: an unchanged footer gives back the same bytes (checked on real footers in
``tests/unit/test_parquet_footer.py``), so statistics, ``key_value_metadata`` and fields newer
than this code survive untouched.

:func:`retype_file` / :func:`retype_bytes` use the same codec for the types Spark cannot
write (uuid, time, timetz, timestamp_ns, unsigned integers, int128): compaction writes their
*physical* values (INT32, INT64, DOUBLE, FIXED_LEN_BYTE_ARRAY(16)), whose data pages are the
bytes DuckDB writes, and the footer then gets DuckDB's ``converted_type``/``logicalType`` and
statistics in DuckDB's order.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

MAGIC = b"PAR1"

# Thrift compact protocol type ids (inside a struct field header, 1/2 also carry a bool value).
T_TRUE, T_FALSE, T_BYTE, T_I16, T_I32, T_I64, T_DOUBLE, T_BINARY = 1, 2, 3, 4, 5, 6, 7, 8
T_LIST, T_SET, T_MAP, T_STRUCT = 9, 10, 11, 12
_BOOLS = (T_TRUE, T_FALSE)
_INTEGERS = (T_I16, T_I32, T_I64)

# parquet.thrift field ids used here.
FILE_META_SCHEMA = 2  # FileMetaData.schema: list<SchemaElement>, depth-first pre-order
FILE_META_ENCRYPTION = 8  # FileMetaData.encryption_algorithm (signed plaintext footer)
SCHEMA_NAME = 4  # SchemaElement.name: string
SCHEMA_NUM_CHILDREN = 5  # SchemaElement.num_children: i32, absent on leaves
SCHEMA_FIELD_ID = 9  # SchemaElement.field_id: i32


@dataclass(slots=True)
class TList:
    """A Thrift list or set; the element type is kept so that empty lists round-trip too."""

    etype: int
    items: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class TMap:
    """A Thrift map; key/value types are 0 for an empty map (its encoding carries none)."""

    ktype: int
    vtype: int
    items: list[tuple[Any, Any]] = field(default_factory=list)


@dataclass(slots=True)
class TField:
    """``value``: bool, int, bytes (raw 8 bytes for a double), TList, TMap or TStruct."""

    fid: int
    ttype: int
    value: Any


@dataclass(slots=True)
class TStruct:
    """A decoded Thrift struct in wire order, so that re-encoding reproduces the input."""

    fields: list[TField] = field(default_factory=list)

    def get(self, fid: int) -> TField | None:
        return next((f for f in self.fields if f.fid == fid), None)

    def set(self, fid: int, ttype: int, value: Any) -> None:
        """Replace field ``fid`` or insert it before the first higher id (Thrift's order)."""
        for i, f in enumerate(self.fields):
            if f.fid == fid:
                self.fields[i] = TField(fid, ttype, value)
                return
            if f.fid > fid:
                self.fields.insert(i, TField(fid, ttype, value))
                return
        self.fields.append(TField(fid, ttype, value))


def _unzigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _zigzag(n: int) -> int:
    return n << 1 if n >= 0 else ((-n) << 1) - 1


class _Reader:
    """Compact-protocol decoding. Footers are decoded on every write (file statistics), so the
    common cases (struct fields, integers, varints) are spelled out rather than delegated."""

    def __init__(self, data: bytes) -> None:
        self.buf = bytes(data)
        self.pos = 0

    def byte(self) -> int:
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        pos = self.pos
        if n < 0 or pos + n > len(self.buf):
            raise ValueError("truncated Thrift data")
        self.pos = pos + n
        return self.buf[pos:pos + n]

    def varint(self) -> int:
        buf, pos = self.buf, self.pos
        result = shift = 0
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return result
            shift += 7

    def struct(self) -> TStruct:
        buf = self.buf
        fields: list[TField] = []
        last = 0
        while True:
            head = buf[self.pos]
            self.pos += 1
            if head == 0:
                return TStruct(fields)
            ttype, delta = head & 0x0F, head >> 4
            fid = last + delta if delta else _unzigzag(self.varint())
            if ttype in _BOOLS:
                value: Any = ttype == T_TRUE
            elif ttype in _INTEGERS:
                value = _unzigzag(self.varint())
            else:
                value = self.value(ttype)
            fields.append(TField(fid, ttype, value))
            last = fid

    def value(self, ttype: int) -> Any:
        if ttype in _BOOLS:  # only inside a list/set/map: one byte, 1 = true
            return self.byte() == T_TRUE
        if ttype == T_BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype in _INTEGERS:
            return _unzigzag(self.varint())
        if ttype == T_DOUBLE:
            return self.take(8)
        if ttype == T_BINARY:
            return self.take(self.varint())
        if ttype in (T_LIST, T_SET):
            head = self.byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if etype == T_STRUCT:
                return TList(etype, [self.struct() for _ in range(size)])
            return TList(etype, [self.value(etype) for _ in range(size)])
        if ttype == T_MAP:
            size = self.varint()
            if size == 0:
                return TMap(0, 0, [])
            kv = self.byte()
            ktype, vtype = kv >> 4, kv & 0x0F
            return TMap(ktype, vtype, [(self.value(ktype), self.value(vtype))
                                       for _ in range(size)])
        if ttype == T_STRUCT:
            return self.struct()
        raise ValueError(f"unknown Thrift compact type {ttype}")


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while n >= 0x80:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def struct(self, s: TStruct) -> None:
        last = 0
        for f in s.fields:
            ttype = (T_TRUE if f.value else T_FALSE) if f.ttype in _BOOLS else f.ttype
            delta = f.fid - last
            if 0 < delta <= 15:
                self.out.append(delta << 4 | ttype)
            else:
                self.out.append(ttype)
                self.varint(_zigzag(f.fid))
            if ttype not in _BOOLS:
                self.value(ttype, f.value)
            last = f.fid
        self.out.append(0)

    def value(self, ttype: int, v: Any) -> None:
        if ttype in _BOOLS:
            self.out.append(T_TRUE if v else T_FALSE)
        elif ttype == T_BYTE:
            self.out.append(v & 0xFF)
        elif ttype in (T_I16, T_I32, T_I64):
            self.varint(_zigzag(v))
        elif ttype == T_DOUBLE:
            self.out += v
        elif ttype == T_BINARY:
            self.varint(len(v))
            self.out += v
        elif ttype in (T_LIST, T_SET):
            n = len(v.items)
            if n < 15:
                self.out.append(n << 4 | v.etype)
            else:
                self.out.append(0xF0 | v.etype)
                self.varint(n)
            for item in v.items:
                self.value(v.etype, item)
        elif ttype == T_MAP:
            self.varint(len(v.items))
            if v.items:
                self.out.append(v.ktype << 4 | v.vtype)
            for k, item in v.items:
                self.value(v.ktype, k)
                self.value(v.vtype, item)
        elif ttype == T_STRUCT:
            self.struct(v)
        else:
            raise ValueError(f"unknown Thrift compact type {ttype}")


def decode_struct(data: bytes) -> TStruct:
    """Decode one Thrift compact struct that must span all of ``data`` (no trailing bytes:
    those would be lost on re-encoding, e.g. the signature of an encrypted plaintext footer)."""
    reader = _Reader(data)
    try:
        with _cycle_collection_paused():
            result = reader.struct()
    except IndexError as exc:
        raise ValueError("truncated Thrift data") from exc
    if reader.pos != len(data):
        raise ValueError(f"{len(data) - reader.pos} bytes after the Thrift struct")
    return result


@contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a footer is decoded: the result is a tree of many
    small objects and holds no cycle, yet allocating them triggers collections that traverse
    the whole heap, which tripled the time to decode a footer of a few hundred column chunks
    (every write decodes its footers for statistics)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def encode_struct(s: TStruct) -> bytes:
    """Canonical compact-protocol encoding of ``s`` (what parquet-java/parquet-cpp write)."""
    writer = _Writer()
    writer.struct(s)
    return bytes(writer.out)


def read_footer(path: str) -> tuple[int, bytes]:
    """``(offset where FileMetaData starts, FileMetaData bytes)`` of a local Parquet file."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size < 12:
            raise ValueError(f"{path}: too small to be a Parquet file")
        f.seek(0)
        head = f.read(4)
        f.seek(size - 8)
        tail = f.read(8)
        if head != MAGIC or tail[4:] != MAGIC:
            raise ValueError(f"{path}: not a plain Parquet file (encrypted footers unsupported)")
        length = int.from_bytes(tail[:4], "little")
        start = size - 8 - length
        if start < 4:
            raise ValueError(f"{path}: footer length {length} exceeds the file")
        f.seek(start)
        return start, f.read(length)


def _schema_nodes(schema: list[TStruct]) -> dict[tuple[str, ...], TStruct]:
    """Schema elements by path of names from the root (root excluded), from the flattened
    depth-first list where each group is followed by its ``num_children`` subtrees."""
    nodes: dict[tuple[str, ...], TStruct] = {}

    def walk(i: int, prefix: tuple[str, ...]) -> int:
        children = schema[i].get(SCHEMA_NUM_CHILDREN)
        nxt = i + 1
        for _ in range(children.value if children else 0):
            if nxt >= len(schema):
                raise ValueError("Parquet schema ends inside a group")
            name = schema[nxt].get(SCHEMA_NAME)
            path = (*prefix, name.value.decode("utf-8") if name else "")
            if path in nodes:
                raise ValueError(f"duplicate Parquet schema path {path}")
            nodes[path] = schema[nxt]
            nxt = walk(nxt, path)
        return nxt

    if not schema or walk(0, ()) != len(schema):
        raise ValueError("Parquet schema is not a single tree")
    return nodes


def _file_metadata(path: str) -> tuple[int, bytes, TStruct, dict[tuple[str, ...], TStruct]]:
    start, footer = read_footer(path)
    meta = decode_struct(footer)
    if meta.get(FILE_META_ENCRYPTION) is not None:
        raise ValueError(f"{path}: encrypted Parquet files are not supported")
    schema = meta.get(FILE_META_SCHEMA)
    if schema is None or schema.ttype != T_LIST:
        raise ValueError(f"{path}: footer has no schema")
    return start, footer, meta, _schema_nodes(schema.value.items)


def schema_field_ids(path: str) -> dict[tuple[str, ...], int | None]:
    """Field id of every schema node (``None`` when unset), by path; for checks and debugging."""
    nodes = _file_metadata(path)[3]
    return {p: (f.value if (f := n.get(SCHEMA_FIELD_ID)) else None) for p, n in nodes.items()}


def set_field_ids(path: str, field_ids: Mapping[tuple[str, ...], int]) -> tuple[int, int]:
    """Set ``SchemaElement.field_id`` on the nodes at the given paths of the local Parquet file
    ``path`` by rewriting its footer in place; returns ``(file size, FileMetaData length)``.

    Paths are tuples of schema names below the root, e.g. ``("tags", "list", "element")`` or
    ``("attrs", "key_value", "value")``. Every path must exist: a silently skipped id would
    give a column DuckDB reads as NULL. Nodes not named keep whatever id they have.

    Crash safety: the file is patched in place (new footer written over the old one, then
    truncated and fsynced) rather than copied, since a copy doubles the I/O of every write.
    This is safe because the caller patches a freshly written file *before* it is registered
    in the catalog: a crash mid-patch leaves an unreferenced (orphan) file, never a
    committed one. The new footer is decoded again before it is written, and the data
    section is never touched. A footer that would not change is not rewritten at all.
    """
    start, footer, meta, nodes = _file_metadata(path)
    missing = [p for p in field_ids if tuple(p) not in nodes]
    if missing:
        raise KeyError(f"{path}: no Parquet schema node at {missing}")
    for p, fid in field_ids.items():
        if not 0 <= int(fid) < 2**31:
            raise ValueError(f"field id {fid} of {p} is not a non-negative i32")
        nodes[tuple(p)].set(SCHEMA_FIELD_ID, T_I32, int(fid))
    new = encode_struct(meta)
    if new == footer:
        return start + len(footer) + 8, len(footer)
    if encode_struct(decode_struct(new)) != new:  # cheap self-check before touching the file
        raise AssertionError("re-encoded Parquet footer does not round-trip")
    return _write_footer(path, start, new)


def _write_footer(path: str, start: int, footer: bytes) -> tuple[int, int]:
    """Write ``footer`` over the one that begins at ``start``, then truncate and fsync;
    returns (file size, footer length)."""
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(footer + len(footer).to_bytes(4, "little") + MAGIC)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())
    return start + len(footer) + 8, len(footer)


# ---------------------------------------------------------------------------------- logical types
# parquet.thrift field ids used to give a leaf DuckDB's annotation.
FILE_META_ROW_GROUPS = 4  # FileMetaData.row_groups: list<RowGroup>
ROW_GROUP_COLUMNS = 1  # RowGroup.columns: list<ColumnChunk>
CHUNK_META = 3  # ColumnChunk.meta_data: ColumnMetaData
CHUNK_COLUMN_INDEX = (6, 7)  # ColumnChunk.column_index_offset / column_index_length
META_PATH = 3  # ColumnMetaData.path_in_schema: list<string>
META_STATISTICS = 12  # ColumnMetaData.statistics: Statistics
SCHEMA_TYPE = 1  # SchemaElement.type: Type (INT32 = 1, INT64 = 2, FIXED_LEN_BYTE_ARRAY = 7)
SCHEMA_TYPE_LENGTH = 2  # SchemaElement.type_length: i32
SCHEMA_CONVERTED_TYPE = 6  # SchemaElement.converted_type: ConvertedType
SCHEMA_LOGICAL_TYPE = 10  # SchemaElement.logicalType: LogicalType union
# Statistics: deprecated signed-order max/min, then max_value/min_value and their exactness.
STATS_MAX, STATS_MIN, STATS_MAX_VALUE, STATS_MIN_VALUE = 1, 2, 5, 6
STATS_MAX_EXACT, STATS_MIN_EXACT = 7, 8
_BOUND_FIELDS = (STATS_MAX, STATS_MIN, STATS_MAX_VALUE, STATS_MIN_VALUE, STATS_MAX_EXACT,
                 STATS_MIN_EXACT)

_INT32, _INT64, _DOUBLE, _FLBA = 1, 2, 5, 7


def _unit(which: int) -> TStruct:
    """A ``TimeUnit`` union: 1 = MILLIS, 2 = MICROS, 3 = NANOS (each an empty struct)."""
    return TStruct([TField(which, T_STRUCT, TStruct())])


def _time_type(kind: int, utc: bool, unit: int) -> TStruct:
    """A ``LogicalType`` union holding TIME (7) or TIMESTAMP (8) with its UTC flag and unit."""
    inner = TStruct([TField(1, T_TRUE if utc else T_FALSE, utc), TField(2, T_STRUCT, _unit(unit))])
    return TStruct([TField(kind, T_STRUCT, inner)])


@dataclass(frozen=True)
class LeafType:
    """How DuckDB 1.5.5's Parquet writer annotates a leaf of one DuckLake type: the physical
    type the data pages already have, the ``converted_type`` and ``logicalType`` it sets (None:
    absent), and what becomes of the chunk statistics the writer (Spark, parquet-cpp) computed
    on the bare physical type: ``keep``, ``drop`` the bounds as DuckDB writes none, or
    ``unsigned`` (bounds re-ordered as unsigned integers)."""

    physical: int
    converted: int | None
    logical: TStruct | None
    bounds: str = "keep"
    length: int | None = None


# Checked field by field against the footers DuckDB 1.5.5 writes for these types.
DUCKDB_LEAF_TYPES: dict[str, LeafType] = {
    "uuid": LeafType(_FLBA, None, TStruct([TField(14, T_STRUCT, TStruct())]), length=16),
    "time": LeafType(_INT64, 8, _time_type(7, False, 2)),  # TIME_MICROS
    "timetz": LeafType(_INT64, 8, _time_type(7, True, 2), bounds="drop"),
    "timestamp_ns": LeafType(_INT64, None, _time_type(8, False, 3)),
    "int128": LeafType(_DOUBLE, None, None, bounds="drop"),
    "uint128": LeafType(_DOUBLE, None, None, bounds="drop"),
    "uint8": LeafType(_INT32, 11, None, bounds="unsigned"),  # UINT_8
    "uint16": LeafType(_INT32, 12, None, bounds="unsigned"),
    "uint32": LeafType(_INT32, 13, None, bounds="unsigned"),
    "uint64": LeafType(_INT64, 14, None, bounds="unsigned"),
}

BoundsOf = Callable[[int, tuple[str, ...]], "tuple[int, int] | None"]
"""``(row group, leaf path) -> (min, max)`` as unsigned integers, None if the chunk has no
value: asked only for chunks whose signed bounds cannot be re-ordered."""


def _chunks(meta: TStruct) -> list[tuple[int, tuple[str, ...], TStruct, TStruct]]:
    """``(row group, leaf path, ColumnChunk, ColumnMetaData)`` of every column chunk."""
    out = []
    groups = meta.get(FILE_META_ROW_GROUPS)
    for index, group in enumerate(groups.value.items if groups else []):
        columns = group.get(ROW_GROUP_COLUMNS)
        for chunk in columns.value.items if columns else []:
            info = chunk.get(CHUNK_META)
            if info is None:
                raise ValueError("column chunk without metadata (encrypted column?)")
            path = info.value.get(META_PATH)
            names = tuple(p.decode("utf-8") for p in path.value.items) if path else ()
            out.append((index, names, chunk, info.value))
    return out


def _unsigned_bounds(stats: TStruct, width: int, row_group: int, path: tuple[str, ...],
                     bounds_of: BoundsOf) -> tuple[bytes, bytes, bool] | None:
    """``(min_value, max_value, reordered)`` of an unsigned chunk whose writer ordered it as
    signed; None when not known.

    Signed bounds of values all below or all above 2**(bits-1) are the unsigned bounds too
    (both halves keep their order); only a chunk that holds both kinds needs its values, and
    then its bounds are ``reordered``.
    """
    lo, hi = stats.get(STATS_MIN_VALUE), stats.get(STATS_MAX_VALUE)
    if lo is not None and hi is not None and len(lo.value) == len(hi.value) == width:
        signed_lo = int.from_bytes(lo.value, "little", signed=True)
        signed_hi = int.from_bytes(hi.value, "little", signed=True)
        if signed_lo >= 0 or signed_hi < 0:
            return lo.value, hi.value, False
    exact = bounds_of(row_group, path)
    if exact is None:
        return None
    return exact[0].to_bytes(width, "little"), exact[1].to_bytes(width, "little"), True


def _retype(meta: TStruct, nodes: dict[tuple[str, ...], TStruct],
            leaves: Mapping[tuple[str, ...], str], bounds_of: BoundsOf) -> None:
    """Give each leaf DuckDB's annotation of its DuckLake type (see :data:`DUCKDB_LEAF_TYPES`)."""
    for path, type_name in leaves.items():
        spec = DUCKDB_LEAF_TYPES[type_name]
        node = nodes.get(tuple(path))
        if node is None:
            raise KeyError(f"no Parquet schema node at {path}")
        physical = node.get(SCHEMA_TYPE)
        length = node.get(SCHEMA_TYPE_LENGTH)
        if physical is None or physical.value != spec.physical or (
                spec.length is not None and (length is None or length.value != spec.length)):
            raise ValueError(f"Parquet leaf {path} is not stored as DuckDB stores {type_name}")
        node.fields = [f for f in node.fields
                       if f.fid not in (SCHEMA_CONVERTED_TYPE, SCHEMA_LOGICAL_TYPE)]
        if spec.converted is not None:
            node.set(SCHEMA_CONVERTED_TYPE, T_I32, spec.converted)
        if spec.logical is not None:
            node.set(SCHEMA_LOGICAL_TYPE, T_STRUCT, spec.logical)
    width = {_INT32: 4, _INT64: 8}
    for row_group, path, chunk, info in _chunks(meta):
        leaf_type = leaves.get(path)
        if leaf_type is None:
            continue
        spec = DUCKDB_LEAF_TYPES[leaf_type]
        stats_field = info.get(META_STATISTICS)
        if spec.bounds == "keep" or stats_field is None:
            continue
        stats: TStruct = stats_field.value
        exact = None
        if spec.bounds == "unsigned":
            exact = _unsigned_bounds(stats, width[spec.physical], row_group, path, bounds_of)
            if exact is None or exact[2]:
                # the page index was ordered as signed too: drop it rather than mislead
                chunk.fields = [f for f in chunk.fields if f.fid not in CHUNK_COLUMN_INDEX]
        stats.fields = [f for f in stats.fields if f.fid not in _BOUND_FIELDS]
        if exact is not None:
            stats.set(STATS_MAX_VALUE, T_BINARY, exact[1])
            stats.set(STATS_MIN_VALUE, T_BINARY, exact[0])
            stats.set(STATS_MAX_EXACT, T_TRUE, True)
            stats.set(STATS_MIN_EXACT, T_TRUE, True)


def _no_bounds(row_group: int, path: tuple[str, ...]) -> tuple[int, int] | None:
    return None


def retype_footer(footer: bytes, leaves: Mapping[tuple[str, ...], str],
                  bounds_of: BoundsOf = _no_bounds) -> bytes:
    """A ``FileMetaData`` (Thrift bytes) whose leaves at ``leaves`` (path -> DuckLake type name)
    carry DuckDB's annotation of that type instead of the bare physical type they were written
    as. Data pages are untouched: they hold the same bytes either way."""
    meta = decode_struct(footer)
    if meta.get(FILE_META_ENCRYPTION) is not None:
        raise ValueError("encrypted Parquet files are not supported")
    schema = meta.get(FILE_META_SCHEMA)
    if schema is None or schema.ttype != T_LIST:
        raise ValueError("footer has no schema")
    _retype(meta, _schema_nodes(schema.value.items), leaves, bounds_of)
    new = encode_struct(meta)
    if encode_struct(decode_struct(new)) != new:
        raise AssertionError("re-encoded Parquet footer does not round-trip")
    return new


def retype_bytes(data: bytes, leaves: Mapping[tuple[str, ...], str],
                 bounds_of: BoundsOf = _no_bounds) -> bytes:
    """:func:`retype_footer` applied to a whole Parquet file held in memory."""
    if len(data) < 12 or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise ValueError("not a plain Parquet file")
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    if start < 4:
        raise ValueError(f"footer length {length} exceeds the file")
    new = retype_footer(data[start:-8], leaves, bounds_of)
    return data[:start] + new + len(new).to_bytes(4, "little") + MAGIC


def retype_file(path: str, leaves: Mapping[tuple[str, ...], str],
                bounds_of: BoundsOf = _no_bounds) -> tuple[int, int]:
    """:func:`retype_footer` on a local file, in place (as :func:`set_field_ids`, and safe for
    the same reason: the file is not in the catalog yet); returns (file size, footer length)."""
    start, footer = read_footer(path)
    new = retype_footer(footer, leaves, bounds_of)
    if new == footer:
        return start + len(footer) + 8, len(footer)
    return _write_footer(path, start, new)


# ---------------------------------------------------------------------------------- dropping
FILE_META_KEY_VALUE = 5  # FileMetaData.key_value_metadata: list<KeyValue(key 1, value 2)>
FILE_META_COLUMN_ORDERS = 7  # FileMetaData.column_orders: list<ColumnOrder>, one per leaf
ROW_GROUP_TOTAL_BYTE_SIZE = 2  # RowGroup.total_byte_size: i64 (uncompressed)
ROW_GROUP_TOTAL_COMPRESSED_SIZE = 6  # RowGroup.total_compressed_size: i64
META_TOTAL_UNCOMPRESSED, META_TOTAL_COMPRESSED = 6, 7  # ColumnMetaData sizes: i64
SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"


def drop_last_column(path: str, name: str) -> tuple[int, int]:
    """Remove the top-level leaf column ``name``, which must be the file's last column, from
    the footer of the local Parquet file ``path`` (in place, and safe for the same reason as
    :func:`set_field_ids`); returns (file size, footer length).

    Its data pages stay in the file, unreferenced, as bytes no reader looks at: the footer
    alone says which columns a file has. Readers then see the file as if written without the
    column. A write of new rows and of updated rows together (MERGE) gives the new rows'
    files no ``_ducklake_internal_row_id`` this way: DuckDB takes a NULL in that column for
    the row id itself, not as "use ``row_id_start``".
    """
    start, _footer, meta, nodes = _file_metadata(path)
    schema = meta.get(FILE_META_SCHEMA).value.items  # type: ignore[union-attr]
    last = schema[-1]
    label = last.get(SCHEMA_NAME)
    if (name,) not in nodes or nodes[(name,)] is not last or label is None \
            or last.get(SCHEMA_NUM_CHILDREN) is not None:
        raise ValueError(f"{path}: {name!r} is not the last top-level leaf column")
    leaves = sum(1 for node in schema[1:] if node.get(SCHEMA_NUM_CHILDREN) is None)
    if leaves < 2:
        raise ValueError(f"{path}: {name!r} is the file's only column")
    del schema[-1]
    root_children = schema[0].get(SCHEMA_NUM_CHILDREN)
    assert root_children is not None  # the file has other columns (checked above)
    root_children.value -= 1
    groups = meta.get(FILE_META_ROW_GROUPS)
    for group in groups.value.items if groups is not None else []:
        chunks = group.get(ROW_GROUP_COLUMNS).value.items
        chunk = chunks.pop()
        info = chunk.get(CHUNK_META)
        column_path = info.value.get(META_PATH) if info is not None else None
        if column_path is None or list(column_path.value.items) != [name.encode()]:
            raise ValueError(f"{path}: the last column chunk is not {name!r}")
        for total, size in ((ROW_GROUP_TOTAL_BYTE_SIZE, META_TOTAL_UNCOMPRESSED),
                            (ROW_GROUP_TOTAL_COMPRESSED_SIZE, META_TOTAL_COMPRESSED)):
            have, minus = group.get(total), info.value.get(size)
            if have is not None and minus is not None:
                have.value -= minus.value
    orders = meta.get(FILE_META_COLUMN_ORDERS)
    if orders is not None and len(orders.value.items) == leaves:
        orders.value.items.pop()
    _drop_from_spark_schema(meta, name)
    new = encode_struct(meta)
    if encode_struct(decode_struct(new)) != new:
        raise AssertionError("re-encoded Parquet footer does not round-trip")
    return _write_footer(path, start, new)


def _drop_from_spark_schema(meta: TStruct, name: str) -> None:
    """Remove field ``name`` from the Spark schema Spark keeps in the footer's key-value
    metadata (what Spark infers a file's schema from), when there is one."""
    import json

    pairs = meta.get(FILE_META_KEY_VALUE)
    for pair in pairs.value.items if pairs is not None else []:
        key, value = pair.get(1), pair.get(2)
        if key is None or key.value != SPARK_SCHEMA_KEY or value is None:
            continue
        spark_schema = json.loads(value.value)
        spark_schema["fields"] = [f for f in spark_schema.get("fields", [])
                                  if f.get("name") != name]
        value.value = json.dumps(spark_schema, separators=(",", ":")).encode()
