"""``CHECKPOINT``: every maintenance step, in the order DuckDB's checkpoint runs them.

flush inlined data → expire snapshots → merge adjacent files → rewrite data files → clean up old
files → delete orphaned files (duckdb/ducklake@v1.5-variegata src/storage/ducklake_checkpoint.cpp).
Each step uses the lake's options for its defaults (``expire_older_than``, ``target_file_size``,
``rewrite_delete_threshold``, ``delete_older_than``, ``auto_compact``), so a checkpoint does what
the lake is configured to.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..lake.cleanup import CleanupResult, cleanup_old_files, delete_orphaned_files
from ..lake.expiry import ExpireResult, expire_snapshots
from .compaction import (
    CompactionResult,
    FlushResult,
    flush_inlined_data,
    merge_adjacent_files,
    rewrite_data_files,
)
from .dml import LakeWriter

log = logging.getLogger("dbt.adapters.ducklake")


@dataclass(frozen=True)
class CheckpointResult:
    """The result of each step of a checkpoint."""

    flush: FlushResult
    expire: ExpireResult
    merge: CompactionResult
    rewrite: CompactionResult
    cleanup: CleanupResult
    orphans: CleanupResult

    def summary(self) -> str:
        return "checkpoint: " + "; ".join(step.summary() for step in (
            self.flush, self.expire, self.merge, self.rewrite, self.cleanup, self.orphans))


def checkpoint(slake: LakeWriter) -> CheckpointResult:
    """Run every maintenance step over the whole lake, in DuckDB's order."""
    result = CheckpointResult(
        flush=flush_inlined_data(slake),
        expire=expire_snapshots(slake.catalog),
        merge=merge_adjacent_files(slake),
        rewrite=rewrite_data_files(slake),
        cleanup=cleanup_old_files(slake.catalog),
        orphans=delete_orphaned_files(slake.catalog),
    )
    log.info("%s", result.summary())
    return result


__all__ = ["CheckpointResult", "checkpoint"]
