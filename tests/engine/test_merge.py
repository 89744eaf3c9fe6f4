"""MERGE INTO through the statement engine, checked against DuckDB after every statement."""

from __future__ import annotations

import pytest
from oracle import assert_same, duck_rows

from dbt.adapters.ducklake.lake import SchemaMismatchError
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.views import ViewRegistry

pytestmark = pytest.mark.spark


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def test_all_clause_kinds(spark, lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id * 10 AS BIGINT) AS v, "
                   "'old' AS tag FROM range(40)")
    table = lake.table("main.t")
    result = engine.execute("""
        MERGE INTO `main.t` AS t
        USING (SELECT id, id * 100 AS v FROM range(30, 50)) AS s
        ON t.id = s.id
        WHEN MATCHED AND s.id >= 38 THEN DELETE
        WHEN MATCHED THEN UPDATE SET v = s.v, tag = 'upd'
        WHEN NOT MATCHED AND s.id < 45 THEN INSERT (id, v, tag) VALUES (s.id, s.v, 'new')
        WHEN NOT MATCHED BY SOURCE AND t.id < 5 THEN DELETE
        WHEN NOT MATCHED BY SOURCE AND t.id >= 25 THEN UPDATE SET tag = 'gone'
    """)
    sid = result.snapshot.snapshot_id
    got = {r["id"]: (r["v"], r["tag"]) for r in table.read().collect()}
    assert len(got) == 40 - 2 - 5 + 5
    assert got[30] == (3000, "upd") and got[37] == (3700, "upd")
    assert 38 not in got and 39 not in got and 3 not in got
    assert got[42] == (4200, "new") and 45 not in got
    assert got[26] == (260, "gone") and got[10] == (100, "old")
    assert_same(duck, "t", table.read())
    changes = dict(duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                                   f"'lake', 'main', 't', {sid}, {sid}) GROUP BY 1"))
    assert changes == {"update_preimage": 13, "update_postimage": 13, "delete": 7,
                       "insert": 5}


def test_star_clauses_and_small_merge_is_inlined(spark, lake, duck, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id AS STRING) AS s FROM range(50)")
    engine.execute("""MERGE INTO `main.t` AS t USING (SELECT 3L AS id, 'three' AS s UNION ALL
                      SELECT 99L, 'new') AS u ON t.id = u.id
                      WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")
    assert sorted(lake.current_snapshot().changes) == ["inlined_delete:1", "inlined_insert:1"]
    assert_same(duck, "t", lake.table("main.t").read())


def test_several_source_rows_for_one_target_row_fail(spark, lake, engine):  # noqa: ANN001
    engine.execute("CREATE TABLE `main.t` AS SELECT id FROM range(20)")
    before = len(lake.snapshots())
    with pytest.raises(SchemaMismatchError, match="more than one source row"):
        engine.execute("MERGE INTO `main.t` t USING (SELECT 1L AS id UNION ALL SELECT 1L) s "
                       "ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert len(lake.snapshots()) == before
