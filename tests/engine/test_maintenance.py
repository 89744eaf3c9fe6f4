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


def catalog_rows(lake, sql: str) -> list:  # noqa: ANN001
    """Rows of a query over the catalog tables (``{m}.`` = the metadata schema)."""
    from sqlalchemy import text

    with lake.lake.read() as conn:
        return [tuple(r) for r in conn.execute(text(sql.replace("{m}.", lake.lake.prefix)))]


def reattach(duck, lake_target) -> None:  # noqa: ANN001
    """A DuckDB session caches which inlined-data tables a table has; a flush (ours, or
    another DuckDB process's) drops the ones it emptied, so a session that read the table
    before attaches again, as it would after another DuckDB process flushed."""
    duck.execute("DETACH lake")
    duck.execute(lake_target.duckdb_attach)


def catalog_table_exists(lake, name: str) -> bool:  # noqa: ANN001
    """Whether the catalog database has table ``name`` in the lake's metadata schema."""
    if lake.lake.dialect != "postgresql":
        return bool(catalog_rows(
            lake, f"SELECT count(*) FROM sqlite_master WHERE name = '{name}'")[0][0])
    schema = f"'{lake.lake.metadata_schema}'" if lake.lake.metadata_schema else \
        "current_schema()"
    return bool(catalog_rows(
        lake, "SELECT count(*) FROM information_schema.tables WHERE table_name = "
              f"'{name}' AND table_schema = {schema}")[0][0])


def live_files(lake, table: str = "t") -> int:  # noqa: ANN001
    return catalog_rows(lake, "SELECT count(*) FROM {m}.ducklake_data_file f JOIN "
                              "{m}.ducklake_table t USING (table_id) WHERE f.end_snapshot IS "
                              f"NULL AND t.end_snapshot IS NULL AND t.table_name = '{table}'"
                        )[0][0]


def inlined_rows(lake) -> int:  # noqa: ANN001
    total = 0
    for (name,) in catalog_rows(lake, "SELECT table_name FROM {m}.ducklake_inlined_data_tables"):
        total += catalog_rows(lake, f"SELECT count(*) FROM {{m}}.{name}")[0][0]
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
@pytest.mark.slow
def test_flush_merge_rewrite_keep_every_snapshot_and_change(spark, duck, lake,  # noqa: ANN001
                                                            lake_target):
    first, last = build_history(spark, lake)
    snapshots = list(range(first, last + 1))
    ranges = [(s, s) for s in snapshots] + [(first, last), (first + 3, last - 2), (0, last)]
    before = history(duck, lake, "t", snapshots, ranges)
    files_before = live_files(lake)
    assert inlined_rows(lake) > 0

    flushed = lake.flush_inlined_data()
    reattach(duck, lake_target)
    assert flushed.rows_flushed > 0 and inlined_rows(lake) == 0
    assert lake.current_snapshot().changes[-1].startswith("inline_flush:") or any(
        c.startswith("inline_flush:") for c in lake.current_snapshot().changes)
    merged = lake.merge_adjacent_files()
    assert merged.files_processed >= 2 and merged.files_created >= 1
    assert lake.current_snapshot().changes == [f"merge_adjacent:{lake.table('t').info().table_id}"]
    rewritten = lake.rewrite_data_files(delete_threshold=0.5)
    assert rewritten.files_processed >= 1
    assert live_files(lake) < files_before + len(flushed.tables)

    after = history(duck, lake, "t", snapshots, ranges)
    assert_same_history(before, after)
    # and the current state agrees between the engines
    now = lake.current_snapshot().snapshot_id
    assert spark_rows(lake.table("t").read()) == duck_rows(
        duck, "SELECT id, v, tag, extra FROM lake.t") == before[("read", "ours", last)]
    assert now > last


