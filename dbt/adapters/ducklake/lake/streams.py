"""Exactly-once commits for streams: each micro-batch lands in at most one snapshot.

A stream that writes a table marks every snapshot it commits with its id and the batch's id,
in ``ducklake_snapshot_changes.commit_extra_info`` (JSON, key ``ducklake_stream``), in the
same catalog transaction as the data (``Transaction.once``): Delta's
``SetTransaction(appId, version)`` and Iceberg's snapshot summary, in DuckLake's own commit
metadata. Before committing, the commit looks up the stream's latest mark for the table
*inside* that transaction (the snapshot id serialises every commit, so two writers of the
same batch cannot both pass):

* no mark, or an older batch: commit;
* the same batch: a replay (Spark restarted after the commit but before its own commit log):
  commit nothing and answer the snapshot that holds the batch;
* a newer batch: the stream's checkpoint went back (deleted, reset or restored): refuse with
  :class:`StreamCheckpointError` rather than write the batches a second time.

Marks are per table, so one ``foreachBatch`` may write several tables with the same ids. The
lookup is an index-free ``LIKE`` over ``commit_extra_info``, newest first, over the latest
``RECENT_SNAPSHOTS`` snapshots and only then the rest (``benchmarks/stream_marks.py``: 1.5 ms
with 100,000 snapshots when the mark is recent; a new stream's first batch, or one paused
while others committed more than that, scans all: 0.2-0.3 s on SQLite). Expired snapshots
take their marks with them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from .errors import DuckLakeError, InvalidArgumentError
from .models import Snapshot

if TYPE_CHECKING:
    from .catalog import Catalog

MARK_KEY = "ducklake_stream"
# How many of the latest snapshots are searched for a mark before the rest.
RECENT_SNAPSHOTS = 1000


class StreamCheckpointError(DuckLakeError):
    """A stream asked to commit a batch older than one it already committed."""


@dataclass(frozen=True)
class StreamBatch:
    """One micro-batch of a stream writing one table: the stream's stable id (its checkpoint
    location, or one the user chose), the batch id and the table's id."""

    stream_id: str
    batch_id: int
    table_id: int

    def __post_init__(self) -> None:
        if not isinstance(self.stream_id, str) or not self.stream_id:
            raise InvalidArgumentError("a stream id must be a non-empty string")
        if isinstance(self.batch_id, bool) or not isinstance(self.batch_id, int) \
                or self.batch_id < 0:
            raise InvalidArgumentError(
                f"a batch id must be an integer >= 0, not {self.batch_id!r}")

    def mark(self) -> dict[str, Any]:
        return {"batch": self.batch_id, "id": self.stream_id, "table_id": self.table_id}


@dataclass(frozen=True)
class LastBatch:
    """The stream's latest committed batch for a table, and the snapshot that holds it."""

    batch_id: int
    snapshot: Snapshot


def with_mark(extra_info: str | Mapping[str, Any] | None, batch: StreamBatch
              ) -> dict[str, Any]:
    """``commit_extra_info`` as a dict, with the batch's mark added."""
    if extra_info is None:
        info: dict[str, Any] = {}
    elif isinstance(extra_info, Mapping):
        info = dict(extra_info)
    else:
        try:
            parsed = json.loads(extra_info)
        except ValueError:
            parsed = None
        info = dict(parsed) if isinstance(parsed, dict) else {"extra_info": extra_info}
    info[MARK_KEY] = batch.mark()
    return info


def _like_pattern(stream_id: str, table_id: int) -> str:
    """A ``LIKE`` pattern (escape ``\\``) matching the mark as ``json.dumps(sort_keys=True)``
    spells it; rows it matches are confirmed by parsing them."""
    inner = f'"id": {json.dumps(stream_id)}, "table_id": {int(table_id)}}}'
    escaped = inner.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    key = f'"{MARK_KEY}": {{"batch": '.replace("_", "\\_")
    return f"%{key}%, {escaped}%"


def last_batch(lake: Catalog, conn: Connection, stream_id: str, table_id: int
               ) -> LastBatch | None:
    """The stream's latest committed batch for the table, if any snapshot still holds one."""
    latest = int(conn.execute(text(
        f"SELECT max(snapshot_id) FROM {lake.t('ducklake_snapshot_changes')}")).scalar_one())
    # Recent snapshots first (a range of the primary key): a running stream's last batch is
    # nearly always there; only a new stream, or one that paused while others committed
    # many snapshots, scans the rest.
    for low, high in ((latest - RECENT_SNAPSHOTS, latest), (-1, latest - RECENT_SNAPSHOTS)):
        if high < 0:
            break
        rows = conn.execute(
            text(f"SELECT snapshot_id, commit_extra_info FROM "
                 f"{lake.t('ducklake_snapshot_changes')} WHERE snapshot_id > :lo AND "
                 "snapshot_id <= :hi AND commit_extra_info LIKE :p ESCAPE '\\' "
                 "ORDER BY snapshot_id DESC"),
            {"p": _like_pattern(stream_id, table_id), "lo": low, "hi": high},
        ).all()
        for snapshot_id, extra in rows:
            try:
                mark = json.loads(str(extra)).get(MARK_KEY)
            except (ValueError, AttributeError):
                continue
            if isinstance(mark, dict) and mark.get("id") == stream_id and \
                    mark.get("table_id") == table_id and isinstance(mark.get("batch"), int):
                return LastBatch(mark["batch"],
                                 lake.snapshot(version=int(str(snapshot_id)), conn=conn))
    return None


def committed(lake: Catalog, conn: Connection, batch: StreamBatch) -> Snapshot | None:
    """The snapshot holding ``batch`` if the stream committed it already, else ``None``;
    raises :class:`StreamCheckpointError` when the stream committed a later batch."""
    last = last_batch(lake, conn, batch.stream_id, batch.table_id)
    if last is None or last.batch_id < batch.batch_id:
        return None
    if last.batch_id == batch.batch_id:
        return last.snapshot
    raise StreamCheckpointError(
        f"stream {batch.stream_id!r} asked to commit batch {batch.batch_id} to table id "
        f"{batch.table_id}, but it already committed batch {last.batch_id} there (snapshot "
        f"{last.snapshot.snapshot_id}): its checkpoint was deleted, reset or restored from "
        "an older copy. Committing would write those batches twice, so nothing was "
        "committed. Restore the checkpoint, or start the stream under a new stream id "
        "(another checkpoint location, or the streamId option) if the table should take "
        "the data again."
    )


__all__ = [
    "MARK_KEY",
    "LastBatch",
    "StreamBatch",
    "StreamCheckpointError",
    "committed",
    "last_batch",
    "with_mark",
]
