"""A rebuild (CREATE OR REPLACE TABLE, ``LakeTable.replace``) changes columns in place and keeps
the table's identity: struct fields added, dropped and widened keep the other fields' ids, and
a type DuckLake cannot widen is a new column of the same name, in the same one snapshot. DuckDB
reads the table at every snapshot, and the change feed spans the change."""

from __future__ import annotations

import pytest
from oracle import assert_same, duck_rows
from sqlalchemy import text

from dbt.adapters.ducklake.lake.compaction import sort_keys
from dbt.adapters.ducklake.lake.sort_order import describe
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def ids_by_path(lake, name: str) -> dict[str, int]:  # noqa: ANN001
    out = {}

    def walk(column, prefix: str) -> None:  # noqa: ANN001
        path = f"{prefix}{column.column_name}"
        out[path] = column.column_id
        for child in column.children:
            walk(child, path + ".")

    for column in lake.table(name).columns():
        walk(column, "")
    return out


def assert_duckdb_reads_every_snapshot(duck, lake, name: str, since: int) -> None:  # noqa: ANN001
    for snapshot in lake.snapshots():
        if snapshot.snapshot_id >= since:
            assert_same(duck, name.split(".")[1],
                        lake.table(name).read(version=snapshot.snapshot_id),
                        at=snapshot.snapshot_id)


