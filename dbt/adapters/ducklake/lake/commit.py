"""One DuckLake snapshot per commit: staged changes, fresh ids, conflict check and retry.

A :class:`Transaction` records *what* to change (create a table, add data files, delete rows, ...),
not the ids. :meth:`Transaction.commit` then runs one catalog transaction that reads the latest
snapshot, checks every snapshot committed since the transaction began against DuckLake's conflict
table, allocates catalog ids, file ids and row ids, and writes the rows in the order DuckDB writes
them (``DuckLakeTransactionState::Commit`` in duckdb/ducklake@v1.5-variegata
src/storage/ducklake_transaction_state.cpp). A lost race on the snapshot id rolls back and retries
with a growing, jittered wait; a logical conflict fails with :class:`CommitConflictError`, except
the one a statement can resolve itself: rows inserted concurrently into a table it deletes from
(see :attr:`Transaction.replanner`).
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from . import bootstrap, faults, streams
from . import stats as lake_stats
from .catalog import in_list
from .conflicts import REPLANNABLE, find_conflict, quote_name
from .errors import (
    AlreadyExistsError,
    CatalogConnectionError,
    CommitConflictError,
    CommitFailedError,
    CommitUnknownError,
    InvalidArgumentError,
    NotFoundError,
    first_line,
)
from .models import (
    BranchStatement,
    ColumnInfo,
    ColumnSpec,
    FileColumnStats,
    PublishReplan,
    Snapshot,
    TableInfo,
    TableRef,
    split_changes,
)
from .types import LakeType

if TYPE_CHECKING:
    from .catalog import Catalog

log = logging.getLogger("dbt.adapters.ducklake.lake")

MAX_RETRY_COUNT_DEFAULT = 10
RETRY_WAIT_MS_DEFAULT = 100
RETRY_BACKOFF_DEFAULT = 1.5

SAFE_DIR_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def uuid7() -> str:
    """A UUIDv7 string (time-ordered), as DuckDB uses for file and table names."""
    ms = int(time.time() * 1000)
    rand = random.getrandbits(74)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def dir_name(name: str, fallback_uuid: str) -> str:
    """A schema or table directory: the name itself when it is plain, else its UUID."""
    return name if name and set(name) <= SAFE_DIR_NAME else fallback_uuid


# ---------------------------------------------------------------------------------- context
@dataclass
class CommitContext:
    """The state of one commit attempt: the open connection and the ids being allocated."""

    lake: Catalog
    conn: Connection
    base: Snapshot
    latest: Snapshot
    snapshot_id: int
    schema_version: int
    next_catalog_id: int
    next_file_id: int
    now: datetime
    changes: list[tuple[int, str]] = field(default_factory=list)
    structural: bool = False
    table_ids: dict[str, int] = field(default_factory=dict)
    schema_ids: dict[str, int] = field(default_factory=dict)
    schema_version_rows: list[int] = field(default_factory=list)
    after_commit: list[Callable[[], None]] = field(default_factory=list)
    on_failure: list[Callable[[], None]] = field(default_factory=list)

    def exec(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        return self.conn.execute(text(sql), params or {})

    def t(self, name: str) -> str:
        return self.lake.t(name)

    def catalog_id(self) -> int:
        value = self.next_catalog_id
        self.next_catalog_id += 1
        return value

    def file_id(self) -> int:
        value = self.next_file_id
        self.next_file_id += 1
        return value

    def change(self, order: int, token: str) -> None:
        if (order, token) not in self.changes:
            self.changes.append((order, token))

    def bump_schema(self) -> None:
        if not self.structural:
            self.structural = True
            self.schema_version += 1

    def resolve_table(self, ref: TableRef) -> TableInfo:
        if ref.table_id is not None:
            table = self.lake.table_by_id(ref.table_id, self.latest.snapshot_id, self.conn)
            if table is None and ref.table_id in self.table_ids.values():
                table = self.lake.table_by_id(ref.table_id, self.snapshot_id, self.conn)
            if table is None:
                raise NotFoundError(f"table id {ref.table_id} no longer exists in the lake")
            return table
        key = f"{ref.schema_name}.{ref.table_name}"
        if key in self.table_ids:
            found = self.lake.table_by_id(self.table_ids[key], self.snapshot_id, self.conn)
            assert found is not None
            return found
        assert ref.schema_name is not None and ref.table_name is not None
        return self.lake.table(ref.schema_name, ref.table_name, self.latest.snapshot_id,
                               self.conn)


# Order of change tokens as DuckDB writes them (``WriteSnapshotChanges`` in
# duckdb/ducklake@v1.5-variegata src/storage/ducklake_transaction_state.cpp; the tokens:
# https://ducklake.select/docs/stable/specification/tables/ducklake_snapshot_changes).
ORDER = {
    "dropped_schema": 0, "dropped_table": 1, "dropped_view": 2, "created_schema": 3,
    "created_table": 4, "created_view": 4, "inserted_into_table": 7, "deleted_from_table": 8,
    "altered_table": 9, "altered_view": 10, "inlined_insert": 11, "inlined_delete": 12,
    "inline_flush": 13, "merge_adjacent": 14, "rewrite_delete": 15,
}

# the change kinds that delete rows of a table a statement may re-plan for
DELETE_KINDS = frozenset({"deleted_from_table", "inlined_delete"})

Op = Callable[[CommitContext], None]
# (since, until): stage what the statement does to the rows inserted in snapshots
# ``since < s <= until``, or raise CommitConflictError when it cannot
Replanner = Callable[[Snapshot, Snapshot], None]


class Transaction:
    """Staged changes that become exactly one DuckLake snapshot when committed."""

    def __init__(self, lake: Catalog, base: Snapshot | None = None) -> None:
        self.lake = lake
        self.base = base or lake.latest_snapshot()
        self._ops: list[tuple[int, Op]] = []
        self._tokens: list[str] = []  # the kinds of change, for the conflict check
        self._touched_data_files: set[int] = set()
        self.files_written: list[str] = []  # absolute paths to remove if the commit fails
        self.result: Snapshot | None = None
        self._dropped: list[Snapshot] = []  # attempts whose COMMIT lost the connection
        # A DELETE, UPDATE or MERGE sets this. When the only snapshots that conflict with it
        # inserted rows into a table it deletes from, its deletes of existing rows still
        # hold (DuckLake deletes by file position and row id), so instead of failing, the
        # commit asks the statement to apply itself to the new rows too and lands on the
        # newer snapshot, as if the statement had started there. The first time it plans the
        # backlog without holding the lake; after that it plans while holding the claimed
        # snapshot id, so a steady stream of inserts cannot starve it.
        self.replanner: Replanner | None = None
        self.replans = 0
        # The same statement's re-plan at a branch's publish (:mod:`.publish`), when this
        # transaction commits in a branch: there the statement has committed long before,
        # and the rows others inserted are the lake's, not the branch's.
        self.publish_replan: PublishReplan | None = None
        # A stream's micro-batch (:meth:`once`): ``mark`` goes into commit_extra_info, and
        # ``committed_as`` answers, inside the commit's catalog transaction, the snapshot that
        # already holds this change. Then nothing is committed, the files written for it are
        # removed and ``replayed`` is that snapshot.
        self.mark: streams.StreamBatch | None = None
        self.committed_as: Callable[[Connection], Snapshot | None] | None = None
        self.replayed: Snapshot | None = None

    # ------------------------------------------------------------------ staging API
    def add(self, phase: int, op: Op, *tokens: str) -> None:
        """Stage an operation. Phases follow DuckDB's batch order (see the module docstring)."""
        self._ops.append((phase, op))
        self._tokens.extend(tokens)

    def touch_data_files(self, ids: Sequence[int]) -> None:
        self._touched_data_files.update(ids)

    @property
    def empty(self) -> bool:
        return not self._ops

    def once(self, batch: streams.StreamBatch) -> None:
        """Commit this as ``batch`` of a stream: at most once (:mod:`.streams`)."""
        lake = self.lake
        self.mark = batch
        self.committed_as = lambda conn: streams.committed(lake, conn, batch)

    # ------------------------------------------------------------------ commit
    def commit(
        self,
        author: str | None = None,
        commit_message: str | None = None,
        commit_extra_info: str | dict[str, Any] | None = None,
        max_retry_count: int | None = None,
        retry_wait_ms: float = RETRY_WAIT_MS_DEFAULT,
        retry_backoff: float = RETRY_BACKOFF_DEFAULT,
    ) -> Snapshot:
        """Write one snapshot; retry lost snapshot-id races; fail on logical conflicts.

        ``max_retry_count`` defaults to the lake's (the profile's ``max_retry_count``)."""
        if max_retry_count is None:
            max_retry_count = getattr(self.lake, "max_retry_count", MAX_RETRY_COUNT_DEFAULT)
        if self.mark is not None:
            commit_extra_info = streams.with_mark(commit_extra_info, self.mark)
        if isinstance(commit_extra_info, dict):
            commit_extra_info = json.dumps(commit_extra_info, sort_keys=True, default=str)
        faults.reach("files_published")
        self._dropped.clear()
        attempt = 0
        while True:
            try:
                snapshot = self._attempt(author, commit_message, commit_extra_info)
            except _Replan as exc:
                try:
                    self._replan(exc.latest)
                except BaseException:
                    self.discard_files()
                    raise
                continue
            except _AlreadyCommitted as exc:
                self.discard_files()
                log.info("snapshot %d already holds this change (%s); nothing was committed",
                         exc.snapshot.snapshot_id, self.mark)
                self.replayed = self.result = exc.snapshot
                return exc.snapshot
            except _CommitDropped as exc:
                if attempt >= max_retry_count:
                    self.discard_files()
                    raise _dropped_error(exc, attempt) from exc.__cause__
                log.warning("the catalog connection failed during COMMIT (%s); the commit did "
                            "not land, retrying", first_line(exc.__cause__ or exc))
            except (IntegrityError, OperationalError) as exc:
                if not _retryable(exc) or attempt >= max_retry_count:
                    self.discard_files()
                    raise _rejected_error(exc, attempt) from exc
                log.debug("commit attempt %d lost a race (%s); retrying",
                          attempt, first_line(exc))
            except (CommitConflictError, AlreadyExistsError, NotFoundError,
                    InvalidArgumentError):
                self.discard_files()
                raise
            except CommitUnknownError:
                self.files_written.clear()  # the snapshot may reference them: keep them
                raise
            except DBAPIError as exc:
                self.discard_files()
                raise _catalog_error(exc) from exc
            except BaseException:
                self.discard_files()
                raise
            else:
                self.result = snapshot
                self._record_in_branch(snapshot)
                return snapshot
            self._wait(attempt, retry_wait_ms, retry_backoff)
            attempt += 1

    def _record_in_branch(self, snapshot: Snapshot) -> None:
        """In a branch's catalog, keep what the publish needs to re-plan a snapshot that
        deleted rows (:class:`BranchStatement`)."""
        log = self.lake.branch_statements
        if log is None:
            return
        tables = frozenset(int(value) for kind, _, value in
                           (t.partition(":") for t in snapshot.changes)
                           if kind in DELETE_KINDS and value.isdigit())
        if tables:
            log.append(BranchStatement(snapshot.snapshot_id, tables, self.publish_replan))

    @staticmethod
    def _wait(attempt: int, retry_wait_ms: float, retry_backoff: float) -> None:
        wait = retry_wait_ms * random.uniform(0.5, 1.0) * retry_backoff**attempt
        time.sleep(wait / 1000.0)

    def discard_files(self) -> None:
        """Remove files written for a commit that certainly did not land."""
        from .files import remove_file

        for path in self.files_written:
            remove_file(path)
        self.files_written.clear()

    def _attempt(
        self, author: str | None, message: str | None, extra: str | None
    ) -> Snapshot:
        lake = self.lake
        ctx: CommitContext | None = None
        sent: _Sent | None = None
        try:
            with lake.write() as conn:
                bootstrap.check_version(lake, conn)
                latest = lake.latest_snapshot(conn)
                landed = self._landed_earlier(conn, latest)
                if landed is not None:
                    return landed
                if self.committed_as is not None:
                    earlier = self.committed_as(conn)
                    if earlier is not None:
                        raise _AlreadyCommitted(earlier)
                replan = latest.snapshot_id != self.base.snapshot_id and \
                    self._check_conflicts(conn, latest)
                if replan and self.replans == 0:
                    raise _Replan(latest)  # leaves the block: rolled back, nothing claimed
                backend = _backend_pid(conn, lake.dialect)
                ctx = _claim_snapshot(lake, conn, self.base, latest)
                if replan:
                    # No other writer can commit until this transaction ends: the rows
                    # inserted up to ``latest`` are all there is to plan for.
                    self._replan(latest)
                    ctx.base = self.base
                for _, op in sorted(self._ops, key=lambda item: item[0]):
                    op(ctx)
                sent = _Sent(_close_snapshot(ctx, author, message, extra), backend)
                # Leaving the block sends COMMIT; from here on a failure may hide a commit
                # that landed. (Injected faults stand in for a failing COMMIT.)
                faults.reach("catalog_transaction", conn=conn)
        except BaseException as exc:
            dropped = sent is not None and isinstance(exc, DBAPIError)
            if dropped:
                assert sent is not None
                landed = self._check_landed(sent, exc)
                if landed is not None:
                    return landed
                self._dropped.append(sent.snapshot)
            if ctx is not None:
                for undo in ctx.on_failure:
                    undo()
            if dropped:
                raise _CommitDropped() from exc
            raise
        for hook in ctx.after_commit:
            # The snapshot has landed: a failing follow-up must not make the caller treat
            # the commit as failed (and remove the files it references).
            try:
                hook()
            except Exception as exc:  # noqa: BLE001
                log.warning("after snapshot %d landed, a follow-up step failed: %s",
                            sent.snapshot.snapshot_id, first_line(exc))
        return sent.snapshot

    # ------------------------------------------------------------------ ambiguous commits
    def _check_landed(self, sent: _Sent, exc: BaseException) -> Snapshot | None:
        """After the connection failed during COMMIT: did our snapshot land?

        A fresh connection looks for the snapshot by its fingerprint (id, microsecond time,
        ids after the commit, changes and commit info: no other writer produces the same).
        On PostgreSQL the old server process must be gone first, or a COMMIT still in
        flight could land after we looked. Raises :class:`CommitUnknownError` when the
        catalog cannot be asked.
        """
        lake = self.lake
        deadline = time.monotonic() + AMBIGUOUS_CHECK_SECONDS
        last: BaseException = exc
        while time.monotonic() < deadline:
            try:
                with lake.read() as conn:
                    if sent.backend is not None and _backend_alive(conn, sent.backend):
                        raise _StillRunning()
                    if _fingerprint_found(lake, conn, sent.snapshot):
                        log.warning("the catalog connection failed during COMMIT (%s), but "
                                    "snapshot %d landed", first_line(exc),
                                    sent.snapshot.snapshot_id)
                        return sent.snapshot
                    return None
            except (_StillRunning, CatalogConnectionError, DBAPIError) as retry:
                last = retry
                time.sleep(0.2)
        raise CommitUnknownError(
            f"the catalog connection failed during COMMIT of snapshot "
            f"{sent.snapshot.snapshot_id} ({first_line(exc)}), and whether it landed cannot "
            f"be checked ({first_line(last)}). Its files were kept. Look at the lake's "
            "latest snapshots (ducklake_snapshots()) before writing again."
        ) from exc

    def _landed_earlier(self, conn: Connection, latest: Snapshot) -> Snapshot | None:
        """A snapshot of an earlier attempt whose COMMIT outcome was unclear, if it landed."""
        for snapshot in self._dropped:
            if snapshot.snapshot_id <= latest.snapshot_id and \
                    _fingerprint_found(self.lake, conn, snapshot):
                return snapshot
        return None

    def _replan(self, latest: Snapshot) -> None:
        assert self.replanner is not None
        log.info("rows were inserted concurrently into a table this statement deletes from "
                 "(snapshots %d to %d); applying the statement to them too",
                 self.base.snapshot_id + 1, latest.snapshot_id)
        self.replanner(self.base, latest)
        self.base = latest
        self.replans += 1

    def _check_conflicts(self, conn: Connection, latest: Snapshot) -> bool:
        """Raise :class:`CommitConflictError` on a conflict; ``True`` when the only conflicts
        are inserts the statement can plan for (:attr:`replanner`)."""
        lake = self.lake
        rows = cast("Sequence[tuple[str | None]]", conn.execute(
            text(f"SELECT changes_made FROM {lake.t('ducklake_snapshot_changes')} "
                 "WHERE snapshot_id > :b"),
            {"b": self.base.snapshot_id},
        ).all())
        theirs: list[str] = []
        for (changes,) in rows:
            theirs.extend(split_changes(changes))
        schema_ids = {s.schema_name: s.schema_id for s in lake.schemas(self.base.snapshot_id,
                                                                       conn)}
        ignore = REPLANNABLE if self.replanner is not None else frozenset()
        message = find_conflict(self._tokens, theirs, schema_ids, ignore)
        if message is None and self._touched_data_files:
            message = self._data_file_overlap(conn)
        if message is None:
            return bool(ignore) and find_conflict(self._tokens, theirs, schema_ids) is not None
        raise CommitConflictError(
            f"commit conflict: {message} (this transaction started at snapshot "
            f"{self.base.snapshot_id}; the lake is now at {latest.snapshot_id}). Nothing "
            "was committed; rerun the statement."
        )

    def _data_file_overlap(self, conn: Connection) -> str | None:
        marks, params = in_list(sorted(self._touched_data_files), "d")
        params["b"] = self.base.snapshot_id
        lake = self.lake
        row = conn.execute(
            text(f"SELECT data_file_id FROM {lake.t('ducklake_delete_file')} WHERE "
                 f"data_file_id IN ({marks}) AND begin_snapshot > :b LIMIT 1"),
            params,
        ).first()
        if row is None:
            row = conn.execute(
                text(f"SELECT data_file_id FROM {lake.t('ducklake_data_file')} WHERE "
                     f"data_file_id IN ({marks}) AND end_snapshot IS NOT NULL "
                     "AND end_snapshot > :b LIMIT 1"),
                params,
            ).first()
        if row is None:
            return None
        return f"another transaction deleted rows from the same data file (id {row[0]})"


