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
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from conftest import LakeTarget, copy_lake, new_lake_target
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

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

    with lake.catalog.read() as conn:
        return [tuple(r) for r in conn.execute(text(sql.replace("{m}.", lake.catalog.prefix)))]


def reattach(duck, lake_target) -> None:  # noqa: ANN001
    """A DuckDB session caches which inlined-data tables a table has; a flush (ours, or
    another DuckDB process's) drops the ones it emptied, so a session that read the table
    before attaches again, as it would after another DuckDB process flushed."""
    duck.execute("DETACH lake")
    duck.execute(lake_target.duckdb_attach)


def catalog_table_exists(lake, name: str) -> bool:  # noqa: ANN001
    """Whether the catalog database has table ``name`` in the lake's metadata schema."""
    if lake.catalog.dialect != "postgresql":
        return bool(catalog_rows(
            lake, f"SELECT count(*) FROM sqlite_master WHERE name = '{name}'")[0][0])
    schema = f"'{lake.catalog.metadata_schema}'" if lake.catalog.metadata_schema else \
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
        df = ours.read(version=s)
        cols = ", ".join(f'"{c}"' for c in df.columns)
        out[("read", "ours", s)] = spark_rows(df)
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


Bounds = tuple[int, int]
Template = Callable[[str], tuple[LakeTarget, Bounds]]


@pytest.fixture(scope="module")
def history_templates(spark, tmp_path_factory) -> Iterator[Template]:  # noqa: ANN001
    """A lake holding :func:`build_history`'s history, built once per module and catalog:
    each test that starts from the history gets a copy (building it anew cost each of those
    tests about as much as its own checks)."""
    from dbt.adapters.ducklake.spark import SparkLake

    built: dict[str, tuple[LakeTarget, Bounds]] = {}
    with ExitStack() as stack:
        def template(backend: str) -> tuple[LakeTarget, Bounds]:
            if backend not in built:
                target = stack.enter_context(
                    new_lake_target(backend, tmp_path_factory.mktemp("history")))
                lk = SparkLake.open(spark, target.catalog, target.data_path,
                                    **target.open_kwargs())
                try:
                    built[backend] = (target, build_history(spark, lk))
                finally:
                    lk.close()
            return built[backend]

        yield template


@pytest.fixture
def lake_target(lake_target: LakeTarget, request: pytest.FixtureRequest,
                history_templates: Template) -> LakeTarget:
    """The test's lake; for a test that asks for ``built_history``, a copy of the history's
    template, made before the ``lake`` and ``duck`` fixtures open it."""
    if "built_history" in request.fixturenames:
        copy_lake(history_templates(lake_target.backend)[0], lake_target)
    return lake_target


@pytest.fixture
def built_history(lake_target: LakeTarget, history_templates: Template) -> Bounds:
    """The (first, last) snapshot ids of :func:`build_history`'s history, which the test's
    lake holds (copied in by ``lake_target``)."""
    return history_templates(lake_target.backend)[1]


