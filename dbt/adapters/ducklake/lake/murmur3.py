"""Murmur3 x86 32-bit (seed 0): the hash behind DuckLake's ``bucket(N)`` partition transform.

DuckDB's extension follows Iceberg's hashing rules (duckdb/ducklake@v1.5-variegata
src/functions/ducklake_murmur3.cpp, src/storage/ducklake_partition_data.cpp): integers and booleans
are hashed as 8-byte little-endian longs, floats via the bits of the value as a double (``-0.0``
normalised), strings and blobs as their bytes. What is hashed is decided by DuckDB's physical type,
so dates hash their day number, timestamps their count of units since the epoch and decimals up to
18 digits their unscaled integer; everything else hashes its text form. Spark's built-in ``hash()``
is a different Murmur3 variant and must not be used.

Scalar functions serve single values (and tests); the ``*_array`` functions are vectorised
over numpy arrays for the Spark UDF that computes buckets of whole batches. This module
imports nothing of the package: Spark ships it by value to Python workers, which need not
have dbt-ducklake installed.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h


def murmur3_32(data: bytes) -> int:
    """The signed 32-bit hash of ``data`` (Java's ``int``, as Iceberg and DuckDB return it)."""
    h = 0
    n = len(data)
    for i in range(0, n - n % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (_rotl((k * _C1) & _MASK, 15) * _C2) & _MASK
        h ^= k
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & _MASK
    tail = data[n - n % 4:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (_rotl((k * _C1) & _MASK, 15) * _C2) & _MASK
        h ^= k
    h = _fmix(h ^ n)
    return h - (1 << 32) if h & 0x80000000 else h


def hash_long(value: int) -> int:
    return murmur3_32(struct.pack("<q", value))


def double_bits(value: float) -> int:
    """``doubleToLongBits`` with ``-0.0`` taken as ``0.0`` (as DuckDB normalises it)."""
    if value == 0.0:
        value = 0.0
    return struct.unpack("<q", struct.pack("<d", value))[0]


def bucket(hash_value: int, count: int) -> int:
    """Iceberg's bucket of a hash: ``(hash & Integer.MAX_VALUE) % count``."""
    return (hash_value & 0x7FFFFFFF) % count


# ---------------------------------------------------------------------------------- vectorised
def _mix_block(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = k * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k = k * np.uint32(_C2)
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix_array(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def hash_long_array(values: np.ndarray) -> np.ndarray:
    """``murmur3_32`` of each int64 as 8 little-endian bytes; returns int32."""
    v = np.ascontiguousarray(values, dtype="<i8").view("<u4").reshape(-1, 2)
    h = np.zeros(len(v), dtype=np.uint32)
    h = _mix_block(h, v[:, 0].copy())
    h = _mix_block(h, v[:, 1].copy())
    return _fmix_array(h ^ np.uint32(8)).view(np.int32)


def double_bits_array(values: np.ndarray) -> np.ndarray:
    """:func:`double_bits` of each float64 (``-0.0`` normalised); returns int64."""
    v = np.asarray(values, dtype=np.float64).copy()
    v[v == 0.0] = 0.0
    return v.view(np.int64)


def hash_bytes_array(items: Sequence[bytes]) -> np.ndarray:
    """``murmur3_32`` of each byte string; returns int32.

    Strings are laid out in a zero-padded matrix, one row each, and mixed block by block;
    rows that have run out of full blocks keep their state. Lengths are grouped in bands so a
    single long value does not blow up the matrix for a whole batch.
    """
    out = np.zeros(len(items), dtype=np.int32)
    if not len(items):
        return out
    lengths = np.fromiter((len(b) for b in items), dtype=np.int64, count=len(items))
    bands = np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    for band in np.unique(bands):
        idx = np.nonzero(bands == band)[0]
        lens = lengths[idx]
        width = int(-(-int(lens.max()) // 4) * 4) or 4
        matrix = np.zeros((len(idx), width), dtype=np.uint8)
        for row, i in enumerate(idx):
            data = items[int(i)]
            matrix[row, :len(data)] = np.frombuffer(data, dtype=np.uint8)
        words = matrix.view("<u4")
        h = np.zeros(len(idx), dtype=np.uint32)
        full = lens // 4
        for block in range(words.shape[1]):
            mixed = _mix_block(h, words[:, block].copy())
            h = np.where(full > block, mixed, h)
        rest = lens % 4
        has_tail = rest > 0
        if has_tail.any():
            tail = words[np.arange(len(idx)), np.minimum(full, words.shape[1] - 1)].copy()
            k = tail * np.uint32(_C1)
            k = (k << np.uint32(15)) | (k >> np.uint32(17))
            k = k * np.uint32(_C2)
            h = np.where(has_tail, h ^ k, h)
        h = _fmix_array(h ^ lens.astype(np.uint32))
        out[idx] = h.view(np.int32)
    return out


def bucket_array(hashes: np.ndarray, count: int) -> np.ndarray:
    return (hashes.astype(np.int64) & 0x7FFFFFFF) % count


_LONG_KINDS = ("boolean", "int8", "int16", "int32", "int64")
_TIMESTAMP_KINDS = ("timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamptz")


def _longs(values: pa.Array, kind: str, precision: int, scale: int) -> np.ndarray | None:
    """The 64-bit integers DuckDB hashes for an array of a column type, or ``None`` when the
    type hashes bytes or text instead (NULLs become 0; the caller masks them)."""
    t = values.type
    if kind in _LONG_KINDS and (pa.types.is_integer(t) or pa.types.is_boolean(t)):
        return pc.cast(values, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if kind in ("float32", "float64") and pa.types.is_floating(t):
        if kind == "float32":
            values = pc.cast(values, pa.float32())
        doubles = pc.cast(values, pa.float64()).fill_null(0.0)
        return double_bits_array(doubles.to_numpy(zero_copy_only=False))
    if kind == "decimal" and precision <= 18 and pa.types.is_decimal(t):
        return np.array([0 if v is None else int(v.scaleb(scale)) for v in values.to_pylist()],
                        dtype=np.int64)
    if kind == "date" and pa.types.is_date32(t):
        return pc.cast(values, pa.int32()).cast(pa.int64()).fill_null(0) \
            .to_numpy(zero_copy_only=False)
    if kind in _TIMESTAMP_KINDS and pa.types.is_timestamp(t):
        raw = values.view(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        per_us = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 0}[t.unit]
        micros = raw * per_us if per_us else raw // 1_000
        if kind == "timestamp_s":
            return micros // 1_000_000
        if kind == "timestamp_ms":
            return micros // 1_000
        if kind == "timestamp_ns":
            return raw if t.unit == "ns" else micros * 1_000
        return micros
    return None


def _text(value: object, kind: str, scale: int) -> bytes:
    """DuckDB's fallback: the bytes of the value's text (unsigned and 128-bit integers, wide
    decimals, UUIDs)."""
    if kind == "decimal":
        return f"{Decimal(value):.{scale}f}".encode()  # type: ignore[arg-type]
    if kind == "uuid":
        return str(value).lower().encode()
    return str(int(value)).encode()  # type: ignore[call-overload]


def bucket_array_of(values: pa.Array, kind: str, count: int, precision: int = 0,
                    scale: int = 0) -> pa.Array:
    """``bucket(count)`` of every value of an Arrow array holding a column of DuckLake type
    ``kind`` (``int64``, ``varchar``, ``decimal`` with precision and scale, ...): int32,
    NULL for NULL."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
    longs = _longs(values, kind, precision, scale)
    if longs is not None:
        hashes = hash_long_array(longs)
    elif kind in ("varchar", "json", "blob"):
        hashes = hash_bytes_array([b if isinstance(b, bytes) else (b or "").encode()
                                   for b in values.to_pylist()])
    else:
        hashes = hash_bytes_array([b"" if v is None else _text(v, kind, scale)
                                   for v in values.to_pylist()])
    result = bucket_array(hashes, count).astype(np.int32)
    return pa.array(result, type=pa.int32(), mask=~valid)


__all__ = [
    "bucket",
    "bucket_array",
    "bucket_array_of",
    "double_bits",
    "double_bits_array",
    "hash_bytes_array",
    "hash_long",
    "hash_long_array",
    "murmur3_32",
]
