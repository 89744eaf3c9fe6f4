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
from typing import Any

from sqlalchemy import Connection, text

from .branch_delta import BaseState, Delta, planned_tokens, read_delta
from .catalog import Catalog, in_list
from .commit import Transaction
from .conflicts import find_conflict, parse_token
from .errors import CommitConflictError
from .models import Snapshot, split_changes
from .replay import Replay


# ---------------------------------------------------------------------------------- tokens
def change_tokens(delta: Delta) -> list[str]:
    """The conflict-check tokens of the collapsed change set, in the lake's ids: only what
    names base objects (ids below the base's counters) or new names. Objects the branch
    created have ids nobody else can have touched yet."""
    return [tok for tok in planned_tokens(delta, lambda cid: cid, lambda fid: fid)
            if _names_base(tok, delta.base)]


def _names_base(token: str, base: Snapshot) -> bool:
    kind, value = parse_token(token)
    if kind.startswith("created_"):
        return True
    return value.isdigit() and int(value) < base.next_catalog_id


# ---------------------------------------------------------------------------------- publish
def publish_branch(lake: Catalog, branch: Catalog, state: BaseState, author: str | None,
                   commit_message: str | None, commit_extra_info: str | dict[str, Any] | None,
                   ) -> tuple[Snapshot | None, set[str]]:
    """Commit the branch's net change as one snapshot; (the snapshot or ``None`` when there
    is nothing to publish, the paths of branch files the snapshot references)."""
    delta = read_delta(branch, state)
    if delta.empty:
        return None, set()
    tx = Transaction(lake, base=delta.base)
    replays: list[Replay] = []

    def op(ctx: Any) -> None:
        replay = Replay(ctx, tx, delta)
        replays.append(replay)
        replay.run()

    tokens = change_tokens(delta)
    tx.add(0, op, *tokens)
    tx.touch_data_files(_base_files_deleted_from(delta))
    try:
        snapshot = tx.commit(author, commit_message, commit_extra_info)
    except CommitConflictError as exc:
        if str(exc).startswith("cannot publish"):
            raise
        raise CommitConflictError(_explain(lake, delta, tokens, exc)) from exc
    return snapshot, replays[-1].kept


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
                        "state. A DELETE, UPDATE or MERGE in a branch cannot be re-planned "
                        "at publish against rows others inserted meanwhile.")
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
