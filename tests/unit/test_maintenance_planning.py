"""Maintenance planning without Spark: option values and which files merge or get rewritten."""

from __future__ import annotations

import datetime as dt

import pytest

from dbt.adapters.ducklake.lake.compaction import (
    SourceFile,
    contiguous,
    merge_groups,
    rewrite_groups,
)
from dbt.adapters.ducklake.lake.errors import InvalidArgumentError
from dbt.adapters.ducklake.lake.models import DataFile, DeleteFile
from dbt.adapters.ducklake.lake.options import (
    ParquetOptions,
    normalise,
    parquet_options,
    parse_interval,
    parse_size,
    store_option,
)


def source(fid: int, size: int, version: int = 1, partition: tuple = (), start: int | None = 0,
           count: int = 10, deleted: int = 0) -> SourceFile:
    data = DataFile(fid, 1, fid, None, None, f"f{fid}.parquet", True, "parquet", count, size,
                    None, start, 7 if partition else None, None, None, None)
    delete = DeleteFile(100 + fid, 1, fid, None, fid, "d", True, "parquet", deleted, 1, None,
                        None, None) if deleted else None
    return SourceFile(data, version, partition, delete, 0)


def ids(groups: list) -> list[list[int]]:
    return [[s.data_file.data_file_id for s in g] for g in groups]


def test_merge_packs_neighbours_up_to_the_target_within_a_group() -> None:
    files = [source(1, 40), source(2, 40), source(3, 40), source(4, 40), source(5, 500)]
    assert ids(merge_groups(files, target_file_size=100)) == [[1, 2, 3]]  # 4 alone: no merge
    assert ids(merge_groups(files, target_file_size=1000)) == [[1, 2, 3, 4, 5]]


def test_merge_never_crosses_versions_partitions_or_deletes() -> None:
    files = [source(1, 10, version=1), source(2, 10, version=2), source(3, 10, version=2),
             source(4, 10, partition=("eu",)), source(5, 10, partition=("us",)),
             source(6, 10, deleted=1), source(7, 10)]
    assert ids(merge_groups(files, 1000)) == [[1, 7], [2, 3]]
    assert ids(merge_groups(files, 1000, min_file_size=11)) == []
    assert ids(merge_groups(files, 1000, max_compacted_files=1)) == [[1, 7]]


def test_rewrite_threshold_and_contiguity() -> None:
    files = [source(1, 10, count=10, deleted=9), source(2, 10, count=10, deleted=2)]
    assert ids(rewrite_groups(files, 0.95)) == []
    assert ids(rewrite_groups(files, 0.5)) == [[1]]
    assert contiguous([source(1, 1, start=0, count=10), source(2, 1, start=10)])
    assert not contiguous([source(1, 1, start=0, count=10), source(2, 1, start=11)])
    assert not contiguous([source(1, 1, start=None)])


def test_option_values_as_duckdb_stores_them() -> None:
    assert normalise("TARGET_FILE_SIZE", "1MB") == ("target_file_size", "1000000")
    assert normalise("target_file_size", "1MiB")[1] == str(1024 * 1024)
    assert normalise("auto_compact", False) == ("auto_compact", "false")
    assert normalise("parquet_version", 2)[1] == "V2"
    assert normalise("rewrite_delete_threshold", 0.5)[1] == "0.500000"
    assert parse_interval("2 days") == dt.timedelta(days=2)
    assert parse_interval("1 week 3 hours") == dt.timedelta(weeks=1, hours=3)
    assert parse_size(512) == 512
    with pytest.raises(InvalidArgumentError, match="supported options: .*target_file_size"):
        normalise("target_size", 1)
    with pytest.raises(InvalidArgumentError, match="between 0 and 1"):
        normalise("rewrite_delete_threshold", 2)
    with pytest.raises(InvalidArgumentError, match="interval"):
        normalise("delete_older_than", "soon")


def test_parquet_options_most_specific_scope_and_defaults(tmp_path) -> None:  # noqa: ANN001
    from dbt.adapters.ducklake.lake.catalog import Catalog

    lake = Catalog.open(f"sqlite:///{tmp_path / 'c.sqlite'}", str(tmp_path / "data"))
    try:
        with lake.read() as conn:
            assert parquet_options(lake, conn, 0, 7) == ParquetOptions(
                compression="snappy", compression_level=3, row_group_size=None,
                row_group_size_bytes=None)
        store_option(lake, "parquet_row_group_size", "1000")
        store_option(lake, "parquet_row_group_size", "2000", schema_id=0)
        store_option(lake, "parquet_row_group_size", "3000", table_id=8)
        store_option(lake, "parquet_compression", "zstd", schema_id=0)
        store_option(lake, "parquet_compression_level", "9", table_id=7)
        store_option(lake, "parquet_row_group_size_bytes", "1000000")
        with lake.read() as conn:
            assert parquet_options(lake, conn, 0, 7) == ParquetOptions(
                compression="zstd", compression_level=9, row_group_size=2000,
                row_group_size_bytes=1_000_000)
            assert parquet_options(lake, conn, 1, 8).row_group_size == 3000
            assert parquet_options(lake, conn, 1, 9).compression == "snappy"
    finally:
        lake.close()


def test_rows_per_group_takes_the_tighter_bound() -> None:
    assert ParquetOptions().rows_per_group(1_000_000, 10**9) is None  # the writer's own
    assert ParquetOptions(row_group_size=5_000).rows_per_group(1_000_000, 10**9) == 5_000
    both = ParquetOptions(row_group_size=50_000, row_group_size_bytes=1_000_000)
    assert both.rows_per_group(100_000, 10_000_000) == 10_000  # 100 bytes a row
    assert both.rows_per_group(100_000, 100_000) == 50_000  # 1 byte a row: the rows bound
    assert both.rows_per_group(10, 10**9) == 1
    assert both.rows_per_group(0, 0) == 50_000
    by_bytes = ParquetOptions(row_group_size_bytes=1_000_000)
    assert by_bytes.rows_per_group(100_000, 10_000_000) == 10_000
    assert by_bytes.rows_per_group(100_000, 100_000) == 1_000_000
