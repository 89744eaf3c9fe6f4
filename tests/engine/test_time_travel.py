"""Time travel through view names, checked against DuckDB's ``AT (...)``; snapshot views; the
change feed by name; a connection pinned to a snapshot; how names are registered."""

from __future__ import annotations

import datetime as dt

import pytest
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError, SnapshotNotFoundError
from dbt.adapters.ducklake.sql import Engine, temp_views
from dbt.adapters.ducklake.sql.names import parse_name
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def history(duck) -> dict[int, dt.datetime]:  # noqa: ANN001
    """A table with one change per snapshot; snapshot id -> snapshot time."""
    for sql in ("CREATE TABLE lake.t(i INTEGER, s VARCHAR)",
                "INSERT INTO lake.t SELECT range, 'a' FROM range(20)",
                "UPDATE lake.t SET s = 'b' WHERE i < 5",
                "ALTER TABLE lake.t ADD COLUMN k INTEGER DEFAULT 3",
                "DELETE FROM lake.t WHERE i >= 15",
                "INSERT INTO lake.t VALUES (99, 'z', 9)"):
        duck.execute(sql)
    return dict(duck.execute("SELECT snapshot_id, snapshot_time FROM lake.snapshots()")
                .fetchall())


def test_version_and_timestamp_names(engine, duck):  # noqa: ANN001
    times = history(duck)
    for v in sorted(times)[1:]:
        expected = duck_rows(duck, f"SELECT * FROM lake.t AT (VERSION => {v})")
        assert spark_rows(engine.execute(f"SELECT * FROM `main.t@v{v}`").df) == expected
        # a moment after the snapshot: the latest snapshot at or before it is v
        ts = times[v] + dt.timedelta(microseconds=1)
        got = spark_rows(engine.execute(f"SELECT * FROM `main.t@ts:{ts.isoformat()}`").df)
        assert got == expected, f"timestamp {ts}"
        assert got == duck_rows(duck, f"SELECT * FROM lake.t AT (TIMESTAMP => TIMESTAMPTZ '{ts}')")


def test_unknown_and_expired_snapshots_fail_clearly(engine, duck):  # noqa: ANN001
    times = history(duck)
    with pytest.raises(SnapshotNotFoundError, match=r"version 77 .*snapshots are 0 .* to 6"):
        engine.execute("SELECT * FROM `main.t@v77`")
    with pytest.raises(SnapshotNotFoundError, match="at or before 1999"):
        engine.execute("SELECT * FROM `main.t@ts:1999-01-01 00:00:00+00`")
    expired = duck.execute("CALL ducklake_expire_snapshots('lake', versions => [2, 3])").fetchall()
    assert [r[0] for r in expired] == [2, 3]
    with pytest.raises(SnapshotNotFoundError, match=r"version 3 .*expired"):
        engine.execute("SELECT * FROM `main.t@v3`")
    assert max(times) == 6


def test_change_feed_and_snapshot_views(engine, lake, duck):  # noqa: ANN001
    history(duck)
    t = lake.table("main.t")
    for kind in ("changes", "insertions", "deletions"):
        got = spark_rows(engine.execute(f"SELECT * FROM `main.t@{kind}:2..5`").df)
        assert got == spark_rows(getattr(t, kind)(2, 5)), kind
    open_end = spark_rows(engine.execute("SELECT * FROM `main.t@changes:3..`").df)
    assert open_end == duck_rows(duck, "SELECT * FROM lake.table_changes('t', 3, 6)")
    snapshots = engine.execute("SELECT snapshot_id, changes FROM `@snapshots` "
                               "ORDER BY snapshot_id").df.collect()
    assert [r[0] for r in snapshots] == list(range(7))
    assert snapshots[2][1] == {"tables_inserted_into": ["1"]}
    assert_same_snapshots(engine, duck)
    current = engine.execute("SELECT (SELECT snapshot_id FROM `@current_snapshot`) AS v").df
    assert current.collect()[0][0] == 6
    with pytest.raises(InvalidArgumentError, match="can be read, not written"):
        engine.execute("INSERT INTO `main.t@v3` VALUES (1, 'x', 1)")


def assert_same_snapshots(engine, duck) -> None:  # noqa: ANN001
    """``ducklake_snapshots()`` reads the same in both engines: columns, types, changes."""
    df = engine.execute("SELECT * FROM `@snapshots`").df
    theirs = duck.execute("SELECT * FROM ducklake_snapshots('lake') ORDER BY snapshot_id")
    assert df.columns == [d[0] for d in theirs.description]
    assert df.schema["changes"].dataType.simpleString() == "map<string,array<string>>"

    def norm(rows) -> list[tuple]:  # noqa: ANN001 - lists of created names are unordered
        def utc(t: dt.datetime) -> dt.datetime:  # Spark's session time zone is UTC
            return t.astimezone(dt.timezone.utc).replace(tzinfo=None) if t.tzinfo else t

        return [(r[0], utc(r[1]), r[2], {k: sorted(v) for k, v in (r[3] or {}).items()},
                 *r[4:]) for r in rows]

    ours = [tuple(r) for r in df.orderBy("snapshot_id").collect()]
    assert norm(ours) == norm(theirs.fetchall())


