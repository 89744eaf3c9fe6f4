"""Footer patching that gives list elements and map keys/values the field ids DuckLake reads by.

Spark 4.3 leaves ``<col>/list/element`` and ``<col>/key_value/key|value`` without a field id,
and DuckDB's ``ducklake`` extension then reads list elements as NULL and fails on maps. The
files here are written by pyarrow without any field id (the same shape as Spark's), patched,
and checked against pyarrow, DuckDB's ``read_parquet``/``parquet_schema``, the layout DuckDB's
own lake writer produces, and finally DuckDB reading the file as a lake data file.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import duckdb_connect

from dbt.adapters.ducklake.lake import parquet_footer as pf

DUCK_TYPES = ("i INTEGER, s VARCHAR, st STRUCT(a INTEGER, b VARCHAR), li INTEGER[], "
              "ls STRUCT(x INTEGER)[], m MAP(VARCHAR, INTEGER), ms MAP(VARCHAR, STRUCT(p BIGINT))")

# DuckLake column ids: depth-first pre-order over top-level columns, struct children, list
# elements and map keys/values -- never the repeated ``list``/``key_value`` groups.
IDS: dict[tuple[str, ...], int] = {
    ("i",): 1, ("s",): 2, ("st",): 3, ("st", "a"): 4, ("st", "b"): 5,
    ("li",): 6, ("li", "list", "element"): 7,
    ("ls",): 8, ("ls", "list", "element"): 9, ("ls", "list", "element", "x"): 10,
    ("m",): 11, ("m", "key_value", "key"): 12, ("m", "key_value", "value"): 13,
    ("ms",): 14, ("ms", "key_value", "key"): 15, ("ms", "key_value", "value"): 16,
    ("ms", "key_value", "value", "p"): 17,
}
# What Spark 4.3 sets on its own: top-level columns and struct children only.
SPARK_IDS = {p: i for p, i in IDS.items() if not {"list", "key_value"} & set(p)}


def nested_table() -> pa.Table:
    return pa.table({
        "i": pa.array([7, None, 3], pa.int32()),
        "s": ["q", None, "üñí"],
        "st": pa.array([{"a": 1, "b": "z"}, None, {"a": None, "b": "y"}],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "li": pa.array([[1, None, 3], None, []], pa.list_(pa.int32())),
        "ls": pa.array([[{"x": 4}, None], [], [{"x": None}]],
                       pa.list_(pa.struct([("x", pa.int32())]))),
        "m": pa.array([[("k", 2), ("j", None)], None, []], pa.map_(pa.string(), pa.int32())),
        "ms": pa.array([[("k", {"p": 9})], [], [("z", None)]],
                       pa.map_(pa.string(), pa.struct([("p", pa.int64())]))),
    })


def write_nested(path: Path) -> pa.Table:
    table = nested_table()
    pq.write_table(table, path)
    assert all(v is None for v in pf.schema_field_ids(str(path)).values())
    return table


def arrow_field_ids(schema: pa.Schema) -> dict[tuple[str, ...], int]:
    """``PARQUET:field_id`` of every Arrow field, by its Parquet path."""
    out: dict[tuple[str, ...], int] = {}

    def walk(f: pa.Field, path: tuple[str, ...]) -> None:
        if f.metadata and b"PARQUET:field_id" in f.metadata:
            out[path] = int(f.metadata[b"PARQUET:field_id"])
        t = f.type
        if pa.types.is_map(t):
            walk(t.key_field, (*path, "key_value", "key"))
            walk(t.item_field, (*path, "key_value", "value"))
        elif pa.types.is_list(t):
            walk(t.value_field, (*path, "list", "element"))
        elif pa.types.is_struct(t):
            for child in t:
                walk(child, (*path, child.name))

    for f in schema:
        walk(f, (f.name,))
    return out


# ---------------------------------------------------------------------------------------------
# Thrift compact codec
# ---------------------------------------------------------------------------------------------


def test_codec_encodes_every_type_canonically() -> None:
    s = pf.TStruct([
        pf.TField(1, pf.T_I32, -1),
        pf.TField(20, pf.T_TRUE, True),  # delta 19: long field header, bool carried in the type
        pf.TField(21, pf.T_LIST, pf.TList(pf.T_I64, list(range(16)))),  # long list header
        pf.TField(22, pf.T_MAP, pf.TMap(0, 0, [])),
        pf.TField(23, pf.T_DOUBLE, b"\x00" * 7 + b"\x40"),
        pf.TField(24, pf.T_BYTE, -2),
        pf.TField(25, pf.T_SET, pf.TList(pf.T_TRUE, [True, False])),
        pf.TField(26, pf.T_MAP, pf.TMap(pf.T_BINARY, pf.T_I16, [(b"ab", 300)])),
        pf.TField(-5, pf.T_I64, -(2**63)),  # negative id: long form
        pf.TField(27, pf.T_STRUCT, pf.TStruct([pf.TField(1, 2, False)])),
    ])
    data = pf.encode_struct(s)
    assert data[:2] == b"\x15\x01"  # delta 1, i32, zigzag(-1) = 1
    assert data[2:4] == b"\x01\x28"  # bool true, zigzag(20) = 40
    assert data[4:7] == bytes([0x19, 0xF6, 16])  # list of i64, size 16 as varint
    assert b"\x1b\x00" in data  # field 22 map, empty map = single 0 byte
    assert data.endswith(b"\x12\x00\x00")  # nested struct {1: false}, stop, stop
    assert pf.decode_struct(data) == s
    assert pf.encode_struct(pf.decode_struct(data)) == data


def test_decode_rejects_truncated_and_trailing_bytes() -> None:
    data = pf.encode_struct(pf.TStruct([pf.TField(1, pf.T_BINARY, b"hello")]))
    with pytest.raises(ValueError):
        pf.decode_struct(data[:-2])
    with pytest.raises(ValueError, match="after the Thrift struct"):
        pf.decode_struct(data + b"\x00")


def _write_variants(tmp: Path) -> list[Path]:
    """Footers exercising statistics, several row groups, key-value metadata, dictionaries,
    page indexes, >15 columns (long list headers), plus one written by DuckDB."""
    n = 5000
    wide = pa.table({f"c{i}": pa.array(range(i, i + n), pa.int64()) for i in range(20)})
    mixed = pa.table({
        "k": pa.array([f"key{i % 7}" for i in range(n)]),  # dictionary encoded
        "f": pa.array([i / 3 if i % 11 else None for i in range(n)]),
        "b": pa.array([i % 2 == 0 for i in range(n)]),
        "d": pa.array([-(2**62) + i for i in range(n)], pa.int64()),
        "bin": pa.array([bytes([i % 256]) * 3 for i in range(n)]),
    }).replace_schema_metadata({"origin": "test", "x": "ü" * 40})
    paths = []
    for name, table, kwargs in [
        ("nested", nested_table(), {}),
        ("wide", wide, {"row_group_size": 700}),
        ("mixed", mixed, {"row_group_size": 1000, "write_statistics": True}),
        ("plain", mixed, {"use_dictionary": False, "write_statistics": False,
                          "compression": "none"}),
        ("pageidx", mixed, {"write_page_index": True, "write_page_checksum": True,
                            "data_page_size": 1024, "row_group_size": 2500}),
    ]:
        paths.append(tmp / f"{name}.parquet")
        pq.write_table(table, paths[-1], **kwargs)
    paths.append(tmp / "duck.parquet")
    con = duckdb.connect()
    con.execute(f"COPY (SELECT range AS i, range::VARCHAR AS s, [range, 1] AS l FROM range(3000)) "
                f"TO '{paths[-1]}' (FORMAT parquet, ROW_GROUP_SIZE 1000)")
    con.close()
    return paths


def test_real_footers_round_trip_byte_identical(tmp_path: Path) -> None:
    for path in _write_variants(tmp_path):
        _, footer = pf.read_footer(str(path))
        assert pf.encode_struct(pf.decode_struct(footer)) == footer, path.name


# ---------------------------------------------------------------------------------------------
# pf.set_field_ids
# ---------------------------------------------------------------------------------------------


def test_set_field_ids_sets_exactly_the_lake_columns(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    table = write_nested(path)
    start, _ = pf.read_footer(str(path))
    data_before = path.read_bytes()[:start]

    size, footer_len = pf.set_field_ids(str(path), IDS)

    raw = path.read_bytes()
    assert size == len(raw) and raw[:start] == data_before and raw.endswith(b"PAR1")
    assert int.from_bytes(raw[-8:-4], "little") == footer_len == len(pf.read_footer(str(path))[1])
    assert pf.schema_field_ids(str(path)) == {
        p: IDS.get(p) for p in pf.schema_field_ids(str(path))}  # list/key_value stay None
    # pyarrow: same data, ids on exactly the intended Arrow fields
    assert pq.read_table(path).equals(table)
    assert arrow_field_ids(pq.read_schema(path)) == IDS
    # DuckDB: same data, field_id per node as intended
    con = duckdb_connect()
    got = con.execute(f"SELECT * FROM read_parquet('{path}')").fetch_arrow_table()
    assert got.to_pylist() == table.to_pylist()
    rows = con.execute(f"SELECT name, field_id FROM parquet_schema('{path}')").fetchall()
    assert [r[1] for r in rows[1:]] == [IDS.get(p) for p in pf.schema_field_ids(str(path))]
    assert sum(r[1] is not None for r in rows) == len(IDS)
    con.close()


def test_ids_match_what_duckdbs_lake_writer_puts_in_its_files(tmp_path: Path) -> None:
    """The node choice (element/key/value yes, list/key_value no) and the numbering are
    DuckDB's own: a file DuckDB writes into a lake carries the same ids at the same paths."""
    (tmp_path / "lake").mkdir()
    con = duckdb_connect()
    con.execute(f"ATTACH 'ducklake:{tmp_path}/lake/meta.ducklake' AS l "
                f"(DATA_PATH '{tmp_path}/lake/data/', DATA_INLINING_ROW_LIMIT 0)")
    con.execute(f"CREATE TABLE l.t ({DUCK_TYPES})")
    con.execute("INSERT INTO l.t VALUES (1, 'a', {'a': 1, 'b': 'x'}, [1, 2], [{'x': 3}], "
                "MAP {'k': 1}, MAP {'k': {'p': 5}})")
    con.close()
    (duck_file,) = glob.glob(f"{tmp_path}/lake/data/**/*.parquet", recursive=True)
    ours = tmp_path / "ours.parquet"
    write_nested(ours)
    pf.set_field_ids(str(ours), IDS)
    assert pf.schema_field_ids(str(ours)) == pf.schema_field_ids(duck_file)


