"""CHECK, PRIMARY KEY and UNIQUE constraints (a dbt model contract's), checked over the rows a
statement would leave in the table before its commit: a violation commits nothing (DuckDB
reads the old rows), and rows a MERGE or REPLACE ON rewrites are not counted twice."""

from __future__ import annotations

import pytest
from oracle import duck_rows

from dbt.adapters.ducklake.lake.errors import ConstraintViolationError
from dbt.adapters.ducklake.spark.constraints import Check, TableConstraints, Unique
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.names import LakeName
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]

NAME = LakeName("main", "t")
OLD = [(1, "a", 10), (2, "b", 20), (3, "c", 30)]
CONTRACT = TableConstraints(
    checks=(Check("amount >= 0", "amount_not_negative"),),
    unique=(Unique(("id",), primary_key=True), Unique(("code",))))


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE TABLE `main.t` AS SELECT * FROM VALUES "
                   "(1, 'a', 10), (2, 'b', 20), (3, 'c', 30) AS v(id, code, amount)")
    engine.expect_constraints(NAME, CONTRACT)
    return engine


def _unchanged(duck, lake, before: int) -> None:  # noqa: ANN001
    assert lake.current_snapshot().snapshot_id == before
    assert duck_rows(duck, "SELECT id, code, amount FROM lake.main.t ORDER BY id") == OLD


SOURCE = "CREATE OR REPLACE TEMPORARY VIEW src AS SELECT * FROM VALUES {} AS v(id, code, amount)"

VIOLATIONS = {
    # statement kind -> (source rows, statement, the constraint the error names, a value shown)
    "append_duplicate_key": (
        "(3, 'x', 1)", "INSERT INTO `main.t` SELECT * FROM src",
        "PRIMARY KEY constraint (id)", "id=3"),
    "append_check": (
        "(4, 'd', -5)", "INSERT INTO `main.t` SELECT * FROM src",
        "CHECK constraint amount_not_negative (amount >= 0)", "amount=-5"),
    "append_null_key": (
        "(CAST(NULL AS INT), 'd', 5)", "INSERT INTO `main.t` SELECT * FROM src",
        "PRIMARY KEY constraint (id): NOT NULL", "id=None"),
    # the merged result: id 2 is updated in place, but its new code is row 1's
    "merge_unique_after_update": (
        "(2, 'a', 25)",
        "MERGE INTO `main.t` AS t USING src AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "UNIQUE constraint (code)", "code='a'"),
    "merge_check_on_update": (
        "(1, 'a', -1)",
        "MERGE INTO `main.t` AS t USING src AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        "CHECK constraint amount_not_negative", "amount=-1"),
    "replace_on_duplicate_in_source": (
        "(7, 'x', 1), (7, 'y', 2)",
        "INSERT INTO `main.t` AS t BY NAME REPLACE ON t.id = s.id "
        "(SELECT * FROM src) s",
        "PRIMARY KEY constraint (id)", "(2 rows)"),
    "update": (
        "(0, 'z', 0)", "UPDATE `main.t` SET code = 'b' WHERE id = 3",
        "UNIQUE constraint (code)", "code='b'"),
    "replace_table": (
        "(1, 'a', 1), (1, 'b', 2)", "CREATE OR REPLACE TABLE `main.t` AS SELECT * FROM src",
        "PRIMARY KEY constraint (id)", "id=1"),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_violation_commits_nothing(engine, lake, duck, case: str) -> None:  # noqa: ANN001
    source, statement, constraint, shown = VIOLATIONS[case]
    engine.execute(SOURCE.format(source))
    before = lake.current_snapshot().snapshot_id
    with pytest.raises(ConstraintViolationError) as raised:
        engine.execute(statement)
    message = str(raised.value)
    assert constraint in message
    assert shown in message
    assert "Nothing was committed" in message
    _unchanged(duck, lake, before)


ALLOWED = {
    # a MERGE that rewrites rows 1 and 2 with the same keys and codes: no duplicate once
    # merged, though the new rows alone plus the old ones hold each key twice
    "merge_same_keys": (
        "(1, 'a', 11), (2, 'b', 21), (4, 'd', 40)",
        "MERGE INTO `main.t` AS t USING src AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        [(1, "a", 11), (2, "b", 21), (3, "c", 30), (4, "d", 40)]),
    "replace_on_same_keys": (
        "(3, 'c', 33)",
        "INSERT INTO `main.t` AS t BY NAME REPLACE ON t.id = s.id (SELECT * FROM src) s",
        [(1, "a", 10), (2, "b", 20), (3, "c", 33)]),
    # UNIQUE lets NULLs repeat; a CHECK passes when its expression is NULL
    "append_nulls": (
        "(5, CAST(NULL AS STRING), CAST(NULL AS INT)), (6, NULL, 1)",
        "INSERT INTO `main.t` SELECT * FROM src",
        [*OLD, (5, None, None), (6, None, 1)]),
}


@pytest.mark.parametrize("case", sorted(ALLOWED))
def test_rows_left_are_checked_not_rows_written(engine, lake, duck, case: str) -> None:  # noqa: ANN001
    source, statement, expected = ALLOWED[case]
    engine.execute(SOURCE.format(source))
    engine.execute(statement)
    assert duck_rows(duck, "SELECT id, code, amount FROM lake.main.t ORDER BY id") == expected


def test_checks_stop_when_the_constraints_are_dropped(engine, lake) -> None:  # noqa: ANN001
    engine.expect_constraints(NAME, TableConstraints())
    engine.execute("INSERT INTO `main.t` VALUES (1, 'a', -1)")
    assert lake.table("main.t").read().count() == 4


@pytest.mark.postgres_too
def test_merge_outcome_in_spark_is_checked(engine, lake, duck, monkeypatch) -> None:  # noqa: ANN001
    """The merged result is checked when the merge's outcome stays in Spark (more changed
    rows than the driver collects) as when it is collected."""
    from dbt.adapters.ducklake.spark import merge

    monkeypatch.setattr(merge, "DRIVER_ROWS", 0)
    source, statement, constraint, shown = VIOLATIONS["merge_unique_after_update"]
    engine.execute(SOURCE.format(source))
    before = lake.current_snapshot().snapshot_id
    with pytest.raises(ConstraintViolationError, match=r"UNIQUE constraint \(code\)"):
        engine.execute(statement)
    _unchanged(duck, lake, before)
