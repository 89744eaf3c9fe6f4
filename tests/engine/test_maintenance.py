"""Lake maintenance: flush, merge, rewrite, expire, cleanup, orphans, checkpoint, options.

Transparency: after our flush, merge and rewrite, the table at *every* snapshot and the change
feed over every range read the same as before, by us and by DuckDB. Compatibility: DuckDB's
own maintenance runs on a lake we maintained, and ours on a lake DuckDB maintained. Safety:
cleanup never deletes a file the catalog still names or a young file of a commit in flight,
and a dry run deletes nothing.
"""

from __future__ import annotations

import datetime as dt
import os

import pytest
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.views import ViewRegistry

pytestmark = pytest.mark.spark

FUTURE = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)


def call(duck, sql: str) -> list:  # noqa: ANN001
    """A DuckDB CALL only takes effect once its result is fetched."""
    return duck.execute(sql).fetchall()


def latest(duck) -> int:  # noqa: ANN001
    return duck.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]


def catalog_rows(duck, sql: str) -> list:  # noqa: ANN001
    return duck.execute(sql.replace("{m}", "__ducklake_metadata_lake")).fetchall()


def live_files(duck, table: str = "t") -> int:  # noqa: ANN001
    return catalog_rows(duck, "SELECT count(*) FROM {m}.ducklake_data_file f JOIN "
                              "{m}.ducklake_table t USING (table_id) WHERE f.end_snapshot IS "
                              f"NULL AND t.end_snapshot IS NULL AND t.table_name = '{table}'"
                        )[0][0]


def inlined_rows(duck) -> int:  # noqa: ANN001
    total = 0
    for (name,) in catalog_rows(duck, "SELECT table_name FROM {m}.ducklake_inlined_data_tables"):
        total += catalog_rows(duck, f"SELECT count(*) FROM {{m}}.{name}")[0][0]
    return total


def history(duck, lake, table: str, snapshots, ranges):  # noqa: ANN001
    """Every snapshot's contents and every range's change feed, by us and by DuckDB."""
    ours = lake.table(f"main.{table}")
    out = {}
    for s in snapshots:
        cols = ", ".join(f'"{c}"' for c in ours.read(version=s).columns)
        out[("read", "ours", s)] = spark_rows(ours.read(version=s))
        out[("read", "duckdb", s)] = duck_rows(
            duck, f"SELECT {cols} FROM lake.{table} AT (VERSION => {s})")
    for start, end in ranges:
        out[("changes", "ours", start, end)] = spark_rows(ours.changes(start, end))
        out[("changes", "duckdb", start, end)] = duck_rows(
            duck, f"SELECT * FROM ducklake_table_changes('lake', 'main', '{table}', "
                  f"{start}, {end})")
    return out


def assert_same_history(before: dict, after: dict) -> None:
    diffs = [key for key in before if before[key] != after[key]]
    assert not diffs, "\n".join(
        f"{key}:\n  before: {before[key][:4]}\n  after : {after[key][:4]}" for key in diffs[:6])


def build_history(spark, lake) -> tuple[int, int]:  # noqa: ANN001
    """A long history written by us: files, inlined rows, updates, deletes (inlined and
    delete files), MERGE, schema changes; returns (first, last) snapshot ids."""
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id * 10 AS BIGINT) AS v, "
                   "'old' AS tag FROM range(40)")
    first = lake.current_snapshot().snapshot_id
    t = lake.table("main.t")
    t.append(spark.sql("SELECT 100L AS id, 1000L AS v, 'small' AS tag"))          # inlined
    t.append(spark.sql("SELECT id, id AS v, 'batch' AS tag FROM range(200, 230)"))  # file
    t.append(spark.sql("SELECT id, id AS v, 'b2' AS tag FROM range(300, 325)"))   # file
    t.append(spark.sql("SELECT 101L AS id, 1L AS v, 'small2' AS tag"))            # inlined
    t.update({"tag": "'upd'"}, where="id BETWEEN 5 AND 20")                    # file rows
    t.update({"v": "v + 1"}, where="id = 100")                                 # inlined row
    t.delete("id < 3")                                                         # inlined delete
    t.delete("id BETWEEN 21 AND 35")                                           # delete file
    t.delete("id = 36")                                                        # cumulative
    engine.execute("""
        MERGE INTO `main.t` AS t USING (SELECT id, id * 100 AS v FROM range(18, 45)) AS s
        ON t.id = s.id
        WHEN MATCHED AND s.id = 19 THEN DELETE
        WHEN MATCHED THEN UPDATE SET v = s.v, tag = 'merged'
        WHEN NOT MATCHED THEN INSERT (id, v, tag) VALUES (s.id, s.v, 'new')""")
    engine.execute("ALTER TABLE `main.t` ADD COLUMNS (extra STRING)")
    t.append(spark.sql("SELECT 400L AS id, 2L AS v, 'late' AS tag, 'e' AS extra"))  # inlined
    t.append(spark.sql("SELECT id, id AS v, 'late' AS tag, 'x' AS extra FROM range(500, 520)"))
    t.delete("id = 101")                                                       # inlined row
    t.delete("id BETWEEN 200 AND 228")                                          # nearly all
    return first, lake.current_snapshot().snapshot_id


# ------------------------------------------------------------------------ transparency
def test_flush_merge_rewrite_keep_every_snapshot_and_change(spark, duck, lake):  # noqa: ANN001
    first, last = build_history(spark, lake)
    snapshots = list(range(first, last + 1))
    ranges = [(s, s) for s in snapshots] + [(first, last), (first + 3, last - 2), (0, last)]
    before = history(duck, lake, "t", snapshots, ranges)
    files_before = live_files(duck)
    assert inlined_rows(duck) > 0

    flushed = lake.flush_inlined_data()
    assert flushed.rows_flushed > 0 and inlined_rows(duck) == 0
    assert lake.current_snapshot().changes[-1].startswith("inline_flush:") or any(
        c.startswith("inline_flush:") for c in lake.current_snapshot().changes)
    merged = lake.merge_adjacent_files()
    assert merged.files_processed >= 2 and merged.files_created >= 1
    assert lake.current_snapshot().changes == [f"merge_adjacent:{lake.table('t').info().table_id}"]
    rewritten = lake.rewrite_data_files(delete_threshold=0.5)
    assert rewritten.files_processed >= 1
    assert live_files(duck) < files_before + len(flushed.tables)

    after = history(duck, lake, "t", snapshots, ranges)
    assert_same_history(before, after)
    # and the current state agrees between the engines
    now = lake.current_snapshot().snapshot_id
    assert spark_rows(lake.table("t").read()) == duck_rows(
        duck, "SELECT id, v, tag, extra FROM lake.t") == before[("read", "ours", last)]
    assert now > last