@pytest.mark.parametrize("patched", [True, False])
def test_ducklake_reads_the_patched_file_as_a_lake_data_file(tmp_path: Path,
                                                             patched: bool) -> None:
    """Swap the data file of a DuckDB-written lake for ours (catalog sizes updated, no name
    mapping) and read the table through the ducklake extension. Without the patch (only the
    ids Spark writes) DuckDB cannot read it -- the bug this module fixes."""
    (tmp_path / "lake").mkdir()
    con = duckdb_connect()
    con.execute(f"ATTACH 'ducklake:{tmp_path}/lake/meta.ducklake' AS l "
                f"(DATA_PATH '{tmp_path}/lake/data/', DATA_INLINING_ROW_LIMIT 0)")
    con.execute(f"CREATE TABLE l.t ({DUCK_TYPES})")
    con.execute("INSERT INTO l.t (i) VALUES (0)")
    (data_file,) = glob.glob(f"{tmp_path}/lake/data/**/*.parquet", recursive=True)
    table = write_nested(Path(data_file))
    size, footer_len = pf.set_field_ids(data_file, IDS if patched else SPARK_IDS)
    assert size == os.path.getsize(data_file)
    meta = "__ducklake_metadata_l"
    con.execute(f"UPDATE {meta}.ducklake_data_file SET file_size_bytes = ?, footer_size = ?, "
                f"record_count = ?", [size, footer_len, table.num_rows])
    con.execute(f"UPDATE {meta}.ducklake_table_stats SET record_count = ?, next_row_id = ?",
                [table.num_rows, table.num_rows])
    query = "SELECT * FROM l.t ORDER BY rowid"
    if patched:
        assert con.execute(query).fetch_arrow_table().to_pylist() == table.to_pylist()
    else:
        try:
            rows = con.execute(query).fetch_arrow_table().to_pylist()
        except duckdb.Error:
            rows = None
        assert rows != table.to_pylist()
    con.close()


