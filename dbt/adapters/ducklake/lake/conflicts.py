"""DuckLake's logical conflict table, shared with DuckDB's own writers (DuckDB's is
``DuckLakeTransactionState::CheckForConflicts`` in duckdb/ducklake@v1.5-variegata
src/storage/ducklake_transaction_state.cpp).

A commit planned against snapshot ``base`` may still land on a later snapshot when the commits
in between do not touch what it depends on. ``find_conflict`` compares the change tokens this
commit will write with the ``changes_made`` tokens of every snapshot committed since ``base``.
"""

from __future__ import annotations

from collections.abc import Iterable

# my change kind -> their change kinds on the same table that conflict with it
_TABLE_RULES: dict[str, frozenset[str]] = {
    "inserted_into_table": frozenset(
        {"dropped_table", "altered_table", "deleted_from_table", "inlined_delete"}
    ),
    "inlined_insert": frozenset(
        {"dropped_table", "altered_table", "deleted_from_table", "inlined_delete"}
    ),
    "deleted_from_table": frozenset(
        {"dropped_table", "altered_table", "merge_adjacent", "rewrite_delete", "compacted_table",
         "inserted_into_table", "inlined_insert"}
    ),
    "inlined_delete": frozenset(
        {"dropped_table", "altered_table", "inlined_delete", "inline_flush", "flushed_inlined",
         "inserted_into_table", "inlined_insert"}
    ),
    "inline_flush": frozenset({"dropped_table", "inlined_delete", "inline_flush",
                               "flushed_inlined"}),
    "merge_adjacent": frozenset({"dropped_table", "deleted_from_table", "merge_adjacent",
                                 "rewrite_delete", "compacted_table"}),
    "rewrite_delete": frozenset({"dropped_table", "deleted_from_table", "merge_adjacent",
                                 "rewrite_delete", "compacted_table"}),
    "altered_table": frozenset({"dropped_table", "altered_table"}),
    "dropped_table": frozenset({"dropped_table"}),
}

# (my change kind, their change kind) pairs a statement can resolve by planning again against
# the newer snapshot: rows another transaction inserted do not invalidate the positions this
# one deletes in existing data files or its ended inlined rows, so a DELETE, UPDATE or MERGE
# only has to apply its condition to the newly inserted rows as well (see
# ``Transaction.replanner``).
REPLANNABLE: frozenset[tuple[str, str]] = frozenset(
    (mine, theirs)
    for mine in ("deleted_from_table", "inlined_delete")
    for theirs in ("inserted_into_table", "inlined_insert")
)

_DESCRIBE = {
    "inserted_into_table": "inserted into",
    "inlined_insert": "inserted into",
    "deleted_from_table": "deleted from",
    "inlined_delete": "deleted from",
    "inline_flush": "flushed inlined data of",
    "flushed_inlined": "flushed inlined data of",
    "merge_adjacent": "compacted",
    "compacted_table": "compacted",
    "rewrite_delete": "rewrote",
    "altered_table": "altered",
    "dropped_table": "dropped",
}


def parse_token(token: str) -> tuple[str, str]:
    kind, _, value = token.partition(":")
    return kind, value


def find_conflict(
    mine: Iterable[str],
    theirs: Iterable[str],
    schema_ids_by_name: dict[str, int] | None = None,
    ignore: frozenset[tuple[str, str]] = frozenset(),
) -> str | None:
    """The first conflict between my tokens and tokens committed concurrently, or ``None``.

    Deletes from the same table by both sides are *not* decided here: they conflict only when
    they touch the same data file, which the caller checks against the catalog. Pairs of
    (my kind, their kind) in ``ignore`` are not conflicts (:data:`REPLANNABLE`, when the
    statement plans again).
    """
    their_tokens = [parse_token(t) for t in theirs]
    their_by_kind: dict[str, set[str]] = {}
    for kind, value in their_tokens:
        their_by_kind.setdefault(kind, set()).add(value)
    schema_ids_by_name = schema_ids_by_name or {}
    for token in mine:
        kind, value = parse_token(token)
        rules = _TABLE_RULES.get(kind)
        if rules is not None:
            for other in rules:
                if (kind, other) in ignore:
                    continue
                if value in their_by_kind.get(other, set()):
                    return (
                        f"attempting to {_verb(kind)} table {value}, but another transaction "
                        f"has {_DESCRIBE.get(other, other)} it"
                    )
            continue
        if kind in ("created_table", "created_view", "created_schema",
                    "created_scalar_macro", "created_table_macro"):
            for other_kind in ("created_table", "created_view", "created_schema",
                               "created_scalar_macro", "created_table_macro"):
                if other_kind == kind or {kind, other_kind} <= {"created_table", "created_view"}:
                    if value in their_by_kind.get(other_kind, set()):
                        return f"another transaction has also created {value}"
            if kind != "created_schema":
                schema_name = _schema_of(value)
                schema_id = schema_ids_by_name.get(schema_name)
                if schema_id is not None and str(schema_id) in their_by_kind.get(
                    "dropped_schema", set()
                ):
                    return f"cannot create {value}: another transaction dropped its schema"
        elif kind == "dropped_view":
            if value in their_by_kind.get("dropped_view", set()):
                return f"view {value} was dropped by another transaction"
        elif kind in ("dropped_scalar_macro", "dropped_table_macro"):
            if value in their_by_kind.get("dropped_scalar_macro", set()) | their_by_kind.get(
                "dropped_table_macro", set()
            ):
                return f"function {value} was dropped by another transaction"
        elif kind == "altered_view":
            if value in their_by_kind.get("dropped_view", set()) | their_by_kind.get(
                "altered_view", set()
            ):
                return f"view {value} was changed by another transaction"
        elif kind == "dropped_schema":
            if value in their_by_kind.get("dropped_schema", set()):
                return f"schema {value} was dropped by another transaction"
    return None


def _verb(kind: str) -> str:
    return {
        "inserted_into_table": "insert into",
        "inlined_insert": "insert into",
        "deleted_from_table": "delete from",
        "inlined_delete": "delete from",
        "inline_flush": "flush",
        "merge_adjacent": "compact",
        "rewrite_delete": "rewrite",
        "altered_table": "alter",
        "dropped_table": "drop",
    }.get(kind, kind)


def _schema_of(qualified: str) -> str:
    """``"s"."t"`` -> ``s`` (names are double-quoted with ``""`` escaping)."""
    if not qualified.startswith('"'):
        return qualified.split(".", 1)[0]
    i, out = 1, []
    while i < len(qualified):
        ch = qualified[i]
        if ch == '"':
            if i + 1 < len(qualified) and qualified[i + 1] == '"':
                out.append('"')
                i += 2
                continue
            break
        out.append(ch)
        i += 1
    return "".join(out)


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
