"""Catalog rows written by someone else are data, not instructions (SQLite and PostgreSQL).

A crafted data, delete or scheduled file path (``../``, an absolute path elsewhere, a path
through a link that leads out of the data path) is neither read nor deleted: sentinel files
outside the data path survive every read and every maintenance operation.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from oracle import duck_rows, spark_rows
from reliability.support import lake_state
from sqlalchemy import text

from dbt.adapters.ducklake.lake.errors import UnsafePathError

pytestmark = pytest.mark.spark

FUTURE = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
LONG_AGO = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)


def catalog_write(lake, sql: str, **params: object) -> None:  # noqa: ANN001
    """Change catalog rows as another writer of the catalog could (``{m}.``: its schema)."""
    with lake.catalog.write() as conn:
        conn.execute(text(sql.replace("{m}.", lake.catalog.prefix)), params)


def catalog_rows(lake, sql: str, **params: object) -> list:  # noqa: ANN001
    with lake.catalog.read() as conn:
        return [tuple(r) for r in conn.execute(text(sql.replace("{m}.", lake.catalog.prefix)),
                                               params)]


def sentinel_file(path: Path) -> Path:
    """A valid Parquet file of the table's shape, so that reading it would succeed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array([-1], pa.int64())}), str(path))
    old = (dt.datetime.now() - dt.timedelta(days=30)).timestamp()
    os.utime(path, (old, old))  # old enough for any orphan or cleanup bound
    return path


def test_crafted_file_paths_are_not_read(spark, lake, tmp_path):  # noqa: ANN001
    lake.set_option("data_inlining_row_limit", 0)
    table = lake.create_table("main.t", spark.range(0, 5, 1, 1).selectExpr("id"))
    table.delete("id = 4")  # a delete file
    data = Path(lake.catalog.data_path)
    outside = sentinel_file(tmp_path / "outside" / "victim.parquet")
    sibling = sentinel_file(Path(str(data).rstrip("/") + "-other") / "x.parquet")
    for kind, key in [("data", "data_file_id"), ("delete", "delete_file_id")]:
        (fid, path), = catalog_rows(lake, f"SELECT {key}, path FROM {{m}}.ducklake_{kind}_file")
        for crafted, relative in [("../../../outside/victim.parquet", True),
                                  (str(outside), False), (str(sibling), False),
                                  ("../../main/t/../../../outside/victim.parquet", True),
                                  (f"file://{outside}", False),
                                  ("s3://elsewhere/x.parquet", False)]:
            catalog_write(lake, f"UPDATE {{m}}.ducklake_{kind}_file SET path = :p, "
                                f"path_is_relative = :r WHERE {key} = :f",
                          p=crafted, r=relative, f=fid)
            with pytest.raises(UnsafePathError, match=f"ducklake_{kind}_file {fid} .*has path"):
                spark_rows(table.read())
            with pytest.raises(UnsafePathError):
                spark_rows(table.changes(1, lake.current_snapshot().snapshot_id))
            with pytest.raises(UnsafePathError):
                lake.rewrite_data_files(delete_threshold=0.1)
        catalog_write(lake, f"UPDATE {{m}}.ducklake_{kind}_file SET path = :p, "
                            f"path_is_relative = true WHERE {key} = :f", p=path, f=fid)
    assert sorted(spark_rows(table.read())) == [(i,) for i in range(4)]


