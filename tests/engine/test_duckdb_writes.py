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
(U)HUGEINT             decimal(38,0)           v (DuckDB stores them in Parquet as DOUBLE, so
                                               only values exact in a double survive, and
                                               values beyond 10**38 cannot be read)
FLOAT / DOUBLE         float / double          v (NaN, +-inf kept)
DECIMAL(p,s)           decimal(p,s)            v
VARCHAR / JSON         string                  v / v::VARCHAR
BLOB                   binary                  v
DATE                   date                    v
TIME                   string 'HH:MM:SS[.f]'   v::VARCHAR
TIMETZ                 string '...+00'         timezone('UTC', v)::VARCHAR (Parquet keeps only
                                               the UTC time; inlined values are shifted too)
TIME_NS                -- DuckDB 1.5.5 cannot write it to Parquet ("Unsupported type")
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

from dbt.adapters.ducklake.lake.errors import NotFoundError, UnsupportedTypeError
from dbt.adapters.ducklake.spark import SparkLake
from dbt.adapters.ducklake.spark import read as spark_read

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


def check(duck, lake, table: str, versions,  # noqa: ANN001
          exprs: dict[str, str] | None = None) -> None:
    """``lake.read("main.<table>", version=v)`` equals DuckDB's ``lake.<table> AT (VERSION
    => v)`` at each version, column names included.

    ``exprs`` maps a column name to the DuckDB expression it is compared with.
    """
    exprs = exprs or {}
    for v in versions:
        df = lake.read(f"main.{table}", version=v)
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


def catalog(lake, sql: str):  # noqa: ANN001, ANN201
    """One value from the catalog database; ``{name}`` is a (schema-qualified) table."""
    import re

    from sqlalchemy import text

    sql = re.sub(r"\{(\w+)\}", lambda m: lake.catalog.t(m.group(1)), sql)
    with lake.catalog.read() as conn:
        return conn.execute(text(sql)).scalar()


def _diff(a: list, b: list) -> list:
    extra = [r for r in a if r not in b]
    return extra[:5] if extra else a[:3]


# ------------------------------------------------------------------------------ 1. primitives
PRIMITIVE_COLUMNS = """
    id INTEGER, b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INTEGER, i64 BIGINT,
    u8 UTINYINT, u16 USMALLINT, u32 UINTEGER, u64 UBIGINT, h HUGEINT,
    f FLOAT, d DOUBLE, d41 DECIMAL(4,1), d183 DECIMAL(18,3), d3810 DECIMAL(38,10),
    s VARCHAR, bl BLOB, dt DATE, tm TIME, ts TIMESTAMP, ts_s TIMESTAMP_S, ts_ms TIMESTAMP_MS,
    ts_ns TIMESTAMP_NS, tstz TIMESTAMPTZ, u UUID, j JSON, tz TIMETZ, uh UHUGEINT
"""
PRIMITIVE_EXPRS = {
    "u64": "u64::DECIMAL(20,0)",
    "tm": "tm::VARCHAR",
    "u": "u::VARCHAR",
    "j": "j::VARCHAR",
    "tz": "timezone('UTC', tz)::VARCHAR",
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
    "'00000000-0000-0000-0000-000000000000', 'null', '00:00:00+15:59', 0)",
    # maximum values
    "(2, true, 127, 32767, 2147483647, 9223372036854775807, 255, 65535, 4294967295, "
    "18446744073709551615, 9007199254740992, 'inf', 'inf', 999.9, 999999999999999.999, "
    "9999999999999999999999999999.9999999999, "
    "'it''s \"quoted\", {x: [1]} ünïcødé 🦆 \\ end ', '\\xFF\\x00\\x27abc'::BLOB, "
    "'9999-12-31', '23:59:59.999999', '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59', "
    "'9999-12-31 23:59:59.999', '2262-04-10 23:47:16.854775807', "
    "'9999-12-31 23:59:59.999999+00', 'ffffffff-ffff-ffff-ffff-ffffffffffff', "
    "'{\"a\": [1, \"x\"], \"b\": null}', '23:59:59.999999-15:59', 9007199254740992)",
    # NaN, values just before the epoch
    "(3, NULL, 0, 0, 0, 0, 1, 1, 1, 1, 0, 'nan', 'nan', -0.5, -0.001, -0.0000000001, "
    "'null', '\\x00'::BLOB, '1969-12-31', '12:30:00.5', '1969-12-31 23:59:59.999999', "
    "'1969-12-31 23:59:59', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999999', "
    "'1969-12-31 23:59:59.999999-05', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '[1, 2.5]', "
    "'12:30:00.5+02', 1)",
    # all NULL
    "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    # ordinary values with fractions
    "(5, true, -5, 300, 70000, 10000000000, 200, 60000, 4000000000, 10000000000000000000, "
    "-123456789, 1.5, -2.25e300, 12.3, 1234.567, 3.1415926535, 'héllo\nworld', "
    "'\\x01\\x02'::BLOB, '2024-02-29', '01:02:03.000004', '2024-01-15 12:30:00.123456', "
    "'2024-01-15 12:30:45', '2024-01-15 12:30:00.123', '2024-01-15 12:30:00.123456789', "
    "'2024-01-15 12:30:00.5+02', '550e8400-e29b-41d4-a716-446655440000', '\"text\"', "
    "'01:02:03.000004-00:30', 123456789)",
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
            f" '{i:08x}-0000-4000-8000-{i:012x}', '{{\"i\": {i}}}',"
            f" '{i % 24:02d}:00:00.{i:06d}+0{i % 10}', {i * 10**9})")
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
        "u": "string", "j": "string", "tz": "string", "uh": "decimal(38,0)",
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
    deep STRUCT(inner_s STRUCT(k INTEGER, l INTEGER[]), m VARCHAR)