# ------------------------------------------------------------------------ transparency
@pytest.mark.slow
def test_flush_merge_rewrite_keep_every_snapshot_and_change(spark, duck, lake,  # noqa: ANN001
                                                            lake_target, built_history):
    first, last = built_history
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
def test_duckdb_maintains_a_lake_we_maintained(spark, duck, lake, lake_target,  # noqa: ANN001
                                                built_history):
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
def test_cleanup_keeps_live_needed_and_pending_files(spark, duck, lake, built_history):  # noqa: ANN001
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sqlalchemy import text

    from dbt.adapters.ducklake.lake.commit import Transaction
    from dbt.adapters.ducklake.lake.files import list_files
    from dbt.adapters.ducklake.lake.inlining.rows import can_inline
    from dbt.adapters.ducklake.lake.models import TableRef
    from dbt.adapters.ducklake.spark.dml import stage_insert

    lake.merge_adjacent_files()
    lake.rewrite_data_files(delete_threshold=0.5)  # ends files that old snapshots still read
    reference = read_all(duck, lake)
    assert scheduled(lake), "merge schedules its sources for deletion"

    # a writer's commit in flight: its files are published under the table but not committed
    t = lake.table("t")
    state = t.state(contents=False)
    pending = Transaction(lake.catalog, lake.catalog.snapshot(version=state.snapshot_id))
    stage_insert(spark, lake.catalog, pending, TableRef(state.table.table_id),
                 spark.sql("SELECT id, id AS v, 'p' AS tag, 'p' AS extra FROM range(700, 720)"),
                 state.table_dir, state.columns, state.schema.schema_id, state.table.table_id,
                 inline_ok=can_inline(state.columns, lake.catalog.dialect))
    pending_files = list(pending.files_written)
    assert pending_files and all(os.path.exists(p) for p in pending_files)
    # an old orphan: a Parquet file nobody references, last written three days ago
    orphan = os.path.join(state.table_dir, "ducklake-orphan.parquet")
    pq.write_table(pa.table({"x": [1]}), orphan)
    old = (dt.datetime.now() - dt.timedelta(days=3)).timestamp()
    os.utime(orphan, (old, old))
    # a scheduled row that (wrongly) names a live file must not get it deleted
    with lake.catalog.read() as conn:
        live = lake.catalog.data_files(state.table.table_id, lake.current_snapshot().snapshot_id,
                                    conn)[0]
    with lake.catalog.write() as conn:
        conn.execute(text(f"INSERT INTO {lake.catalog.t('ducklake_files_scheduled_for_deletion')} "
                          "VALUES (999999, :p, true, :t)"),
                     {"p": state.table_dir[len(lake.catalog.data_path):] + live.path,
                      "t": lake.catalog.encode_time(dt.datetime(2000, 1, 1,
                                                             tzinfo=dt.timezone.utc))})

    files_on_disk = sorted(p for p, _ in list_files(lake.catalog.data_path))
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
def test_expire_dry_run_and_latest(spark, duck, lake, built_history):  # noqa: ANN001
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
def file_metadata(lake, table: str) -> list:  # noqa: ANN001
    """The Parquet footers of a table's live data files, oldest first."""
    import pyarrow.parquet as pq

    rows = catalog_rows(
        lake, "SELECT f.path, t.path, s.path FROM {m}.ducklake_data_file f JOIN "
              "{m}.ducklake_table t USING (table_id) JOIN {m}.ducklake_schema s "
              "USING (schema_id) WHERE t.table_name = '" + table + "' AND f.end_snapshot "
              "IS NULL AND t.end_snapshot IS NULL ORDER BY f.data_file_id")
    return [pq.ParquetFile(os.path.join(lake.catalog.data_path, s, t, f)).metadata
            for f, t, s in rows]


def group_rows(meta) -> list[int]:  # noqa: ANN001
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def test_options_scopes_and_their_effects(spark, duck, lake):  # noqa: ANN001
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
    meta, = file_metadata(lake, "a")
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert live_files(lake, "b") == b_files > 1
    read_all(duck, lake, "a")


def test_parquet_options_shape_every_writers_files(spark, duck, lake):  # noqa: ANN001
    """Row groups of ``parquet_row_group_size`` rows and at most ``parquet_row_group_size_bytes``
    (else the writer's own size: one group for 150,000 narrow rows), and zstd at
    ``parquet_compression_level``, in files Spark writes and in files the driver writes (an
    Arrow append); DuckDB reads them."""
    import pyarrow as pa

    rows = "SELECT id, md5(CAST(id AS STRING)) AS s FROM range(0, {n}, 1, 1)"

    def arrow(n: int) -> pa.Table:
        return spark.sql(rows.format(n=n)).toArrow()

    lake.create_table("main.d", spark.sql(rows.format(n=150_000)))
    lake.table("d").append(arrow(150_000))
    assert [group_rows(m) for m in file_metadata(lake, "d")] == [[150_000]] * 2
    lake.set_option("parquet_row_group_size", 122_880, schema="main")
    lake.table("d").append(spark.sql(rows.format(n=150_000)))
    lake.table("d").append(arrow(150_000))
    assert [group_rows(m) for m in file_metadata(lake, "d")][2:] == [[122_880, 27_120]] * 2

    lake.create_table("main.r", spark.sql(rows.format(n=0)))
    lake.set_option("parquet_row_group_size", 50_000, table="r")
    lake.table("r").append(spark.sql(rows.format(n=120_000)))
    lake.table("r").append(arrow(120_000))
    assert [group_rows(m) for m in file_metadata(lake, "r")] == [[50_000, 50_000, 20_000]] * 2

    lake.create_table("main.b", spark.sql(rows.format(n=0)))
    lake.set_option("parquet_row_group_size_bytes", "256KB", table="b")
    lake.table("b").append(spark.sql(rows.format(n=100_000)))
    lake.table("b").append(arrow(100_000))
    for meta in file_metadata(lake, "b"):  # 100,000 rows of about 40 bytes: 4 MB
        assert meta.num_row_groups >= 8 and meta.num_rows == 100_000

    lake.set_option("parquet_compression", "zstd", schema="main")
    sizes = {}
    for level in (1, 19):
        name = f"z{level}"
        lake.create_table(f"main.{name}", spark.sql(rows.format(n=0)))
        lake.set_option("parquet_compression_level", level, table=name)
        lake.table(name).append(spark.sql(rows.format(n=50_000)))
        lake.table(name).append(arrow(50_000))
        metas = file_metadata(lake, name)
        assert {m.row_group(0).column(1).compression for m in metas} == {"ZSTD"}
        sizes[level] = [sum(m.row_group(i).column(1).total_compressed_size
                            for i in range(m.num_row_groups)) for m in metas]
    assert all(high < low for high, low in zip(sizes[19], sizes[1])), sizes
    for name in ("d", "r", "b", "z1", "z19"):
        summary = "SELECT count(*), sum(id), max(s), min(s) FROM {}"
        lake.table(name).read().createOrReplaceTempView("ours")
        ours = spark.sql(summary.format("ours")).collect()[0]
        assert tuple(ours) == duck.execute(summary.format(f"lake.{name}")).fetchone(), name


