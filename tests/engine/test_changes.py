"""The change feed equals DuckDB's, row for row, on histories written by DuckDB and by us.

For every snapshot ``s`` of a history, ``changes(s, s)`` must equal DuckDB's
``ducklake_table_changes('lake', 'main', t, s, s)``; so must a few ranges that span flushes,
merges and schema changes, and ``insertions`` / ``deletions`` (compared with
``SELECT snapshot_id, rowid, * FROM ducklake_table_insertions(...)`` / ``..._deletions``).
DuckDB's output is compared unfiltered: a WHERE on top of it relabels update post-images.
"""

from __future__ import annotations

import datetime as dt

import pytest
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import NotFoundError, SnapshotNotFoundError
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark


def run(duck, *statements: str) -> int:  # noqa: ANN001
    for sql in statements:
        duck.execute(sql)
    return latest(duck)


def latest(duck) -> int:  # noqa: ANN001
    return duck.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]


def check(duck, lake, table: str, ranges, kinds=("changes",)) -> None:  # noqa: ANN001
    """Our feed equals DuckDB's for every range and kind."""
    ours = lake.table(f"main.{table}")
    failures = []
    for start, end in ranges:
        for kind in kinds:
            if kind == "changes":
                sql = ("SELECT * FROM ducklake_table_changes('lake', 'main', "
                       f"'{table}', {start}, {end})")
            else:
                sql = (f"SELECT snapshot_id, rowid, * FROM ducklake_table_{kind}"
                       f"('lake', 'main', '{table}', {start}, {end})")
            expected = duck_rows(duck, sql)
            actual = spark_rows(getattr(ours, kind)(start, end))
            if actual != expected:
                failures.append(
                    f"{kind}({start}, {end}):\n  duckdb only: "
                    f"{[r for r in expected if r not in actual][:4]}\n  ours only  : "
                    f"{[r for r in actual if r not in expected][:4]}")
    assert not failures, "\n".join(failures)


def every_snapshot(first: int, last: int, spans=()) -> list[tuple[int, int]]:  # noqa: ANN001
    return [(s, s) for s in range(first, last + 1)] + [(0, last), *spans]


# ------------------------------------------------------------------------ DuckDB writes
@pytest.mark.slow
def test_duckdb_history(duck, lake):  # noqa: ANN001
    """Files, updates, plain and cumulative delete files, inlined rows and inlined deletes,
    flush, merge_adjacent_files (partial files), and whole files ended by deletes."""
    first = run(duck, "CREATE TABLE lake.t(i INTEGER, s VARCHAR)")
    flush = run(
        duck,
        "INSERT INTO lake.t SELECT range, 'r' || range FROM range(20)",
        "UPDATE lake.t SET s = 'u' WHERE i BETWEEN 3 AND 14",      # 12 rows: a new file
        "DELETE FROM lake.t WHERE i < 2",                          # inlined deletes
        "DELETE FROM lake.t WHERE i BETWEEN 15 AND 19",            # inlined deletes
        "INSERT INTO lake.t VALUES (100, 'x'), (101, 'y'), (102, 'z')",  # inlined rows
        "UPDATE lake.t SET s = 'xx' WHERE i = 100",                # inlined update
        "DELETE FROM lake.t WHERE i = 101",                        # inlined delete of a row
        "CALL ducklake_flush_inlined_data('lake')",
    )
    last = run(
        duck,
        "INSERT INTO lake.t SELECT range, 'm' FROM range(200, 230)",
        "INSERT INTO lake.t SELECT range, 'n' FROM range(300, 330)",
        "CALL ducklake_merge_adjacent_files('lake')",
        "DELETE FROM lake.t WHERE i >= 300",                       # delete file on a merged file
        "DELETE FROM lake.t WHERE i BETWEEN 3 AND 8",              # cumulative on the update file
        "DELETE FROM lake.t WHERE i >= 200",                       # ends the merged file
        "INSERT INTO lake.t SELECT range, 'q' FROM range(400, 420)",
        "DELETE FROM lake.t WHERE i = 400",                        # inlined delete, then ...
        "DELETE FROM lake.t WHERE i >= 400",                       # ... the file is ended
    )
    check(duck, lake, "t", every_snapshot(first, last, [(first, flush), (flush, last),
                                                       (flush - 2, flush + 3)]))
    check(duck, lake, "t", [(0, last), (flush, last), (3, flush + 4)],
          kinds=("insertions", "deletions"))


def test_duckdb_schema_changes_inside_the_range(duck, lake):  # noqa: ANN001
    """Columns added, renamed and dropped inside the range: rows come with the columns of the
    end snapshot, in files and in inlined tables of every schema version."""
    first = run(duck, "CREATE TABLE lake.t(id INTEGER, a VARCHAR, b DOUBLE)")
    last = run(
        duck,
        "INSERT INTO lake.t SELECT range, 'a' || range, range / 2 FROM range(15)",
        "INSERT INTO lake.t VALUES (50, 'fifty', 0.5)",
        "ALTER TABLE lake.t ADD COLUMN c INTEGER DEFAULT 7",
        "UPDATE lake.t SET c = id WHERE id < 3 OR id = 50",
        "ALTER TABLE lake.t RENAME COLUMN a TO name",
        "INSERT INTO lake.t VALUES (60, 'sixty', 0.6, 60)",
        "ALTER TABLE lake.t DROP COLUMN b",
        "DELETE FROM lake.t WHERE id IN (4, 60)",
        "UPDATE lake.t SET name = 'big' WHERE id >= 5",
    )
    check(duck, lake, "t", every_snapshot(first, last, [(first + 2, last - 2)]))
    check(duck, lake, "t", [(0, last)], kinds=("insertions", "deletions"))


