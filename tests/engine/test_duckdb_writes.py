"""DuckDB writes, we read: every table DuckDB 1.5.5 writes reads the same through Spark.

Each test lets DuckDB (the ``duck`` fixture, attached to the same lake as ``lake``) build a
table step by step, then reads every snapshot of it with ``read(version=v)`` and compares the
DataFrame with ``SELECT ... FROM lake.t AT (VERSION => v)`` (column names included).

Type mapping (DuckDB -> Spark) checked here, and the DuckDB expression each Spark column is
compared with when Spark cannot hold the DuckDB value as is:

=====================  ======================  ===============================================
DuckDB                 Spark                   compared with
=====================  ======================  ===============================================
BOOLEAN                boolean                 v
TINYINT..BIGINT        byte/short/int/long     v
UTINYINT               short                   v
USMALLINT              int                     v
UINTEGER               long                    v
UBIGINT                decimal(20,0)           v::DECIMAL(20,0)
HUGEINT                decimal(38,0)           v (DuckDB stores HUGEINT in Parquet as DOUBLE,
                                               so only values exact in a double survive)
FLOAT / DOUBLE         float / double          v (NaN, +-inf, -0.0 kept)
DECIMAL(p,s)           decimal(p,s)            v
VARCHAR / JSON         string                  v / v::VARCHAR
BLOB                   binary                  v
DATE                   date                    v
TIME                   string 'HH:MM:SS[.f]'   v::VARCHAR
TIMESTAMP/_S/_MS       timestamp_ntz           v
TIMESTAMP_NS           timestamp_ntz           v floored to the microsecond
TIMESTAMPTZ            timestamp               v
UUID                   string (lowercase)      v::VARCHAR
INTERVAL               -- UnsupportedTypeError naming the column
=====================  ======================  ===============================================
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from oracle import duck_rows, spark_rows

from dbt.adapters.ducklake.lake.errors import UnsupportedTypeError
from dbt.adapters.ducklake.spark import SparkLake
from dbt.adapters.ducklake.spark.read import load_state, scan

pytestmark = pytest.mark.spark


@pytest.fixture
def lake(spark, lake_target):  # noqa: ANN001, ANN201
    lk = SparkLake.open(spark, lake_target.catalog, lake_target.data_path,
                        **lake_target.open_kwargs())
    yield lk
    lk.close()


def run(duck, *statements: str) -> int:  # noqa: ANN001
    """Run DuckDB statements; the snapshot id after the last one."""
    for sql in statements:
        duck.execute(sql)
    return duck.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]


def check(duck, lake, table: str, versions, exprs: dict[str, str] | None = None,  # noqa: ANN001
          spark_name: str | None = None) -> None:
    """Our reading of ``main.<table>`` at each version equals DuckDB's, columns included.

    ``exprs`` maps a column name to the DuckDB expression it is compared with.
    """
    exprs = exprs or {}
    name = spark_name or table
    for v in versions:
        df = scan(lake.spark, load_state(lake.lake, "main", name, v))
        at = f" AT (VERSION => {v})"
        duck_cols = [d[0] for d in duck.execute(f"SELECT * FROM lake.{table}{at} LIMIT 0")
                     .description]
        ours = [f.name for f in df.schema.fields]
        assert ours == duck_cols, f"version {v}: columns {ours} != DuckDB's {duck_cols}"
        select = ", ".join(exprs.get(c, f'"{c}"') for c in duck_cols)
        expected = duck_rows(duck, f"SELECT {select} FROM lake.{table}{at}")
        actual = spark_rows(df)
        assert actual == expected, (f"version {v}:\nspark : {_diff(actual, expected)}\n"
                                    f"duckdb: {_diff(expected, actual)}")


def _diff(a: list, b: list) -> list:
    extra = [r for r in a if r not in b]
    return extra[:5] if extra else a[:3]


# ------------------------------------------------------------------------------ 1. primitives
PRIMITIVE_COLUMNS = """
    id INTEGER, b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INTEGER, i64 BIGINT,
    u8 UTINYINT, u16 USMALLINT, u32 UINTEGER, u64 UBIGINT, h HUGEINT,
    f FLOAT, d DOUBLE, d41 DECIMAL(4,1), d183 DECIMAL(18,3), d3810 DECIMAL(38,10),
    s VARCHAR, bl BLOB, dt DATE, tm TIME, ts TIMESTAMP, ts_s TIMESTAMP_S, ts_ms TIMESTAMP_MS,
    ts_ns TIMESTAMP_NS, tstz TIMESTAMPTZ, u UUID, j JSON
