"""File pruning by column bounds, and the merge keys and shapes it is driven by (no JVM)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake.file_skipping import (
    KeyRange,
    files_in_ranges,
    prunable,
    rows_outside,
)
from dbt.adapters.ducklake.lake.models import ColumnInfo, DataFile
from dbt.adapters.ducklake.lake.types import LakeType
from dbt.adapters.ducklake.spark.merge_statement import (
    MergeClause,
    MergeStatement,
    equi_keys,
    updates_are_source_rows,
)

parse_type = LakeType.parse


def _file(fid: int) -> DataFile:
    return DataFile(fid, 1, 1, None, None, f"f{fid}.parquet", True, "parquet", 10, 100, None,
                    0, None, None, None, None)


def test_files_overlapping_the_range_are_kept():
    files = [_file(i) for i in range(5)]
    bounds = {0: {1: ("0", "9")}, 1: {1: ("10", "19")}, 2: {1: ("20", "29")},
              3: {1: (None, None)}}  # file 4 has no bounds at all
    kept = files_in_ranges(files, bounds, [KeyRange(1, parse_type("int64"), "15", "20")])
    assert [f.data_file_id for f in kept] == [1, 2, 3, 4]


def test_values_compare_by_value_not_text():
    files = [_file(0), _file(1)]
    bounds = {0: {1: ("2024-01-01", "2024-01-31")}, 1: {1: ("2024-02-01", "2024-02-29")}}
    kept = files_in_ranges(files, bounds,
                           [KeyRange(1, parse_type("date"), "2024-02-10", "2024-02-11")])
    assert [f.data_file_id for f in kept] == [1]
    numbers = {0: {1: ("9", "9")}, 1: {1: ("10", "100")}}
    kept = files_in_ranges(files, numbers, [KeyRange(1, parse_type("int32"), "50", "60")])
    assert [f.data_file_id for f in kept] == [1]  # as text, "9" > "60"


def test_every_range_must_overlap():
    files = [_file(0)]
    bounds = {0: {1: ("0", "9"), 2: ("100", "200")}}
    ranges = [KeyRange(1, parse_type("int64"), "5", "5"),
              KeyRange(2, parse_type("int64"), "300", "400")]
    assert files_in_ranges(files, bounds, ranges) == []


def test_rows_outside_a_range_are_estimated_from_the_file_bounds():
    files = [DataFile(i, 1, 1, None, None, f"f{i}.parquet", True, "parquet", 1000, 100, None,
                      0, None, None, None, None) for i in range(4)]
    bounds = {0: {1: ("0", "99")}, 1: {1: ("100", "199")}, 2: {1: ("7", "7")}}  # 3: none
    key = KeyRange(1, parse_type("int64"), "150", "300")
    # file 0 lies wholly outside, half of file 1 does, the one value of file 2 does too
    assert rows_outside(files, bounds, [key]) == pytest.approx(1000 + 505 + 1000, abs=1)
    assert rows_outside(files, bounds, [KeyRange(1, parse_type("int64"), "-5", "500")]) == 0
    # several keys: a row outside any range is outside
    two = {0: {1: ("0", "99"), 2: ("0", "9")}}
    ranges = [KeyRange(1, parse_type("int64"), "0", "99"),
              KeyRange(2, parse_type("int64"), "0", "4")]
    assert 500 <= rows_outside(files[:1], two, ranges) <= 600
    days = {0: {1: ("2024-01-01", "2024-01-11")}}
    assert rows_outside(files[:1], days, [KeyRange(1, parse_type("date"), "2024-01-06",
                                                   "2024-02-01")]) == 500
    decimals = {0: {1: ("0.00", "10.00")}}
    assert rows_outside(files[:1], decimals, [KeyRange(1, parse_type("decimal(9,2)"), "2.50",
                                                       "5.00")]) == 750


def test_only_exact_ordered_types_prune():
    assert prunable(parse_type("int64")) and prunable(parse_type("decimal(18,3)"))
    assert prunable(parse_type("date")) and prunable(parse_type("timestamp"))
    for name in ("varchar", "float64", "float32", "timestamptz", "boolean", "uuid", "blob"):
        assert not prunable(parse_type(name)), name


def test_merge_keys_are_the_top_level_equalities_between_the_aliases():
    assert equi_keys("t.id = s.id", "t", "s") == [("id", "id")]
    assert equi_keys("s.K = t.Key AND t.day = s.day AND t.v < s.v", "t", "s") == [
        ("key", "k"), ("day", "day")]
    assert equi_keys("`T`.`id` = `s`.`id`", "t", "s") == [("id", "id")]
    assert equi_keys("t.id = s.id OR t.x = s.x", "t", "s") == []
    assert equi_keys("t.id = 5", "t", "s") == []
    assert equi_keys("t.id = s.id + 1", "t", "s") == []
    assert equi_keys("not ) valid", "t", "s") == []


def test_dbt_merge_is_recognised_with_the_source_columns_its_on_condition_names():
    columns = [ColumnInfo(i, 1, None, 1, i, name, "int64", None, None, True, None)
               for i, name in enumerate(["id", "day", "v"])]
    dbt = [MergeClause("matched", "update_star"), MergeClause("not_matched", "insert_star")]

    def judged(on: str, clauses: list[MergeClause] = dbt,
               source: tuple[str, ...] = ("ID", "day", "v", "extra")) -> list[str] | None:
        return updates_are_source_rows(MergeStatement(on, tuple(clauses), "t", "s"), columns,
                                       source)

    assert judged("t.id = s.id") == ["ID"]  # the source's own spelling
    assert judged("t.id = s.id AND t.day = s.day AND s.day > t.day - 7") == ["ID", "day"]
    assert judged("t.id = s.id", dbt[::-1]) == ["ID"]
    assert judged("t.id = id") is None  # unqualified: Spark decides its side
    assert judged("t.id = s.st.x") is None  # a struct's field
    assert judged("t.id = s.nope") is None
    assert judged("t.id = s.id", source=("id", "day")) is None  # v would keep its value
    assert judged("t.id = s.id", [dbt[0], MergeClause("not_matched", "insert_star", "s.v > 0")]) \
        is None
    assert judged("t.id = s.id", [*dbt, MergeClause("matched", "update_star", "s.v > 0")]) \
        is None
    assert judged("t.id = s.id", [MergeClause("matched", "update", assignments=(("v", "s.v"),)),
                                  dbt[1]]) is None  # id and day keep the target's values
    # dbt's merge strategy spells UPDATE SET * out, every column from the source
    spelled = MergeClause("matched", "update", assignments=(
        ("`id`", "s.`id`"), ("t.day", "s.day"), ("V", "S.v")))
    assert judged("t.id = s.id", [spelled, dbt[1]]) == ["ID"]
    as_dbt = MergeClause("matched", "update", assignments=tuple(
        (f"`{c}`", f"DBT_INTERNAL_SOURCE.`{c}`") for c in ("id", "day", "v")))
    assert updates_are_source_rows(
        MergeStatement("DBT_INTERNAL_SOURCE.id = DBT_INTERNAL_DEST.id", (as_dbt, dbt[1]),
                       "DBT_INTERNAL_DEST", "DBT_INTERNAL_SOURCE"),
        columns, ("id", "day", "v")) == ["id"]
    for other in ("s.v + 1", "t.v", "s.day", "s.v.x"):
        changed = MergeClause("matched", "update", assignments=(
            ("id", "s.id"), ("day", "s.day"), ("v", other)))
        assert judged("t.id = s.id", [changed, dbt[1]]) is None, other
    assert judged("t.id = s.id", [*dbt, MergeClause("not_matched_by_source", "delete")]) is None
    assert judged("not ) valid") is None
