"""Deleting files: ``ducklake_cleanup_old_files`` and ``ducklake_delete_orphaned_files``.

* ``cleanup_old_files`` deletes the files listed in ``ducklake_files_scheduled_for_deletion``
  (merged sources, replaced delete files, files of expired snapshots) that were scheduled
  before ``older_than`` (default: now minus the ``delete_older_than`` option, ``2 days``), and
  removes their rows. A reader that started before the file was scheduled has that long to
  finish.
* ``delete_orphaned_files`` deletes ``.parquet`` files (and anything in a writer's
  ``_ducklake_staging_*`` directory) under the data path that the catalog does not know at
  all (no data file, delete file or scheduled row names them) and that were last modified
  before ``older_than`` (same default). The age is what protects another
  writer's commit in flight: its freshly written files are unknown until it commits.

Both are stricter than DuckDB in three ways:

* a path that any ``ducklake_data_file`` or ``ducklake_delete_file`` row still names (live,
  or needed by a snapshot) is never deleted, whatever the schedule says;
* catalog rows come from other writers and are not trusted: a path outside the data path
  (``../``, another absolute path, another bucket), one that is no ``.parquet`` file, or one
  reached through a symbolic link that leads out of the data path is never deleted, only
  reported (``CleanupResult.refused`` and a warning); the orphan scan follows no links;
* files go only after a catalog write succeeded (the schedule's rows removed, or for
  orphans a probe of the same privilege), so a role that may only read the catalog deletes
  nothing.

The file list is taken *before* the catalog is read, so a file committed in between is
known, not orphaned.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import cast

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from . import files as lake_files
from .catalog import Catalog, as_timestamp, in_list, join_path, normalise_dir
from .commit import permission_denied
from .errors import CommitFailedError, InvalidArgumentError, first_line
from .options import DELETE_OLDER_THAN_DEFAULT, option, parse_interval

log = logging.getLogger("dbt.adapters.ducklake.lake")


@dataclass(frozen=True)
class CleanupResult:
    """Files deleted (or, with ``dry_run``, that would be deleted), as absolute paths."""

    operation: str
    paths: tuple[str, ...]
    dry_run: bool
    kept_live: tuple[str, ...] = ()  # scheduled, but still named by the catalog: kept
    # outside the data path, no Parquet file, or reached through a symbolic link: never
    # deleted (a catalog row or a link written by someone else points there)
    refused: tuple[str, ...] = ()

    def summary(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        extra = f", kept {len(self.kept_live)} still referenced" if self.kept_live else ""
        if self.refused:
            extra += (f", refused {len(self.refused)} outside the data path, not Parquet or "
                      "behind a link (see the warnings)")
        return f"{self.operation}: {verb} {len(self.paths)} file(s){extra}"


def cutoff(lake: Catalog, conn: Connection, older_than: datetime | str | None,
           cleanup_all: bool = False) -> datetime | None:
    """The age bound: ``older_than``, else now minus ``delete_older_than``; None = no bound."""
    if cleanup_all and older_than is not None:
        raise InvalidArgumentError("pass either cleanup_all or older_than, not both")
    if cleanup_all:
        return None
    if older_than is not None:
        return as_timestamp(older_than)
    interval = option(lake, conn, "delete_older_than") or DELETE_OLDER_THAN_DEFAULT
    return datetime.now(timezone.utc) - parse_interval(interval)


def canonical(path: str) -> str:
    """One spelling per file: no ``file:`` scheme, normalised separators for local paths."""
    path = lake_files.strip_scheme(path).replace("\\", "/")
    return path if "://" in path else os.path.normpath(path)


def referenced_paths(lake: Catalog, conn: Connection) -> set[str]:
    """Absolute paths of every data and delete file any catalog row names."""
    dirs: dict[int, set[str]] = {}
    tables = cast("Sequence[tuple[int, str, bool | int, str, bool | int]]", conn.execute(text(
        f"SELECT t.table_id, t.path, t.path_is_relative, s.path, s.path_is_relative FROM "
        f"{lake.t('ducklake_table')} t JOIN {lake.t('ducklake_schema')} s "
        "ON s.schema_id = t.schema_id")).all())
    for tid, tpath, trel, spath, srel in tables:
        schema_dir = join_path(lake.data_path, spath, bool(srel))
        dirs.setdefault(int(tid), set()).add(normalise_dir(join_path(schema_dir, tpath,
                                                                     bool(trel))))
    out = set()
    for name in ("ducklake_data_file", "ducklake_delete_file"):
        files = cast("Sequence[tuple[int, str, bool | int]]", conn.execute(text(
            f"SELECT table_id, path, path_is_relative FROM {lake.t(name)}")).all())
        for tid, path, rel in files:
            for table_dir in dirs.get(int(tid), {""}):
                out.add(canonical(join_path(table_dir, path, bool(rel))))
    return out


def _scheduled(lake: Catalog, conn: Connection) -> list[tuple[int, str, datetime | None]]:
    rows = cast("Sequence[tuple[int, str, bool | int, datetime | str | None]]", conn.execute(text(
        f"SELECT data_file_id, path, path_is_relative, schedule_start FROM "
        f"{lake.t('ducklake_files_scheduled_for_deletion')}")).all())
    from .catalog import parse_time

    return [(int(fid), canonical(join_path(lake.data_path, path, bool(rel))),
             None if when is None else parse_time(when)) for fid, path, rel, when in rows]


def cleanup_old_files(lake: Catalog, older_than: datetime | str | None = None,
                      cleanup_all: bool = False, dry_run: bool = False) -> CleanupResult:
    """Delete files scheduled for deletion before ``older_than`` (or all, ``cleanup_all``).

    Their rows leave the catalog first, in one write transaction, and the files go only once
    it committed: a role that may not write the catalog deletes nothing, and a file left
    behind by a failure after the commit is an orphan that :func:`delete_orphaned_files`
    removes. Rows naming a file outside the data path, or no Parquet file, are kept and
    reported in ``refused``; such a file is never deleted.
    """
    with _maintaining(lake, "cleanup_old_files", dry_run) as conn:
        bound = cutoff(lake, conn, older_than, cleanup_all)
        live = referenced_paths(lake, conn)
        due = [(fid, path) for fid, path, when in _scheduled(lake, conn)
               if bound is None or (when is not None and when < bound)]
        kept = tuple(sorted({p for _, p in due if p in live}))
        refused = _refusals(lake, [p for _, p in due if p not in live])
        doomed = [(fid, p) for fid, p in due if p not in live and p not in refused]
        if not dry_run:
            for start in range(0, len(doomed), 500):
                marks, params = in_list([fid for fid, _ in doomed[start:start + 500]], "d")
                conn.execute(text(
                    f"DELETE FROM {lake.t('ducklake_files_scheduled_for_deletion')} "
                    f"WHERE data_file_id IN ({marks})"), params)
    if not dry_run:  # the catalog no longer schedules them: now the files may go
        for _, path in doomed:
            lake_files.remove_inside(lake.data_path, path)
    result = CleanupResult("cleanup_old_files", tuple(sorted({p for _, p in doomed})), dry_run,
                           kept, _report(refused))
    log.info("%s", result.summary())
    return result


@contextmanager
def _maintaining(lake: Catalog, operation: str, dry_run: bool) -> Iterator[Connection]:
    """The catalog transaction a cleanup decides in: a write transaction unless it is a dry
    run, so that only a role that may write the catalog gets to delete files. A refused
    write says so: nothing was deleted."""
    try:
        with (lake.read() if dry_run else lake.write()) as conn:
            yield conn
    except DBAPIError as exc:
        if permission_denied(exc):
            raise CommitFailedError(
                f"{operation}: the catalog refused the write: {first_line(exc)}. This role may "
                "read the lake but not maintain it (see README, Access control); nothing was "
                "deleted. Run it as a role that may write the catalog, or pass dry_run=True "
                "to list the files") from exc
        raise


def _refusals(lake: Catalog, paths: Sequence[str], staged: bool = False) -> dict[str, str]:
    """The paths cleanup must not delete, with the reason (:func:`.files.delete_refusal`)."""
    out = {}
    for path in paths:
        reason = lake_files.delete_refusal(lake.data_path, path,
                                           parquet=not (staged and STAGING_MARK in path))
        if reason is not None:
            out[path] = reason
    return out


def _report(refused: dict[str, str]) -> tuple[str, ...]:
    """Log each refused path once, loudly: a catalog row or a link points outside the lake."""
    for path, reason in sorted(refused.items()):
        log.warning("not deleting %s: it %s (a catalog row or a link written by someone else "
                    "points there; check it and fix or remove it)", path, reason)
    return tuple(sorted(refused))


STAGING_MARK = lake_files.STAGING_MARK


def _remove_empty_staging_dirs(lake: Catalog, paths: list[str]) -> None:
    """Remove the staging directories that deleting ``paths`` emptied (local paths only;
    never through a symbolic link, never outside the data path)."""
    roots = set()
    for path in paths:
        if STAGING_MARK in path and lake_files.is_local(path):
            head, _, tail = path.partition(STAGING_MARK)
            roots.add(head + STAGING_MARK + tail.split("/", 1)[0])
    real_data = os.path.realpath(lake_files.strip_scheme(lake.data_path))
    for root in roots:
        local = lake_files.strip_scheme(root)
        if os.path.islink(local) or os.path.commonpath(
                [real_data, os.path.realpath(local)]) != real_data:
            continue
        for directory, _, _ in sorted(os.walk(local), key=lambda w: -len(w[0])):
            try:
                os.rmdir(directory)
            except OSError:
                pass  # not empty: a file younger than the threshold is still there


def delete_orphaned_files(lake: Catalog, older_than: datetime | str | None = None,
                          dry_run: bool = False) -> CleanupResult:
    """Delete ``.parquet`` files under the data path that the catalog does not know and that
    were last modified before ``older_than`` (default: now minus ``delete_older_than``).

    The catalog is read in a write transaction that first proves the role may delete from
    the catalog's schedule (:func:`_probe_write`): orphan cleanup writes no rows of its own,
    and a reader must not delete files either. Symbolic links are neither followed nor
    deleted, and nothing outside the data path is touched.
    """
    found = lake_files.list_files(lake.data_path)  # list first: see the module docstring
    with _maintaining(lake, "delete_orphaned_files", dry_run) as conn:
        if not dry_run:
            _probe_write(lake, conn)
        bound = cutoff(lake, conn, older_than)
        known = referenced_paths(lake, conn) | {p for _, p, _ in _scheduled(lake, conn)}
    candidates = []
    for path, modified in found:
        # A writer's staging directory holds nothing the catalog can name (files are renamed
        # out of it before the commit), so everything in an old one is a dead write's debris:
        # Spark's part files, .crc sidecars and _SUCCESS markers.
        staged = STAGING_MARK in path
        if not path.endswith(".parquet") and not staged:
            continue
        if canonical(path) in known:
            continue
        if bound is not None and (modified is None or modified >= bound):
            continue
        candidates.append(canonical(path))
    refused = _refusals(lake, candidates, staged=True)
    doomed = [p for p in candidates if p not in refused]
    if not dry_run:
        for path in doomed:
            lake_files.remove_inside(lake.data_path, path,
                                     parquet=STAGING_MARK not in path)
        _remove_empty_staging_dirs(lake, doomed)
    result = CleanupResult("delete_orphaned_files", tuple(sorted(doomed)), dry_run,
                           refused=_report(refused))
    log.info("%s", result.summary())
    return result


def _probe_write(lake: Catalog, conn: Connection) -> None:
    """Fail unless this role may delete from ``ducklake_files_scheduled_for_deletion`` (what
    ``cleanup_old_files`` needs): a DELETE that matches no row is still checked for the
    privilege by PostgreSQL, and a read-only SQLite file refuses the write transaction."""
    conn.execute(text(f"DELETE FROM {lake.t('ducklake_files_scheduled_for_deletion')} "
                      "WHERE 1 = 0"))


__all__ = ["CleanupResult", "cleanup_old_files", "delete_orphaned_files", "referenced_paths"]