def test_set_field_ids_is_idempotent_and_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    write_nested(path)
    first = pf.set_field_ids(str(path), IDS)
    raw = path.read_bytes()
    assert pf.set_field_ids(str(path), IDS) == first and path.read_bytes() == raw
    shifted = {p: i + 100 for p, i in IDS.items()}
    pf.set_field_ids(str(path), shifted)
    assert arrow_field_ids(pq.read_schema(path)) == shifted


def test_set_field_ids_rejects_unknown_paths_without_touching_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    write_nested(path)
    raw = path.read_bytes()
    with pytest.raises(KeyError, match="array"):
        pf.set_field_ids(str(path), {("i",): 1, ("li", "bag", "array"): 2})
    with pytest.raises(ValueError):
        pf.set_field_ids(str(path), {("i",): -1})
    assert path.read_bytes() == raw
    bogus = tmp_path / "bogus.parquet"
    bogus.write_bytes(b"PAR1" + b"\x00" * 20)
    with pytest.raises(ValueError):
        pf.set_field_ids(str(bogus), {})


# ---------------------------------------------------------------------------------------------
# pf.retype_file: DuckDB's annotations on physically written columns
# ---------------------------------------------------------------------------------------------

PHYSICAL_TYPES = ("u UUID, t TIME, tz TIMETZ, h HUGEINT, uh UHUGEINT, u1 UTINYINT, "
                  "u2 USMALLINT, u4 UINTEGER, u8 UBIGINT, ns TIMESTAMP_NS, l UINTEGER[]")