# ------------------------------------------------------------------------ types Spark lacks
# Columns whose DuckDB type Spark has no type for, with the values each row gets: extremes,
# NULLs, unsigned values on both sides of 2**31 / 2**63 (so that a file's signed statistics
# straddle), hugeints DuckDB's DOUBLE cast rounds differently from float(), nanoseconds.
# ``q`` has uuids (its files are written by pyarrow), ``p`` none (Spark writes them).
PHYSICAL_COLUMNS = {
    "t": "TIME", "tz": "TIMETZ", "h": "HUGEINT", "uh": "UHUGEINT", "u1": "UTINYINT",
    "u2": "USMALLINT", "u4": "UINTEGER", "u8": "UBIGINT", "ns": "TIMESTAMP_NS",
    "l": "UINTEGER[]", "lt": "TIME[]", "s": "STRUCT(a TIME, b UBIGINT)",
}
UUID_COLUMNS = {"u": "UUID", "su": "STRUCT(x UUID, y UINTEGER)", "m": "MAP(VARCHAR, UUID)"}
EXTREMES = [
    {"t": "'00:00:00'", "tz": "'00:00:00+15:59'", "h": str(-(2**126) - 2**73 - 1),
     "uh": str(2**126 + 2**70 + 1), "u1": "255", "u2": "65535", "u4": "4294967295",
     "u8": "18446744073709551615", "ns": "'1677-09-22 00:00:00.000000001'",
     "l": "[4294967295, 0, NULL]", "lt": "['23:59:59.999999', NULL]",
     "s": "{'a': '23:59:59.999999', 'b': 18446744073709551615}",
     "u": "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
     "su": "{'x': '00000000-0000-0000-0000-000000000000', 'y': 2147483648}",
     "m": "MAP {'k': 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'n': NULL}"},
    {"t": "'23:59:59.999999'", "tz": "'23:59:59.999999-15:59'", "h": str(-(2**90) - 2**37 - 1),
     "uh": "0", "u1": "0", "u2": "0", "u4": "0", "u8": "0",
     "ns": "'2262-04-11 23:47:16.854775'", "l": "[]", "lt": "[]", "s": "{'a': NULL, 'b': 0}",
     "u": "'00000000-0000-0000-0000-000000000000'", "su": "{'x': NULL, 'y': NULL}",
     "m": "MAP {}"},
    {"t": "'12:30:00.5'", "tz": "'12:30:00.5+02'", "h": "9223372036854775809",
     "uh": "18446744073709553665", "u1": "128", "u2": "32768", "u4": "2147483648",
     "u8": "9223372036854775808", "ns": "'1969-12-31 23:59:59.999999999'", "l": "[2147483647]",
     "lt": "['00:00:00', '12:30:00.5']", "s": "{'a': '00:00:00', 'b': 9223372036854775807}",
     "u": "'7fffffff-ffff-ffff-8000-000000000000'",
     "su": "{'x': '80000000-0000-0000-0000-000000000001', 'y': 1}", "m": "NULL"},
    dict.fromkeys({**PHYSICAL_COLUMNS, **UUID_COLUMNS}, "NULL"),
]