def test_crafted_file_paths_are_never_deleted(spark, lake, duck, tmp_path):  # noqa: ANN001
    lake.set_option("data_inlining_row_limit", 0)
    table = lake.create_table("main.t", spark.range(0, 5, 1, 1).selectExpr("id"))
    data = Path(lake.catalog.data_path)
    outside = tmp_path / "outside"
    victims = {name: sentinel_file(outside / f"{name}.parquet")
               for name in ("absolute", "scheduled", "expired", "linked")}
    sibling = sentinel_file(Path(str(data).rstrip("/") + "-other") / "x.parquet")

    # a table whose file row points outside is dropped and expired: its file gets scheduled
    gone = lake.create_table("main.gone", spark.range(0, 2, 1, 1).selectExpr("id"))
    del gone
    catalog_write(lake, "UPDATE {m}.ducklake_data_file SET path = :p WHERE table_id = "
                        "(SELECT MAX(table_id) FROM {m}.ducklake_table)",
                  p="../../../outside/expired.parquet")
    lake.drop_table("main.gone")
    lake.expire_snapshots(older_than=FUTURE)

    # scheduled rows that point outside, at no Parquet file, or through a link
    (data / "main" / "t" / "notes.txt").write_text("keep")
    (data / "main" / "t" / "linked").symlink_to(outside, target_is_directory=True)
    rows = [("../outside/scheduled.parquet", True), (str(victims["absolute"]), False),
            (str(sibling), False), ("main/t/notes.txt", True),
            ("main/t/linked/linked.parquet", True), (f"file://{victims['absolute']}", False)]
    for n, (crafted, relative) in enumerate(rows):
        catalog_write(lake, "INSERT INTO {m}.ducklake_files_scheduled_for_deletion VALUES "
                            "(:i, :p, :r, :t)", i=900000 + n, p=crafted, r=relative,
                      t=lake.catalog.encode_time(LONG_AGO))
    scheduled = len(catalog_rows(lake, "SELECT * FROM {m}.ducklake_files_scheduled_for_deletion"))
    dry = lake.cleanup_old_files(cleanup_all=True, dry_run=True)
    cleaned = lake.cleanup_old_files(cleanup_all=True)
    assert dry.refused == cleaned.refused == tuple(sorted(str(p) for p in (
        victims["scheduled"], victims["absolute"], victims["expired"], sibling,
        data / "main" / "t" / "notes.txt", data / "main" / "t" / "linked" / "linked.parquet")))
    assert not cleaned.paths
    # refused rows stay in the catalog, for whoever checks them
    assert len(catalog_rows(
        lake, "SELECT * FROM {m}.ducklake_files_scheduled_for_deletion")) == scheduled

    # orphans: the link to a directory outside is not followed, a file link not deleted
    (data / "main" / "t" / "_ducklake_staging_x").symlink_to(outside, target_is_directory=True)
    (data / "main" / "t" / "ducklake-link.parquet").symlink_to(victims["linked"])
    orphans = lake.delete_orphaned_files(older_than=FUTURE)
    assert not any(str(outside) in p for p in orphans.paths), orphans.paths
    assert (data / "main" / "t" / "ducklake-link.parquet").is_symlink()
    lake.checkpoint()  # every maintenance step together

    for victim in [*victims.values(), sibling]:
        assert pq.read_table(str(victim)).to_pylist() == [{"id": -1}], victim
    assert (data / "main" / "t" / "notes.txt").read_text() == "keep"
    assert sorted(spark_rows(table.read())) == [(i,) for i in range(5)]
    assert duck_rows(duck, "SELECT id FROM lake.t ORDER BY id") == [(i,) for i in range(5)]


def test_a_crafted_table_directory_is_never_written_into(spark, lake, tmp_path):  # noqa: ANN001
    lake.set_option("data_inlining_row_limit", 0)
    table = lake.create_table("main.t", spark.range(3).selectExpr("id"))
    outside = tmp_path / "outside-table"
    outside.mkdir()
    catalog_write(lake, "UPDATE {m}.ducklake_table SET path = :p, path_is_relative = false",
                  p=str(outside) + "/")
    before = lake_state(lake.catalog)
    with pytest.raises(UnsafePathError, match="table main.t has path"):
        table.append(spark.range(3, 6).selectExpr("id"))
    assert lake_state(lake.catalog) == before and not os.listdir(outside)


def test_files_added_from_outside_are_read_once_their_directory_is_allowed(  # noqa: ANN001
        spark, lake, duck, tmp_path):
    duck.execute("CREATE TABLE lake.added (id BIGINT)")
    folder = tmp_path / "added"
    folder.mkdir()
    pq.write_table(pa.table({"id": pa.array([7, 8], pa.int64())}), str(folder / "f.parquet"))
    duck.execute(f"CALL ducklake_add_data_files('lake', 'added', '{folder}/f.parquet')")
    with pytest.raises(UnsafePathError, match="read_paths"):
        spark_rows(lake.table("main.added").read())
    lake.catalog.allow_reads_from(str(folder))
    assert sorted(spark_rows(lake.table("main.added").read())) == [(7,), (8,)]
    # allowed for reading, never for deleting
    lake.drop_table("main.added")
    lake.expire_snapshots(older_than=FUTURE)
    assert lake.cleanup_old_files(cleanup_all=True).refused == (str(folder / "f.parquet"),)
    assert (folder / "f.parquet").exists()
