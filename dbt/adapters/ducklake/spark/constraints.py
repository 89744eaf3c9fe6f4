"""CHECK, PRIMARY KEY and UNIQUE constraints, checked over the rows a write leaves in a table.

DuckLake's catalog has no place for these constraints (DuckDB's ``ducklake`` refuses them),
so they travel with a write, as a dbt model contract gives them, and are checked before its
commit over the table as the write would leave it (its *post-image*): the rows of the table
as the write read them, less the rows it deletes or rewrites, plus the rows it stages. A
violation raises :class:`~..lake.errors.ConstraintViolationError` naming the constraint and a
few offending rows, and nothing is committed.

SQL's rules: a CHECK fails only when its expression is false (NULL passes); UNIQUE ignores
rows with a NULL in its columns; a PRIMARY KEY is UNIQUE and NOT NULL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ..lake.delete_files import Positions
from ..lake.errors import ConstraintViolationError, InvalidArgumentError
from . import expressions as sql
from .read import FILE_ID, POSITION, ROW_ID, scan
from .table_state import TableState

# offending rows (or duplicated keys) an error shows
SAMPLE = 5


@dataclass(frozen=True)
class Check:
    """``CHECK (expression)``, a Spark SQL boolean over the table's columns."""

    expression: str
    name: str | None = None

    @property
    def label(self) -> str:
        named = f" {self.name}" if self.name else ""
        return f"CHECK constraint{named} ({self.expression})"


@dataclass(frozen=True)
class Unique:
    """``UNIQUE (columns)``, or ``PRIMARY KEY (columns)`` with ``primary_key``."""

    columns: tuple[str, ...]
    primary_key: bool = False
    name: str | None = None

    @property
    def label(self) -> str:
        kind = "PRIMARY KEY" if self.primary_key else "UNIQUE"
        named = f" {self.name}" if self.name else ""
        return f"{kind} constraint{named} ({', '.join(self.columns)})"


@dataclass(frozen=True)
class TableConstraints:
    """The constraints one write is checked against; empty: nothing to check."""

    checks: tuple[Check, ...] = ()
    unique: tuple[Unique, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.checks or self.unique)

    def __post_init__(self) -> None:
        for key in self.unique:
            if not key.columns:
                raise InvalidArgumentError(f"{key.label} names no columns")


NO_CONSTRAINTS = TableConstraints()


def enforce(constraints: TableConstraints, rows: DataFrame, table: str) -> None:
    """Raise :class:`ConstraintViolationError` if ``rows`` (the table as a write would leave
    it) break a constraint: the CHECKs (and the primary keys' NOT NULL) in one Spark job,
    then one job per UNIQUE or PRIMARY KEY."""
    if not constraints:
        return
    checks = list(constraints.checks)
    for key in constraints.unique:
        if key.primary_key:
            checks.append(Check(" AND ".join(f"{sql.ident(c)} IS NOT NULL" for c in key.columns),
                                f"{key.label}: NOT NULL"))
    if checks:
        _enforce_checks(checks, rows, table)
    for key in constraints.unique:
        _enforce_unique(key, rows, table)


def _enforce_checks(checks: Sequence[Check], rows: DataFrame, table: str) -> None:
    names = list(rows.columns)
    flags = [f"__ducklake_check_{i}" for i in range(len(checks))]
    flagged = sql.select(rows, ["*", *[f"coalesce(NOT ({c.expression}), false) AS {f}"
                                       for c, f in zip(checks, flags)]])
    bad = flagged.where(" OR ".join(flags)).limit(SAMPLE).collect()
    if not bad:
        return
    broken = [c for c, f in zip(checks, flags) if any(r[f] for r in bad)]
    shown = "; ".join(_row_text(r.asDict(), names) for r in bad)
    raise ConstraintViolationError(
        f"{table}: {', '.join(_check_label(c) for c in broken)} failed for rows the "
        f"write would leave in the table, e.g.: {shown}. Nothing was committed; fix the "
        "rows (or the constraint) and run again")


def _check_label(check: Check) -> str:
    # a primary key's NOT NULL part is named after the key
    return check.name if check.name and check.name.endswith(": NOT NULL") else check.label


def _enforce_unique(key: Unique, rows: DataFrame, table: str) -> None:
    cols = [F.col(sql.ident(c)) for c in key.columns]
    present = rows
    for col in cols:
        present = present.where(col.isNotNull())
    dupes = present.groupBy(*cols).count().where(F.col("count") > 1).limit(SAMPLE).collect()
    if not dupes:
        return
    shown = "; ".join(
        f"{_row_text(r.asDict(), list(r.asDict())[:-1])} ({r['count']} rows)" for r in dupes)
    raise ConstraintViolationError(
        f"{table}: {key.label} violated: the write would leave duplicate values: {shown}. "
        "Nothing was committed; deduplicate the rows (or change the key) and run again")


def _row_text(row: Mapping[str, object], names: Sequence[str]) -> str:
    return ", ".join(f"{n}={row[n]!r}" for n in names)


def post_image(spark: SparkSession, state: TableState,
               positions: Mapping[int, Positions] | None, inlined: Sequence[int],
               added: Sequence[DataFrame | pa.Table | None]) -> DataFrame:
    """The table's rows as a write would leave them: those of ``state`` (what the write
    read) less the data file ``positions`` and ``inlined`` row ids it deletes or rewrites,
    plus the ``added`` rows it stages (matched to the table's columns by name)."""
    names = [c.column_name for c in state.columns]
    kept = scan(spark, state, metadata=True)
    if positions:
        gone = pa.table({
            FILE_ID: np.concatenate([np.full(len(ps), f, np.int64)
                                     for f, ps in positions.items()]),
            POSITION: np.concatenate([np.asarray(ps, np.int64) for ps in positions.values()])})
        kept = kept.join(spark.createDataFrame(gone, schema=from_arrow_schema(gone.schema)),
                         on=[FILE_ID, POSITION], how="left_anti")
    if inlined:
        kept = kept.where(F.col(FILE_ID).isNotNull() | ~F.col(ROW_ID).isin(list(inlined)))
    image = kept.select(*[sql.ident(n) for n in names])
    for rows in added:
        if rows is not None:
            image = image.unionByName(
                as_frame(spark, rows).select(*[sql.ident(n) for n in names]))
    return image


def as_frame(spark: SparkSession, rows: DataFrame | pa.Table) -> DataFrame:
    """Driver-side Arrow rows as a DataFrame (timestamps without time zone kept so)."""
    if isinstance(rows, DataFrame):
        return rows
    return spark.createDataFrame(rows, schema=from_arrow_schema(rows.schema,
                                                                prefer_timestamp_ntz=True))