def physical_row(i: int) -> dict[str, str]:
    """An ordinary row; ``u4``/``u8`` cross 2**31 / 2**63 every other row."""
    return {
        "t": f"'{i % 24:02d}:{i % 60:02d}:01.{i:06d}'", "tz": f"'{i % 24:02d}:00:00+0{i % 10}'",
        "h": str(-12345678901234567 * i), "uh": str(2**64 * i + 2**11 + 1),
        "u1": str(i % 256), "u2": str(i * 3), "u4": str(2**31 + i if i % 2 else i),
        "u8": str(2**63 + i if i % 2 else i), "ns": f"'2024-01-15 12:30:00.{i:09d}'",
        "l": f"[{i}, {2**32 - i}]", "lt": f"['00:00:{i % 60:02d}.{i:06d}']",
        "s": f"{{'a': '01:02:{i % 60:02d}', 'b': {2**64 - i}}}",
        "u": f"'{i:08x}-0000-4000-8000-{i:012x}'",
        "su": f"{{'x': '{i:08x}-0000-4000-8000-ffffffffffff', 'y': {2**32 - i}}}",
        "m": f"MAP {{'k{i}': '{i:08x}-0000-4000-8000-000000000000'}}",
    }


def physical_history(duck, table: str, columns: dict[str, str]) -> list[int]:  # noqa: ANN001
    """DuckDB writes ``table``: inlined rows, files, deletes (inlined and delete files), an
    update, type promotions; returns every snapshot id. Inlined rows have NULL structs:
    DuckDB 1.5.5 cannot read back the inlined struct it writes when a child needs a CAST
    (TIME, UUID, ...)."""
    names = ", ".join(["id", *columns])

    def values(rows: list[tuple[int, dict[str, str]]]) -> str:
        return ", ".join("(" + ", ".join([str(i)] + [r[c] for c in columns]) + ")"
                         for i, r in rows)

    def insert(rows: list[tuple[int, dict[str, str]]], inlined: bool = False) -> int:
        if inlined:
            rows = [(i, {**r, "s": "NULL", "su": "NULL"}) for i, r in rows]
        duck.execute(f"INSERT INTO lake.{table} ({names}) VALUES {values(rows)}")
        return latest(duck)

    duck.execute(f"CREATE TABLE lake.{table} (id INTEGER, "
                 + ", ".join(f"{c} {t}" for c, t in columns.items()) + ")")
    snaps = [latest(duck)]
    snaps.append(insert(list(enumerate(EXTREMES)), inlined=True))
    snaps.append(insert([(i, physical_row(i)) for i in range(10, 30)]))      # file
    snaps.append(insert([(i, physical_row(i)) for i in range(30, 50)]))      # file
    duck.execute(f"DELETE FROM lake.{table} WHERE id = 1 OR id BETWEEN 12 AND 25")
    snaps.append(latest(duck))
    duck.execute(f"UPDATE lake.{table} SET u4 = 7, t = '24:00:00' WHERE id BETWEEN 31 AND 44")
    snaps.append(latest(duck))
    snaps.append(insert([(i, physical_row(i)) for i in (60, 61)], inlined=True))
    snaps.append(insert([(i, EXTREMES[i % 3]) for i in range(70, 82)]))      # file
    # promoted types: files written before read as the new type (a rewrite writes them so)
    duck.execute(f"ALTER TABLE lake.{table} ALTER COLUMN u1 SET DATA TYPE UINTEGER")
    duck.execute(f"ALTER TABLE lake.{table} ALTER COLUMN id SET DATA TYPE HUGEINT")
    snaps.append(latest(duck))
    snaps.append(insert([(90, physical_row(90))], inlined=True))
    return snaps


def physical_duck(duck, table: str, columns: dict[str, str], snaps: list[int],  # noqa: ANN001
                  exact_hugeints: bool) -> dict:
    """DuckDB's reading of every snapshot (with row ids) and change feed, every value as
    text. Parquet holds a TIMETZ in UTC and hugeints as DOUBLE, so DuckDB's own flush changes
    those as well: across a flush they compare in UTC and as DOUBLE."""
    def text(c: str) -> str:
        if c in ("h", "uh") and not exact_hugeints:
            return f"{c}::DOUBLE::VARCHAR"
        return f"timezone('UTC', {c})::VARCHAR" if c == "tz" else f"{c}::VARCHAR"

    cols = ", ".join(["id", *[text(c) for c in columns]])
    out: dict = {}
    for s in snaps[1:]:
        out[("read", s)] = duck_rows(
            duck, f"SELECT rowid, {cols} FROM lake.{table} AT (VERSION => {s})")
    for start, end in [(s, s) for s in snaps[1:]] + [(snaps[0], snaps[-1]), (snaps[2], snaps[5])]:
        out[("changes", start, end)] = duck_rows(
            duck, f"SELECT snapshot_id, rowid, change_type, {cols} FROM "
                  f"ducklake_table_changes('lake', 'main', '{table}', {start}, {end})")
    return out