def _claim_snapshot(lake: Catalog, conn: Connection, base: Snapshot,
                    latest: Snapshot) -> CommitContext:
    """The context of a commit on top of ``latest``, whose snapshot id it claims first, as
    DuckDB does, so that a racing writer fails early."""
    now = datetime.now(timezone.utc)
    ctx = CommitContext(
        lake=lake, conn=conn, base=base, latest=latest, snapshot_id=latest.snapshot_id + 1,
        schema_version=latest.schema_version, next_catalog_id=latest.next_catalog_id,
        next_file_id=latest.next_file_id, now=now,
    )
    ctx.exec(
        f"INSERT INTO {ctx.t('ducklake_snapshot')} VALUES (:sid, :t, :sv, :nc, :nf)",
        {"sid": ctx.snapshot_id, "t": lake.encode_time(now), "sv": latest.schema_version,
         "nc": latest.next_catalog_id, "nf": latest.next_file_id},
    )
    return ctx


def _close_snapshot(ctx: CommitContext, author: str | None, message: str | None,
                    extra: str | None) -> Snapshot:
    """After the staged operations ran: the schema versions they bumped, the snapshot's final
    id counters and its ``ducklake_snapshot_changes`` row; the snapshot as it will land."""
    for tid in ctx.schema_version_rows:
        ctx.exec(
            f"INSERT INTO {ctx.t('ducklake_schema_versions')} VALUES (:s, :v, :t)",
            {"s": ctx.snapshot_id, "v": ctx.schema_version, "t": tid},
        )
    ctx.exec(
        f"UPDATE {ctx.t('ducklake_snapshot')} SET schema_version = :sv, "
        "next_catalog_id = :nc, next_file_id = :nf WHERE snapshot_id = :sid",
        {"sv": ctx.schema_version, "nc": ctx.next_catalog_id, "nf": ctx.next_file_id,
         "sid": ctx.snapshot_id},
    )
    changes = ",".join(t for _, t in sorted(ctx.changes, key=lambda c: c[0])) or None
    ctx.exec(
        f"INSERT INTO {ctx.t('ducklake_snapshot_changes')} VALUES (:sid, :c, :a, :m, :e)",
        {"sid": ctx.snapshot_id, "c": changes, "a": author, "m": message, "e": extra},
    )
    return Snapshot(ctx.snapshot_id, ctx.now, ctx.schema_version, ctx.next_catalog_id,
                    ctx.next_file_id, changes, author, message, extra)