"""


def nested_row(i: int) -> str:
    if i % 5 == 4:
        return f"({i}, NULL, NULL, NULL, NULL, NULL, NULL)"
    # No ' or \\ in strings under a top-level STRUCT: see test_inlined_struct_duckdb_bugs.
    odd = "x, {odd}: [x]=y" if i % 3 == 0 else f"b{i}"
    quoted = "it''s [a, b]" if i % 2 else f"y{i}"
    return (
        f"({i}, {{'a': {i}, 'b': '{odd}'}}, [{i}, NULL, {i + 1}], "
        f"[{{'x': {i}, 'y': '{quoted}'}}, NULL, {{'x': NULL, 'y': NULL}}], "
        f"MAP {{'k{i}': {i}, 'z''q': NULL}}, "
        f"MAP {{'a': {{'p': {i}, 'q': {i / 2}}}, '{quoted}': NULL}}, "
        f"{{'inner_s': {{'k': {i}, 'l': {'[]' if i % 2 else f'[{i}]'}}}, 'm': '{odd}'}})")


def test_nested_types_parquet_and_inlined(duck, lake):  # noqa: ANN001
    v0 = run(duck, f"CREATE TABLE lake.nest ({NESTED_COLUMNS})")
    v1 = run(duck, "INSERT INTO lake.nest VALUES " + ", ".join(nested_row(i) for i in range(6)))
    v2 = run(duck, "INSERT INTO lake.nest VALUES "
             + ", ".join(nested_row(i) for i in range(10, 30)))
    v3 = run(duck, "INSERT INTO lake.nest VALUES (100, {'a': NULL, 'b': NULL}, [], [], MAP {}, "
             "MAP {}, {'inner_s': NULL, 'm': NULL})")
    v4 = run(duck, "DELETE FROM lake.nest WHERE id IN (1, 11)")
    check(duck, lake, "nest", [v0, v1, v2, v3, v4])


def test_inlined_struct_duckdb_bugs(duck, lake, lake_target):  # noqa: ANN001
    """DuckDB 1.5.5 writes a top-level STRUCT into its inlined table as SQL literals
    (``{'s': 'it''s', 't': CAST('…' AS TIMESTAMP)}``) and cannot read that text back: a quote
    inside a string is lost and a child needing a CAST fails the whole scan. We read the value
    that was written (``ducklake_flush_inlined_data`` fails on these rows too)."""
    import datetime as dt

    run(duck, "CREATE TABLE lake.sb (id INTEGER, st STRUCT(s VARCHAR, t TIMESTAMP, "
              "u UUID, l VARCHAR[]))")
    v1 = run(duck, "INSERT INTO lake.sb VALUES (1, {'s': 'it''s a \\ b', "
                   "'t': TIMESTAMP '2024-01-02 03:04:05.25', "
                   "'u': '550e8400-e29b-41d4-a716-446655440000', 'l': ['x''y', NULL]}), "
                   "(2, NULL)")
    expected = [(1, (("l", ("x'y", None)), ("s", "it's a \\ b"),
                     ("t", dt.datetime(2024, 1, 2, 3, 4, 5, 250000)),
                     ("u", "550e8400-e29b-41d4-a716-446655440000"))), (2, None)]
    assert spark_rows(lake.table("main.sb").read(version=v1)) == expected
    if lake_target.backend == "postgres":
        pytest.xfail(
            "DuckDB 1.5.5 on a PostgreSQL catalog fails reading these inlined rows with "
            "'INTERNAL Error: Attempted to access index 0 within vector of size 0', which "
            "invalidates the DuckDB database and leaves its PostgreSQL transaction open "
            "(holding locks until the process exits), so DuckDB's side is not run here")
    try:
        inlined = duck_rows(duck, f"SELECT id, st.s FROM lake.sb AT (VERSION => {v1})")
    except Exception as exc:  # noqa: BLE001
        pytest.xfail(f"DuckDB 1.5.5 cannot read its own inlined STRUCT: {exc}")
    if inlined != [(1, "it's a \\ b"), (2, None)]:
        pytest.xfail(f"DuckDB 1.5.5 misreads its own inlined STRUCT: {inlined}")


# ------------------------------------------------------------------------------ 3. deletes
def test_deletes_updates_and_inlined_rows(duck, lake):  # noqa: ANN001
    versions = [run(duck, "CREATE TABLE lake.du (id INTEGER, name VARCHAR, amount DOUBLE)")]
    versions.append(run(duck, "INSERT INTO lake.du SELECT i, 'n' || i, i * 1.5 "
                              "FROM range(30) t(i)"))
    versions.append(run(duck, "DELETE FROM lake.du WHERE id % 2 = 0 AND id < 26"))  # 13 rows
    versions.append(run(duck, "DELETE FROM lake.du WHERE id IN (1, 3, 5, 7, 9, 11, 13, 15, "
                              "17, 19, 21, 23)"))  # 12 more from the same file: cumulative
    assert catalog(lake, "SELECT count(*) FROM {ducklake_delete_file} "
                         "WHERE partial_max IS NOT NULL") == 1
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
def test_inlined_deletes_and_flush(duck, lake, monkeypatch):  # noqa: ANN001
    # small tables use literal lookups; force the join paths used for large ones here
    monkeypatch.setattr(spark_read, "_MAP_FILES", 0)
    monkeypatch.setattr(spark_read, "_FILTER_DELETES", 0)
    versions = [run(duck, "CREATE TABLE lake.fl (id INTEGER, v VARCHAR)")]
    versions.append(run(duck, "INSERT INTO lake.fl SELECT i, 'v' || i FROM range(40) t(i)"))
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id IN (3, 4, 5)"))  # inlined delete
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id = 30"))  # more inlined deletes
    versions.append(run(duck, "INSERT INTO lake.fl VALUES (100, 'x'), (101, 'y')"))
    versions.append(run(duck, "UPDATE lake.fl SET v = 'upd' WHERE id IN (10, 100)"))
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id = 101"))
    tid = lake.table("main.fl").info().table_id
    assert catalog(lake, f"SELECT count(*) FROM {{ducklake_inlined_delete_{tid}}}") > 0
    versions.append(run(duck, "CALL ducklake_flush_inlined_data('lake')"))
    assert catalog(lake, f"SELECT count(*) FROM {{ducklake_inlined_delete_{tid}}}") == 0
    assert catalog(lake, "SELECT count(*) FROM {ducklake_data_file} "
                         "WHERE partial_max IS NOT NULL AND end_snapshot IS NULL") >= 1
    versions.append(run(duck, "DELETE FROM lake.fl WHERE id IN (10, 11)"))
    versions.append(run(duck, "INSERT INTO lake.fl VALUES (200, 'after')"))
    check(duck, lake, "fl", versions)


# ------------------------------------------------------------------------------ 5. merge
def test_merge_adjacent_files(duck, lake):  # noqa: ANN001
    duck.execute("CALL lake.set_option('data_inlining_row_limit', 0)")
    versions = [run(duck, "CREATE TABLE lake.mg (id INTEGER, v VARCHAR, d DATE)")]
    for i in range(4):
        versions.append(run(duck, f"INSERT INTO lake.mg SELECT i, 'v{i}-' || i, "
                                  f"DATE '2024-01-01' + i::INTEGER "
                                  f"FROM range({i * 10}, {i * 10 + 3}) t(i)"))
    versions.append(run(duck, "CALL ducklake_merge_adjacent_files('lake')"))
    assert catalog(lake, "SELECT count(*) FROM {ducklake_data_file} "
                         "WHERE end_snapshot IS NULL") == 1
    assert catalog(lake, "SELECT partial_max FROM {ducklake_data_file}") == versions[-2]
    versions.append(run(duck, "DELETE FROM lake.mg WHERE id IN (1, 21)"))
    versions.append(run(duck, "INSERT INTO lake.mg VALUES (99, 'last', NULL)"))
    check(duck, lake, "mg", versions)


# ------------------------------------------------------------------------------ 6. evolution
def insert_both(duck, table: str, columns: str, rows) -> list[int]:  # noqa: ANN001
    """One snapshot with 3 inlined rows and ``rows`` (SQL tuples) in a Parquet file.

    DuckDB decides per statement: in one transaction the 3-row INSERT is inlined and the
    >10-row INSERT writes Parquet.
    """
    assert len(rows) > 10
    return [run(duck, "BEGIN",
                f"INSERT INTO lake.{table} ({columns}) VALUES {', '.join(rows[:3])}",
                f"INSERT INTO lake.{table} ({columns}) VALUES {', '.join(rows)}",
                "COMMIT")]


@pytest.mark.slow
def test_schema_evolution(duck, lake):  # noqa: ANN001
    n = iter(range(10_000))

    def rows(template: str, count: int = 12) -> list[str]:
        return [template.format(i=next(n)) for _ in range(count)]

    versions = [run(duck, "CREATE TABLE lake.ev (id INTEGER, a INTEGER, f FLOAT, "
                          "s STRUCT(x INTEGER, y VARCHAR), gone VARCHAR)")]
    cols = "id, a, f, s, gone"
    versions += insert_both(duck, "ev", cols, rows("({i}, {i}, {i}.5, {{'x': {i}, 'y': 'y{i}'}}, "
                                                   "'g{i}')"))
    versions.append(run(duck, "ALTER TABLE lake.ev ADD COLUMN c1 VARCHAR"))
    versions += insert_both(duck, "ev", cols + ", c1", rows(
        "({i}, -{i}, 0.25, {{'x': NULL, 'y': 'q'}}, NULL, 'c{i}')"))
    versions.append(run(duck, "BEGIN", "ALTER TABLE lake.ev ADD COLUMN c2 INTEGER DEFAULT 42",
                        "ALTER TABLE lake.ev ADD COLUMN c3 VARCHAR DEFAULT 'it''s'",
                        "ALTER TABLE lake.ev ADD COLUMN c4 DATE DEFAULT '2024-02-29'", "COMMIT"))
    versions += insert_both(duck, "ev", "id, a, c2", rows("({i}, {i}, {i} * 2)"))
    versions += insert_both(duck, "ev", "id", rows("({i})"))  # defaults of c2, c3, c4
    versions.append(run(duck, "ALTER TABLE lake.ev DROP COLUMN gone"))
    versions += insert_both(duck, "ev", "id, c1", rows("({i}, 'after drop')"))
    versions.append(run(duck, "ALTER TABLE lake.ev RENAME COLUMN c1 TO c1_renamed"))
    versions += insert_both(duck, "ev", "id, c1_renamed", rows("({i}, 'renamed {i}')"))
    versions.append(run(duck, "ALTER TABLE lake.ev ALTER COLUMN a TYPE BIGINT"))
    versions += insert_both(duck, "ev", "id, a", rows("({i}, {i} * 10000000000)"))
    versions.append(run(duck, "ALTER TABLE lake.ev ALTER COLUMN f TYPE DOUBLE"))
    versions += insert_both(duck, "ev", "id, f", rows("({i}, 1e300 / {i})"))
    versions.append(run(duck, "ALTER TABLE lake.ev ADD COLUMN s.z INTEGER"))
    versions += insert_both(duck, "ev", "id, s", rows("({i}, {{'x': {i}, 'y': 'new', 'z': {i}}})"))
    versions.append(run(duck, "ALTER TABLE lake.ev RENAME COLUMN s.x TO xx"))
    versions += insert_both(duck, "ev", "id, s", rows("({i}, {{'xx': {i}, 'y': 'r', 'z': 1}})"))
    versions.append(run(duck, "ALTER TABLE lake.ev DROP COLUMN s.y"))
    versions += insert_both(duck, "ev", "id, s", rows("({i}, {{'xx': -{i}, 'z': 2}})"))
    versions.append(run(duck, "DELETE FROM lake.ev WHERE id % 7 = 0"))
    versions.append(run(duck, "UPDATE lake.ev SET c3 = 'upd' WHERE id % 5 = 0"))
    tid = lake.table("main.ev").info().table_id
    assert catalog(lake, "SELECT count(*) FROM {ducklake_inlined_data_tables} "
                         f"WHERE table_id = {tid}") >= 10
    versions.append(run(duck, "CALL ducklake_flush_inlined_data('lake')"))
    check(duck, lake, "ev", versions)
    assert lake.table("main.ev").read().schema.simpleString() == (
        "struct<id:int,a:bigint,f:double,s:struct<xx:int,z:int>,c1_renamed:string,c2:int,"
        "c3:string,c4:date>")


# ------------------------------------------------------------------------------ 7. partitions
def test_partitioned_tables(duck, lake):  # noqa: ANN001
    def rows(start: int, count: int) -> str:
        out = []
        for i in range(start, start + count):
            region = "NULL" if i % 7 == 0 else f"'{['eu', 'us', 'a/b c=d'][i % 3]}'"
            ts = ("NULL" if i % 11 == 0
                  else f"TIMESTAMP '2023-12-31 22:00:00' + INTERVAL {i * 5} HOUR")
            ident = "NULL" if i % 13 == 0 else str(i)
            out.append(f"({ident}, {region}, {ts}, {i / 3})")
        return ", ".join(out)

    versions = [run(duck, "CREATE TABLE lake.pt (id INTEGER, region VARCHAR, ts TIMESTAMP, "
                          "v DOUBLE)")]
    versions.append(run(duck, f"INSERT INTO lake.pt VALUES {rows(0, 12)}"))
    versions.append(run(duck, f"INSERT INTO lake.pt VALUES {rows(12, 2)}"))
    versions.append(run(duck, "ALTER TABLE lake.pt SET PARTITIONED BY (region)"))
    versions.append(run(duck, f"INSERT INTO lake.pt VALUES {rows(100, 20)}"))
    versions.append(run(duck, f"INSERT INTO lake.pt VALUES {rows(120, 3)}"))
    versions.append(run(duck, "ALTER TABLE lake.pt SET PARTITIONED BY "
                              "(year(ts), month(ts), day(ts), hour(ts))"))
    versions.append(run(duck, f"INSERT INTO lake.pt VALUES {rows(200, 20)}"))
    versions.append(run(duck, "ALTER TABLE lake.pt SET PARTITIONED BY (bucket(4, id))"))
    versions.append(run(duck, f"INSERT INTO lake.pt VALUES {rows(300, 26)}"))
    versions.append(run(duck, "DELETE FROM lake.pt WHERE region = 'us' OR id % 10 = 1"))
    versions.append(run(duck, "UPDATE lake.pt SET v = -v WHERE region IS NULL"))
    assert catalog(lake, "SELECT count(*) FROM {ducklake_file_partition_value} "
                         "WHERE partition_value IS NULL") > 0
    check(duck, lake, "pt", versions)


# ------------------------------------------------------------------------------ 8. add files
def test_added_parquet_file_is_read_by_name(duck, lake, lake_target, tmp_path):  # noqa: ANN001
    path = tmp_path / "outside" / "added.parquet"
    path.parent.mkdir()
    table = pa.table({  # other column order than the table, no field ids
        "tags": pa.array([["a", None], [], None, ["b"]] * 3, pa.list_(pa.string())),
        "name": pa.array(["n0", None, "n'2", "n3"] * 3),
        "st": pa.array([{"a": i, "b": f"b{i}"} if i % 4 else None for i in range(12)],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "id": pa.array(range(12), pa.int64()),
    })
    pq.write_table(table, str(path))
    lake.catalog.allow_reads_from(str(path.parent))  # a file added from outside the data path
    versions = [run(duck, "CREATE TABLE lake.af (id BIGINT, name VARCHAR, tags VARCHAR[], "
                          "st STRUCT(a INTEGER, b VARCHAR))")]
    versions.append(run(duck, "INSERT INTO lake.af VALUES (100, 'x', ['y'], {'a': 1, 'b': 'c'})"))
    versions.append(run(duck, f"CALL ducklake_add_data_files('lake', 'af', '{path}')"))
    assert catalog(lake, "SELECT count(*) FROM {ducklake_data_file} "
                         "WHERE mapping_id IS NOT NULL") == 1
    versions.append(run(duck, "DELETE FROM lake.af WHERE id IN (1, 2)"))
    versions.append(run(duck, "ALTER TABLE lake.af RENAME COLUMN name TO label"))
    versions.append(run(duck, "ALTER TABLE lake.af ADD COLUMN extra INTEGER DEFAULT 7"))
    versions.append(run(duck, "UPDATE lake.af SET label = 'upd' WHERE id = 3"))
    check(duck, lake, "af", versions)
    # the change feed reads the added file through its name mapping too
    added, last = versions[2], versions[-1]
    for start, end in [(added, added), (added, added + 1), (versions[0], last), (added, last)]:
        ours = spark_rows(lake.table("main.af").changes(start, end))
        theirs = duck_rows(duck, "SELECT * FROM ducklake_table_changes('lake', 'main', 'af', "
                                 f"{start}, {end})")
        assert ours == theirs, f"changes {start}..{end}:\nspark : {ours}\nduckdb: {theirs}"


def test_added_file_with_mapping_id_zero(duck, lake, tmp_path):  # noqa: ANN001
    """The first file of a lake, added by ``ducklake_add_data_files``, gets name mapping 0
    (mapping ids share the data file counter): a valid id, so the change feed reads the file
    through its mapping, as time travel does."""
    path = tmp_path / "outside" / "first.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"label": ["a", None, "c", "d", "e"],
                             "id": pa.array(range(5), pa.int64())}), str(path))
    lake.catalog.allow_reads_from(str(path.parent))
    v_create = run(duck, "CREATE TABLE lake.az (id BIGINT, label VARCHAR)")
    v_add = run(duck, f"CALL ducklake_add_data_files('lake', 'az', '{path}')")
    assert catalog(lake, "SELECT mapping_id FROM {ducklake_data_file}") == 0
    v_delete = run(duck, "DELETE FROM lake.az WHERE id = 2")
    check(duck, lake, "az", [v_add, v_delete])
    for start, end in [(v_add, v_add), (v_add, v_delete), (v_delete, v_delete),
                       (v_create, v_delete)]:
        ours = spark_rows(lake.table("main.az").changes(start, end))
        theirs = duck_rows(duck, "SELECT * FROM ducklake_table_changes('lake', 'main', 'az', "
                                 f"{start}, {end})")
        assert ours == theirs, f"changes {start}..{end}:\nspark : {ours}\nduckdb: {theirs}"


def test_nested_changes_over_inlined_rows(duck, lake):  # noqa: ANN001
    """Rows still inlined from before a nested field was added, renamed or dropped (at any
    depth, in a struct, a list of structs and a map's values) read back reshaped, as DuckDB
    reads them: in time travel, at the latest snapshot and in the change feed."""
    versions = [run(duck, "CREATE TABLE lake.ns (id INTEGER, s STRUCT(x INTEGER, "
                          "nest STRUCT(a INTEGER)), l STRUCT(k INTEGER)[], "
                          "m MAP(VARCHAR, STRUCT(p INTEGER)))")]
    versions.append(run(duck, "INSERT INTO lake.ns VALUES (1, {'x': 1, 'nest': {'a': 1}}, "
                              "[{'k': 1}], MAP {'a': {'p': 1}}), (2, NULL, NULL, NULL)"))
    for alter, row in [
        ("ADD COLUMN s.y VARCHAR", "(3, {'x': 3, 'nest': {'a': 3}, 'y': 'y3'}, [], MAP {})"),
        ("ADD COLUMN s.nest.b BIGINT", "(4, {'x': 4, 'nest': {'a': 4, 'b': 4}, 'y': NULL}, "
                                        "NULL, NULL)"),
        ("ADD COLUMN l.element.k2 VARCHAR", "(5, NULL, [{'k': 5, 'k2': 'five'}], NULL)"),
        ("ADD COLUMN m.value.q DOUBLE", "(6, NULL, NULL, MAP {'b': {'p': 6, 'q': 0.5}})"),
        ("RENAME COLUMN s.x TO x_renamed", "(7, {'x_renamed': 7, 'nest': {'a': 7, 'b': 7}, "
                                           "'y': 'y7'}, NULL, NULL)"),
        ("DROP COLUMN s.nest.a", "(8, {'x_renamed': 8, 'nest': {'b': 8}, 'y': NULL}, "
                                  "NULL, NULL)"),
    ]:
        versions.append(run(duck, f"ALTER TABLE lake.ns {alter}"))
        versions.append(run(duck, f"INSERT INTO lake.ns VALUES {row}"))
    versions.append(run(duck, "UPDATE lake.ns SET id = id + 100 WHERE id IN (1, 3)"))
    versions.append(run(duck, "DELETE FROM lake.ns WHERE id = 2"))
    tid = lake.table("main.ns").info().table_id
    assert catalog(lake, "SELECT count(*) FROM {ducklake_inlined_data_tables} "
                         f"WHERE table_id = {tid}") >= 2
    assert catalog(lake, "SELECT count(*) FROM {ducklake_data_file}") == 0  # all inlined
    check(duck, lake, "ns", versions)
    table = lake.table("main.ns")
    for start, end in [(versions[0], versions[-1]), (versions[1], versions[4]),
                       (versions[5], versions[-1]), (versions[-2], versions[-1])]:
        ours = spark_rows(table.changes(start, end))
        theirs = duck_rows(duck, "SELECT * FROM ducklake_table_changes('lake', 'main', 'ns', "
                                 f"{start}, {end})")
        assert ours == theirs, f"changes {start}..{end}:\nspark : {ours}\nduckdb: {theirs}"


# ------------------------------------------------------------------------------ 9. rename/drop
def test_renamed_and_recreated_tables(duck, lake):  # noqa: ANN001
    v_create = run(duck, "CREATE TABLE lake.rn (id INTEGER, a VARCHAR)")
    v_insert = run(duck, "INSERT INTO lake.rn SELECT i, 'a' || i FROM range(15) t(i)")
    v_rename = run(duck, "ALTER TABLE lake.rn RENAME TO rn2")
    v_after = run(duck, "INSERT INTO lake.rn2 VALUES (100, 'after rename')")
    check(duck, lake, "rn", [v_create, v_insert])  # the old name, resolved at the version
    check(duck, lake, "rn2", [v_rename, v_after])
    with pytest.raises(NotFoundError, match="rn2"):
        lake.read("main.rn2", version=v_insert)
    with pytest.raises(NotFoundError, match="main.rn "):
        lake.read("main.rn")
    assert spark_rows(lake.read("main.rn2")) == duck_rows(duck, "SELECT * FROM lake.rn2")

    v_old = run(duck, "CREATE TABLE lake.dr (id INTEGER, a VARCHAR)",
                "INSERT INTO lake.dr SELECT i, 'old' || i FROM range(12) t(i)",
                "INSERT INTO lake.dr VALUES (-1, 'old inlined')")
    v_drop = run(duck, "DROP TABLE lake.dr")
    v_new = run(duck, "CREATE TABLE lake.dr (id BIGINT, b DOUBLE, c INTEGER[])",
                "INSERT INTO lake.dr VALUES (1, 0.5, [1, 2])")
    v_new2 = run(duck, "INSERT INTO lake.dr SELECT i, i / 2, [i] FROM range(20) t(i)")
    check(duck, lake, "dr", [v_old, v_new, v_new2])
    assert [f.name for f in lake.read("main.dr", version=v_old).schema.fields] == ["id", "a"]
    with pytest.raises(NotFoundError, match=f"main.dr does not exist .* {v_drop}"):
        lake.read("main.dr", version=v_drop)


def test_odd_defaults_and_nested_names_read_back_exactly(duck, lake):  # noqa: ANN001
    """Reads shape columns with Spark SQL text (``spark.expressions``): defaults holding a
    quote, a backslash or a newline, and nested field names with a backtick or a dot, come
    back as DuckDB reads them, for Parquet files and inlined rows written before the change."""
    versions = [run(duck, "CALL lake.set_option('data_inlining_row_limit', 0)",
                    'CREATE TABLE lake.odd (id INTEGER, "s`t" STRUCT("a.b" INTEGER, '
                    '"c`d" VARCHAR))',
                    "INSERT INTO lake.odd SELECT i, {'a.b': i, 'c`d': 'v' || i} "
                    "FROM range(3) t(i)")]
    versions.append(run(duck, "CALL lake.set_option('data_inlining_row_limit', 10)",
                        "INSERT INTO lake.odd VALUES (10, {'a.b': 10, 'c`d': 'inl'})"))
    versions.append(run(duck, "ALTER TABLE lake.odd ADD COLUMN q VARCHAR DEFAULT "
                              "'it''s a \\ back\nslash'"))
    versions.append(run(duck, 'ALTER TABLE lake.odd ADD COLUMN "s`t"."e''f" BIGINT'))
    versions.append(run(duck, 'ALTER TABLE lake.odd RENAME COLUMN "s`t"."a.b" TO "x`y.z"'))
    versions.append(run(duck, "INSERT INTO lake.odd VALUES (20, {'x`y.z': 20, 'c`d': 'n', "
                              "'e''f': 7}, 'new')"))
    assert spark_rows(lake.table("main.odd").read().where("id = 0").select("q")) == \
        [("it's a \\ back\nslash",)]
    check(duck, lake, "odd", versions)
    table = lake.table("main.odd")
    ours = spark_rows(table.changes(versions[0], versions[-1]))
    theirs = duck_rows(duck, "SELECT * FROM ducklake_table_changes('lake', 'main', 'odd', "
                             f"{versions[0]}, {versions[-1]})")
    assert ours == theirs


# ------------------------------------------------------------------- the engine's temp views
def test_views_of_tables_no_commit_touched_are_kept(spark, duck, lake):  # noqa: ANN001
    """The engine keeps a table's temp view across other tables' commits (DuckDB's and its
    own) and reads every change of the table itself, and anything its change tokens cannot
    place, from a view registered again; every read is DuckDB's."""
    from dbt.adapters.ducklake.sql.engine import Engine
    from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

    registry = ViewRegistry(spark, lake)
    engine = Engine(spark, lake, registry)
    run(duck, "CREATE TABLE lake.ka AS SELECT i AS id, 'a' || i AS s FROM range(30) t(i)",
        "CREATE TABLE lake.kb AS SELECT i AS id FROM range(20) t(i)")

    def read_both() -> tuple[object, object]:
        for table in ("ka", "kb"):
            df = engine.execute(f"SELECT * FROM main.{table}").df
            assert spark_rows(df) == duck_rows(duck, f"SELECT * FROM lake.{table}"), table
        return registry._states["main.ka"], registry._states["main.kb"]  # noqa: SLF001

    a, b = read_both()
    steps = [  # (DuckDB's or the engine's statements, whether ka's view stays, kb's)
        (["INSERT INTO lake.kb VALUES (100)"], True, False),
        (["DELETE FROM lake.ka WHERE id < 3"], False, True),
        (["CREATE TABLE lake.kc (x INTEGER)"], True, True),
        (["engine: INSERT INTO main.kb VALUES (101)"], True, False),
        (["ALTER TABLE lake.ka ADD COLUMN n INTEGER DEFAULT 7"], False, True),
        (["UPDATE lake.kb SET id = id + 1000 WHERE id > 15"], True, False),
        (["CREATE SCHEMA lake.other", "DROP SCHEMA lake.other"], False, False),
        (["INSERT INTO lake.ka SELECT i, 'x', 1 FROM range(40, 60) t(i)",
          "CALL ducklake_merge_adjacent_files('lake', 'ka')"], False, True),
    ]
    for statements, keeps_a, keeps_b in steps:
        for sql in statements:
            if sql.startswith("engine: "):
                engine.execute(sql.removeprefix("engine: "))
            else:
                run(duck, sql)
        now_a, now_b = read_both()
        assert (now_a is a, now_b is b) == (keeps_a, keeps_b), statements
        a, b = now_a, now_b
    run(duck, "ALTER TABLE lake.kb RENAME TO kb2")  # its one token: created_table "kb2"
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        engine.execute("SELECT * FROM main.kb").df.collect()
    assert spark_rows(engine.execute("SELECT * FROM main.kb2").df) == \
        duck_rows(duck, "SELECT * FROM lake.kb2")


def test_a_view_loaded_across_a_commit_is_checked_again(spark, duck, lake,  # noqa: ANN001
                                                        monkeypatch):
    """Another thread's commit, and its look at the lake, can fall between a view's load and
    its registration: the next statement must not read that view's older snapshot."""
    from dbt.adapters.ducklake.sql import temp_views
    from dbt.adapters.ducklake.sql.engine import Engine

    registry = temp_views.ViewRegistry(spark, lake)
    engine = Engine(spark, lake, registry)
    run(duck, "CREATE TABLE lake.kr AS SELECT i AS id FROM range(30) t(i)")
    engine.execute("SELECT 1")  # the registry has looked at the lake
    load = temp_views.load_state

    def load_then_commit(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        state = load(*args, **kwargs)
        monkeypatch.setattr(temp_views, "load_state", load)
        run(duck, "INSERT INTO lake.kr VALUES (100)")
        registry.lake_changed()  # what the committing thread does
        return state

    monkeypatch.setattr(temp_views, "load_state", load_then_commit)
    assert engine.execute("SELECT count(*) FROM main.kr").df.collect()[0][0] == 30
    assert engine.execute("SELECT count(*) FROM main.kr").df.collect()[0][0] == 31
