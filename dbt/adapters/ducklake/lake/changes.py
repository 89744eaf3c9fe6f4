"""The change feed's catalog side: which files, delete files and inlined rows hold the
insertions and deletions of a table between two snapshots.

This follows DuckDB's ``ducklake_table_insertions`` / ``ducklake_table_deletions`` exactly
(duckdb/ducklake@v1.5-variegata src/functions/ducklake_table_insertions.cpp), including what they
do at the edges, because the point of a change feed is that every reader of the lake sees the same
changes:

* insertions are rows of files with ``begin_snapshot`` in the range, or of partial files
  (flushed or merged, ``partial_max >= start``) filtered on their embedded snapshot ids, plus
  inlined rows with ``begin_snapshot`` in the range. Deletes are not applied: a row inserted
  and deleted inside the range is reported twice.
* deletions come from three sources, each joined with the file's *previous* delete file so
  that rows deleted before the range are not reported again: delete files with
  ``begin_snapshot <= end`` (rows filtered on embedded snapshot ids when the file has them),
  data files ended inside the range (all rows), and inlined deletes of Parquet rows. Inlined
  rows whose ``end_snapshot`` lies in the range are deleted inlined rows.

No Spark here: the rows themselves are read by :mod:`..spark.changes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from sqlalchemy import Connection, text

from . import files as lake_files
from .catalog import Catalog, _data_file, _delete_file, join_path
from .delete_files import SNAPSHOT_ID_COLUMN
from .errors import DataFileError, InvalidArgumentError
from .inlining.rows import inlined_delete_table
from .models import DataFile, DeleteFile

Bound = int | datetime | str


@dataclass(frozen=True)
class ChangeRange:
    """Inclusive snapshot ids ``[start, end]`` of a change-feed query."""

    start: int
    end: int


def resolve_range(lake: Catalog, start: Bound, end: Bound, conn: Connection) -> ChangeRange:
    """Snapshot ids for the bounds, as DuckDB binds them.

    A version must name an existing snapshot. A timestamp ``end`` picks the latest snapshot at
    or before it (as time travel does); a timestamp ``start`` picks the *earliest* snapshot at
    or after it, so that a range given by two times covers exactly the commits between them.
    """
    return ChangeRange(_bound(lake, start, conn, lower=True), _bound(lake, end, conn, lower=False))


def _bound(lake: Catalog, value: Bound, conn: Connection, lower: bool) -> int:
    if value is None:
        raise InvalidArgumentError("change-feed bounds cannot be NULL; pass a snapshot id or "
                                   "a timestamp")
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{value!r} is not a snapshot id or a timestamp")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        return lake.snapshot(version=int(value), conn=conn).snapshot_id
    if lower:
        return lake.snapshot_at_or_after(value, conn=conn).snapshot_id
    return lake.snapshot(timestamp=value, conn=conn).snapshot_id


# ---------------------------------------------------------------------------------- insertions
def insertion_files(lake: Catalog, table_id: int, span: ChangeRange,
                    conn: Connection) -> list[DataFile]:
    """Data files that may hold rows inserted in ``span`` (ended files included).

    Rows of a file with ``partial_max`` must still be filtered on their embedded snapshot id;
    other files were written by one snapshot inside the range and count whole.
    """
    rows = conn.execute(
        text(f"SELECT * FROM {lake.t('ducklake_data_file')} WHERE table_id = :t "
             "AND begin_snapshot <= :e AND (begin_snapshot >= :s OR "
             "(partial_max IS NOT NULL AND partial_max >= :s)) ORDER BY data_file_id"),
        {"t": table_id, "s": span.start, "e": span.end}).all()
    return lake.checked_files([_data_file(r) for r in rows])


# ---------------------------------------------------------------------------------- deletions
@dataclass(frozen=True)
class DeletionScan:
    """One source of deleted rows of one data file, as DuckDB plans a deletion scan.

    ``delete_file`` is set for deletes recorded in a delete file; ``None`` with
    ``inlined_deletes`` empty means the whole data file was ended at ``snapshot_id``.
    """

    data_file: DataFile
    snapshot_id: int
    delete_file: DeleteFile | None = None
    previous_delete_file: DeleteFile | None = None
    inlined_deletes: dict[int, int] = field(default_factory=dict)  # position -> snapshot


def deletion_scans(lake: Catalog, table_id: int, span: ChangeRange,
                   conn: Connection) -> list[DeletionScan]:
    """Every deletion source of the table's Parquet rows for ``span``."""
    data = {f.data_file_id: f for f in lake.checked_files([_data_file(r) for r in conn.execute(
        text(f"SELECT * FROM {lake.t('ducklake_data_file')} WHERE table_id = :t"),
        {"t": table_id}).all()])}
    deletes = lake.checked_files([_delete_file(r) for r in conn.execute(
        text(f"SELECT * FROM {lake.t('ducklake_delete_file')} WHERE table_id = :t "
             "ORDER BY delete_file_id"), {"t": table_id}).all()])
    inlined = _inlined_file_deletes(lake, table_id, span, conn)

    def previous(data_file_id: int, before: int) -> DeleteFile | None:
        older = [d for d in deletes
                 if d.data_file_id == data_file_id and d.begin_snapshot < before]
        return max(older, key=lambda d: d.begin_snapshot) if older else None

    scans: list[DeletionScan] = []
    for delete in deletes:
        if delete.begin_snapshot > span.end or delete.data_file_id not in data:
            continue
        scans.append(DeletionScan(
            data[delete.data_file_id], delete.begin_snapshot, delete,
            previous(delete.data_file_id, span.start), inlined.get(delete.data_file_id, {})))
    for data_file in data.values():
        ended = data_file.end_snapshot
        if ended is None or not span.start <= ended <= span.end:
            continue
        scans.append(DeletionScan(
            data_file, ended, None, previous(data_file.data_file_id, ended),
            inlined.get(data_file.data_file_id, {})))
    with_delete_file = {d.data_file_id for d in deletes if d.begin_snapshot <= span.end}
    for data_file_id, rows in sorted(inlined.items()):
        if data_file_id not in data or data_file_id in with_delete_file:
            continue
        data_file = data[data_file_id]
        ended = data_file.end_snapshot
        if ended is not None and span.start <= ended <= span.end:
            continue
        scans.append(DeletionScan(data_file, min(rows.values()), None, None, rows))
    return scans


