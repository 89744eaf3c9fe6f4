"""A table's own lake options given with its writes (a dbt model's ``table_options``): stored
with the commit that creates the table and writes its first data, which is already written by
them; compared on every later write and updated with its commit; ``target_file_size`` caps
the files Spark writes. DuckDB reads the options back."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from oracle import duck_rows

from dbt.adapters.ducklake.lake.errors import ConstraintViolationError, InvalidArgumentError
from dbt.adapters.ducklake.spark.constraints import TableConstraints, Unique
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.names import LakeName
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark

NAME = LakeName("main", "t")


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    return Engine(spark, lake, ViewRegistry(spark, lake))


def _duck_options(duck) -> dict[str, str]:  # noqa: ANN001
    return {key: value for key, _, value, scope, scope_name in duck_rows(
        duck, "SELECT * FROM ducklake_options('lake')") if scope == "TABLE"
        and scope_name == "main.t"}


def _files(duck) -> list[str]:  # noqa: ANN001
    return [r[0] for r in duck_rows(
        duck, "SELECT data_file FROM ducklake_list_files('lake', 't')")]


def _codecs(path: str) -> set[str]:
    meta = pq.ParquetFile(path).metadata
    return {meta.row_group(g).column(c).compression for g in range(meta.num_row_groups)
            for c in range(meta.num_columns)}


def test_options_land_with_the_first_data_and_follow_changes(engine, lake, duck) -> None:  # noqa: ANN001
    engine.expect_table_options(NAME, {"parquet_compression": "zstd",
                                       "parquet_row_group_size": 50,
                                       "data_inlining_row_limit": 0})
    before = lake.current_snapshot().snapshot_id
    engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT id FROM range(200)")
    assert lake.current_snapshot().snapshot_id == before + 1  # one snapshot, nothing after
    assert _duck_options(duck) == {"parquet_compression": "zstd",
                                   "parquet_row_group_size": "50",
                                   "data_inlining_row_limit": "0"}
    first = _files(duck)
    assert all(_codecs(f) == {"ZSTD"} for f in first)
    assert sum(pq.ParquetFile(f).metadata.num_row_groups for f in first) >= 4
    assert all(pq.ParquetFile(f).metadata.row_group(g).num_rows <= 50 for f in first
               for g in range(pq.ParquetFile(f).metadata.num_row_groups))

    # a later write with a changed option: its files follow it, its commit stores it
    engine.expect_table_options(NAME, {"parquet_compression": "gzip",
                                       "parquet_row_group_size": 50,
                                       "data_inlining_row_limit": 0})
    engine.execute("INSERT INTO `main.t` SELECT id FROM range(200, 260)")
    assert lake.current_snapshot().snapshot_id == before + 2
    assert _duck_options(duck)["parquet_compression"] == "gzip"
    second = set(_files(duck)) - set(first)
    assert second and all(_codecs(f) == {"GZIP"} for f in second)
    assert duck_rows(duck, "SELECT count(*) FROM lake.main.t") == [(260,)]


def test_a_failed_write_stores_no_option(engine, lake, duck) -> None:  # noqa: ANN001
    engine.expect_table_options(NAME, {"parquet_compression": "zstd"})
    engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT id FROM range(20)")
    engine.expect_table_options(NAME, {"parquet_compression": "gzip"})
    engine.expect_constraints(NAME, TableConstraints(unique=(Unique(("id",)),)))
    with pytest.raises(ConstraintViolationError):
        engine.execute("INSERT INTO `main.t` SELECT id FROM range(5)")
    assert _duck_options(duck) == {"parquet_compression": "zstd"}


def test_target_file_size_caps_the_files_spark_writes(engine, lake, duck) -> None:  # noqa: ANN001
    engine.expect_table_options(NAME, {"target_file_size": "4KB",
                                       "data_inlining_row_limit": 0})
    engine.execute("CREATE OR REPLACE TABLE `main.t` AS SELECT id FROM range(4000)")
    # no files yet: 8 bytes a BIGINT row, so at most 500 rows a file
    counts = [f.record_count for f in lake.table("main.t").state().data_files]
    assert sum(counts) == 4000 and len(counts) >= 8 and max(counts) <= 500
    assert _duck_options(duck)["target_file_size"] == "4000"


def test_unknown_option_lists_the_accepted_ones(engine) -> None:  # noqa: ANN001
    with pytest.raises(InvalidArgumentError, match="unsupported table option 'compression'; "
                       "accepted: data_inlining_row_limit, target_file_size, parquet_compression"):
        engine.expect_table_options(NAME, {"compression": "zstd"})
    with pytest.raises(InvalidArgumentError, match="unsupported Parquet codec"):
        engine.expect_table_options(NAME, {"parquet_compression": "zip"})
