"""A table's sort order given with its writes (a dbt model's ``sorted_by``): set in the same
snapshot as the first data, as DuckDB's ``SET SORTED BY`` stores it (DuckDB reads it back),
changed with a later write's snapshot, and each written file sorted by it."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from oracle import duck_rows

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError
from dbt.adapters.ducklake.spark.statement_sizing import MAX_BYTES_CONF
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.names import LakeName
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark

NAME = LakeName("main", "t")
# ids in a scrambled order, so that an unsorted write leaves files out of order
ROWS = "SELECT CAST((id * 7919) % 1000 AS BIGINT) AS id, id % 3 AS g FROM range(1000)"


@pytest.fixture
def engine(spark, lake):  # noqa: ANN001, ANN201
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    return engine


def _sort_order(duck, target) -> list[tuple]:  # noqa: ANN001
    """The live sort order as DuckDB reads it from the catalog."""
    prefix = "__ducklake_metadata_lake" + (
        f".{target.metadata_schema}" if target.metadata_schema else "")
    return duck_rows(duck, f"""
        SELECT i.begin_snapshot, e.sort_key_index, e.expression, e.sort_direction, e.null_order
        FROM {prefix}.ducklake_sort_info i JOIN {prefix}.ducklake_sort_expression e
          USING (sort_id, table_id)
        WHERE i.end_snapshot IS NULL ORDER BY e.sort_key_index""")


def _files_sorted(lake, column: str, descending: bool = False) -> list[bool]:  # noqa: ANN001
    """Per file: whether its rows are in order; and the files' ranges must not overlap."""
    state = lake.table("main.t").state()
    out, ranges = [], []
    for f in state.data_files:
        values = pq.read_table(state.path_of(f), columns=[column]).column(0).to_pylist()
        out.append(values == sorted(values, reverse=descending))
        ranges.append((min(values), max(values)))
    ranges.sort()
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), ranges
    return out


@pytest.fixture
def several_files(spark):  # noqa: ANN001, ANN201
    """Spark's shuffle partitions even for these small writes (no small-statement sizing), so
    a write makes several files whose key ranges can be compared."""
    spark.conf.set(MAX_BYTES_CONF, "0")
    yield
    spark.conf.unset(MAX_BYTES_CONF)


def test_sort_order_lands_with_the_first_data(engine, lake, duck, lake_target,  # noqa: ANN001
                                              several_files) -> None:  # noqa: ANN001
    engine.expect_table_options(NAME, {"data_inlining_row_limit": 0})
    engine.expect_sorted_by(NAME, ["id"])
    engine.execute(f"CREATE OR REPLACE TABLE `main.t` AS {ROWS}")
    created = lake.current_snapshot().snapshot_id
    assert _sort_order(duck, lake_target) == [(created, 0, "id", "ASC", "NULLS_LAST")]
    assert _files_sorted(lake, "id") == [True, True]

    # a later write with another order: set in its own snapshot, its files in that order
    engine.expect_sorted_by(NAME, ["g desc nulls first", "id"])
    engine.execute(f"INSERT INTO `main.t` {ROWS}")
    inserted = lake.current_snapshot().snapshot_id
    assert inserted == created + 1
    assert _sort_order(duck, lake_target) == [(inserted, 0, "g", "DESC", "NULLS_FIRST"),
                                 (inserted, 1, "id", "ASC", "NULLS_LAST")]
    changes = duck_rows(duck, "SELECT changes::VARCHAR FROM ducklake_snapshots('lake') "
                              f"WHERE snapshot_id = {inserted}")[0][0]
    assert "tables_altered" in changes and "tables_inserted_into" in changes, changes
    assert duck_rows(duck, "SELECT count(*) FROM lake.main.t") == [(2000,)]

    # the same order again: no change of the table
    engine.execute(f"INSERT INTO `main.t` {ROWS}")
    assert _sort_order(duck, lake_target)[0][0] == inserted


def test_unknown_column_fails_and_commits_nothing(engine, lake) -> None:  # noqa: ANN001
    engine.expect_sorted_by(NAME, ["nope"])
    before = lake.current_snapshot().snapshot_id
    with pytest.raises(InvalidArgumentError, match="sorted_by names nope, which main.t does "
                       "not have; its columns: g, id"):
        engine.execute(f"CREATE OR REPLACE TABLE `main.t` AS {ROWS}")
    assert lake.current_snapshot().snapshot_id == before
    with pytest.raises(InvalidArgumentError, match="cannot read the sort key 'id upward'"):
        engine.expect_sorted_by(NAME, ["id upward"])