# ------------------------------------------------------------------------ our writes
@pytest.mark.slow
def test_our_history_with_duckdb_maintenance(spark, duck, lake):  # noqa: ANN001
    """Written by us (inserts, updates, deletes, MERGE, schema changes, a rebuild in place),
    then flushed and merged by DuckDB, then changed again by us."""
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE TABLE `main.t` AS SELECT id, CAST(id * 10 AS BIGINT) AS v, "
                   "'old' AS tag FROM range(30)")
    first = latest(duck)
    t = lake.table("main.t")
    t.append(spark.sql("SELECT 100L AS id, 1000L AS v, 'small' AS tag"))          # inlined
    t.update({"tag": "'upd'"}, where="id BETWEEN 5 AND 20")                    # file rows
    t.update({"v": "v + 1"}, where="id = 100")                                 # inlined row
    t.delete("id < 3")                                                         # inlined delete
    t.delete("id BETWEEN 21 AND 29")
    engine.execute("""
        MERGE INTO `main.t` AS t USING (SELECT id, id * 100 AS v FROM range(18, 40)) AS s
        ON t.id = s.id
        WHEN MATCHED AND s.id = 19 THEN DELETE
        WHEN MATCHED THEN UPDATE SET v = s.v, tag = 'merged'
        WHEN NOT MATCHED THEN INSERT (id, v, tag) VALUES (s.id, s.v, 'new')""")
    engine.execute("ALTER TABLE `main.t` ADD COLUMNS (extra STRING)")
    t.append(spark.sql("SELECT 200L AS id, 2L AS v, 'late' AS tag, 'e' AS extra"))
    engine.execute("ALTER TABLE `main.t` RENAME COLUMN tag TO label")
    mid = run(duck, "CALL ducklake_flush_inlined_data('lake')",
              "CALL ducklake_merge_adjacent_files('lake')")
    t.delete("id = 200 OR id = 7")
    t.update({"label": "'after'"}, where="id >= 30")
    engine.execute("ALTER TABLE `main.t` DROP COLUMN extra")
    engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT id, v, label FROM `main.t` "
                   "WHERE id < 35")
    last = latest(duck)
    # not (0, last): see test_several_versions_of_a_row_in_one_flushed_file
    check(duck, lake, "t", [(s, s) for s in range(first, last + 1)]
          + [(0, mid), (mid - 3, last)])
    check(duck, lake, "t", [(0, mid), (mid, last)], kinds=("insertions", "deletions"))


def test_several_versions_of_a_row_in_one_flushed_file(duck, lake):  # noqa: ANN001
    """Where we knowingly differ from DuckDB 1.5.5: a row updated while inlined, flushed
    (both versions land in one file with the same row id) and deleted again. DuckDB looks
    the deleting snapshot up by row id, so one of the two deletes in a range covering both
    gets the other's snapshot (and an update turns into an insert). We report each deleted
    version with the snapshot that deleted it, as a range of one snapshot does in both."""
    run(duck, "CREATE TABLE lake.t(i INTEGER, s VARCHAR)", "INSERT INTO lake.t VALUES (1, 'a')")
    updated = run(duck, "UPDATE lake.t SET s = 'b' WHERE i = 1")
    run(duck, "CALL ducklake_flush_inlined_data('lake')")
    last = run(duck, "UPDATE lake.t SET s = 'c' WHERE i = 1")
    ours = spark_rows(lake.table("main.t").changes(0, last))
    assert ours == sorted([
        (2, 0, "insert", 1, "a"), (updated, 0, "update_preimage", 1, "a"),
        (updated, 0, "update_postimage", 1, "b"), (last, 0, "update_preimage", 1, "b"),
        (last, 0, "update_postimage", 1, "c")], key=repr)
    for s in range(2, last + 1):
        check(duck, lake, "t", [(s, s)])
    duckdb = duck_rows(
        duck, f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', 0, {last})")
    assert duckdb != ours  # if DuckDB fixes this, compare whole ranges above again


# ------------------------------------------------------------------------ bounds
def test_timestamp_bounds(duck, lake):  # noqa: ANN001
    """A start time picks the earliest snapshot at or after it, an end time the latest at or
    before it, as DuckDB binds them."""
    run(duck, "CREATE TABLE lake.t(i INTEGER)")
    for i in range(4):
        run(duck, f"INSERT INTO lake.t VALUES ({i})")
    times = dict(duck.execute("SELECT snapshot_id, snapshot_time FROM lake.snapshots()")
                 .fetchall())
    start = times[2] - dt.timedelta(microseconds=1)
    end = times[4] + dt.timedelta(microseconds=1)
    expected = duck_rows(duck, "SELECT * FROM ducklake_table_changes('lake', 'main', 't', "
                               f"TIMESTAMPTZ '{start}', TIMESTAMPTZ '{end}')")
    actual = spark_rows(lake.table("main.t").changes(start, end))
    assert actual == expected and [r[0] for r in actual] == [2, 3, 4]


def test_unknown_snapshot_is_named_with_the_range(lake, duck):  # noqa: ANN001
    run(duck, "CREATE TABLE lake.t(i INTEGER)", "INSERT INTO lake.t VALUES (1)")
    with pytest.raises(SnapshotNotFoundError, match=r"version 42.*snapshots are 0 .* to 2"):
        lake.table("main.t").changes(0, 42)
    with pytest.raises(SnapshotNotFoundError, match="at or after 2999"):
        lake.table("main.t").changes("2999-01-01 00:00:00+00", 2)
    with pytest.raises(NotFoundError):
        lake.table("main.t").changes(0, 0)  # the table did not exist yet at the end