PHYSICAL_LEAVES = {
    ("u",): "uuid", ("t",): "time", ("tz",): "timetz", ("h",): "int128", ("uh",): "uint128",
    ("u1",): "uint8", ("u2",): "uint16", ("u4",): "uint32", ("u8",): "uint64",
    ("ns",): "timestamp_ns", ("l", "list", "element"): "uint32",
}
# Rows whose unsigned values straddle 2**31 / 2**63 (bounds re-computed from the values), and
# rows all in the upper half (the writer's signed bounds are re-used).
STRADDLING = [
    "('ffffffff-ffff-ffff-ffff-ffffffffffff', '24:00:00', '00:00:00+15:59', "
    "-85070591730234615865843651857942052864, 0, 255, 65535, 4294967295, "
    "18446744073709551615, '1677-09-22 00:00:00.000000001', [4294967295, 0, NULL])",
    "('00000000-0000-0000-0000-000000000000', '00:00:00', '23:59:59.999999-15:59', "
    "9223372036854775809, 18446744073709553665, 0, 0, 0, 0, "
    "'2262-04-11 23:47:16.854775', [2147483647])",
    "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "('7fffffff-ffff-ffff-8000-000000000000', '12:30:00.5', '12:30:00.5+02', -3, 3, 128, "
    "32768, 2147483648, 9223372036854775808, '1969-12-31 23:59:59.999999999', [])",
]
UPPER_HALF = [
    "('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '01:02:03', '01:02:03+01', 1, 1, 200, 40000, "
    "3000000000, 10000000000000000000, '2024-01-15 12:30:00.123456789', [4000000000])",
    "('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '01:02:04', '01:02:04+01', 2, 2, 201, 40001, "
    "2147483649, 9223372036854775809, '2024-01-15 12:30:00.123456788', [2147483648])",
]


def physical_file(table: pa.Table, path: Path) -> None:
    """``table`` (DuckDB's file read by pyarrow) written with the bare physical types Spark
    and our pyarrow writer produce: unsigned bit patterns as signed ints, times and
    nanosecond timestamps as INT64, uuids as 16 plain bytes."""
    out = {}
    for name in table.column_names:
        column = table.column(name).combine_chunks()
        kind = column.type
        if isinstance(kind, pa.BaseExtensionType):  # arrow.uuid
            out[name] = column.storage
        elif pa.types.is_time(kind) or pa.types.is_timestamp(kind):
            out[name] = column.cast(pa.int64())
        elif pa.types.is_list(kind):
            out[name] = pa.ListArray.from_arrays(column.offsets, column.values.view(pa.int32()),
                                                 mask=column.is_null())
        elif kind in (pa.uint8(), pa.uint16()):
            out[name] = column.cast(pa.int32())
        elif kind == pa.uint32():
            out[name] = column.view(pa.int32())
        elif kind == pa.uint64():
            out[name] = column.view(pa.int64())
        else:
            out[name] = column
    pq.write_table(pa.table(out), path, store_schema=False)
    assert not any(pq.read_schema(path).field(n).type == table.schema.field(n).type
                   for n in ("u", "t", "u4", "ns"))


@pytest.mark.parametrize("rows", [STRADDLING, UPPER_HALF], ids=["straddling", "upper-half"])
def test_retyped_file_is_what_duckdb_writes(tmp_path: Path, rows: list[str]) -> None:
    """A physically written file, retyped, has DuckDB's own annotations and statistics for
    every type, and DuckDB reads the values it wrote itself."""
    from dbt.adapters.ducklake.spark.write import _bounds_reader

    con = duckdb_connect()
    duck_file, ours = tmp_path / "duck.parquet", tmp_path / "ours.parquet"
    typed = [c.split(" ", 1) for c in PHYSICAL_TYPES.split(", ")]
    names = [n for n, _ in typed]
    con.execute(f"COPY (SELECT {', '.join(f'{n}::{t} AS {n}' for n, t in typed)} FROM "
                f"(VALUES {', '.join(rows)}) v({', '.join(names)})) TO '{duck_file}' "
                "(FORMAT parquet)")
    physical_file(pq.read_table(duck_file), ours)
    data_before = ours.read_bytes()[:pf.read_footer(str(ours))[0]]

    size, footer_len = pf.retype_file(str(ours), PHYSICAL_LEAVES, _bounds_reader(str(ours)))

    raw = ours.read_bytes()
    assert size == len(raw) and int.from_bytes(raw[-8:-4], "little") == footer_len
    assert raw.startswith(data_before)
    text = ", ".join(f"{n}::VARCHAR" for n in names)
    assert con.execute(f"SELECT {text} FROM read_parquet('{ours}')").fetchall() == \
        con.execute(f"SELECT {text} FROM read_parquet('{duck_file}')").fetchall()
    schema = ("SELECT name, type, type_length, converted_type, logical_type "
              "FROM parquet_schema('{}') WHERE name <> 'list' AND num_children IS NULL")
    assert con.execute(schema.format(ours)).fetchall() == \
        con.execute(schema.format(duck_file)).fetchall()
    stats = ("SELECT path_in_schema, stats_min_value, stats_max_value, stats_null_count "
             "FROM parquet_metadata('{}') ORDER BY column_id")
    # DuckDB writes no statistics at all for TIMETZ; we keep the (exact) null count
    nulls = con.execute(f"SELECT count(*) - count(tz) FROM '{duck_file}'").fetchone()[0]
    assert con.execute(stats.format(ours)).fetchall() == [
        (path, lo, hi, nulls if path == "tz" else n)
        for path, lo, hi, n in con.execute(stats.format(duck_file)).fetchall()]
    con.close()


def test_retype_refuses_a_leaf_of_another_physical_type(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"u": pa.array([b"ab"], pa.binary()),
                             "t": pa.array([1], pa.int32())}), path)
    raw = path.read_bytes()
    for leaves in ({("u",): "uuid"}, {("t",): "time"}):
        with pytest.raises(ValueError, match="not stored as DuckDB stores"):
            pf.retype_file(str(path), leaves)
    with pytest.raises(KeyError):
        pf.retype_file(str(path), {("x",): "time"})
    assert path.read_bytes() == raw