def physical_ours(lake, table: str, snaps: list[int]) -> dict:  # noqa: ANN001
    """Our reading of the snapshots that differ in kind (inlined rows only, deletes, the
    update, the last) and of the change feed over the whole history."""
    ours = lake.table(f"main.{table}")
    out: dict = {("read", s): ours.read(version=s) for s in (snaps[1], *snaps[4:6], snaps[-1])}
    out["changes"] = ours.changes(snaps[0], snaps[-1])
    return {key: (list(df.columns), spark_rows(df)) for key, df in out.items()}


def without_hugeints(reading: dict) -> dict:
    """:func:`physical_ours` without the hugeint columns, which a flush rounds to DOUBLE."""
    out = {}
    for key, (names, rows) in reading.items():
        keep = [i for i, n in enumerate(names) if n not in ("h", "uh")]
        out[key] = sorted((tuple(r[i] for i in keep) for r in rows), key=repr)
    return out


def assert_same_rows(before: dict, after: dict) -> None:
    """Equal readings; otherwise the rows that differ, per reading."""
    diffs = {key: ([r for r in before[key] if r not in after[key]],
                   [r for r in after[key] if r not in before[key]])
             for key in before if before[key] != after[key]}
    assert not diffs, "\n".join(f"{key}:\n  before: {b[:3]}\n  after : {a[:3]}"
                                 for key, (b, a) in list(diffs.items())[:6])


def assert_duckdb_reads_our_files(duck, lake, table: str, columns: dict[str, str]) -> None:  # noqa: ANN001
    """Every live file of the table, read by DuckDB's own Parquet reader, has the types DuckDB
    writes for the table's columns when the file was written (HUGEINT as DOUBLE), and its
    catalog statistics are the file's real bounds."""
    files = catalog_rows(lake, "SELECT f.data_file_id, f.path, f.begin_snapshot FROM "
                               "{m}.ducklake_data_file f JOIN {m}.ducklake_table t USING "
                               f"(table_id) WHERE f.end_snapshot IS NULL AND t.table_name = "
                               f"'{table}'")
    ids = dict(catalog_rows(lake, "SELECT c.column_name, c.column_id FROM {m}.ducklake_column "
                                  "c JOIN {m}.ducklake_table t USING (table_id) WHERE "
                                  f"t.table_name = '{table}' AND c.parent_column IS NULL "
                                  "AND c.end_snapshot IS NULL"))
    table_dir = os.path.join(lake.catalog.data_path, "main", table)
    for file_id, path, begin in files:
        expected = {name: {"HUGEINT": "DOUBLE", "UHUGEINT": "DOUBLE"}.get(kind, kind)
                    for name, kind, *_ in duck.execute(
                        f"DESCRIBE SELECT * FROM lake.{table} AT (VERSION => {begin})").fetchall()
                    if name in columns}
        source = f"read_parquet('{os.path.join(table_dir, path)}')"
        types = {name: kind for name, kind, *_ in duck.execute(
            f"DESCRIBE SELECT * FROM {source}").fetchall()}
        assert {c: types[c] for c in columns} == expected, path
        for c in ("t", "u1", "u2", "u4", "u8", "ns", "u"):
            if c not in columns:
                continue
            stats = catalog_rows(lake, "SELECT min_value, max_value, null_count FROM "
                                       "{m}.ducklake_file_column_stats WHERE data_file_id = "
                                       f"{file_id} AND column_id = {ids[c]}")
            real = duck.execute(f"SELECT min({c})::VARCHAR, max({c})::VARCHAR, "
                                f"count(*) - count({c}) FROM {source}").fetchone()
            assert stats == [real], (path, c, stats, real)


