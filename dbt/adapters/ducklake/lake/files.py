"""File system access for the lake's data path: local paths and anything pyarrow can reach.

Only the driver uses this: to read Parquet footers, to write the small delete files whose
snapshot ids are known only at commit time, and to remove files of failed commits.
"""

from __future__ import annotations

import os
import struct
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import DataFileError

# A write stages its files in a directory named with this mark, beside the table's directory,
# and renames them out of it before the commit; orphan cleanup removes old ones whole.
STAGING_MARK = "_ducklake_staging_"


def strip_scheme(path: str) -> str:
    """``file:/x`` and ``file:///x`` -> ``/x``; other URLs are kept."""
    if path.startswith("file://"):
        return path[len("file://") :]
    if path.startswith("file:"):
        return path[len("file:") :]
    return path


def filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    path = strip_scheme(path)
    if "://" in path:
        fs, inner = pafs.FileSystem.from_uri(path)
        return fs, inner
    return pafs.LocalFileSystem(), path


def makedirs(path: str) -> None:
    fs, inner = filesystem(path)
    fs.create_dir(inner, recursive=True)


def remove_file(path: str) -> None:
    fs, inner = filesystem(path)
    try:
        fs.delete_file(inner)
    except FileNotFoundError:
        pass
    except OSError:
        pass


def read_footer(path: str) -> tuple[pq.FileMetaData, int, int]:
    """A Parquet file's metadata, exact size and footer length (Thrift length, no magic)."""
    fs, inner = filesystem(path)
    try:
        with fs.open_input_file(inner) as handle:
            size = handle.size()
            if size < 12:
                raise DataFileError(f"Parquet file {path} is truncated ({size} bytes)")
            handle.seek(size - 8)
            tail = handle.read(8)
            if tail[4:] != b"PAR1":
                raise DataFileError(f"{path} is not a Parquet file (no PAR1 footer magic)")
            footer_size = struct.unpack("<I", tail[:4])[0]
            metadata = pq.ParquetFile(handle).metadata
    except DataFileError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise DataFileError(f"cannot read the Parquet footer of {path}: {exc}") from exc
    return metadata, size, footer_size


def write_table(path: str, table: pa.Table) -> tuple[int, int]:
    """Write a small Parquet file (delete files); returns (file size, footer size)."""
    fs, inner = filesystem(path)
    try:
        fs.create_dir(os.path.dirname(inner), recursive=True)
        with fs.open_output_stream(inner) as out:
            pq.write_table(table, out, compression="snappy")
    except (OSError, pa.ArrowException) as exc:
        remove_file(path)
        raise DataFileError(f"cannot write {path}: {exc}; nothing was committed") from exc
    _, size, footer = read_footer(path)
    return size, footer


def read_table(path: str, columns: list[str] | None = None) -> pa.Table:
    fs, inner = filesystem(path)
    try:
        return pq.read_table(inner, filesystem=fs, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        raise DataFileError(f"cannot read Parquet file {path}: {exc}") from exc


def list_files(path: str) -> list[tuple[str, datetime | None]]:
    """All files below a directory with their modification times, as full paths (empty when
    the directory does not exist). Orphan cleanup needs the times to spare young files."""
    fs, inner = filesystem(path)
    selector = pafs.FileSelector(inner, recursive=True, allow_not_found=True)
    stripped = strip_scheme(path)
    prefix = stripped.split("://", 1)[0] + "://" if "://" in stripped else ""
    out = []
    for info in fs.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        mtime = info.mtime
        if mtime is not None and mtime.tzinfo is None:
            mtime = mtime.replace(tzinfo=timezone.utc)
        out.append((prefix + info.path, mtime))
    return out


def first_row(path: str, columns: list[str]) -> dict[str, object]:
    """The first row of some columns of a Parquet file (one small batch is read)."""
    fs, inner = filesystem(path)
    try:
        with fs.open_input_file(inner) as handle:
            batches = pq.ParquetFile(handle).iter_batches(batch_size=1, columns=columns)
            batch = next(batches, None)
    except (OSError, pa.ArrowException) as exc:
        raise DataFileError(f"cannot read Parquet file {path}: {exc}") from exc
    if batch is None or batch.num_rows == 0:
        raise DataFileError(f"Parquet file {path} has no rows")
    return batch.slice(0, 1).to_pylist()[0]


def is_local(path: str) -> bool:
    return "://" not in strip_scheme(path)