def test_drop_last_column_leaves_a_file_without_it(tmp_path):  # noqa: ANN001
    """The footer no longer names the column (schema, every row group's chunks, column
    orders, Spark's schema), and the other columns read back unchanged, row group by row
    group."""
    import json

    from dbt.adapters.ducklake.lake.parquet_footer import drop_last_column

    path = str(tmp_path / "f.parquet")
    spark_schema = {"type": "struct", "fields": [
        {"name": n, "type": "long", "nullable": True, "metadata": {}} for n in ("a", "s", "x")]}
    table = pa.table({"a": pa.array(range(1000)),
                      "s": pa.array([{"k": i} for i in range(1000)]),
                      "x": pa.array([None] * 1000, pa.int64())}).replace_schema_metadata(
        {"org.apache.spark.sql.parquet.row.metadata": json.dumps(spark_schema)})
    pq.write_table(table, path, row_group_size=300)
    size, _ = drop_last_column(path, "x")
    assert os.path.getsize(path) == size
    got = pq.ParquetFile(path)
    assert got.schema_arrow.names == ["a", "s"]
    assert got.metadata.num_row_groups == 4 and got.metadata.num_columns == 2
    assert got.read().to_pydict() == \
        table.drop_columns(["x"]).to_pydict()
    kept = json.loads(got.metadata.metadata[b"org.apache.spark.sql.parquet.row.metadata"])
    assert [f["name"] for f in kept["fields"]] == ["a", "s"]
    for name in ("a", "s", "nope"):  # only the last top-level leaf column can go
        with pytest.raises(ValueError, match="last top-level leaf"):
            drop_last_column(path, name)