def test_snapshots_match_duckdb_for_every_kind_of_change(engine, lake, duck):  # noqa: ANN001
    """Names that DuckDB quotes (keywords, spaces, quotes) and every change kind we and DuckDB
    write read back as DuckDB's ``ducklake_snapshots()`` shows them."""
    spark = lake.spark
    for sql in ('CREATE SCHEMA lake."My ""Schema"""', "CREATE SCHEMA lake.gone",
                "DROP SCHEMA lake.gone", 'CREATE TABLE lake.main."name" (i INTEGER)',
                "CREATE VIEW lake.main.v AS SELECT 1 AS x",
                'INSERT INTO lake.main."name" VALUES (1)', 'DELETE FROM lake.main."name"',
                'CREATE TABLE lake."My ""Schema""".Mixed (i INTEGER)'):
        duck.execute(sql)
    t = lake.create_table("main.ours", spark.range(30).selectExpr("id"))
    t.append(spark.range(3).selectExpr("id"))
    t.delete("id < 20")
    t.update({"id": "id + 100"}, "id = 25")
    lake.flush_inlined_data()
    t.append(spark.range(40).selectExpr("id"))
    lake.merge_adjacent_files()
    engine.execute("CREATE VIEW main.w AS SELECT 2 AS y")
    engine.execute("ALTER TABLE main.ours ADD COLUMN k INT")
    engine.execute("DROP VIEW main.w")
    engine.execute("DROP TABLE main.ours")
    assert_same_snapshots(engine, duck)


def test_feed_view_follows_new_commits_only_with_an_open_end(engine, lake, duck):  # noqa: ANN001
    history(duck)
    closed = engine.execute("SELECT count(*) FROM `main.t@insertions:0..6`").df.collect()[0][0]
    engine.execute("INSERT INTO `main.t` VALUES (100, 'new', 1)")
    assert engine.execute("SELECT count(*) FROM `main.t@insertions:0..6`").df.collect()[0][0] \
        == closed
    assert engine.execute("SELECT count(*) FROM `main.t@insertions:0..`").df.collect()[0][0] \
        == closed + 1


def test_pinned_connection_reads_the_past_and_refuses_writes(spark, lake, duck):  # noqa: ANN001
    history(duck)
    pinned = Engine(spark, lake, ViewRegistry(spark, lake, pinned_version=3), read_only=True)
    assert spark_rows(pinned.execute("SELECT * FROM `main.t`").df) == \
        duck_rows(duck, "SELECT * FROM lake.t AT (VERSION => 3)")
    assert spark_rows(pinned.execute("SELECT * FROM main.t").df) == \
        duck_rows(duck, "SELECT * FROM lake.t AT (VERSION => 3)")
    assert pinned.execute("SELECT max(snapshot_id) FROM `@snapshots`").df.collect()[0][0] == 3
    assert pinned.execute("SELECT * FROM `@current_snapshot`").df.collect()[0][0] == 3
    with pytest.raises(InvalidArgumentError, match="pinned to snapshot 3"):
        pinned.execute("DELETE FROM `main.t` WHERE i = 1")
    with pytest.raises(InvalidArgumentError, match="pinned to snapshot 3"):
        pinned.execute("CREATE TABLE `main.u` AS SELECT 1 AS x")


def test_names_round_trip() -> None:
    for text in ("s.t", "s.t@v3", "s.t@ts:2026-01-01 10:00:00+00", "s.t@changes:3..7",
                 "s.t@insertions:2026-01-01..", "s.t@deletions:..9", "@snapshots",
                 "s.a.b@v2"):
        name = parse_name([text])
        assert name is not None and name.view_name == text, text
    assert parse_name(["s.t@changes:3..7"]).feed == "changes"
    assert parse_name(["s.t@ts:2026-01-01 10:00:00+00"]).timestamp == "2026-01-01 10:00:00+00"


def test_a_column_given_its_own_type_makes_no_snapshot(engine, lake, duck):  # noqa: ANN001
    """dbt alters columns to the type they have (snapshots widen strings every run): nothing
    changes, so no snapshot; a real widening still commits one, which DuckDB reads."""
    engine.execute("CREATE TABLE main.typed AS SELECT CAST(1 AS INT) AS n, 'a' AS s")
    before = lake.catalog.latest_snapshot().snapshot_id
    engine.execute("ALTER TABLE main.typed ALTER COLUMN s TYPE STRING")
    engine.execute("ALTER TABLE main.typed ALTER COLUMN n TYPE INT")
    assert lake.catalog.latest_snapshot().snapshot_id == before
    engine.execute("ALTER TABLE main.typed ALTER COLUMN n TYPE BIGINT")
    assert lake.catalog.latest_snapshot().snapshot_id == before + 1
    assert duck.execute("SELECT typeof(n), n, s FROM lake.main.typed").fetchall() == \
        [("BIGINT", 1, "a")]


