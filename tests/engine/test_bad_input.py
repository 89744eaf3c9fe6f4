"""Bad input gets a clear error that names the problem, and leaves the lake as it was."""

from __future__ import annotations

import os

import pytest

from dbt.adapters.ducklake.lake import DataFileError, SchemaMismatchError, UnsupportedTypeError

pytestmark = pytest.mark.spark



def test_dataframe_that_does_not_match_the_table(spark, lake):  # noqa: ANN001
    table = lake.create_table("main.t", spark.range(20).selectExpr("id", "'a' AS name"))
    before = len(lake.snapshots())
    with pytest.raises(SchemaMismatchError, match="missing name; not in the table: nme"):
        table.append(spark.range(3).selectExpr("id", "'b' AS nme"))
    with pytest.raises(SchemaMismatchError, match="column 'name' is int .* varchar"):
        table.append(spark.range(3).selectExpr("id", "1 AS name"))
    with pytest.raises(UnsupportedTypeError, match="column 'i'.*interval"):
        lake.create_table("main.bad", spark.sql("SELECT INTERVAL 1 DAY AS i"))
    assert len(lake.snapshots()) == before


def test_truncated_data_file_is_named(spark, lake, lake_target):  # noqa: ANN001
    table = lake.create_table("main.t", spark.range(50).selectExpr("id", "id * 2 AS v"))
    before = len(lake.snapshots())
    data_file = sorted(os.path.join(d, f) for d, _, fs in os.walk(lake_target.data_path)
                       for f in fs if f.endswith(".parquet"))[0]
    with open(data_file, "r+b") as handle:
        handle.truncate(os.path.getsize(data_file) // 2)
    with pytest.raises(DataFileError, match=os.path.basename(data_file) + ".*truncated"):
        table.read().collect()
    with pytest.raises(DataFileError, match=os.path.basename(data_file)):
        table.delete("id = 3")
    assert len(lake.snapshots()) == before
    os.remove(data_file)
    with pytest.raises(DataFileError, match="missing"):
        table.read()