def _inlined_file_deletes(lake: Catalog, table_id: int, span: ChangeRange,
                          conn: Connection) -> dict[int, dict[int, int]]:
    """Inlined deletes of Parquet rows made in ``span``: file id -> {position: snapshot}."""
    name = inlined_delete_table(table_id)
    if not lake.has_table(name, conn):
        return {}
    out: dict[int, dict[int, int]] = {}
    rows = cast("Sequence[tuple[int, int, int]]", conn.execute(
        text(f"SELECT file_id, row_id, begin_snapshot FROM {lake.t(name)} "
             "WHERE begin_snapshot >= :s AND begin_snapshot <= :e"),
        {"s": span.start, "e": span.end}).all())
    for fid, pos, sid in rows:
        out.setdefault(int(fid), {})[int(pos)] = int(sid)
    return out


def deleted_rows(scan: DeletionScan, table_dir: str, span: ChangeRange) -> dict[int, int | None]:
    """Positions of ``scan.data_file`` deleted in ``span`` -> the snapshot that deleted each.

    A delete file with embedded snapshot ids is cumulative, so its ids alone select the range;
    a plain one also lists older deletes, so the previous delete file's rows are taken away.
    ``None`` marks a row of a plain delete file: DuckDB reports the data file's own embedded
    snapshot id for it when the file has one (a flushed or merged file), else
    ``scan.snapshot_id``.
    """
    count = scan.data_file.record_count
    rows: dict[int, int | None] = {}
    embedded = False
    if scan.delete_file is not None:
        positions, snapshots = _read_deletes(scan.delete_file, table_dir)
        embedded = snapshots is not None
        for i, pos in enumerate(positions):
            snapshot = snapshots[i] if snapshots is not None else None
            if snapshot is not None and not span.start <= snapshot <= span.end:
                continue
            rows[_in_range(pos, count, scan)] = snapshot
    elif not scan.inlined_deletes:
        rows = dict.fromkeys(range(count), scan.snapshot_id)
    for pos, snapshot in scan.inlined_deletes.items():
        rows[_in_range(pos, count, scan)] = snapshot
    if scan.previous_delete_file is not None and not embedded:
        for pos in _read_deletes(scan.previous_delete_file, table_dir)[0]:
            rows.pop(_in_range(pos, count, scan), None)
    return rows


def _in_range(pos: int, count: int, scan: DeletionScan) -> int:
    if not 0 <= pos < count:
        raise DataFileError(
            f"delete position {pos} is out of range for data file {scan.data_file.path} "
            f"({count} rows)")
    return pos


def _read_deletes(delete_file: DeleteFile, table_dir: str) -> tuple[list[int], list[int] | None]:
    if delete_file.format != "parquet":
        raise DataFileError(f"delete file {delete_file.path} has format {delete_file.format!r}; "
                            "only Parquet delete files can be read")
    path = join_path(table_dir, delete_file.path, delete_file.path_is_relative)
    table = lake_files.read_table(path)
    positions = [int(p) for p in table.column("pos").to_pylist()]
    if SNAPSHOT_ID_COLUMN in table.column_names:
        return positions, [int(s) for s in table.column(SNAPSHOT_ID_COLUMN).to_pylist()]
    return positions, None

