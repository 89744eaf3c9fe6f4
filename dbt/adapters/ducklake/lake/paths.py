"""Where a path from the catalog may point: inside the lake's data path, and nowhere else.

Catalog rows are written by every writer of the lake (DuckDB, other Spark jobs, anyone who
may write the catalog database), so the paths in them are data, not instructions. A crafted
row could otherwise make us read, write or delete any file the process can reach: a
relative path with ``../``, an absolute path elsewhere, a URL in another bucket. Before a
file named by a row is read or deleted, and before a table directory is written into, its
path is normalised and compared with the data path component by component (never with
``str.startswith``: ``/lake/data`` is no prefix of ``/lake/data-other``).

The comparison is lexical: local paths are normalised as POSIX paths (``a/../b`` is ``b``),
URLs must name the same scheme family and bucket (``s3://b/...`` and ``s3a://b/...`` are
one bucket) and may hold no ``.`` or ``..`` component at all (object stores take those
literally, other clients do not). Symbolic links are the file system's business: deleting
code checks them separately (:func:`.files.remove_inside`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import UnsafePathError

PARQUET_SUFFIX = ".parquet"

# URL schemes that name the same store (Hadoop's and pyarrow's spellings of one bucket).
_SCHEME_FAMILIES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}


@dataclass(frozen=True)
class Location:
    """A path split into what must match: the store (``""`` for the local file system,
    else ``scheme://authority``) and the path's components below it."""

    store: str
    parts: tuple[str, ...]

    def contains(self, other: Location, allow_equal: bool = False) -> bool:
        """Whether ``other`` lies below this location (or is it, with ``allow_equal``)."""
        n = len(self.parts)
        return (other.store == self.store and other.parts[:n] == self.parts
                and (allow_equal or len(other.parts) > n))


def _strip_file_scheme(path: str) -> str:
    """``file:/x`` and ``file:///x`` -> ``/x`` (``file://host/x`` stays relative: refused)."""
    for prefix in ("file://", "file:"):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


def location(path: str) -> Location | None:
    """The normalised location of an absolute path or URL; None when ``path`` is neither
    (a relative path means nothing without a base) or is a URL with a ``.``/``..`` part."""
    path = _strip_file_scheme(path.replace("\\", "/"))
    if "://" in path:
        scheme, rest = path.split("://", 1)
        authority, _, inner = rest.partition("/")
        scheme = scheme.lower()
        parts = tuple(p for p in inner.split("/") if p)
        if not authority or any(p in (".", "..") for p in parts):
            return None
        return Location(f"{_SCHEME_FAMILIES.get(scheme, scheme)}://{authority}", parts)
    if not path.startswith("/"):
        return None
    return Location("", tuple(p for p in posixpath.normpath(path).split("/") if p))


def outside_reason(roots: Sequence[str], path: str, parquet: bool = True) -> str | None:
    """Why ``path`` may not be touched (None: it may): it must be an absolute path or URL
    strictly below one of ``roots`` and, with ``parquet``, name a ``.parquet`` file."""
    where = location(path)
    if where is None:
        return "is neither an absolute path nor a URL without '.' or '..' parts"
    inside = [r for r in (location(root) for root in roots)
              if r is not None and r.contains(where)]
    if not inside:
        if not any((r := location(root)) is not None and r.store == where.store
                   for root in roots):
            return "is on another file system or bucket than the data path"
        return "is outside the data path"
    if parquet and not where.parts[-1].endswith(PARQUET_SUFFIX):
        return "is not a .parquet file"
    return None


def relative_to(root: str, path: str) -> str | None:
    """``path`` relative to the directory ``root`` (normalised, ``/``-separated), or None when
    it is not strictly below it. Scheduled deletions store paths this way."""
    base, where = location(root), location(path)
    if base is None or where is None or not base.contains(where):
        return None
    return "/".join(where.parts[len(base.parts):])


def scheduled_form(data_path: str, path: str) -> tuple[str, bool]:
    """How ``ducklake_files_scheduled_for_deletion`` stores a file: relative to the data
    path when it lies below it, else absolute (``path_is_relative`` false), as DuckDB does.
    Cleanup checks the row again before it deletes anything."""
    inner = relative_to(data_path, path)
    return (inner, True) if inner is not None else (path, False)


def relative_reason(path: str) -> str | None:
    """Why a catalog path stored relative to its directory is not a plain relative path
    (None when it is): no leading ``/``, no URL, no ``..`` step out of the directory."""
    if not path:
        return "is empty"
    normal = path.replace("\\", "/")
    if normal.startswith("/") or "://" in normal:
        return "is marked relative but is absolute"
    if ".." in normal.split("/"):
        return "steps out of its directory with '..'"
    return None


def check_file(roots: Sequence[str], path: str, relative: bool, what: str) -> None:
    """Refuse a data or delete file path from the catalog that may point outside ``roots``.

    A relative path is checked for its shape (its directory is checked by
    :func:`check_dir`); an absolute one must be a ``.parquet`` file below a root.

    Raises:
        UnsafePathError: naming the row, the path and why it is refused.
    """
    if relative:
        reason = relative_reason(path)
        if reason is None and not path.endswith(PARQUET_SUFFIX):
            reason = "is not a .parquet file"
    else:
        reason = outside_reason(roots, path)
    if reason is not None:
        raise UnsafePathError(
            f"{what} has path {path!r}, which {reason} ({'relative' if relative else 'absolute'}"
            f"; data path {roots[0]!r}). The catalog row was written by another writer and is "
            "not trusted: nothing was read or deleted. Fix or remove the row; a file added "
            "from outside the data path (ducklake_add_data_files) can be read only when its "
            "directory is in the lake's read_paths (the profile's read_paths key, or "
            "Catalog.open(..., read_paths=[...]))")


def check_dir(root: str, base: str, path: str, relative: bool, what: str) -> None:
    """Refuse a directory ``path`` (relative to ``base``, or absolute) that does not lie
    inside the data path ``root`` (or is it). Writes go into such directories, so no
    ``read_paths`` apply.

    Raises:
        UnsafePathError: naming the row, the path and why it is refused.
    """
    if relative:
        reason = relative_reason(path) if path else None
        full = base.rstrip("/") + "/" + path if path else base
    else:
        reason, full = None, path
    if reason is None:
        base_loc, where = location(root), location(full)
        if base_loc is None or where is None or not base_loc.contains(where, allow_equal=True):
            reason = "is outside the data path"
    if reason is not None:
        raise UnsafePathError(
            f"{what} has path {path!r}, which {reason} (data path {root!r}). The catalog row "
            "was written by another writer and is not trusted: nothing was read, written or "
            "deleted. Fix or remove the row")


__all__ = ["Location", "check_dir", "check_file", "location", "outside_reason",
           "relative_reason", "relative_to", "scheduled_form"]
