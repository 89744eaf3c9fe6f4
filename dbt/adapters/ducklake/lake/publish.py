"""Publishing a branch (:mod:`.branch`): its net change as ONE snapshot on the real lake.

The branch is a real DuckLake catalog that started as a copy of the lake at ``base``. Its net
change is read row by row from every catalog table (:class:`Delta`): versioned rows it added
(``begin_snapshot > base``, still live) and base rows it ended; rows both added and ended in
the branch cancel out (their files are garbage, removed after the publish lands). The
non-versioned tables follow their new parents (file statistics, partition columns, name
mappings, ...), and ``ducklake_table_stats`` / ``ducklake_table_column_stats`` /
``ducklake_metadata`` are diffed against the values kept at the base (:class:`.BaseState`).

:mod:`.replay` writes the delta with fresh ids inside one :class:`~.commit.Transaction`, whose
conflict check sees the collapsed change set (:func:`change_tokens`) exactly as the tokens of
one DuckDB transaction touching the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, text

from .branch_delta import BaseState, Dead, Delta, planned_tokens, read_delta
from .catalog import Catalog, in_list
from .commit import DELETE_KINDS, Replanner, Transaction
from .conflicts import find_conflict, parse_token
from .errors import CommitConflictError
from .models import BranchStatement, Snapshot, split_changes
from .replay import Replay, write_options


# ---------------------------------------------------------------------------------- tokens
def change_tokens(delta: Delta) -> list[str]:
    """The conflict-check tokens of the collapsed change set, in the lake's ids: only what
    names base objects (ids below the base's counters) or new names. Objects the branch
    created have ids nobody else can have touched yet."""
    return [tok for tok in planned_tokens(delta, lambda cid: cid, lambda fid: fid)
            if _names_base(tok, delta.base)]


def _base_id(base: Snapshot, value: Any) -> Any:
    """A catalog id of the lake (below the base's counter); the branch's own are
    :class:`Dead` (an options-only branch publishes no new object)."""
    if value is not None and int(value) >= base.next_catalog_id:
        raise Dead(value)
    return value


def _names_base(token: str, base: Snapshot) -> bool:
    kind, value = parse_token(token)
    if kind.startswith("created_"):
        return True
    return value.isdigit() and int(value) < base.next_catalog_id


# ---------------------------------------------------------------------------------- publish
def publish_branch(lake: Catalog, branch: Catalog, state: BaseState, author: str | None,
                   commit_message: str | None, commit_extra_info: str | dict[str, Any] | None,
                   statements: Sequence[BranchStatement] = (),
                   ) -> tuple[Snapshot | None, set[str]]:
    """Commit the branch's net change as one snapshot; (the snapshot or ``None`` when there
    is nothing to publish, the paths of branch files the snapshot references)."""
    delta = read_delta(branch, state)
    if delta.empty:
        return None, set()
    if not delta.changes_rows:
        # Only options: DuckDB's set_option writes them without a snapshot, and so do we.
        with lake.write() as conn:
            write_options(conn, lake, delta, partial(_base_id, delta.base))
        return None, set()
    tx = Transaction(lake, base=delta.base)
    replays: list[Replay] = []

    def op(ctx: Any) -> None:
        replay = Replay(ctx, tx, delta)
        replays.append(replay)
        replay.run()

    tokens = change_tokens(delta)
    tx.add(0, op, *tokens)
    tx.replanner = replanner(lake, tx, delta, tokens, statements)
    tx.touch_data_files(_base_files_deleted_from(delta))
    try:
        snapshot = tx.commit(author, commit_message, commit_extra_info)
    except CommitConflictError as exc:
        if str(exc).startswith("cannot publish"):
            raise
        raise CommitConflictError(_explain(lake, delta, tokens, exc)) from exc
    return snapshot, replays[-1].kept


# ---------------------------------------------------------------------------------- re-plan
def replanner(lake: Catalog, tx: Transaction, delta: Delta, tokens: Sequence[str],
              statements: Sequence[BranchStatement]) -> Replanner:
    """The publish's ``Transaction.replanner``: when the only conflicts are rows others
    inserted into base tables the branch deleted from, apply the branch's DELETE, UPDATE or
    MERGE of each such table to those rows too (:class:`~.models.PublishReplan`), exactly
    as the statement re-plans when it commits late on its own. Then the published snapshot
    holds what the branch's statements would have done had they run after those inserts.

    A CREATE OR REPLACE TABLE replaces those rows too (``PublishReplan.whole_table``), as
    it does committing late on its own and as DuckDB's lands over others' inserts.

    A table the branch deleted from with more than one statement, with a statement that
    cannot be re-planned (an INSERT OVERWRITE: DuckDB's DELETE and INSERT in one transaction
    fail on others' inserts; a maintenance rewrite, ...), or whose columns the branch
    altered (but for a whole-table replacement), stays a conflict: the order of the
    statements would matter, or the rows would need the branch's schema."""
    deleted = {int(v) for k, v in map(parse_token, tokens) if k in DELETE_KINDS}
    altered = {int(v) for k, v in map(parse_token, tokens)
               if k == "altered_table" and v.isdigit()}

    def replan(since: Snapshot, until: Snapshot) -> None:
        for table_id, sid in _inserted_into(lake, deleted, since, until):
            found = [s for s in statements if table_id in s.tables]
            replans = [s.replan for s in found if s.replan is not None]
            if len(found) == 1 and len(replans) == 1 and (
                    table_id not in altered or replans[0].whole_table):
                replans[0].stage(tx, lake, since, until)
                continue
            why = (f"the branch deleted from it with {len(found)} statements, whose order "
                   "matters" if len(found) > 1 else
                   "the branch also altered its columns" if replans else
                   "the branch's statement that deleted from it is an INSERT OVERWRITE (as "
                   "DuckDB's DELETE and INSERT in one transaction, it fails on another's "
                   "insert) or was not run through the DELETE/UPDATE/MERGE/REPLACE path")
            with lake.read() as conn:
                name = _object_name(lake, conn, f"table:{table_id}", delta.base.snapshot_id)
            raise CommitConflictError(
                f"cannot publish the branch (base snapshot {delta.base.snapshot_id}): {name} "
                f"was inserted into by snapshot {sid}, and {why}, so the branch's statement "
                "cannot be re-planned at publish against those rows. Nothing was "
                "published and the branch's files were removed; rerun on the new state.")

    return replan


def _inserted_into(lake: Catalog, tables: set[int], since: Snapshot,
                   until: Snapshot) -> list[tuple[int, int]]:
    """(table id, first snapshot) of each of ``tables`` that snapshots ``since < s <=
    until`` inserted into."""
    with lake.read() as conn:
        rows = conn.execute(text(
            f"SELECT snapshot_id, changes_made FROM {lake.t('ducklake_snapshot_changes')} "
            "WHERE snapshot_id > :s AND snapshot_id <= :u ORDER BY snapshot_id"),
            {"s": since.snapshot_id, "u": until.snapshot_id}).all()
    first: dict[int, int] = {}
    for sid, changes in rows:
        for token in split_changes(changes if isinstance(changes, str) else None):
            kind, value = parse_token(token)
            if kind in ("inserted_into_table", "inlined_insert") and value.isdigit() \
                    and int(value) in tables:
                first.setdefault(int(value), int(str(sid)))
    return sorted(first.items())


def _base_files_deleted_from(delta: Delta) -> list[int]:
    first = delta.base.next_file_id
    ids = {int(r["data_file_id"]) for r in delta.added["ducklake_delete_file"]}
    ids |= {int(r["data_file_id"]) for r in delta.ended["ducklake_data_file"]}
    ids |= {f for rows in delta.inlined_deletes.values() for f, _ in rows}
    return sorted(i for i in ids if i < first)


def _explain(lake: Catalog, delta: Delta, tokens: Sequence[str],
             exc: CommitConflictError) -> str:
    """Name the table and the other snapshot of a publish conflict."""
    with lake.read() as conn:
        others = conn.execute(text(
            f"SELECT snapshot_id, changes_made FROM {lake.t('ducklake_snapshot_changes')} "
            "WHERE snapshot_id > :b ORDER BY snapshot_id"),
            {"b": delta.base.snapshot_id}).all()
        for sid, changes in others:
            for token in tokens:
                found = find_conflict([token], split_changes(
                    changes if isinstance(changes, str) else None))
                if found is None:
                    continue
                name = _object_name(lake, conn, token, delta.base.snapshot_id)
                return (f"cannot publish the branch (base snapshot {delta.base.snapshot_id}): "
                        f"{name} was changed by snapshot {sid} ({found}). Nothing was "
                        "published and the branch's files were removed; rerun on the new "
                        "state.")
        overlap = _deleted_meanwhile(lake, conn, delta)
        if overlap is not None:
            table_id, sid = overlap
            name = _object_name(lake, conn, f"table:{table_id}", delta.base.snapshot_id)
            return (f"cannot publish the branch (base snapshot {delta.base.snapshot_id}): "
                    f"snapshot {sid} deleted rows from a data file of {name} that the branch "
                    "deletes from too. Nothing was published and the branch's files were "
                    "removed; rerun on the new state.")
    return f"cannot publish the branch: {exc}"


def _deleted_meanwhile(lake: Catalog, conn: Connection,
                       delta: Delta) -> tuple[int, int] | None:
    """(table id, snapshot) of another writer's delete from a data file the branch deletes
    from (a delete file, or the file's end)."""
    files = _base_files_deleted_from(delta)
    if not files:
        return None
    marks, params = in_list(files, "d")
    params["b"] = delta.base.snapshot_id
    row = conn.execute(text(
        f"SELECT table_id, begin_snapshot FROM {lake.t('ducklake_delete_file')} WHERE "
        f"data_file_id IN ({marks}) AND begin_snapshot > :b UNION ALL "
        f"SELECT table_id, end_snapshot FROM {lake.t('ducklake_data_file')} WHERE "
        f"data_file_id IN ({marks}) AND end_snapshot > :b ORDER BY 2 LIMIT 1"), params).first()
    return None if row is None else (int(row[0]), int(row[1]))


def _object_name(lake: Catalog, conn: Connection, token: str, at: int) -> str:
    kind, value = parse_token(token)
    if not value.isdigit():
        return value
    table = lake.table_by_id(int(value), at, conn)
    if table is None:
        return f"table id {value}"
    return f"table {table.schema_name}.{table.table_name} (id {value})"


__all__ = ["change_tokens", "publish_branch"]
