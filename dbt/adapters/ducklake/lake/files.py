"""File system access for the lake's data path: local paths and anything pyarrow can reach.

Only the driver uses this: to read Parquet footers, to write the small delete files whose
snapshot ids are known only at commit time, and to remove files of failed commits.
"""

from __future__ import annotations

import os
import stat
import struct
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .errors import DataFileError
from .paths import outside_reason

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
    the directory does not exist). Orphan cleanup needs the times to spare young files.

    Locally, symbolic links are not followed (pyarrow's recursive listing follows links to
    directories, which leads out of the data path) and are not listed: orphan cleanup must
    neither delete through a link nor delete a link someone placed there."""
    if is_local(path):
        return _list_local(strip_scheme(path))
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


def _list_local(root: str) -> list[tuple[str, datetime | None]]:
    """Regular files below ``root``, without following or listing symbolic links."""
    out: list[tuple[str, datetime | None]] = []
    if os.path.islink(root.rstrip("/")) or not os.path.isdir(root):
        return out  # a data path that is itself a link is listed by its target's owner
    for directory, _, names in os.walk(root, followlinks=False):
        for name in names:
            full = os.path.join(directory, name)
            try:
                info = os.lstat(full)
            except OSError:
                continue  # removed meanwhile
            if stat.S_ISREG(info.st_mode):
                out.append((full, datetime.fromtimestamp(info.st_mtime, timezone.utc)))
    return out


def delete_refusal(root: str, path: str, parquet: bool = True) -> str | None:
    """Why cleanup may not delete ``path`` (None: it may). It must lie strictly below the
    data path ``root`` (:func:`.paths.outside_reason`) and, with ``parquet``, be a
    ``.parquet`` file; locally it must also be no symbolic link, and no link on the way may
    lead out of ``root``: the catalog and the data path's contents are not trusted here."""
    reason = outside_reason([root], path, parquet)
    if reason is not None or not is_local(path):
        return reason
    local = strip_scheme(path)
    real_root = os.path.realpath(strip_scheme(root))
    parent = os.path.realpath(os.path.dirname(local))
    if os.path.commonpath([real_root, parent]) != real_root:
        return "lies behind a symbolic link that leads out of the data path"
    if os.path.islink(local):
        return "is a symbolic link"
    return None


def remove_inside(root: str, path: str, parquet: bool = True) -> str | None:
    """Delete the file ``path`` if :func:`delete_refusal` allows it; returns the refusal
    (None: deleted, or already gone). Locally the file is removed through its resolved
    directory, the one that was checked, and a link is never followed."""
    reason = delete_refusal(root, path, parquet)
    if reason is not None:
        return reason
    if not is_local(path):
        remove_file(path)
        return None
    local = strip_scheme(path)
    try:
        os.unlink(os.path.join(os.path.realpath(os.path.dirname(local)),
                               os.path.basename(local)))
    except OSError:
        pass  # gone already, or not ours to remove: the next cleanup tries again
    return None


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
