"""A MERGE INTO statement as text: its WHEN clauses and its ON condition, with no Spark session.

What the statement says and what follows from it alone: the clauses, checked and classified
(:class:`MergeStatement`); the key equalities of the ON condition (:func:`equi_keys`); the SQL
that gives each row of a merge frame its clause and projects it to what the writes need
(:func:`action_sql`, :func:`outcome_sql`); and whether the merge is dbt's, whose updated rows
are its source rows as they are (:func:`updates_are_source_rows`). :mod:`.merge` carries the
statement out with Spark; everything here is tested without a JVM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..lake.errors import InvalidArgumentError, SchemaMismatchError
from ..lake.models import ColumnInfo
from .expressions import cast, ident, split_identifier
from .read import FILE_ID, POSITION, ROW_ID
from .types import spark_type

MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "matched", "not_matched", "not_matched_by_source"
ACTIONS = ("update", "update_star", "delete", "insert", "insert_star")
# The column of a merge frame holding the index of the clause that applies to the row.
ACTION = "__ducklake_action"
# Each source row's number (monotonically_increasing_id, fixed by the source's cache).
SOURCE_ROW = "__ducklake_source_row"


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause: which rows it applies to, its condition, and what it does."""

    when: str  # matched | not_matched | not_matched_by_source
    action: str  # update | update_star | delete | insert | insert_star
    condition: str | None = None
    assignments: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class MergeStatement:
    """``MERGE INTO target AS target_alias USING source AS source_alias ON on`` with its
    WHEN clauses in order (the first whose condition holds applies). Building it checks
    each clause's action."""

    on: str
    clauses: tuple[MergeClause, ...]
    target_alias: str
    source_alias: str

    def __post_init__(self) -> None:
        for clause in self.clauses:
            if clause.action not in ACTIONS:
                raise InvalidArgumentError(
                    f"unknown MERGE action {clause.action!r}; accepted: {', '.join(ACTIONS)}")

    @property
    def by_source(self) -> bool:
        """Whether a ``WHEN NOT MATCHED BY SOURCE`` clause applies to target rows the source
        does not match: then the join keeps every target row, and the source's key range
        prunes no data file."""
        return any(c.when == NOT_MATCHED_BY_SOURCE for c in self.clauses)

    @property
    def inserts(self) -> bool:
        """Whether a ``WHEN NOT MATCHED`` clause inserts source rows no target row matches."""
        return any(c.when == NOT_MATCHED for c in self.clauses)

    @property
    def touching(self) -> list[int]:
        """The indexes of the clauses that update or delete a target row (positional
        deletes): the matched and not-matched-by-source ones."""
        return [i for i, c in enumerate(self.clauses) if c.when != NOT_MATCHED]

    @property
    def updating(self) -> list[int]:
        """The indexes of the clauses that write a target row again, with its row id."""
        return [i for i, c in enumerate(self.clauses) if c.action in ("update", "update_star")]

    def equi_keys(self) -> list[tuple[str, str]]:
        """:func:`equi_keys` of the ON condition."""
        return equi_keys(self.on, self.target_alias, self.source_alias)

    def only_equi_keys(self) -> bool:
        """:func:`only_equi_keys` of the ON condition."""
        return only_equi_keys(self.on, self.target_alias, self.source_alias)