"""
PRIMITIVE_EXPRS = {
    "u64": "u64::DECIMAL(20,0)",
    "tm": "tm::VARCHAR",
    "u": "u::VARCHAR",
    "j": "j::VARCHAR",
    # Spark keeps microseconds: floor the nanoseconds (also before 1970)
    "ts_ns": "make_timestamp((epoch_ns(ts_ns) - (((epoch_ns(ts_ns) % 1000) + 1000) % 1000)) "
             "// 1000)",
}
SPECIAL_ROWS = [
    # minimum values
    "(1, false, -128, -32768, -2147483648, -9223372036854775808, 0, 0, 0, 0, "
    "-9007199254740992, '-inf', '-inf', -999.9, -999999999999999.999, "
    "-9999999999999999999999999999.9999999999, '', ''::BLOB, '0001-01-01', '00:00:00', "
    "'0001-01-01 00:00:00', '0001-01-01 00:00:00', '0001-01-01 00:00:00', "
    "'1677-09-22 00:00:00.000000001', '0001-01-01 00:00:00+00', "
    "'00000000-0000-0000-0000-000000000000', 'null')",
    # maximum values
    "(2, true, 127, 32767, 2147483647, 9223372036854775807, 255, 65535, 4294967295, "
    "18446744073709551615, 9007199254740992, 'inf', 'inf', 999.9, 999999999999999.999, "
    "9999999999999999999999999999.9999999999, "
    "'it''s \"quoted\", {x: [1]} ünïcødé 🦆 \\ end ', '\\xFF\\x00\\x27abc'::BLOB, "
    "'9999-12-31', '23:59:59.999999', '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59', "
    "'9999-12-31 23:59:59.999', '2262-04-10 23:47:16.854775807', "
    "'9999-12-31 23:59:59.999999+00', 'ffffffff-ffff-ffff-ffff-ffffffffffff', "
    "'{\"a\": [1, \"x\"], \"b\": null}')",
    # NaN, -0.0, values just before the epoch
    "(3, NULL, 0, 0, 0, 0, 1, 1, 1, 1, 0, 'nan', 'nan', -0.5, -0.001, -0.0000000001, "
    "'null', '\\x00'::BLOB, '1969-12-31', '12:30:00.5', '1969-12-31 23:59:59.999999', "
    "'1969-12-31 23:59:59', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999999', "
    "'1969-12-31 23:59:59.999999-05', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '[1, 2.5]')",
    # all NULL
    "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    # ordinary values with fractions
    "(5, true, -5, 300, 70000, 10000000000, 200, 60000, 4000000000, 10000000000000000000, "
    "-123456789, 1.5, -2.25e300, 12.3, 1234.567, 3.1415926535, 'héllo\nworld', "
    "'\\x01\\x02'::BLOB, '2024-02-29', '01:02:03.000004', '2024-01-15 12:30:00.123456', "
    "'2024-01-15 12:30:45', '2024-01-15 12:30:00.123', '2024-01-15 12:30:00.123456789', "
    "'2024-01-15 12:30:00.5+02', '550e8400-e29b-41d4-a716-446655440000', '\"text\"')",
]


def generated_rows(start: int, n: int) -> list[str]:
    out = []
    for i in range(start, start + n):
        out.append(
            f"({i}, {str(i % 2 == 0).lower()}, {i % 100 - 50}, {i * 7}, {i * 1000}, {i * 10**12},"
            f" {i % 256}, {i * 3}, {i * 100000}, {i * 10**15}, {i * 10**9}, {i / 4}, {i * 1.1},"
            f" {i % 1000 / 10}, {i * 1.001:.3f}, {i * 3.3333333333:.10f}, 'row {i}',"
            f" '\\x{i % 256:02X}'::BLOB, DATE '2024-01-01' + {i}, TIME '00:00:01' + "
            f"INTERVAL {i} SECOND, TIMESTAMP '2024-01-01 00:00:00.000001' + INTERVAL {i} HOUR,"
            f" '2024-01-01 00:00:{i % 60:02d}', '2024-01-01 00:00:00.{i % 1000:03d}',"
            f" '2024-01-01 00:00:00.{i:09d}', '2024-06-01 00:00:00+00',"
            f" '{i:08x}-0000-4000-8000-{i:012x}', '{{\"i\": {i}}}')")
    return out


def test_primitive_types_parquet_and_inlined(duck, lake):  # noqa: ANN001
    v0 = run(duck, f"CREATE TABLE lake.prim ({PRIMITIVE_COLUMNS})")
    v1 = run(duck, f"INSERT INTO lake.prim VALUES {', '.join(SPECIAL_ROWS)}")  # 5 rows: inlined
    v2 = run(duck, "INSERT INTO lake.prim VALUES "
             + ", ".join(SPECIAL_ROWS + generated_rows(10, 15)))  # 20 rows: Parquet
    v3 = run(duck, "DELETE FROM lake.prim WHERE id IN (2, 11)")
    check(duck, lake, "prim", [v0, v1, v2, v3], PRIMITIVE_EXPRS)
    schema = {f.name: f.dataType.simpleString()
              for f in lake.table("main.prim").read().schema.fields}
    assert schema == {
        "id": "int", "b": "boolean", "i8": "tinyint", "i16": "smallint", "i32": "int",
        "i64": "bigint", "u8": "smallint", "u16": "int", "u32": "bigint", "u64": "decimal(20,0)",
        "h": "decimal(38,0)", "f": "float", "d": "double", "d41": "decimal(4,1)",
        "d183": "decimal(18,3)", "d3810": "decimal(38,10)", "s": "string", "bl": "binary",
        "dt": "date", "tm": "string", "ts": "timestamp_ntz", "ts_s": "timestamp_ntz",
        "ts_ms": "timestamp_ntz", "ts_ns": "timestamp_ntz", "tstz": "timestamp",
        "u": "string", "j": "string",
    }


def test_interval_column_is_refused_with_its_name(duck, lake):  # noqa: ANN001
    v0 = run(duck, "CREATE TABLE lake.iv (id INTEGER, span INTERVAL)")
    v1 = run(duck, "INSERT INTO lake.iv VALUES (1, INTERVAL '1 month 2 days 3 seconds')")
    v2 = run(duck, "INSERT INTO lake.iv SELECT i, to_days(i::INTEGER) FROM range(20) t(i)")
    for v in (v0, v1, v2):
        with pytest.raises(UnsupportedTypeError, match="'span'.*interval"):
            lake.table("main.iv").read(version=v)


# ------------------------------------------------------------------------------ 2. nested
NESTED_COLUMNS = """
    id INTEGER, st STRUCT(a INTEGER, b VARCHAR), li INTEGER[],
    ls STRUCT(x INTEGER, y VARCHAR)[], mp MAP(VARCHAR, INTEGER),
    ms MAP(VARCHAR, STRUCT(p INTEGER, q DOUBLE)),
    deep STRUCT(inner_s STRUCT(k INTEGER, l INTEGER[]), m VARCHAR, t TIMESTAMP, u UUID)