def test_driver_written_files_use_a_dictionary_only_where_values_repeat() -> None:
    """pyarrow would dictionary-encode every column; a file the driver writes does so only
    for columns with repeated values, as Spark's writer decides: a column of distinct values
    is written plainly, and the file is smaller than with pyarrow's default."""
    from dbt.adapters.ducklake.lake.options import ParquetOptions
    from dbt.adapters.ducklake.spark.write import _parquet_bytes

    n = 50_000
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "name": pa.array([f"name-{i}" for i in range(n)]),
                      "k": pa.array([i % 10 for i in range(n)], pa.int32()),
                      "nothing": pa.nulls(n)})
    data = _parquet_bytes(table, ParquetOptions())
    chunks = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    dictionary = {chunks.column(i).path_in_schema: chunks.column(i).has_dictionary_page
                  for i in range(chunks.num_columns)}
    assert dictionary == {"id": False, "name": False, "k": True, "nothing": True}
    assert pq.read_table(pa.BufferReader(data)).equals(table)
    default = pa.BufferOutputStream()
    pq.write_table(table, default, compression="snappy", store_schema=False)
    assert len(data) < 0.8 * default.getvalue().size


def test_a_dictionary_is_judged_on_the_whole_column_not_its_first_rows() -> None:
    """Columns larger than the sample are judged on rows spread over the whole column: a
    customer id whose first 10,000 values are all different but which repeats over the file
    (30% distinct) gets a dictionary; a column 70% distinct does not."""
    from dbt.adapters.ducklake.spark.write import _dictionary

    n = 100_000
    table = pa.table({"id": pa.array(range(n), pa.int64()),
                      "customer": pa.array([(i * 7919) % 30_000 for i in range(n)], pa.int64()),
                      "mostly_distinct": pa.array([i % 70_000 for i in range(n)], pa.int64()),
                      "code": pa.array([f"c{i % 10}" for i in range(n)])})
    assert len(set(table.column("customer").to_pylist()[:10_000])) == 10_000
    assert _dictionary(table) == ["customer", "code"]