def _terms(on: str) -> list[Any] | None:
    """The ON condition's top-level AND terms as sqlglot trees; ``None`` if it does not parse."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(on, read="spark")
    except sqlglot.errors.ParseError:
        return None
    return list(tree.flatten()) if isinstance(tree, exp.And) else [tree]


def only_equi_keys(on: str, t: str, s: str) -> bool:
    """Whether every top-level AND term of the ON condition is an equality ``t.a = s.b``:
    then Spark puts no filter on the target scan that statistics could judge (it infers only
    ``IS NOT NULL``). Any other term may be one, directly (dbt's ``incremental_predicates``)
    or inferred through an equality (``s.a > 5`` gives ``t.a > 5``)."""
    terms = _terms(on)
    return terms is not None and len(equi_keys(on, t, s)) == len(terms)


def equi_keys(on: str, t: str, s: str) -> list[tuple[str, str]]:
    """(target column, source column), lower-cased, for each ``t.a = s.b`` that is one of the
    ON condition's top-level AND terms; nothing for a condition sqlglot cannot parse."""
    from sqlglot import exp

    terms = _terms(on)
    if terms is None:
        return []
    out = []
    for term in terms:
        if not isinstance(term, exp.EQ):
            continue
        left, right = term.this, term.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        sides = {left.table.lower(): left.name.lower(), right.table.lower(): right.name.lower()}
        if t.lower() in sides and s.lower() in sides and t.lower() != s.lower():
            out.append((sides[t.lower()], sides[s.lower()]))
    return out


def assignments(clause: MergeClause, columns: dict[str, str], t: str, s: str,
                source_columns: Sequence[str]) -> dict[str, str]:
    """Target column -> SQL expression, for ``SET``/``VALUES`` lists and for ``*``;
    ``columns`` maps each target column's lower-cased name to its name.

    ``*`` takes every target column the source has, by name; a target column the source
    lacks keeps its value (update) or is NULL (insert), as after ``on_schema_change``.
    """
    if clause.action in ("update_star", "insert_star"):
        present = {c.lower() for c in source_columns}
        return {name: f"{ident(s)}.{ident(name)}" for lower, name in columns.items()
                if lower in present}
    out = {}
    for key, value in clause.assignments:
        parts = split_identifier(key)  # `a``b` is the column a`b
        if len(parts) == 2 and parts[0].lower() == t.lower():
            parts = parts[1:]
        name = ".".join(parts)
        if name.lower() not in columns:
            raise SchemaMismatchError(
                f"MERGE sets unknown column {name!r}; the table has "
                + ", ".join(columns.values()))
        out[columns[name.lower()]] = value
    return out


def action_sql(clauses: Sequence[MergeClause], sides: dict[str, str]) -> str:
    """SQL: the index of the first clause that applies to a row, NULL for none; ``sides``
    says, for each kind of clause the frame can hold (matched, not matched, not matched by
    source), when a row is of that kind."""
    tests = []
    for index, clause in enumerate(clauses):
        if clause.when not in sides:
            continue
        test = sides[clause.when]
        if clause.condition:
            test = f"({test}) AND coalesce(({clause.condition}), false)"
        tests.append(f"WHEN {test} THEN {index}")
    return cast(f"CASE {' '.join(tests)} END" if tests else "NULL", "INT")


def outcome_sql(statement: MergeStatement, sides: dict[str, str],
                columns: Sequence[ColumnInfo], source_columns: Sequence[str],
                values: bool = True) -> list[str]:
    """SQL projecting a merge frame's rows to what the writes need: the clause index
    (:data:`ACTION`), the target row's location (NULL in a frame of source rows alone), the
    source row's number and (with ``values``) each column's new value under the clauses of
    ``sides``. As text, the projection reaches the JVM in one call
    (:func:`.expressions.select`).

    Only the columns these expressions use are read from the target's files: for an
    ``UPDATE SET *`` that is the merge key alone.
    """
    t, s = statement.target_alias, statement.source_alias
    by_lower = {c.column_name.lower(): c.column_name for c in columns}
    cases: dict[str, list[str]] = {c.column_name: [] for c in columns}
    for index, clause in enumerate(statement.clauses):
        if clause.when not in sides or \
                clause.action not in ("update", "update_star", "insert", "insert_star"):
            continue
        sets = assignments(clause, by_lower, t, s, source_columns)
        updating = clause.action.startswith("update")
        for c in columns:
            name = c.column_name
            if name in sets:
                cases[name].append(f"WHEN {ACTION} = {index} THEN ({sets[name]})")
            elif updating:
                cases[name].append(f"WHEN {ACTION} = {index} THEN {ident(t)}.{ident(name)}")
    located = NOT_MATCHED not in sides
    return [ACTION,
            *[f"{ident(t)}.{m} AS {m}" if located else f"CAST(NULL AS BIGINT) AS {m}"
              for m in (FILE_ID, POSITION, ROW_ID)],
            f"{ident(s)}.{SOURCE_ROW} AS {SOURCE_ROW}",
            *[cast(f"CASE {' '.join(cases[c.column_name])} END"
                   if cases[c.column_name] else "NULL", spark_type(c))
              + f" AS {ident(c.column_name)}" for c in columns if values]]


def updates_are_source_rows(statement: MergeStatement, columns: Sequence[ColumnInfo],
                            source_columns: Sequence[str]) -> list[str] | None:
    """The source columns the ON condition names, when the merge is dbt's (``WHEN MATCHED
    THEN UPDATE SET *``, or a SET of every column to the source's column of that name, as
    dbt's merge strategy spells it, and ``WHEN NOT MATCHED THEN INSERT *``; no conditions)
    over a source that has every target column: an updated row is then its source row's
    candidate insert, and the join needs only the keys. ``None`` otherwise, or when the ON
    condition names a column without the source's alias (which side it is Spark decides)."""
    clauses, t, s = statement.clauses, statement.target_alias, statement.source_alias
    present = {c.lower(): c for c in source_columns}
    if len(clauses) != 2 or any(c.condition for c in clauses) or \
            any(c.column_name.lower() not in present for c in columns) or \
            {c.when for c in clauses} != {MATCHED, NOT_MATCHED}:
        return None
    for clause in clauses:
        if clause.when == NOT_MATCHED and clause.action != "insert_star" or \
                clause.when == MATCHED and clause.action not in ("update", "update_star"):
            return None
        if clause.action == "update" and not _sets_every_column_from_the_source(
                clause, columns, t, s, source_columns):
            return None
    return _source_columns_named(statement.on, s, present)


def _sets_every_column_from_the_source(clause: MergeClause, columns: Sequence[ColumnInfo],
                                       t: str, s: str, source_columns: Sequence[str]) -> bool:
    """Whether an ``UPDATE SET`` sets every target column to the source's column of that
    name (``s.col``), as dbt's merge strategy spells ``UPDATE SET *``."""
    import sqlglot
    from sqlglot import exp

    by_lower = {c.column_name.lower(): c.column_name for c in columns}
    sets = assignments(clause, by_lower, t, s, source_columns)
    if len(sets) != len(columns):
        return False
    for name, value in sets.items():
        try:
            tree = sqlglot.parse_one(value, read="spark")
        except sqlglot.errors.ParseError:
            return False
        if not (isinstance(tree, exp.Column) and tree.table.lower() == s.lower()
                and tree.name.lower() == name.lower()
                and tree.args.get("db") is None):
            return False
    return True


def _source_columns_named(on: str, s: str, present: dict[str, str]) -> list[str] | None:
    """The source columns (as ``present`` spells them, by lower-cased name) the ON condition
    names, in order and once each; ``None`` if it names one without an alias, a struct's
    field, or a column the source lacks, or does not parse."""
    from sqlglot import exp

    terms = _terms(on)
    if terms is None:
        return None
    named = []
    for term in terms:
        for column in term.find_all(exp.Column):
            if not column.table or column.args.get("db") is not None:
                return None  # unqualified, or a struct's field: which side is Spark's call
            if column.table.lower() != s.lower():
                continue
            if column.name.lower() not in present:
                return None
            named.append(present[column.name.lower()])
    return list(dict.fromkeys(named))