"""


def nested_row(i: int) -> str:
    if i % 5 == 4:
        return f"({i}, NULL, NULL, NULL, NULL, NULL, NULL)"
    quote = "it''s, {odd}: [x]=y" if i % 3 == 0 else f"b{i}"
    return (
        f"({i}, {{'a': {i}, 'b': '{quote}'}}, [{i}, NULL, {i + 1}], "
        f"[{{'x': {i}, 'y': 'y{i}'}}, NULL, {{'x': NULL, 'y': NULL}}], "
        f"MAP {{'k{i}': {i}, 'z''q': NULL}}, "
        f"MAP {{'a': {{'p': {i}, 'q': {i / 2}}}, 'b': NULL}}, "
        f"{{'inner_s': {{'k': {i}, 'l': {'[]' if i % 2 else f'[{i}]'}}}, 'm': '{quote}', "
        f"'t': TIMESTAMP '2024-01-01 10:00:00.25' + INTERVAL {i} DAY, "
        f"'u': '00000000-0000-0000-0000-{i:012d}'}})")


def test_nested_types_parquet_and_inlined(duck, lake):  # noqa: ANN001
    v0 = run(duck, f"CREATE TABLE lake.nest ({NESTED_COLUMNS})")
    v1 = run(duck, "INSERT INTO lake.nest VALUES " + ", ".join(nested_row(i) for i in range(6)))
    v2 = run(duck, "INSERT INTO lake.nest VALUES "
             + ", ".join(nested_row(i) for i in range(10, 30)))
    v3 = run(duck, "INSERT INTO lake.nest VALUES (100, {'a': NULL, 'b': NULL}, [], [], MAP {}, "
             "MAP {}, {'inner_s': NULL, 'm': NULL, 't': NULL, 'u': NULL})")
    exprs = {"deep": ("CASE WHEN deep IS NULL THEN NULL ELSE {'inner_s': deep.inner_s, "
                     "'m': deep.m, 't': deep.t, 'u': deep.u::VARCHAR} END")}
    check(duck, lake, "nest", [v0, v1, v2, v3], exprs)


# ------------------------------------------------------------------------------ 3. deletes
def test_deletes_updates_and_inlined_rows(duck, lake):  # noqa: ANN001
    versions = [run(duck, "CREATE TABLE lake.du (id INTEGER, name VARCHAR, amount DOUBLE)")]
    versions.append(run(duck, "INSERT INTO lake.du SELECT i, 'n' || i, i * 1.5 "
                              "FROM range(30) t(i)"))
    versions.append(run(duck, "DELETE FROM lake.du WHERE id % 2 = 0 AND id < 26"))  # 13 rows
    versions.append(run(duck, "DELETE FROM lake.du WHERE id IN (1, 3, 5, 7, 9, 11, 13, 15, "
                              "17, 19, 21, 23)"))  # 12 more from the same file: cumulative
    versions.append(run(duck, "UPDATE lake.du SET name = 'upd ' || name, amount = -amount "
                              "WHERE id >= 25"))
    versions.append(run(duck, "INSERT INTO lake.du VALUES (100, 'a', 1), (101, 'b', 2), "
                              "(102, NULL, NULL)"))
    versions.append(run(duck, "DELETE FROM lake.du WHERE id = 101"))
    versions.append(run(duck, "UPDATE lake.du SET name = 'changed' WHERE id = 102"))
    versions.append(run(duck, "UPDATE lake.du SET amount = 0 WHERE id IN (25, 100)"))
    changes = duck_rows(duck, "SELECT snapshot_id, changes FROM lake.snapshots()")
    assert len(changes) == versions[-1] + 1
    check(duck, lake, "du", versions)


# ------------------------------------------------------------------------------ 4. flush
def test_inlined_deletes_and_flush(duck, lake):  # noqa: ANN001
    versions = [run(duck, "CREATE TABLE lake.fl (id INTEGER, v VARCHAR)")]
    versions.append(run(duck, "INSERT INTO lake.fl SELECT i, 'v' || i FROM range(40) t(i)"))
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id IN (3, 4, 5)"))  # inlined delete
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id = 30"))  # more inlined deletes
    versions.append(run(duck, "INSERT INTO lake.fl VALUES (100, 'x'), (101, 'y')"))
    versions.append(run(duck, "UPDATE lake.fl SET v = 'upd' WHERE id IN (10, 100)"))
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id = 101"))
    tid = duck.execute("SELECT table_id FROM ducklake_table_info('lake') "
                       "WHERE table_name = 'fl'").fetchone()[0]
    meta = duck.execute("SELECT database_name FROM duckdb_databases() "
                        "WHERE database_name LIKE '__ducklake_metadata_%'").fetchone()[0]
    assert duck.execute(f"SELECT count(*) FROM {meta}.ducklake_inlined_delete_{tid}") \
        .fetchone()[0] > 0
    versions.append(run(duck, "CALL ducklake_flush_inlined_data('lake')"))
    assert duck.execute(f"SELECT count(*) FROM {meta}.ducklake_inlined_delete_{tid}") \
        .fetchone()[0] == 0
    partial = duck.execute(f"SELECT count(*) FROM {meta}.ducklake_data_file "
                           "WHERE partial_max IS NOT NULL").fetchone()[0]
    assert partial >= 1
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id IN (10, 11)"))
    versions.append(run(duck, "INSERT INTO lake.fl VALUES (200, 'after')"))
    check(duck, lake, "fl", versions)


# ------------------------------------------------------------------------------ 5. merge
def test_merge_adjacent_files(duck, lake):  # noqa: ANN001
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    versions = [run(duck, "CREATE TABLE lake.mg (id INTEGER, v VARCHAR, d DATE)")]
    for i in range(4):
        versions.append(run(duck, f"INSERT INTO lake.mg SELECT i, 'v{i}-' || i, "
                                  f"DATE '2024-01-01' + i FROM range({i * 10}, {i * 10 + 3}) t(i)"))
    versions.append(run(duck, "CALL ducklake_merge_adjacent_files('lake')"))
    meta = duck.execute("SELECT database_name FROM duckdb_databases() "
                        "WHERE database_name LIKE '__ducklake_metadata_%'").fetchone()[0]
    assert duck.execute(f"SELECT count(*) FROM {meta}.ducklake_data_file "
                        "WHERE end_snapshot IS NULL").fetchone()[0] == 1
    versions.append(run(duck, "DELETE FROM lake.mg WHERE id IN (1, 21)"))
    versions.append(run(duck, "INSERT INTO lake.mg VALUES (99, 'last', NULL)"))
    check(duck, lake, "mg", versions)
