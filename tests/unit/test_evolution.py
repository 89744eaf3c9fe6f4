"""Schema evolution without a JVM: which changes are made in place, which columns are new, and
the ids the new nodes get (they must be those the commit assigns)."""

from __future__ import annotations

from dbt.adapters.ducklake.lake.evolution import evolve, evolved
from dbt.adapters.ducklake.lake.models import ColumnInfo, ColumnSpec


def col(cid: int, name: str, type_: str, *kids: ColumnInfo, parent: int | None = None
        ) -> ColumnInfo:
    return ColumnInfo(cid, 1, None, 1, cid, name, type_, None, None, True, parent,
                      children=tuple(kids))


def spec(name: str, type_: str, *kids: ColumnSpec) -> ColumnSpec:
    return ColumnSpec(name, type_, children=tuple(kids))


CURRENT = [
    col(1, "id", "int64"),
    col(2, "st", "struct", col(3, "x", "int32", parent=2), col(4, "y", "varchar", parent=2)),
    col(5, "l", "list", col(6, "element", "int32", parent=5)),
]


def test_unchanged_columns_change_nothing() -> None:
    wanted = [spec("ID", "int64"), spec("st", "struct", spec("y", "varchar"),
                                        spec("x", "int32")),
              spec("l", "list", spec("element", "int32"))]
    assert evolve(CURRENT, wanted).empty


def test_struct_fields_are_added_dropped_and_widened_in_place() -> None:
    wanted = [spec("id", "int64"),
              spec("st", "struct", spec("x", "int64"), spec("w", "date")),
              spec("l", "list", spec("element", "int64"))]
    changes = evolve(CURRENT, wanted)
    assert changes.retype == ((("st", "x"), "int64"), (("l", "element"), "int64"))
    assert changes.drop == (("st", "y"),)
    assert [(p, s.name) for p, s in changes.add_fields] == [(("st",), "w")]
    assert changes.add == () and changes.new_columns == ()
    after = evolved(CURRENT, changes, first_id=7)
    st = after[1]
    assert [(c.column_id, c.column_name, c.column_type) for c in st.children] == [
        (3, "x", "int64"), (7, "w", "date")]
    assert st.children[1].parent_column == 2


def test_what_cannot_be_widened_is_a_new_column_or_field() -> None:
    wanted = [spec("id", "int32"),
              spec("st", "struct", spec("x", "varchar"), spec("y", "varchar")),
              spec("l", "list", spec("element", "varchar"))]
    changes = evolve(CURRENT, wanted)
    assert changes.drop == (("id",), ("st", "x"), ("l",))
    assert [s.name for s in changes.add] == ["id", "l"]
    assert [(p, s.name) for p, s in changes.add_fields] == [(("st",), "x")]
    assert changes.new_columns == ("column id: int64 -> int32", "field st.x: int32 -> varchar",
                                   "column l (l.element: int32 -> varchar)")
    after = evolved(CURRENT, changes, first_id=7)
    # new top-level columns first (depth-first), then new fields: as alter_columns numbers them
    assert [(c.column_name, c.column_id) for c in after] == [("st", 2), ("id", 7), ("l", 8)]
    assert after[2].children[0].column_id == 9
    assert [(c.column_name, c.column_id) for c in after[0].children] == [("y", 4), ("x", 10)]


def test_a_scalar_becoming_nested_is_a_new_column() -> None:
    changes = evolve(CURRENT, [spec("id", "struct", spec("a", "int64"))], drop_missing=False)
    assert changes.drop == (("id",),) and changes.new_columns == (
        "column id: int64 -> struct",)


def test_a_new_column_takes_its_nullability_from_the_wanted_one() -> None:
    wanted = [ColumnSpec("id", "int32", nulls_allowed=False)]
    changes = evolve(CURRENT[:1], wanted)
    assert changes.nullability == () and changes.add[0].nulls_allowed is False
