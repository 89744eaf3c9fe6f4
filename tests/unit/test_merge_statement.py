"""A MERGE statement's clauses and ON condition, and the SQL built from them (no JVM)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError, SchemaMismatchError
from dbt.adapters.ducklake.lake.models import ColumnInfo
from dbt.adapters.ducklake.spark.merge_statement import (
    MergeClause,
    MergeStatement,
    action_sql,
    assignments,
    outcome_sql,
)

COLUMNS = [ColumnInfo(i, 1, None, 1, i, name, kind, None, None, True, None)
           for i, (name, kind) in enumerate([("id", "int64"), ("V", "varchar")])]
BY_LOWER = {"id": "id", "v": "V"}
# every kind of clause, in the order a statement may give them
EVERY_KIND = (
    MergeClause("matched", "delete", "s.id > 5"),
    MergeClause("matched", "update", assignments=(("v", "s.v"),)),
    MergeClause("not_matched", "insert_star"),
    MergeClause("not_matched_by_source", "update", assignments=(("t.v", "'gone'"),)),
    MergeClause("not_matched_by_source", "delete"),
)


def test_an_unknown_action_is_refused():
    with pytest.raises(InvalidArgumentError, match="unknown MERGE action 'upsert'"):
        MergeStatement("t.id = s.id", (MergeClause("matched", "upsert"),), "t", "s")


def test_clauses_are_classified_by_what_they_do():
    every = MergeStatement("t.id = s.id", EVERY_KIND, "t", "s")
    assert every.by_source and every.inserts
    assert every.touching == [0, 1, 3, 4]  # deletes and updates of target rows
    assert every.updating == [1, 3]  # target rows written again with their row ids
    dbt = MergeStatement("t.id = s.id", (MergeClause("matched", "update_star"),
                                         MergeClause("not_matched", "insert_star")), "t", "s")
    assert not dbt.by_source and dbt.inserts
    assert (dbt.touching, dbt.updating) == ([0], [0])
    deletes = MergeStatement("t.id = s.id", (MergeClause("matched", "delete"),), "t", "s")
    assert not deletes.inserts and deletes.updating == []


def test_only_key_equalities_leave_nothing_for_file_skipping():
    def only(on: str) -> bool:
        return MergeStatement(on, (), "t", "s").only_equi_keys()

    assert only("t.id = s.id") and only("t.a = s.a AND s.b = t.b")
    assert not only("t.id = s.id AND t.day > '2024-01-01'")  # dbt's incremental_predicates
    assert not only("t.id = s.id AND s.a > 5")  # Spark infers t.a > 5 through the equality
    assert not only("not ) valid")
    assert MergeStatement("t.id = s.id", (), "t", "s").equi_keys() == [("id", "id")]


def test_assignments_name_target_columns_and_star_takes_the_source_columns_by_name():
    spelled = MergeClause("matched", "update", assignments=(
        ("t.`v`", "s.v || 'x'"), ("ID", "s.id")))
    assert assignments(spelled, BY_LOWER, "t", "s", ["id"]) == {
        "V": "s.v || 'x'", "id": "s.id"}
    star = MergeClause("matched", "update_star")
    assert assignments(star, BY_LOWER, "t", "s", ["ID", "other"]) == {"id": "`s`.`id`"}
    with pytest.raises(SchemaMismatchError, match="MERGE sets unknown column 'w'"):
        assignments(MergeClause("matched", "update", assignments=(("w", "1"),)), BY_LOWER,
                    "t", "s", [])


def test_each_row_takes_the_first_clause_whose_condition_holds():
    sides = {"matched": "m", "not_matched_by_source": "NOT (m)"}
    assert action_sql(EVERY_KIND, sides) == (
        "CAST(CASE WHEN (m) AND coalesce((s.id > 5), false) THEN 0 WHEN m THEN 1 "
        "WHEN NOT (m) THEN 3 WHEN NOT (m) THEN 4 END AS INT)")
    assert action_sql(EVERY_KIND, {"not_matched": "true"}) == \
        "CAST(CASE WHEN true THEN 2 END AS INT)"
    assert action_sql(EVERY_KIND[:1], {"not_matched": "true"}) == "CAST(NULL AS INT)"


def test_the_projection_carries_locations_source_rows_and_new_values():
    statement = MergeStatement("t.id = s.id", EVERY_KIND, "t", "s")
    sides = {"matched": "m", "not_matched_by_source": "NOT (m)"}
    located = [
        "__ducklake_action",
        "`t`._ducklake_data_file_id AS _ducklake_data_file_id",
        "`t`._ducklake_position AS _ducklake_position",
        "`t`._ducklake_row_id AS _ducklake_row_id",
        "`s`.__ducklake_source_row AS __ducklake_source_row",
    ]
    # an update keeps the columns it does not set; a delete writes nothing
    assert outcome_sql(statement, sides, COLUMNS, ["id", "v"]) == [
        *located,
        "CAST(CASE WHEN __ducklake_action = 1 THEN `t`.`id` "
        "WHEN __ducklake_action = 3 THEN `t`.`id` END AS bigint) AS `id`",
        "CAST(CASE WHEN __ducklake_action = 1 THEN (s.v) "
        "WHEN __ducklake_action = 3 THEN ('gone') END AS string) AS `V`"]
    assert outcome_sql(statement, sides, COLUMNS, ["id", "v"], values=False) == located
    # source rows alone have no location; INSERT * leaves a column the source lacks NULL
    assert outcome_sql(statement, {"not_matched": "true"}, COLUMNS, ["id"]) == [
        "__ducklake_action",
        "CAST(NULL AS BIGINT) AS _ducklake_data_file_id",
        "CAST(NULL AS BIGINT) AS _ducklake_position",
        "CAST(NULL AS BIGINT) AS _ducklake_row_id",
        "`s`.__ducklake_source_row AS __ducklake_source_row",
        "CAST(CASE WHEN __ducklake_action = 2 THEN (`s`.`id`) END AS bigint) AS `id`",
        "CAST(NULL AS string) AS `V`"]