def test_a_table_state_is_kept_until_a_snapshot_changes_its_table(spark, lake, duck,  # noqa: ANN001
                                                                  monkeypatch):
    """Reading a table again costs no file queries while later snapshots change only other
    tables; any change to it (from either engine), a rename, a compaction or a new table of
    any name makes the next read load it again, and every read is right."""
    from dbt.adapters.ducklake.lake.catalog import Catalog

    loads: list[int] = []
    original = Catalog.data_files

    def counted(self, table_id, *args, **kwargs):  # noqa: ANN001, ANN202
        loads.append(table_id)
        return original(self, table_id, *args, **kwargs)

    monkeypatch.setattr(Catalog, "data_files", counted)
    duck.execute("CREATE TABLE lake.a(i INTEGER)")
    duck.execute("CREATE TABLE lake.other(i INTEGER)")
    duck.execute("INSERT INTO lake.a SELECT range FROM range(5)")

    def read_a() -> list[tuple]:
        loads.clear()
        return spark_rows(lake.table("main.a").read())

    assert read_a() == [(i,) for i in range(5)] and loads
    read_at = lake.current_snapshot().snapshot_id
    duck.execute("INSERT INTO lake.other VALUES (1)")
    duck.execute("DELETE FROM lake.other")
    duck.execute("CREATE VIEW lake.v AS SELECT 1 AS x")
    lake.table("main.other").append(spark.range(3).selectExpr("CAST(id AS INT) AS i"))
    assert read_a() == [(i,) for i in range(5)] and not loads, "other tables' snapshots"
    # the snapshot the kept state was read at is expired; a write based on the state works
    lake.expire_snapshots(versions=[read_at])
    assert lake.table("main.a").delete("i = 4") is not None and loads == []
    duck.execute("INSERT INTO lake.a VALUES (4)")
    for change in ("INSERT INTO lake.a VALUES (7)", "DELETE FROM lake.a WHERE i = 0",
                   "ALTER TABLE lake.a ADD COLUMN j INTEGER DEFAULT 1",
                   "CALL ducklake_flush_inlined_data('lake')"):
        duck.execute(change)
        expected = sorted(duck_rows(duck, "SELECT * FROM lake.a"))
        assert read_a() == expected and loads, change
    duck.execute("CREATE TABLE lake.b(i INTEGER)")  # a new name: could be a rename
    assert read_a() == sorted(duck_rows(duck, "SELECT * FROM lake.a")) and loads
    duck.execute("ALTER TABLE lake.a RENAME TO a2")
    with pytest.raises(Exception, match="a"):
        lake.table("main.a").read()


def test_lake_names_are_registered_before_spark_analyses_the_statement(  # noqa: ANN201
        engine, lake, spark, tmp_path, monkeypatch):  # noqa: ANN001
    """The lake relations a statement names, as dbt renders them (`` `s.t` ``), as users
    write them (``s.t``), at a version, as a change feed, in a CTE, a subquery or a MERGE's
    source, are registered before Spark analyses it, not after a failed analysis (each
    costs a Java exception converted to Python); a two-part name that Spark's own catalog
    holds stays Spark's, as before."""
    lake.create_table("main.t", spark.range(5).selectExpr("id", "id * 10 AS v"))
    lake.create_table("main.u", spark.range(3).selectExpr("id"))
    version = lake.current_snapshot().snapshot_id
    lake.table("main.u").append(spark.range(7, 8))

    def analysis_failed(exc):  # noqa: ANN001, ANN202
        raise AssertionError(f"Spark's analysis failed before registration: {exc}")

    monkeypatch.setattr(temp_views, "missing_relation", analysis_failed)
    query = ("WITH x AS (SELECT id FROM main.u) SELECT t.id, t.v FROM `main.t` t JOIN x "
             "ON t.id = x.id WHERE t.id IN (SELECT id FROM main.t WHERE v < 30)")
    assert spark_rows(engine.execute(query).df) == [(0, 0), (1, 10), (2, 20)]
    assert spark_rows(engine.execute(f"SELECT count(*) FROM `main.u@v{version}`").df) == [(3,)]
    assert spark_rows(engine.execute(
        f"SELECT id FROM `main.u@changes:{version + 1}..` ORDER BY id").df) == [(7,)]
    engine.execute("MERGE INTO main.t AS t USING main.u AS s ON t.id = s.id "
                   "WHEN MATCHED THEN UPDATE SET v = -1")
    assert spark_rows(engine.execute("SELECT id, v FROM main.t WHERE v < 0").df) == [
        (0, -1), (1, -1), (2, -1)]
    monkeypatch.undo()

    spark.sql(f"CREATE DATABASE main_spark LOCATION '{tmp_path / 'spark'}'")
    try:
        spark.sql("CREATE TABLE main_spark.t (id BIGINT) USING parquet")
        spark.sql("INSERT INTO main_spark.t VALUES (42)")
        engine.execute("CREATE SCHEMA main_spark")
        lake.create_table("main_spark.t", spark.range(3))
        assert spark_rows(engine.execute("SELECT id FROM main_spark.t").df) == [(42,)]
        assert spark_rows(engine.execute("SELECT count(*) FROM `main_spark.t`").df) == [(3,)]
    finally:
        spark.sql("DROP DATABASE main_spark CASCADE")