def test_narrowed_type_is_a_new_column_of_the_same_table(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, id * 10 AS v, 'x' AS s FROM range(5)")
    first = lake.table("main.t").info()
    before = ids_by_path(lake, "main.t")
    snapshots = len(lake.snapshots())
    result = engine.execute("CREATE OR REPLACE TABLE `main.t` AS "
                            "SELECT id, CAST(id AS INT) AS v, 'y' AS s FROM range(3)")
    assert len(lake.snapshots()) == snapshots + 1
    assert "column v: int64 -> int32" in result.message
    table = lake.table("main.t")
    assert table.info().table_id == first.table_id
    after = ids_by_path(lake, "main.t")
    assert after["id"] == before["id"] and after["s"] == before["s"]
    assert after["v"] > max(before.values())
    assert [c.column_name for c in table.columns()] == ["id", "s", "v"]
    assert [(c.column_name, c.column_type) for c in table.columns()][2] == ("v", "int32")
    # time travel before the change shows the old column and its values
    old = table.read(version=result.snapshot.snapshot_id - 1)
    assert sorted(r["v"] for r in old.collect()) == [0, 10, 20, 30, 40]
    assert_duckdb_reads_every_snapshot(duck, lake, "main.t", first.begin_snapshot)
    rows = duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes('lake', "
                           f"'main', 't', 0, {result.snapshot.snapshot_id}) GROUP BY 1")
    assert dict(rows) == {"insert": 8, "delete": 5}
    changes = table.changes(0, result.snapshot.snapshot_id)
    assert sorted(r["change_type"] for r in changes.collect()) == ["delete"] * 5 + ["insert"] * 8


def test_struct_fields_change_in_place(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, named_struct('x', CAST(id AS INT), "
                   "'y', 'a', 'z', id) AS st, array(named_struct('a', CAST(id AS INT))) AS l, "
                   "map('k', CAST(id AS INT)) AS m FROM range(4)")
    first = lake.table("main.t").info()
    before = ids_by_path(lake, "main.t")
    result = engine.execute(
        "CREATE OR REPLACE TABLE `main.t` AS SELECT id, named_struct('x', id, 'z', 'now text', "
        "'w', 'new') AS st, array(named_struct('a', id, 'b', 'b')) AS l, map('k', id) AS m "
        "FROM range(6)")
    table = lake.table("main.t")
    assert table.info().table_id == first.table_id
    after = ids_by_path(lake, "main.t")
    # x widened (same id), y dropped, z narrowed to text (a new field), w added
    assert after["st.x"] == before["st.x"] and "st.y" not in after
    assert after["st.z"] not in before.values() and after["st.w"] not in before.values()
    assert after["l.element.a"] == before["l.element.a"] and "l.element.b" in after
    assert after["m.value"] == before["m.value"]
    assert after["st"] == before["st"] and after["l"] == before["l"]
    assert "field st.z: int64 -> varchar" in result.message
    got = sorted(table.read().collect())[5]
    assert got["st"].asDict() == {"x": 5, "z": "now text", "w": "new"}
    assert_duckdb_reads_every_snapshot(duck, lake, "main.t", first.begin_snapshot)
    assert duck.execute("SELECT st.x, st.w, l[1].b, m['k'] FROM lake.t WHERE id = 5"
                        ).fetchall() == [(5, "new", "b", 5)]


def test_a_struct_field_added_alone_is_no_new_column(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, named_struct('x', id) AS st "
                   "FROM range(3)")
    start = lake.current_snapshot().snapshot_id
    result = engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT id, "
                            "named_struct('x', id, 'y', 'b') AS st FROM range(3)")
    assert result.message == "replaced"
    changes = lake.table("main.t").changes(start + 1, result.snapshot.snapshot_id)
    assert sorted(r["change_type"] for r in changes.collect()) == ["delete"] * 3 + ["insert"] * 3
    assert_same(duck, "t", lake.table("main.t").read())


def test_list_element_changed_kind_is_a_new_column(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, array(id) AS l FROM range(3)")
    first = lake.table("main.t").info()
    result = engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT id, "
                            "array(CAST(id AS STRING)) AS l FROM range(3)")
    assert "column l (l.element: int64 -> varchar)" in result.message
    assert lake.table("main.t").info().table_id == first.table_id
    assert_duckdb_reads_every_snapshot(duck, lake, "main.t", first.begin_snapshot)


def test_partition_key_on_a_new_column_follows_it(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` PARTITIONED BY (region) AS SELECT id, "
                   "CAST(id % 3 AS BIGINT) AS region FROM range(9)")
    engine.execute("CREATE OR REPLACE TABLE `main.t` PARTITIONED BY (region) AS SELECT id, "
                   "CAST(id % 3 AS STRING) AS region FROM range(9)")
    table = lake.table("main.t")
    assert table.partitioning() == ["region"]
    assert [k.column.column_type for k in table.partition_keys()] == ["varchar"]
    assert_same(duck, "t", table.read())
    assert duck.execute("SELECT count(*) FROM lake.t WHERE region = '1'").fetchone() == (3,)


def test_view_and_table_replace_each_other_in_one_snapshot(lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE VIEW `main.r` AS SELECT 1 AS id")
    count = len(lake.snapshots())
    engine.execute("CREATE OR REPLACE TABLE `main.r` AS SELECT id FROM range(3)")
    assert len(lake.snapshots()) == count + 1
    assert lake.snapshots()[-1].changes[0].startswith("dropped_view:")
    assert duck.execute("SELECT count(*) FROM lake.r").fetchone() == (3,)
    engine.execute("CREATE OR REPLACE VIEW `main.r` AS SELECT 7 AS id")
    assert len(lake.snapshots()) == count + 2
    assert lake.tables("main") == []


@pytest.mark.postgres_too
def test_a_failing_query_leaves_the_table(lake, duck, engine):  # noqa: ANN001
    from pyspark.errors import PySparkException

    engine.execute("CREATE TABLE `main.t` AS SELECT id, id AS v FROM range(5)")
    count = len(lake.snapshots())
    with pytest.raises(PySparkException, match="boom"):
        engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT id, CAST(id AS INT) AS v, "
                       "assert_true(id < 3, 'boom') AS x FROM range(5)")
    assert len(lake.snapshots()) == count
    assert sorted(r["v"] for r in lake.table("main.t").read().collect()) == [0, 1, 2, 3, 4]
    assert_same(duck, "t", lake.table("main.t").read())


def test_or_replace_keeps_comments_options_and_partitioning(spark, lake, duck):  # noqa: ANN001
    """A recreate keeps what describes the table: comments, any other tag (a catalog writer's),
    table options, partitioning and sort order."""
    table = lake.create_table("main.s", spark.range(4).selectExpr("id", "id % 2 AS k"),
                              partition_by=["k"], sorted_by=["k", "id DESC"])
    lake.set_comments("main.s", "seed table", columns={"id": "the key"})
    table.set_option("data_inlining_row_limit", 0)
    with lake.catalog.write() as conn:
        conn.execute(text(f"INSERT INTO {lake.catalog.t('ducklake_tag')} (object_id, "
                          "begin_snapshot, end_snapshot, key, value) VALUES (:o, :s, NULL, "
                          "'owner', 'team a')"),
                     {"o": table.info().table_id, "s": lake.current_snapshot().snapshot_id})
    old_id = table.info().table_id
    count = len(lake.snapshots())
    lake.create_table("main.s", spark.range(6).selectExpr("id", "id % 3 AS k", "'n' AS z"),
                      or_replace=True)
    assert len(lake.snapshots()) == count + 1
    new = lake.table("main.s")
    assert new.info().table_id != old_id
    assert new.partitioning() == ["k"]
    assert duck.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 's'"
                        ).fetchone() == ("seed table",)
    assert duck.execute("SELECT comment FROM duckdb_columns() WHERE table_name = 's' AND "
                        "column_name = 'id'").fetchone() == ("the key",)
    assert any(o.key == "data_inlining_row_limit" and o.scope_id == new.info().table_id
               for o in lake.options())
    with lake.catalog.read() as conn:
        at = lake.current_snapshot().snapshot_id
        assert describe(sort_keys(lake.catalog, conn, new.info().table_id, at)) == \
            ["k", "id DESC"]
        assert conn.execute(text(
            f"SELECT value FROM {lake.catalog.t('ducklake_tag')} WHERE object_id = :o AND "
            "key = 'owner' AND end_snapshot IS NULL"), {"o": new.info().table_id}
        ).all() == [("team a",)]
    assert_same(duck, "s", new.read())
    # a replacement without the sort key's column keeps the keys before it
    lake.create_table("main.s", spark.range(3).selectExpr("id", "id AS j"), or_replace=True)
    with lake.catalog.read() as conn:
        assert sort_keys(lake.catalog, conn, lake.table("main.s").info().table_id,
                         lake.current_snapshot().snapshot_id) == []
