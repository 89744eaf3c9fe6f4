"""The sink's write plan, kept per Python worker and revalidated by the lake's schema version
and options: a data commit keeps it, DuckDB's DDL or ``set_option`` reads it again, and a
commit after a concurrent DDL lands nothing. No JVM: the writer's halves are called as
Spark's Python workers call them, on a real SQLite catalog, with DuckDB as the other writer."""

from __future__ import annotations

import pyarrow as pa
import pytest
from conftest import duckdb_connect
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from dbt.adapters.ducklake.lake.errors import DuckLakeError
from dbt.adapters.ducklake.spark.datasource import plan as sink_plan
from dbt.adapters.ducklake.spark.datasource.options import SinkOptions
from dbt.adapters.ducklake.spark.datasource.sink import LakeCommitMessage, LakeStreamWriter

SCHEMA = StructType([StructField("id", IntegerType()), StructField("v", StringType())])


@pytest.fixture
def lake(tmp_path):  # noqa: ANN001, ANN201 - (DuckDB connection, sink options)
    catalog = tmp_path / "catalog.sqlite"
    duck = duckdb_connect()
    duck.execute(f"ATTACH 'ducklake:sqlite:{catalog}' AS lake (DATA_PATH '{tmp_path}/data/')")
    duck.execute("CREATE TABLE lake.main.ev (id INTEGER, v VARCHAR)")
    options = SinkOptions.parse({"catalog": f"sqlite:///{catalog}", "table": "main.ev",
                                 "streamId": "s1"})
    sink_plan.forget()
    yield duck, options
    sink_plan.forget()
    duck.close()


def snapshots(duck) -> int:  # noqa: ANN001
    return duck.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]


def test_data_commits_keep_the_plan_ddl_and_options_read_it_again(lake):  # noqa: ANN001
    duck, options = lake
    first = sink_plan.current_plan(options.open(), options, SCHEMA)
    duck.execute("INSERT INTO lake.main.ev VALUES (1, 'a')")
    kept = sink_plan.current_plan(options.open(), options, SCHEMA)
    assert kept.plan is first.plan  # no catalog read of the table
    assert kept.snapshot.snapshot_id == first.snapshot.snapshot_id + 1  # the commit's base

    duck.execute("CALL lake.set_option('data_inlining_row_limit', 5, table_name => 'ev')")
    limited = sink_plan.current_plan(options.open(), options, SCHEMA)
    assert limited.plan is not first.plan and limited.plan.inline_limit == 5

    duck.execute("ALTER TABLE lake.main.ev SET PARTITIONED BY (id)")
    partitioned = sink_plan.current_plan(options.open(), options, SCHEMA)
    assert [k.column.column_name for k in partitioned.plan.keys] == ["id"]

    duck.execute("DROP TABLE lake.main.ev")
    duck.execute("CREATE TABLE lake.main.ev (id INTEGER, v VARCHAR)")
    again = sink_plan.current_plan(options.open(), options, SCHEMA)
    assert again.plan.table_id != first.plan.table_id


def test_a_commit_after_a_concurrent_ddl_lands_nothing(lake):  # noqa: ANN001
    duck, options = lake
    rows = pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]})
    writer = LakeStreamWriter(options, SCHEMA, False)  # planned, as for batch 0
    message = writer.write(iter(rows.to_batches()))
    assert isinstance(message, LakeCommitMessage) and message.rows is not None
    duck.execute("ALTER TABLE lake.main.ev ADD COLUMN w INTEGER")
    before = snapshots(duck)
    with pytest.raises(DuckLakeError, match="changed while this write ran.*missing w"):
        writer.commit([message], 0)
    assert snapshots(duck) == before
    assert duck.execute("SELECT count(*) FROM lake.main.ev").fetchone()[0] == 0

    # the same batch planned again after the DDL (as a restarted query does) lands once
    duck.execute("ALTER TABLE lake.main.ev DROP COLUMN w")
    writer = LakeStreamWriter(options, SCHEMA, False)
    writer.commit([writer.write(iter(rows.to_batches()))], 0)
    writer.commit([writer.write(iter(rows.to_batches()))], 0)  # a replay: nothing
    assert duck.execute("SELECT count(*) FROM lake.main.ev").fetchone()[0] == 2


def test_the_commit_checks_the_plan_the_tasks_wrote_with(lake, tmp_path):  # noqa: ANN001
    """Spark's streaming commit runs in a worker that makes a new writer, planned at commit
    time: the tasks' plan comes with their messages. Files written unpartitioned are not
    registered in a table partitioned meanwhile."""
    duck, _ = lake
    options = SinkOptions.parse({"catalog": f"sqlite:///{tmp_path}/catalog.sqlite",
                                 "table": "main.ev", "streamId": "s1",
                                 "data_inlining_row_limit": "0"})  # the tasks write files
    rows = pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]})
    message = LakeStreamWriter(options, SCHEMA, False).write(iter(rows.to_batches()))
    assert isinstance(message, LakeCommitMessage) and message.files
    duck.execute("ALTER TABLE lake.main.ev SET PARTITIONED BY (id)")
    before = snapshots(duck)
    committer = LakeStreamWriter(options, SCHEMA, False)  # as Spark's commit worker makes it
    with pytest.raises(DuckLakeError, match="partitioning of main.ev changed while this write"):
        committer.commit([message], 0)
    assert snapshots(duck) == before
    assert duck.execute("SELECT count(*) FROM lake.main.ev").fetchone()[0] == 0
