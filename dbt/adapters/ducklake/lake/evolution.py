"""Schema evolution: the in-place catalog changes that turn a table's columns into new ones.

A ``table`` rebuild (``CREATE OR REPLACE TABLE``) keeps the table's identity, so its time
travel and change feed survive. DuckDB 1.5.5 changes these in place (checked against it,
``ALTER TABLE t ALTER COLUMN s TYPE STRUCT(...)`` and ``ADD/DROP COLUMN s.f``): a struct's
fields are added and dropped at any depth (inside list elements too), and a leaf is widened
wherever it sits (a struct field, a list element, a map key or value). The format tracks nested
fields by their own ids, so the other fields keep theirs.

What cannot be widened (a narrowing type, a scalar that becomes nested or the reverse, a list
that becomes a map) becomes a *new column of the same name*: the old column (or struct field)
is dropped and a new one, with a new id, added in the same snapshot. The table keeps its id;
time travel before the change still shows the old column with its old values. A new top-level
column goes after the others, as DuckDB places a column it adds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .models import ColumnInfo, ColumnSpec
from .types import LakeType, is_promotion

ColumnPath = tuple[str, ...]
"""A column by its names from the top: ``("s", "x")`` is field ``x`` of struct ``s``; a list's
element is ``element``, a map's parts ``key`` and ``value`` (DuckLake's child names)."""


@dataclass(frozen=True)
class Evolution:
    """The changes, in the order :func:`~.tables.alter_columns` stages them."""

    drop: tuple[ColumnPath, ...] = ()
    retype: tuple[tuple[ColumnPath, str], ...] = ()
    nullability: tuple[tuple[str, bool], ...] = ()
    add: tuple[ColumnSpec, ...] = ()
    add_fields: tuple[tuple[ColumnPath, ColumnSpec], ...] = ()
    # Why a column is new (``"column z: int32 -> varchar"``): said in the log.
    new_columns: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.drop or self.retype or self.nullability or self.add or self.add_fields)


@dataclass
class _Plan:
    drop: list[ColumnPath] = field(default_factory=list)
    retype: list[tuple[ColumnPath, str]] = field(default_factory=list)
    add: list[ColumnSpec] = field(default_factory=list)
    add_fields: list[tuple[ColumnPath, ColumnSpec]] = field(default_factory=list)
    new_columns: list[str] = field(default_factory=list)


class _NotInPlace(Exception):
    """A node whose change DuckLake cannot make in place; the message says which."""


def evolve(current: Sequence[ColumnInfo], wanted: Sequence[ColumnSpec],
           drop_missing: bool = True) -> Evolution:
    """The changes from ``current`` (the table's live columns) to ``wanted``; names match
    case-insensitively, as DuckLake's do. ``drop_missing`` drops the columns ``wanted`` lacks."""
    plan = _Plan()
    by_name = {c.column_name.lower(): c for c in current}
    nullability = []
    for spec in wanted:
        column = by_name.get(spec.name.lower())
        if column is None:
            plan.add.append(spec)
            continue
        try:
            _compare(column, spec, (column.column_name,), plan)
        except _NotInPlace as reason:
            plan.drop.append((column.column_name,))
            plan.add.append(spec)  # with the wanted nullability
            said = str(reason)
            plan.new_columns.append(f"column {said}" if said.startswith(f"{column.column_name}:")
                                    else f"column {column.column_name} ({said})")
            continue
        if column.nulls_allowed != spec.nulls_allowed:
            nullability.append((column.column_name, spec.nulls_allowed))
    if drop_missing:
        names = {s.name.lower() for s in wanted}
        plan.drop.extend((c.column_name,) for c in current if c.column_name.lower() not in names)
    return Evolution(tuple(plan.drop), tuple(plan.retype), tuple(nullability), tuple(plan.add),
                     tuple(plan.add_fields), tuple(plan.new_columns))


def _compare(column: ColumnInfo, spec: ColumnSpec, path: ColumnPath, plan: _Plan) -> None:
    """Stage on ``plan`` what turns ``column`` into ``spec`` in place, or raise
    :class:`_NotInPlace` (having staged nothing for this node) when that cannot be done."""
    old, new = column.type, LakeType.parse(spec.type)
    if not old.nested and not new.nested:
        if old == new:
            return
        if is_promotion(old, new):
            plan.retype.append((path, str(new)))
            return
        raise _NotInPlace(f"{'.'.join(path)}: {old} -> {new}")
    if old.name != new.name:
        raise _NotInPlace(f"{'.'.join(path)}: {_spelled(column)} -> {spec.type}")
    kids = {c.column_name.lower(): c for c in column.children}
    if old.name != "struct":  # list element, map key and value: the same children by name
        if {s.name.lower() for s in spec.children} != set(kids):
            raise _NotInPlace(f"{'.'.join(path)}: {_spelled(column)} -> {spec.type}")
        trial = _Plan()
        for child in spec.children:
            _compare(kids[child.name.lower()], child, (*path, kids[child.name.lower()]
                                                       .column_name), trial)
        _absorb(plan, trial)
        return
    for child in spec.children:
        kid = kids.get(child.name.lower())
        if kid is None:
            plan.add_fields.append((path, child))
            continue
        trial = _Plan()
        try:
            _compare(kid, child, (*path, kid.column_name), trial)
        except _NotInPlace as reason:
            plan.drop.append((*path, kid.column_name))
            plan.add_fields.append((path, child))
            plan.new_columns.append(f"field {reason}")
            continue
        _absorb(plan, trial)
    wanted = {c.name.lower() for c in spec.children}
    plan.drop.extend((*path, k.column_name) for k in column.children
                     if k.column_name.lower() not in wanted)


def _absorb(plan: _Plan, trial: _Plan) -> None:
    plan.drop += trial.drop
    plan.retype += trial.retype
    plan.add += trial.add
    plan.add_fields += trial.add_fields
    plan.new_columns += trial.new_columns


def _spelled(column: ColumnInfo) -> str:
    """A column's type with its children, as in messages: ``struct(x int32)``."""
    if not column.children:
        return column.column_type
    inner = ", ".join(f"{c.column_name} {_spelled(c)}" for c in column.children)
    return f"{column.column_type}({inner})"


def find(columns: Sequence[ColumnInfo], path: ColumnPath) -> ColumnInfo:
    """The node at ``path``; ``KeyError`` naming the first missing part."""
    nodes, node = columns, None
    for part in path:
        node = next((c for c in nodes if c.column_name.lower() == part.lower()), None)
        if node is None:
            raise KeyError(part)
        nodes = node.children
    assert node is not None, "an empty column path"
    return node


def evolved(current: Sequence[ColumnInfo], evolution: Evolution,
            first_id: int) -> list[ColumnInfo]:
    """The columns after ``evolution``, with the ids :func:`~.tables.alter_columns` gives
    new nodes (from ``first_id``: new top-level columns first, then new fields, each
    depth-first). A write staged before the commit needs them for its files' field ids."""
    dropped = {tuple(p.lower() for p in path) for path in evolution.drop}
    types = {tuple(p.lower() for p in path): t for path, t in evolution.retype}
    nulls = {name.lower(): allowed for name, allowed in evolution.nullability}
    counter = [first_id]
    fields: dict[ColumnPath, list[ColumnInfo]] = {}
    top = [_new_node(spec, None, counter) for spec in evolution.add]
    for parent, spec in evolution.add_fields:
        fields.setdefault(tuple(p.lower() for p in parent), []).append(
            _new_node(spec, -1, counter))

    def rebuild(node: ColumnInfo, path: ColumnPath) -> ColumnInfo:
        kids = tuple(rebuild(k, (*path, k.column_name.lower())) for k in node.children
                     if (*path, k.column_name.lower()) not in dropped)
        kids += tuple(replace(k, parent_column=node.column_id) for k in fields.get(path, []))
        changes: dict = {"children": kids}
        if path in types:
            changes["column_type"] = types[path]
        if len(path) == 1 and path[0] in nulls:
            changes["nulls_allowed"] = nulls[path[0]]
        return replace(node, **changes)

    kept = [rebuild(c, (c.column_name.lower(),)) for c in current
            if (c.column_name.lower(),) not in dropped]
    return kept + top


def _new_node(spec: ColumnSpec, parent: int | None, counter: list[int]) -> ColumnInfo:
    column_id = counter[0]
    counter[0] += 1
    kids = tuple(_new_node(c, column_id, counter) for c in spec.children)
    return ColumnInfo(column_id, 0, None, 0, column_id, spec.name, spec.type,
                      spec.initial_default, spec.default_value, spec.nulls_allowed, parent,
                      children=kids)


__all__ = ["ColumnPath", "Evolution", "evolve", "evolved", "find"]
