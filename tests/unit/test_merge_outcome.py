"""A MERGE's outcome on the driver, from collected Arrow rows, and the choice of the way the
outcome is computed (no JVM)."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from dbt.adapters.ducklake.lake.errors import SchemaMismatchError
from dbt.adapters.ducklake.spark import merge
from dbt.adapters.ducklake.spark.merge import (
    Collect,
    MergeClause,
    MergeCounts,
    MergeStatement,
    collect_to_driver,
    outcome_on_driver,
)

NAMES = ["id", "v"]
DBT = (MergeClause("matched", "update_star"), MergeClause("not_matched", "insert_star"))


def collected(rows: list[tuple]) -> pa.Table:
    """Collected merge rows: (clause, file id, position, row id, source row, id, v)."""
    names = ["__ducklake_action", "_ducklake_data_file_id", "_ducklake_position",
             "_ducklake_row_id", "__ducklake_source_row", "id", "v"]
    types = [pa.int32(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(),
             pa.string()]
    return pa.table([pa.array([r[i] for r in rows], t) for i, t in enumerate(types)],
                    names=names)


def test_the_collected_pairs_and_candidates_give_deletes_updates_and_inserts():
    statement = MergeStatement("t.id = s.id", (
        MergeClause("matched", "update", "s.v <> 'x'", (("v", "s.v"),)),
        MergeClause("matched", "delete", "s.id = 2"),
        MergeClause("not_matched", "insert_star", "s.id < 10")), "t", "s")
    rows = collected([
        # pairs: a target row's location (file and position, or an inlined row's id alone)
        (0, 7, 3, 103, 1, 1, "a"),
        (1, 7, 1, 101, 2, None, None),
        (None, 8, 0, 200, 3, None, None),  # no clause applies, but source row 3 matched
        (0, None, None, 50, 4, 4, "d"),
        # candidate inserts: every source row an insert clause applies to
        *[(2, None, None, None, i, i, f"s{i}") for i in (1, 2, 3, 4, 5)],
    ])
    outcome = outcome_on_driver(rows, statement, NAMES, keys_alone=False)
    assert {f: list(p) for f, p in outcome.positions.items()} == {7: [1, 3]}
    assert outcome.inlined == [50]
    assert outcome.updates.to_pylist() == [
        {"id": 1, "v": "a", "_ducklake_internal_row_id": 103},
        {"id": 4, "v": "d", "_ducklake_internal_row_id": 50}]
    assert outcome.inserts.to_pylist() == [{"id": 5, "v": "s5"}]


def test_dbt_merge_takes_its_updated_rows_from_the_candidates():
    """With the source's keys alone joined, the pairs carry no values: an updated row is its
    source row's candidate insert, with the target row's row id."""
    statement = MergeStatement("t.id = s.id", DBT, "t", "s")
    rows = collected([
        (0, 7, 4, 104, 11, None, None),
        (0, 7, 2, 102, 10, None, None),
        *[(1, None, None, None, i, i, f"new{i}") for i in (10, 11, 12)],
    ])
    outcome = outcome_on_driver(rows, statement, NAMES, keys_alone=True)
    assert {f: list(p) for f, p in outcome.positions.items()} == {7: [2, 4]}
    assert outcome.updates.to_pylist() == [
        {"id": 11, "v": "new11", "_ducklake_internal_row_id": 104},
        {"id": 10, "v": "new10", "_ducklake_internal_row_id": 102}]
    assert outcome.inserts.to_pylist() == [{"id": 12, "v": "new12"}]
    with pytest.raises(AssertionError, match="no candidate insert"):
        outcome_on_driver(collected([(0, 7, 2, 102, 10, None, None)]), statement, NAMES,
                          keys_alone=True)


def test_a_target_row_matched_twice_is_refused():
    statement = MergeStatement("t.id = s.id", (MergeClause("matched", "delete"),), "t", "s")
    rows = collected([(0, 7, 3, 103, 1, None, None), (0, 7, 3, 103, 2, None, None)])
    with pytest.raises(SchemaMismatchError, match="more than one source row .row id 103"):
        outcome_on_driver(rows, statement, NAMES, keys_alone=False)


def test_collected_rows_are_staged_on_the_driver_or_from_spark():
    rows = pa.table({"id": [1, 2, 3]})
    spark_rows = object()
    assert merge._staged_form(None, spark_rows, False, 10) is None
    assert merge._staged_form(rows.slice(0, 0), spark_rows, True, 10) is None
    assert merge._staged_form(rows, spark_rows, True, None) is rows  # the driver writes files
    assert merge._staged_form(rows, spark_rows, False, 3) is rows  # inlined
    assert merge._staged_form(rows, spark_rows, False, 2) is spark_rows
    assert merge._staged_form(rows, spark_rows, False, None) is spark_rows


@pytest.mark.parametrize(("source_rows", "on_driver", "fits", "clauses", "expected"), [
    (None, True, True, DBT, Collect.LIMITED),  # no key range taken: probe with a limit
    (5, False, False, DBT, Collect.LIMITED),  # within DRIVER_ROWS
    (50, True, True, DBT, Collect.WHOLE),  # the source's cache fits the driver
    (50, False, True, DBT, None),  # Spark writes: every source row is an outcome row
    (50, True, False, DBT, None),
    # a conditional insert may leave most source rows out: probe with a limit
    (50, True, False, (DBT[0], MergeClause("not_matched", "insert_star", "s.v > 1")),
     Collect.LIMITED),
])
def test_the_way_of_the_outcome(monkeypatch, source_rows, on_driver, fits, clauses,  # noqa: ANN001
                                expected):
    monkeypatch.setattr(merge, "DRIVER_ROWS", 10)
    monkeypatch.setattr(merge, "_source_fits_driver", lambda src: fits)
    plan = SimpleNamespace(source_rows=source_rows, src=None,
                           statement=MergeStatement("t.id = s.id", clauses, "t", "s"))
    assert collect_to_driver(plan, on_driver) is expected  # type: ignore[arg-type]


def test_counts_split_touched_rows_into_updates_and_deletes():
    counts = MergeCounts(touched=5, updated=2, inserted=4)
    counts.touched += 1
    result = counts.result(None)
    assert (result.updated, result.deleted, result.inserted) == (2, 4, 4)