# ------------------------------------------------------------------------ compatibility
def read_all(duck, lake, table: str = "t"):  # noqa: ANN001
    """Every remaining snapshot of a table, read by both engines; they must agree."""
    ours = lake.table(f"main.{table}")
    snaps = [s.snapshot_id for s in lake.snapshots()]
    out = {}
    for s in snaps:
        try:
            df = ours.read(version=s)
        except Exception:  # noqa: BLE001 - the table did not exist yet
            continue
        cols = ", ".join(f'"{c}"' for c in df.columns)
        mine = spark_rows(df)
        theirs = duck_rows(duck, f"SELECT {cols} FROM lake.{table} AT (VERSION => {s})")
        assert mine == theirs, f"snapshot {s}:\n ours  : {mine[:4]}\n duckdb: {theirs[:4]}"
        out[s] = mine
    return out


@pytest.mark.slow
def test_duckdb_maintains_a_lake_we_maintained(spark, duck, lake, lake_target):  # noqa: ANN001
    build_history(spark, lake)
    lake.flush_inlined_data()
    reattach(duck, lake_target)
    lake.merge_adjacent_files()
    lake.rewrite_data_files(delete_threshold=0.5)
    before = read_all(duck, lake)
    t = lake.table("t")
    t.append(spark.sql("SELECT 900L AS id, 9L AS v, 'tiny' AS tag, 'y' AS extra"))
    t.append(spark.sql("SELECT id, id AS v, 'more' AS tag, 'z' AS extra FROM range(600, 640)"))
    t.delete("id BETWEEN 600 AND 637")
    call(duck, "CALL ducklake_flush_inlined_data('lake')")
    call(duck, "CALL ducklake_merge_adjacent_files('lake')")
    call(duck, "CALL ducklake_rewrite_data_files('lake', delete_threshold => 0.5)")
    after = read_all(duck, lake)
    assert {s: after[s] for s in before} == before
    expected = after[max(after)]
    call(duck, f"CALL ducklake_expire_snapshots('lake', older_than => TIMESTAMPTZ '{FUTURE}')")
    call(duck, "CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    assert [s.snapshot_id for s in lake.snapshots()] == [max(after)]
    assert read_all(duck, lake) == {max(after): expected}
    # and we go on maintaining what DuckDB left
    t.append(spark.sql("SELECT 901L AS id, 9L AS v, 'tiny' AS tag, 'y' AS extra"))
    lake.checkpoint()
    assert read_all(duck, lake)[lake.current_snapshot().snapshot_id] == sorted(
        expected + [(901, 9, "tiny", "y")], key=repr)


@pytest.mark.slow
def test_we_maintain_a_lake_duckdb_maintained(spark, duck, lake, lake_target):  # noqa: ANN001
    for sql in (
        "CREATE TABLE lake.t(id BIGINT, s VARCHAR, d DOUBLE)",
        "INSERT INTO lake.t SELECT range, 'a' || range, range / 2 FROM range(30)",
        "INSERT INTO lake.t SELECT range, 'b' || range, 1.5 FROM range(100, 130)",
        "INSERT INTO lake.t VALUES (50, 'fifty', 0.5), (51, 'x', 1)",
        "UPDATE lake.t SET s = 'upd' WHERE id BETWEEN 5 AND 25",
        "DELETE FROM lake.t WHERE id < 2",
        "DELETE FROM lake.t WHERE id BETWEEN 100 AND 128",
        "UPDATE lake.t SET d = 9 WHERE id = 50",
    ):
        duck.execute(sql)
    call(duck, "CALL ducklake_flush_inlined_data('lake')")
    duck.execute("INSERT INTO lake.t VALUES (60, 'sixty', 6)")
    duck.execute("ALTER TABLE lake.t ADD COLUMN c INTEGER")
    duck.execute("INSERT INTO lake.t SELECT range, 'c', 0, 1 FROM range(200, 230)")
    duck.execute("INSERT INTO lake.t SELECT range, 'c', 0, 2 FROM range(300, 330)")
    call(duck, "CALL ducklake_merge_adjacent_files('lake')")
    duck.execute("DELETE FROM lake.t WHERE id = 60")
    duck.execute("INSERT INTO lake.t SELECT range, 'd', 0, 3 FROM range(400, 420)")
    duck.execute("INSERT INTO lake.t SELECT range, 'e', 0, 4 FROM range(500, 520)")
    before = read_all(duck, lake)
    flushed = lake.flush_inlined_data()
    reattach(duck, lake_target)
    merged = lake.merge_adjacent_files()
    rewritten = lake.rewrite_data_files(delete_threshold=0.5)
    assert flushed.rows_flushed == 1 and merged.files_processed == 3
    assert rewritten.files_processed >= 1
    after = read_all(duck, lake)
    assert {s: after[s] for s in before} == before
    expired = lake.expire_snapshots(older_than=FUTURE)
    assert expired.snapshot_ids and expired.files_scheduled > 0
    cleaned = lake.cleanup_old_files(cleanup_all=True)
    assert cleaned.paths and not any(os.path.exists(p) for p in cleaned.paths)
    assert read_all(duck, lake) == {max(after): after[max(after)]}
    duck.execute("INSERT INTO lake.t VALUES (7000, 'after', 1, 1)")  # DuckDB writes on
    assert duck_rows(duck, "SELECT count(*) FROM lake.t") == [(len(after[max(after)]) + 1,)]


def test_flush_drops_the_inlined_tables_it_emptied_as_duckdb_does(spark, duck, lake,  # noqa: ANN001
                                                                  lake_target, tmp_path):
    """Each schema change gives a table a new inlined-data table; after a flush, DuckDB drops
    the older versions' tables that are now empty (and their registry rows) and keeps the
    newest. Ours leaves the same tables as DuckDB's flush of an identical twin lake."""
    from conftest import duckdb_connect

    statements = (
        "CREATE TABLE {db}.t(id BIGINT, s VARCHAR)",
        "CREATE TABLE {db}.u(id BIGINT)",
        "INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO {db}.u VALUES (1)",
        "ALTER TABLE {db}.t ADD COLUMN c INTEGER",
        "INSERT INTO {db}.t VALUES (3, 'c', 3)",
        "ALTER TABLE {db}.t ADD COLUMN d INTEGER",
        "INSERT INTO {db}.t VALUES (4, 'd', 4, 4)",
        "DELETE FROM {db}.t WHERE id = 4",
    )
    twin = duckdb_connect()
    twin.execute(f"ATTACH 'ducklake:sqlite:{tmp_path / 'twin.sqlite'}' AS twin "
                 f"(DATA_PATH '{tmp_path / 'twin'}/')")
    for sql in statements:
        duck.execute(sql.format(db="lake"))
        twin.execute(sql.format(db="twin"))

    def registry(rows) -> list:  # noqa: ANN001
        return sorted((int(t), int(v), n) for t, v, n in rows)

    before = registry(catalog_rows(lake, "SELECT table_id, schema_version, table_name FROM "
                                         "{m}.ducklake_inlined_data_tables"))
    assert len(before) == 4  # t at three schema versions, u at one
    twin.execute("CALL ducklake_flush_inlined_data('twin')")
    flushed = lake.flush_inlined_data()
    assert flushed.rows_flushed == 5  # t: 4 rows (one of them deleted since), u: 1
    theirs = registry(twin.execute(
        "SELECT table_id, schema_version, table_name FROM "
        "__ducklake_metadata_twin.ducklake_inlined_data_tables").fetchall())
    ours = registry(catalog_rows(lake, "SELECT table_id, schema_version, table_name FROM "
                                       "{m}.ducklake_inlined_data_tables"))
    assert ours == theirs and len(ours) < len(before), (ours, theirs, before)
    for _, _, name in before:  # dropped tables are gone, kept ones are there
        exists = catalog_table_exists(lake, name)
        assert exists == (name in {n for _, _, n in ours}), name
    # a DuckDB session that read the table before the flush caches the dropped tables' names
    # (as it does when another DuckDB process flushes); a new session writes on
    fresh = duckdb_connect()
    fresh.execute(lake_target.duckdb_attach)
    fresh.execute("INSERT INTO lake.t VALUES (5, 'e', 5, 5)")
    assert duck_rows(fresh, "SELECT id FROM lake.t ORDER BY id") == [(1,), (2,), (3,), (5,)]
    fresh.close()
    assert spark_rows(lake.table("main.t").read().select("id")) == [(1,), (2,), (3,), (5,)]
    twin.close()


# ------------------------------------------------------------------------ safety
def scheduled(lake) -> list:  # noqa: ANN001
    return catalog_rows(lake, "SELECT path FROM {m}.ducklake_files_scheduled_for_deletion")


@pytest.mark.slow
def test_cleanup_keeps_live_needed_and_pending_files(spark, duck, lake):  # noqa: ANN001
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sqlalchemy import text

    from dbt.adapters.ducklake.lake.commit import TableRef, Transaction
    from dbt.adapters.ducklake.lake.files import list_files
    from dbt.adapters.ducklake.lake.inlined_data import can_inline
    from dbt.adapters.ducklake.spark.dml import stage_insert

    build_history(spark, lake)
    lake.merge_adjacent_files()
    lake.rewrite_data_files(delete_threshold=0.5)  # ends files that old snapshots still read
    reference = read_all(duck, lake)
    assert scheduled(lake), "merge schedules its sources for deletion"

    # a writer's commit in flight: its files are published under the table but not committed
    t = lake.table("t")
    state = t.state(contents=False)
    pending = Transaction(lake.lake, lake.lake.snapshot(version=state.snapshot_id))
    stage_insert(spark, lake.lake, pending, TableRef(state.table.table_id),
                 spark.sql("SELECT id, id AS v, 'p' AS tag, 'p' AS extra FROM range(700, 720)"),
                 state.table_dir, state.columns, state.schema.schema_id, state.table.table_id,
                 inline_ok=can_inline(state.columns, lake.lake.dialect))
    pending_files = list(pending.files_written)
    assert pending_files and all(os.path.exists(p) for p in pending_files)
    # an old orphan: a Parquet file nobody references, last written three days ago
    orphan = os.path.join(state.table_dir, "ducklake-orphan.parquet")
    pq.write_table(pa.table({"x": [1]}), orphan)
    old = (dt.datetime.now() - dt.timedelta(days=3)).timestamp()
    os.utime(orphan, (old, old))
    # a scheduled row that (wrongly) names a live file must not get it deleted
    with lake.lake.read() as conn:
        live = lake.lake.data_files(state.table.table_id, lake.current_snapshot().snapshot_id,
                                    conn)[0]
    with lake.lake.write() as conn:
        conn.execute(text(f"INSERT INTO {lake.lake.t('ducklake_files_scheduled_for_deletion')} "
                          "VALUES (999999, :p, true, :t)"),
                     {"p": state.table_dir[len(lake.lake.data_path):] + live.path,
                      "t": lake.lake.encode_time(dt.datetime(2000, 1, 1,
                                                             tzinfo=dt.timezone.utc))})

    files_on_disk = sorted(p for p, _ in list_files(lake.lake.data_path))
    dry = lake.cleanup_old_files(cleanup_all=True, dry_run=True)
    dry_orphans = lake.delete_orphaned_files(dry_run=True)
    assert dry.paths and dry_orphans.paths == (os.path.normpath(orphan),)
    assert all(os.path.exists(p) for p in files_on_disk), "a dry run deletes nothing"

    orphans = lake.delete_orphaned_files()  # default age: delete_older_than (2 days)
    assert orphans.paths == (os.path.normpath(orphan),) and not os.path.exists(orphan)
    assert all(os.path.exists(p) for p in pending_files), "young files of a pending commit"
    cleaned = lake.cleanup_old_files(cleanup_all=True)
    assert cleaned.kept_live and all(not os.path.exists(p) for p in cleaned.paths)
    # files needed by old snapshots (ended, not expired) survive even an eager orphan scan
    assert not lake.delete_orphaned_files(older_than=dt.datetime(2000, 1, 1)).paths
    eager = lake.delete_orphaned_files(older_than=FUTURE, dry_run=True)
    assert set(eager.paths) == {os.path.normpath(p) for p in pending_files}, \
        "only the pending commit's files are unknown to the catalog"
    assert read_all(duck, lake) == reference
    pending.commit()  # the writer in flight still commits and its rows are readable
    assert len(spark_rows(t.read().where("tag = 'p'"))) == 20
    assert duck_rows(duck, "SELECT count(*) FROM lake.t WHERE tag = 'p'") == [(20,)]


@pytest.mark.slow
def test_expire_dry_run_and_latest(spark, duck, lake):  # noqa: ANN001
    build_history(spark, lake)
    snaps = [s.snapshot_id for s in lake.snapshots()]
    dry = lake.expire_snapshots(older_than=FUTURE, dry_run=True)
    assert list(dry.snapshot_ids) == snaps[:-1]
    assert [s.snapshot_id for s in lake.snapshots()] == snaps, "a dry run expires nothing"
    with pytest.raises(InvalidArgumentError, match="latest snapshot"):
        lake.expire_snapshots(versions=[snaps[-1]])
    assert lake.expire_snapshots().snapshot_ids == (), "no expire_older_than: no-op"
    done = lake.expire_snapshots(versions=[snaps[1], snaps[2]])
    assert done.snapshot_ids == (snaps[1], snaps[2])
    assert {r[0] for r in duck_rows(duck, "SELECT snapshot_id FROM lake.snapshots()")} == {
        s for s in snaps if s not in (snaps[1], snaps[2])}
    read_all(duck, lake)


# ------------------------------------------------------------------------ options
def test_options_scopes_and_their_effects(spark, duck, lake):  # noqa: ANN001
    import pyarrow.parquet as pq

    lake.create_table("main.a", spark.sql("SELECT id FROM range(20)"))
    lake.create_table("main.b", spark.sql("SELECT id FROM range(20)"))
    for name in ("a", "b"):
        lake.table(name).append(spark.sql("SELECT id FROM range(100, 130)"))
    lake.set_option("parquet_compression", "zstd")
    lake.set_option("auto_compact", False, table="b")
    lake.set_option("target_file_size", "1MB", schema="main")
    with pytest.raises(InvalidArgumentError, match="supported options: .*auto_compact"):
        lake.set_option("no_such_option", 1)
    with pytest.raises(InvalidArgumentError, match="zstd"):
        lake.set_option("parquet_compression", "zip")
    settings = {(o.key, o.scope, o.scope_name): o.value for o in lake.options()}
    assert settings == {("parquet_compression", None, None): "zstd",
                        ("auto_compact", "table", "main.b"): "false",
                        ("target_file_size", "schema", "main"): "1000000"}
    assert dict(duck.execute("SELECT option_name, value FROM ducklake_options('lake') "
                             "WHERE scope = 'GLOBAL'").fetchall())["parquet_compression"] == "zstd"
    b_files = live_files(lake, "b")
    merged = lake.merge_adjacent_files()
    assert [t.table_name for t in merged.tables] == ["a"] and merged.files_processed >= 2
    (path, tpath, spath), = catalog_rows(
        lake, "SELECT f.path, t.path, s.path FROM {m}.ducklake_data_file f JOIN "
              "{m}.ducklake_table t USING (table_id) JOIN {m}.ducklake_schema s "
              "USING (schema_id) WHERE t.table_name = 'a' AND f.end_snapshot IS NULL")
    meta = pq.ParquetFile(os.path.join(lake.lake.data_path, spath, tpath, path)).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert live_files(lake, "b") == b_files > 1
    read_all(duck, lake, "a")
