"""Expiring snapshots (DuckDB's ``ducklake_expire_snapshots``, in duckdb/ducklake@v1.5-variegata
src/functions/ducklake_expire_snapshots.cpp): forget old history.

Expiring a snapshot deletes its ``ducklake_snapshot`` and ``ducklake_snapshot_changes`` rows.
Everything that only expired snapshots could see goes with it, in one catalog transaction and
without a new snapshot, exactly as DuckDB does: data and delete files whose ``[begin, end)``
holds no remaining snapshot leave the catalog and are scheduled for deletion (the files
themselves go later, with ``cleanup_old_files``); tables dropped before every remaining
snapshot lose all their rows and inlined tables; ended schemas, views, tags and macros go too.
The latest snapshot is never expired, so the current state is never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import cast

from sqlalchemy import Connection, text

from .catalog import (
    Catalog,
    as_timestamp,
    checked_inlined_table,
    in_list,
    join_path,
    normalise_dir,
    parse_time,
)
from .errors import InvalidArgumentError
from .options import option, parse_interval
from .paths import scheduled_form

log = logging.getLogger("dbt.adapters.ducklake.lake")

_UNSEEN = ("end_snapshot IS NOT NULL AND NOT EXISTS (SELECT snapshot_id FROM {snap} WHERE "
           "snapshot_id >= {alias}begin_snapshot AND snapshot_id < {alias}end_snapshot)")


@dataclass(frozen=True)
class ExpireResult:
    """What ``expire_snapshots`` removed (or, with ``dry_run``, would remove)."""

    snapshot_ids: tuple[int, ...]
    files_scheduled: int
    tables_purged: tuple[int, ...]
    dry_run: bool

    def summary(self) -> str:
        verb = "would expire" if self.dry_run else "expired"
        return (f"{verb} {len(self.snapshot_ids)} snapshot(s), scheduled "
                f"{self.files_scheduled} file(s) for deletion, purged "
                f"{len(self.tables_purged)} dropped table(s)")


def expire_snapshots(
    lake: Catalog, older_than: datetime | str | None = None,
    versions: Sequence[int] | None = None, dry_run: bool = False,
) -> ExpireResult:
    """Expire snapshots taken before ``older_than`` and/or the listed ``versions``.

    With neither, the lake's ``expire_older_than`` option (an interval such as ``'1 week'``)
    decides; without that option nothing is expired, as in DuckDB.
    """
    try:
        result = _run(lake, older_than, versions, dry_run)
    except _RolledBack as undone:
        result = undone.result
    log.info("expire_snapshots: %s", result.summary())
    return result


class _RolledBack(Exception):  # noqa: N818 - control flow: a dry run undoes its changes
    def __init__(self, result: ExpireResult) -> None:
        super().__init__("dry run")
        self.result = result


def _run(lake: Catalog, older_than: datetime | str | None, versions: Sequence[int] | None,
         dry_run: bool) -> ExpireResult:
    with lake.write() as conn:
        cutoff = _cutoff(lake, conn, older_than)
        if cutoff is None and not versions:
            return ExpireResult((), 0, (), dry_run)
        latest = lake.latest_snapshot(conn).snapshot_id
        rows = cast("Sequence[tuple[int, datetime | str]]", conn.execute(text(
            f"SELECT snapshot_id, snapshot_time FROM {lake.t('ducklake_snapshot')}")).all())
        wanted = {int(v) for v in versions or ()}
        unknown = wanted - {int(r[0]) for r in rows}
        if unknown:
            raise InvalidArgumentError(
                f"cannot expire snapshot(s) {sorted(unknown)}: no such snapshot in the lake")
        if latest in wanted:
            raise InvalidArgumentError(
                f"cannot expire snapshot {latest}: it is the latest snapshot of the lake")
        chosen = sorted(
            int(sid) for sid, when in rows if int(sid) != latest and (
                int(sid) in wanted or (cutoff is not None and parse_time(when) < cutoff)))
        if not chosen:
            return ExpireResult((), 0, (), dry_run)
        result = _expire(lake, conn, chosen, dry_run)
        if dry_run:
            raise _RolledBack(result)  # leaves the catalog transaction without committing
    return result


def _cutoff(lake: Catalog, conn: Connection, older_than: datetime | str | None) -> datetime | None:
    if older_than is not None:
        return as_timestamp(older_than)
    interval = option(lake, conn, "expire_older_than")
    if not interval:
        return None
    return datetime.now(timezone.utc) - parse_interval(interval)


def _expire(lake: Catalog, conn: Connection, snapshot_ids: list[int],
            dry_run: bool) -> ExpireResult:
    t = lake.t
    marks, params = in_list(snapshot_ids, "i")
    for name in ("ducklake_snapshot", "ducklake_snapshot_changes"):
        conn.execute(text(f"DELETE FROM {t(name)} WHERE snapshot_id IN ({marks})"), params)
    unseen = _UNSEEN.format(snap=t("ducklake_snapshot"), alias="")
    ended_tables = conn.execute(text(
        f"SELECT DISTINCT table_id FROM {t('ducklake_table')} tt WHERE end_snapshot IS NOT NULL "
        f"AND NOT EXISTS (SELECT 1 FROM {t('ducklake_table')} t2 WHERE t2.table_id = tt.table_id "
        f"AND (t2.end_snapshot IS NULL OR EXISTS (SELECT snapshot_id FROM "
        f"{t('ducklake_snapshot')} WHERE snapshot_id >= t2.begin_snapshot AND "
        "snapshot_id < t2.end_snapshot)))")).all()
    purged = sorted(int(r[0]) for r in ended_tables)
    tmarks, tparams = in_list(purged, "t")
    table_filter = f"table_id IN ({tmarks}) OR " if purged else ""
    paths = _table_dirs(lake, conn)
    data_rows = cast("Sequence[tuple[int, int, str, bool | int]]", conn.execute(text(
        f"SELECT data_file_id, table_id, path, path_is_relative FROM {t('ducklake_data_file')} "
        f"WHERE {table_filter}({unseen})"), tparams).all())
    scheduled = 0
    now = lake.encode_time(datetime.now(timezone.utc))
    data_ids = [int(r[0]) for r in data_rows]
    for fid, tid, path, rel in data_rows:
        _schedule(lake, conn, int(fid), paths.get(int(tid), ""), path, bool(rel), now)
        scheduled += 1
    for start in range(0, len(data_ids), 500):
        chunk = data_ids[start:start + 500]
        dmarks, dparams = in_list(chunk, "d")
        for name in ("ducklake_data_file", "ducklake_file_column_stats",
                     "ducklake_file_variant_stats", "ducklake_file_partition_value"):
            conn.execute(text(f"DELETE FROM {t(name)} WHERE data_file_id IN ({dmarks})"),
                         dparams)
    delete_rows = cast("Sequence[tuple[int, int, str, bool | int, int]]", conn.execute(text(
        f"SELECT delete_file_id, table_id, path, path_is_relative, data_file_id FROM "
        f"{t('ducklake_delete_file')}")).all())
    gone = set(data_ids)
    doomed = []
    unseen_deletes = {int(r[0]) for r in conn.execute(text(
        f"SELECT delete_file_id FROM {t('ducklake_delete_file')} WHERE {unseen}")).all()}
    for did, tid, path, rel, dfid in delete_rows:
        if int(tid) in purged or int(dfid) in gone or int(did) in unseen_deletes:
            doomed.append(int(did))
            _schedule(lake, conn, int(did), paths.get(int(tid), ""), path, bool(rel), now)
            scheduled += 1
    for start in range(0, len(doomed), 500):
        dmarks, dparams = in_list(doomed[start:start + 500], "x")
        conn.execute(text(f"DELETE FROM {t('ducklake_delete_file')} WHERE delete_file_id IN "
                          f"({dmarks})"), dparams)
    if purged:
        inlined = [checked_inlined_table(*r).table_name for r in conn.execute(text(
            f"SELECT table_id, table_name, schema_version FROM "
            f"{t('ducklake_inlined_data_tables')} WHERE table_id IN ({tmarks})"),
            tparams).all()]
        inlined += [f"ducklake_inlined_delete_{tid}" for tid in purged]
        for name in ("ducklake_table", "ducklake_table_stats", "ducklake_table_column_stats",
                     "ducklake_partition_info", "ducklake_partition_column", "ducklake_column",
                     "ducklake_column_tag", "ducklake_sort_info", "ducklake_sort_expression",
                     "ducklake_schema_versions", "ducklake_inlined_data_tables",
                     "ducklake_column_mapping"):
            conn.execute(text(f"DELETE FROM {t(name)} WHERE table_id IN ({tmarks})"), tparams)
        if not dry_run:
            for name in inlined:
                conn.execute(text(f"DROP TABLE IF EXISTS {t(name)}"))
    for name in ("ducklake_schema", "ducklake_view", "ducklake_tag", "ducklake_macro"):
        conn.execute(text(f"DELETE FROM {t(name)} WHERE {unseen}"))
    for name in ("ducklake_macro_impl", "ducklake_macro_parameters"):
        conn.execute(text(f"DELETE FROM {t(name)} WHERE NOT EXISTS (SELECT 1 FROM "
                          f"{t('ducklake_macro')} m WHERE m.macro_id = {t(name)}.macro_id)"))
    conn.execute(text(f"DELETE FROM {t('ducklake_name_mapping')} WHERE NOT EXISTS (SELECT 1 "
                      f"FROM {t('ducklake_column_mapping')} m WHERE m.mapping_id = "
                      f"{t('ducklake_name_mapping')}.mapping_id)"))
    return ExpireResult(tuple(snapshot_ids), scheduled, tuple(purged), dry_run)


def _table_dirs(lake: Catalog, conn: Connection) -> dict[int, str]:
    """Every table's directory (any version of its row), for paths of files being scheduled."""
    rows = cast("Sequence[tuple[int, str, bool | int, str, bool | int]]", conn.execute(text(
        f"SELECT t.table_id, t.path, t.path_is_relative, s.path, s.path_is_relative FROM "
        f"{lake.t('ducklake_table')} t JOIN {lake.t('ducklake_schema')} s "
        "ON s.schema_id = t.schema_id ORDER BY t.begin_snapshot")).all())
    out = {}
    for tid, tpath, trel, spath, srel in rows:
        schema_dir = join_path(lake.data_path, spath, bool(srel))
        out[int(tid)] = normalise_dir(join_path(schema_dir, tpath, bool(trel)))
    return out


def _schedule(lake: Catalog, conn: Connection, file_id: int, table_dir: str, path: str,
              relative: bool, now: object) -> None:
    stored, inside = scheduled_form(lake.data_path, join_path(table_dir, path, relative))
    conn.execute(text(f"INSERT INTO {lake.t('ducklake_files_scheduled_for_deletion')} VALUES "
                      "(:id, :p, :rel, :t)"),
                 {"id": file_id, "p": stored, "rel": inside, "t": now})


__all__ = ["ExpireResult", "expire_snapshots"]