@pytest.mark.slow
def test_compaction_of_types_spark_cannot_write(spark, duck, lake, lake_target):  # noqa: ANN001
    """uuid, time, timetz, (u)hugeint, unsigned integers and timestamp_ns (nested too) are
    flushed, merged and rewritten as DuckDB writes them: afterwards DuckDB reads every
    snapshot, row id and change feed as before, and so do we; DuckDB's own maintenance works
    on the result. ``q`` has uuids (its files are written by pyarrow), ``p`` not (by Spark)."""
    tables = {"p": PHYSICAL_COLUMNS, "q": {**PHYSICAL_COLUMNS, **UUID_COLUMNS}}
    snaps = {t: physical_history(duck, t, columns) for t, columns in tables.items()}
    assert inlined_rows(lake) > 0

    def duck_reading(exact_hugeints: bool) -> dict:
        return {t: physical_duck(duck, t, columns, snaps[t], exact_hugeints)
                for t, columns in tables.items()}

    duck_before = duck_reading(exact_hugeints=False)
    ours_before = {t: physical_ours(lake, t, snaps[t]) for t in tables}
    flushed = lake.flush_inlined_data()
    reattach(duck, lake_target)
    assert len(flushed.tables) == 2 and inlined_rows(lake) == 0
    for t in tables:
        assert_same_rows(duck_before[t], physical_duck(duck, t, tables[t], snaps[t], False))

    duck_before = duck_reading(exact_hugeints=True)
    merged = lake.merge_adjacent_files()
    assert not merged.skipped and len(merged.tables) == 2
    rewritten = lake.rewrite_data_files(delete_threshold=0.5)
    assert not rewritten.skipped and len(rewritten.tables) == 2
    for t, columns in tables.items():
        assert_same_rows(duck_before[t], physical_duck(duck, t, columns, snaps[t], True))
        ours = physical_ours(lake, t, snaps[t])
        assert_same_rows(without_hugeints(ours_before[t]), without_hugeints(ours))
        assert_duckdb_reads_our_files(duck, lake, t, columns)

    # DuckDB's own maintenance on what we wrote
    call(duck, "CALL ducklake_merge_adjacent_files('lake')")
    call(duck, "CALL ducklake_rewrite_data_files('lake', delete_threshold => 0)")
    for t, columns in tables.items():
        assert_same_rows(duck_before[t], physical_duck(duck, t, columns, snaps[t], True))
        text = ", ".join(["id", *[f"{c}::VARCHAR" for c in columns]])
        assert duck_rows(duck, f"SELECT rowid, {text} FROM lake.{t}") == \
            duck_before[t][("read", snaps[t][-1])]


@pytest.mark.parametrize("uuids", [False, True], ids=["spark", "pyarrow"])
def test_flush_of_a_partitioned_table_spark_cannot_write(duck, lake, lake_target,  # noqa: ANN001
                                                         uuids):
    """A partitioned table's inlined rows of such types go to one file per partition, in its
    hive directory, whichever writer (Spark, or pyarrow for uuids) writes them."""
    extra = ", u UUID" if uuids else ""
    duck.execute(f"CREATE TABLE lake.pt (region VARCHAR, n UBIGINT, ns TIMESTAMP_NS{extra})")
    duck.execute("ALTER TABLE lake.pt SET PARTITIONED BY (region)")
    value = ", 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'" if uuids else ""
    duck.execute("INSERT INTO lake.pt VALUES "
                 f"('eu', 18446744073709551615, '2024-01-15 12:30:00.123456789'{value}), "
                 f"('us', 1, '1969-12-31 23:59:59.999999999'{value}), "
                 f"(NULL, 9223372036854775808, NULL{value}), ('eu', NULL, NULL{value})")
    text = "region, n::VARCHAR, ns::VARCHAR" + (", u::VARCHAR" if uuids else "")
    before = duck_rows(duck, f"SELECT rowid, {text} FROM lake.pt")
    assert lake.flush_inlined_data().rows_flushed == 4
    reattach(duck, lake_target)
    paths = sorted(p for (p,) in catalog_rows(
        lake, "SELECT path FROM {m}.ducklake_data_file WHERE end_snapshot IS NULL"))
    assert [p.split("/")[0] for p in paths] == [
        "region=__HIVE_DEFAULT_PARTITION__", "region=eu", "region=us"]
    assert duck_rows(duck, f"SELECT rowid, {text} FROM lake.pt") == before
    assert duck_rows(duck, f"SELECT rowid, {text} FROM lake.pt WHERE region = 'eu'") == \
        [r for r in before if r[1] == "eu"]
