"""A connection pinned to a snapshot writes nothing: every maintenance operation, option and
statement that is not a read is refused before it starts, whether the lake engine or Spark
itself would carry it out, leaving every catalog row and every file as it was."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import text

from dbt.adapters.ducklake import maintenance
from dbt.adapters.ducklake.lake import Catalog
from dbt.adapters.ducklake.lake.errors import ReadOnlyError
from dbt.adapters.ducklake.spark import SparkLake
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark

CATALOG_TABLES = ("ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_table",
                  "ducklake_data_file", "ducklake_delete_file",
                  "ducklake_files_scheduled_for_deletion", "ducklake_metadata")
LONG_AGO = datetime(2020, 1, 1, tzinfo=timezone.utc).timestamp()


def lake_state(lake: SparkLake) -> tuple[Any, ...]:
    """Every row of the catalog tables a write or maintenance changes, and every file (name,
    size, modification time) under the data path."""
    catalog = lake.catalog
    with catalog.read() as conn:
        rows = tuple(sorted(map(repr, conn.execute(text(f"SELECT * FROM {catalog.t(name)}"))))
                     for name in CATALOG_TABLES)
    files = []
    for root, _, names in os.walk(catalog.data_path):
        for name in names:
            stat = os.stat(os.path.join(root, name))
            files.append((os.path.join(root, name), stat.st_size, stat.st_mtime_ns))
    return rows, tuple(sorted(files))


@pytest.fixture
def history(spark, lake, lake_target):  # noqa: ANN001, ANN201
    """A lake with work for every maintenance operation: inlined rows, small files, a file
    mostly deleted, a file scheduled for deletion, an old orphan; and the snapshot pinned."""
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE TABLE main.t AS SELECT id FROM range(100)")
    pin = lake.catalog.latest_snapshot().snapshot_id
    engine.execute("INSERT INTO main.t SELECT id FROM range(100, 200)")
    engine.execute("INSERT INTO main.t VALUES (1000)")  # inlined
    engine.execute("DELETE FROM main.t WHERE id < 99")  # a delete file, 99% of a file
    engine.execute("CREATE TABLE main.gone AS SELECT id FROM range(50)")
    engine.execute("INSERT OVERWRITE main.gone SELECT id FROM range(60)")
    replaced = lake.catalog.latest_snapshot().snapshot_id - 1
    lake.expire_snapshots(versions=[replaced])  # its old file is scheduled for deletion
    table_dir = os.path.dirname(next(
        os.path.join(root, name) for root, _, names in os.walk(lake.catalog.data_path)
        for name in names if name.endswith(".parquet") and "/t/" in root + "/"))
    orphan = os.path.join(table_dir, "ducklake-orphan.parquet")
    with open(orphan, "wb") as handle:
        handle.write(b"PAR1")
    os.utime(orphan, (LONG_AGO, LONG_AGO))
    pinned = Catalog.open(lake_target.catalog, lake_target.data_path,
                          **lake_target.open_kwargs())
    pinned.read_only_snapshot = pin
    pinned_lake = SparkLake(spark, pinned)
    registry = ViewRegistry(spark, pinned_lake, pinned_version=pin)
    yield {"pin": pin, "lake": pinned_lake, "table_dir": table_dir, "data": lake,
           "engine": Engine(spark, pinned_lake, registry, read_only=True)}
    pinned.close()


NOW_PLUS = datetime.now(timezone.utc) + timedelta(days=1)
OPERATIONS = [
    ("flush_inlined_data", {}),
    ("merge_adjacent_files", {"min_file_size": 1}),
    ("rewrite_data_files", {"delete_threshold": 0.1}),
    ("expire_snapshots", {"older_than": NOW_PLUS.isoformat()}),
    ("expire_snapshots", {"versions": "pin"}),
    ("cleanup_old_files", {"cleanup_all": True}),
    ("delete_orphaned_files", {"older_than": NOW_PLUS.isoformat()}),
    ("checkpoint", {}),
]


def test_maintenance_and_options_are_refused(history) -> None:  # noqa: ANN001
    lake, pin = history["lake"], history["pin"]
    before = lake_state(lake)
    for operation, arguments in OPERATIONS:
        arguments = {k: [pin] if v == "pin" else v for k, v in arguments.items()}
        with pytest.raises(ReadOnlyError, match=rf"{operation} is not a read.*pinned to "
                                                rf"snapshot {pin}.*Remove snapshot_version"):
            maintenance.run(lake, operation, arguments)
        assert lake_state(lake) == before, operation
    with pytest.raises(ReadOnlyError, match=f"set_option.*pinned to snapshot {pin}"):
        lake.set_option("target_file_size", "1MB", table="t")
    with pytest.raises(ReadOnlyError, match=f"flush_inlined_data.*pinned to snapshot {pin}"):
        lake.table("main.t").flush_inlined_data()
    with pytest.raises(ReadOnlyError, match=f"pinned to snapshot {pin}"):
        with lake.catalog.write():  # every commit's way in
            pass
    assert lake_state(lake) == before


STATEMENTS = [
    # what Spark would carry out itself: files written, code loaded, a metastore changed
    "INSERT OVERWRITE DIRECTORY '{table_dir}' USING parquet SELECT 1 AS id",
    "WITH c AS (SELECT 1 AS id) INSERT OVERWRITE DIRECTORY '{table_dir}' USING parquet "
    "SELECT * FROM c",
    "CREATE TABLE spark_catalog.default.stray USING parquet LOCATION '{table_dir}/stray' "
    "AS SELECT 1 AS id",
    "ADD JAR '{table_dir}/x.jar'",
    "EXECUTE IMMEDIATE \"INSERT OVERWRITE DIRECTORY '{table_dir}' USING parquet SELECT 1\"",
    "CREATE FUNCTION spark_catalog.default.f AS 'no.Such'",
    "CREATE VIEW spark_catalog.default.v AS SELECT 1 AS id",
    # what the lake engine would commit
    "INSERT INTO main.t VALUES (5)",
    "DELETE FROM main.t WHERE id > 150",
    "CREATE TABLE main.new AS SELECT 1 AS id",
    "DROP TABLE main.t",
    "ALTER TABLE main.t SET PARTITIONED BY (id)",
]


def test_statements_that_are_not_reads_are_refused(history) -> None:  # noqa: ANN001
    engine, pin = history["engine"], history["pin"]
    before = lake_state(history["lake"])
    for statement in STATEMENTS:
        statement = statement.format(table_dir=history["table_dir"])
        with pytest.raises(ReadOnlyError) as failure:
            engine.execute(statement)
        message = str(failure.value)
        assert message.startswith(f"`{' '.join(statement.split())[:40]}")  # the statement
        assert f"pinned to snapshot {pin}" in message and "Remove snapshot_version" in message
        assert lake_state(history["lake"]) == before, statement


def test_reads_and_session_settings_still_run(history) -> None:  # noqa: ANN001
    engine = history["engine"]
    assert engine.execute("SELECT count(*) FROM main.t").df.collect()[0][0] == 100  # the pin
    assert engine.execute("WITH c AS (SELECT id FROM `main.t`) SELECT max(id) FROM c"
                          ).df.collect()[0][0] == 99
    for statement in ("SET spark.sql.shuffle.partitions = 2", "SHOW TABLES",
                      "EXPLAIN SELECT * FROM main.t", "DESCRIBE `main.t`", "VALUES (1)",
                      "CREATE OR REPLACE TEMPORARY VIEW pinned_ids AS SELECT id FROM main.t"):
        engine.execute(statement)
    assert engine.execute("SELECT count(*) FROM pinned_ids").df.collect()[0][0] == 100
