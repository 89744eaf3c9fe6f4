"""Which rows a DELETE, UPDATE or MERGE deletes: collected (file id, position, row id) columns
turned into positions per data file and inlined row ids, and the delete file they become."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dbt.adapters.ducklake.lake.delete_files import _distinct_ascending, delete_file_table
from dbt.adapters.ducklake.spark.dml import arrow_locations


def _located(*batches: list[tuple[int | None, int | None, int]]) -> pa.Table:
    schema = pa.schema([("fid", pa.int64()), ("pos", pa.int64()), ("rid", pa.int64())])
    return pa.Table.from_batches(
        [pa.RecordBatch.from_pylist([dict(zip(schema.names, row)) for row in rows],
                                    schema=schema) for rows in batches], schema=schema)


def test_positions_are_grouped_per_file_and_ascending_across_chunks() -> None:
    rows = _located([(7, 30, 107), (None, None, 5), (3, 2, 53), (7, 4, 81)],
                    [(3, 0, 51), (None, None, 1), (12, 9, 900), (7, 10, 87)])
    positions, inlined = arrow_locations(rows)
    assert {fid: pos.tolist() for fid, pos in positions.items()} == \
        {3: [0, 2], 7: [4, 10, 30], 12: [9]}
    # file ids are bound as SQL parameters; positions stay arrays for the delete file
    assert all(type(fid) is int and pos.dtype == np.int64 for fid, pos in positions.items())
    assert inlined == [5, 1]


def test_positions_to_delete_are_sorted_and_distinct_whatever_their_order() -> None:
    for given, expected in [([], []), ([4], [4]), ([1, 5, 9], [1, 5, 9]),
                            ([9, 1, 5, 1, 9], [1, 5, 9]), (np.array([3, 3]), [3])]:
        got = _distinct_ascending(given)
        assert got.dtype == np.int64 and got.tolist() == expected


def test_no_rows_and_only_inlined_rows() -> None:
    assert arrow_locations(_located([])) == ({}, [])
    assert arrow_locations(_located([(None, None, 4), (None, None, 2)])) == ({}, [4, 2])


def test_delete_file_rows_name_the_data_file_on_every_row() -> None:
    table = delete_file_table("/lake/main/t/f.parquet", [1, 5, 9], None)
    assert table.column("file_path").type == pa.string()
    assert table.column("file_path").to_pylist() == ["/lake/main/t/f.parquet"] * 3
    assert table.column("pos").to_pylist() == [1, 5, 9]
    assert delete_file_table("/x.parquet", np.array([2, 3]), None).column("pos").to_pylist() \
        == [2, 3]
    assert delete_file_table("/x.parquet", [], None).num_rows == 0