# ---------------------------------------------------------------------------------- helpers
AMBIGUOUS_CHECK_SECONDS = 30.0


@dataclass(frozen=True)
class _Sent:
    """A snapshot whose COMMIT was sent, and the PostgreSQL server process that sent it."""

    snapshot: Snapshot
    backend: int | None


class _Replan(Exception):
    """Only concurrent inserts conflict: plan for them, then attempt again."""

    def __init__(self, latest: Snapshot) -> None:
        super().__init__(latest.snapshot_id)
        self.latest = latest


class _AlreadyCommitted(Exception):
    """An earlier snapshot holds this change (``Transaction.once``): commit nothing."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__(snapshot.snapshot_id)
        self.snapshot = snapshot


class _CommitDropped(Exception):
    """The connection failed during COMMIT and the snapshot certainly did not land."""


class _StillRunning(Exception):
    """The server process of a dropped connection has not exited yet."""


def _backend_pid(conn: Connection, dialect: str) -> int | None:
    if dialect != "postgresql":
        return None  # SQLite: a failed COMMIT is rolled back by the same process
    return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _backend_alive(conn: Connection, pid: int) -> bool:
    row = conn.execute(text("SELECT 1 FROM pg_stat_activity WHERE pid = :p"), {"p": pid})
    return row.first() is not None


def _fingerprint_found(lake: Catalog, conn: Connection, snapshot: Snapshot) -> bool:
    found = lake.find_snapshot(snapshot.snapshot_id, conn)
    if found is None:
        return False
    return (found.snapshot_time, found.schema_version, found.next_catalog_id,
            found.next_file_id, found.changes_made, found.author, found.commit_message,
            found.commit_extra_info) == (
        snapshot.snapshot_time, snapshot.schema_version, snapshot.next_catalog_id,
        snapshot.next_file_id, snapshot.changes_made, snapshot.author,
        snapshot.commit_message, snapshot.commit_extra_info)


def permission_denied(exc: BaseException) -> bool:
    """Whether a catalog error says this role (or a read-only SQLite file) may not write."""
    msg = str(exc).lower()
    return "permission denied" in msg or "insufficient privilege" in msg or \
        "attempt to write a readonly database" in msg


def _retryable(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return any(word in msg for word in ("primary key", "unique", "conflict", "concurrent",
                                        "database is locked", "duplicate key",
                                        "could not serialize"))


def _dropped_error(exc: _CommitDropped, attempt: int) -> CatalogConnectionError:
    return CatalogConnectionError(
        f"the catalog connection failed while committing, {attempt + 1} times "
        f"({first_line(exc.__cause__ or exc)}); none of the attempts landed, so nothing was "
        "committed. Check the catalog server and rerun.")


def _rejected_error(exc: DBAPIError, attempt: int) -> CommitFailedError:
    if _retryable(exc):
        return CommitFailedError(
            f"could not commit after {attempt + 1} attempts because other writers kept "
            f"committing first ({first_line(exc)}); the lake is unchanged. Retry later or "
            "raise max_retry_count.")
    return CommitFailedError(
        f"the catalog rejected the commit: {first_line(exc)}; the lake is unchanged")


def _catalog_error(exc: DBAPIError) -> CommitFailedError | CatalogConnectionError:
    if permission_denied(exc):
        return CommitFailedError(
            f"the catalog refused the write: {first_line(exc)}. This role may read the lake "
            "but not write to it (see README, Access control); nothing was committed")
    return CatalogConnectionError(
        f"the catalog failed during the commit: {first_line(exc)}; nothing was committed")


def insert_rows(ctx: CommitContext, table: str, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    cols = list(rows[0])
    names = ", ".join(quote_name(c) for c in cols)
    # Parameters by position: a column's name (an inlined table's columns are the user's,
    # e.g. ``sum(amount)``) is not a valid bind-parameter name.
    marks = ", ".join(f":p{i}" for i in range(len(cols)))
    params = [{f"p{i}": row[c] for i, c in enumerate(cols)} for row in rows]
    ctx.conn.execute(text(f"INSERT INTO {ctx.t(table)} ({names}) VALUES ({marks})"), params)


def column_rows(
    ctx: CommitContext, table_id: int, specs: Sequence[ColumnSpec], first_id: int,
    parent: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """``ducklake_column`` rows for new columns, ids assigned depth-first, parents first."""
    rows: list[dict[str, Any]] = []
    next_id = first_id
    for spec in specs:
        column_id = next_id
        next_id += 1
        nested = LakeType.parse(spec.type).nested
        rows.append({
            "column_id": column_id, "begin_snapshot": ctx.snapshot_id, "end_snapshot": None,
            "table_id": table_id, "column_order": column_id, "column_name": spec.name,
            "column_type": spec.type, "initial_default": spec.initial_default,
            "default_value": spec.default_value if spec.default_value is not None else "NULL",
            "nulls_allowed": spec.nulls_allowed, "parent_column": parent,
            "default_value_type": "" if nested else "literal",
            "default_value_dialect": "duckdb",
        })
        child_rows, next_id = column_rows(ctx, table_id, spec.children, next_id, column_id)
        rows.extend(child_rows)
    return rows, next_id


def leaf_ids(columns: Sequence[ColumnInfo]) -> list[tuple[int, LakeType]]:
    out: list[tuple[int, LakeType]] = []
    for col in columns:
        for node in col.walk():
            if not node.children and not node.type.nested:
                out.append((node.column_id, node.type))
    return out


def _had_values(ctx: CommitContext, table_id: int, column_id: int) -> bool | None:
    """Whether a column of a table held any non-NULL value before this commit.

    Decides whether a NULL table-level bound means "no values yet" or "unknown".
    """
    row = ctx.exec(
        f"SELECT 1 FROM {ctx.t('ducklake_file_column_stats')} WHERE table_id = :t AND "
        "column_id = :c AND (value_count IS NULL OR value_count > 0) LIMIT 1",
        {"t": table_id, "c": column_id}).first()
    if row is not None:
        return True
    if ctx.lake.inlined_data_tables(table_id, ctx.conn):
        return None  # inlined values may exist; their bounds are unknown here
    return False


def update_table_stats(
    ctx: CommitContext,
    table: TableInfo,
    columns: Sequence[ColumnInfo],
    added_rows: int,
    added_bytes: int,
    row_id_advance: int,
    file_stats: Sequence[FileColumnStats],
    inlined_stats: Sequence[FileColumnStats] = (),
) -> int:
    """Advance ``ducklake_table_stats`` and widen ``ducklake_table_column_stats``.

    Returns the table's ``next_row_id`` before this change (the first row id to allocate).
    """
    lake = ctx.lake
    current = lake.table_stats(table.table_id, ctx.conn)
    types = dict(leaf_ids(columns))
    merged: dict[int, Any] = {}
    existing = lake.table_column_stats(table.table_id, ctx.conn) if current else {}
    for stats in list(file_stats) + list(inlined_stats):
        if stats.column_id not in types:
            continue
        base = merged.get(stats.column_id, existing.get(stats.column_id))
        if current is not None and stats.column_id not in existing:
            continue  # columns added after the first data commit never get a row (DuckDB)
        had = None
        if base is not None and (base.min_value is None or base.max_value is None):
            had = _had_values(ctx, table.table_id, stats.column_id)
        merged[stats.column_id] = lake_stats.widen_table_column_stats(
            base, table.table_id, stats.column_id, stats, types[stats.column_id],
            had_values=had if base is not None else False,
        )
    if current is None:
        ctx.exec(
            f"INSERT INTO {ctx.t('ducklake_table_stats')} VALUES (:t, :r, :n, :b)",
            {"t": table.table_id, "r": added_rows, "n": row_id_advance, "b": added_bytes},
        )
        rows = []
        for column_id, _ in leaf_ids(columns):
            s = merged.get(column_id)
            rows.append({
                "table_id": table.table_id, "column_id": column_id,
                "contains_null": s.contains_null if s else None,
                "contains_nan": s.contains_nan if s else None,
                "min_value": s.min_value if s else None, "max_value": s.max_value if s else None,
                "extra_stats": None,
            })
        insert_rows(ctx, "ducklake_table_column_stats", rows)
        return 0
    ctx.exec(
        f"UPDATE {ctx.t('ducklake_table_stats')} SET record_count = record_count + :r, "
        "next_row_id = next_row_id + :n, file_size_bytes = file_size_bytes + :b "
        "WHERE table_id = :t",
        {"t": table.table_id, "r": added_rows, "n": row_id_advance, "b": added_bytes},
    )
    # Only the rows the commit widened, in one batch: a small commit to a wide table would
    # otherwise pay one catalog round trip per column for rows that stay as they are.
    changed = [{"cn": s.contains_null, "nan": s.contains_nan, "mn": s.min_value,
                "mx": s.max_value, "t": table.table_id, "c": column_id}
               for column_id, s in merged.items() if s != existing.get(column_id)]
    if changed:
        ctx.conn.execute(text(
            f"UPDATE {ctx.t('ducklake_table_column_stats')} SET contains_null = :cn, "
            "contains_nan = :nan, min_value = :mn, max_value = :mx "
            "WHERE table_id = :t AND column_id = :c"), changed)
    return current.next_row_id


__all__ = [
    "CommitContext",
    "Transaction",
    "quote_name",
    "uuid7",
]
