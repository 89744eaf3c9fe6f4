"""Inlined-data values checked against DuckDB 1.5.5 on SQLite and PostgreSQL catalogs.

DuckDB is the oracle both ways: it writes inlined rows that we decode, and it reads back rows whose
cells we overwrote with our encoding. Postgres tests need the local server; they skip when it is
unreachable unless ``DUCKLAKE_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

import glob
import math
import os
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dbt.adapters.ducklake.lake.errors import InvalidArgumentError, UnsupportedTypeError
from dbt.adapters.ducklake.lake.inlining.codec import (
    MonthDayNano,
    decode_inlined,
    encode_inlined,
    inlined_column_type,
)
from dbt.adapters.ducklake.lake.models import ColumnInfo

UTC = timezone.utc
UTC_SESSION = "SET TimeZone = 'UTC'"
PG_URL = "postgresql://{user}@127.0.0.1:5432/test"

# --------------------------------------------------------------------------------------------
# DuckDB and catalog plumbing


def duck() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the bundled extensions loaded from disk (never downloaded)."""
    import duckdb_extension_ducklake

    base = os.path.dirname(os.path.dirname(duckdb_extension_ducklake.__file__))
    con = duckdb.connect(
        config={
            "allow_unsigned_extensions": True,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    pattern = os.path.join(base, "duckdb_extension_*/extensions/v1.5.5/*.duckdb_extension")
    for ext in sorted(glob.glob(pattern)):
        con.execute(f"LOAD '{ext}'")
    return con


_PG_USER: list[str | None] = []


def pg_user() -> str | None:
    """The first of postgres/root that the local server lets in, or None."""
    if not _PG_USER:
        found = None
        try:
            import psycopg
        except ImportError:
            psycopg = None  # type: ignore[assignment]
        for user in ("postgres", "root") if psycopg else ():
            try:
                with psycopg.connect(PG_URL.format(user=user), connect_timeout=3):
                    found = user
                    break
            except Exception:  # noqa: BLE001 - any failure: this user cannot connect
                continue
        _PG_USER.append(found)
    return _PG_USER[0]


def require_pg() -> str:
    user = pg_user()
    if user is None:
        reason = "PostgreSQL at 127.0.0.1:5432/test is unreachable as user postgres or root"
        if os.environ.get("DUCKLAKE_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason + " and DUCKLAKE_REQUIRE_POSTGRES=1")
        pytest.skip(reason)
    return user


@dataclass
class Site:
    """One lake on one catalog backend, plus a raw DB-API connection to its catalog."""

    dialect: str
    attach_sql: str
    prefix: str
    connect_raw: Any
    _raw: Any = None
    _ducks: list[duckdb.DuckDBPyConnection] = field(default_factory=list)

    @property
    def ph(self) -> str:
        return "?" if self.dialect == "sqlite" else "%s"

    @property
    def raw(self) -> Any:
        if self._raw is None:
            self._raw = self.connect_raw()
        return self._raw

    def duck(self, tz: str = "America/New_York") -> duckdb.DuckDBPyConnection:
        con = duck()
        con.execute(f"SET TimeZone = '{tz}'")
        con.execute(self.attach_sql)
        self._ducks.append(con)
        return con

    def close_ducks(self) -> None:
        for con in self._ducks:
            con.close()
        self._ducks.clear()

    def query(self, sql: str, params: Sequence[Any] = ()) -> tuple[list[str], list[tuple]]:
        cur = self.raw.execute(sql.replace("?", self.ph), tuple(params))
        names = [d[0] for d in cur.description]
        return names, [tuple(r) for r in cur.fetchall()]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.raw.execute(sql.replace("?", self.ph), tuple(params))
        if self.dialect == "sqlite":
            self.raw.commit()

    def inlined_table(self, table: str) -> tuple[str, list[ColumnInfo]]:
        """The newest inlined-data table of ``table`` and its column tree."""
        p = self.prefix
        _, rows = self.query(
            f"SELECT t.table_id, i.table_name FROM {p}ducklake_table t "
            f"JOIN {p}ducklake_inlined_data_tables i ON i.table_id = t.table_id "
            "WHERE t.table_name = ? AND t.end_snapshot IS NULL "
            "ORDER BY i.schema_version DESC",
            [table],
        )
        table_id, name = rows[0]
        _, cols = self.query(
            "SELECT column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, "
            "column_type, initial_default, default_value, nulls_allowed, parent_column "
            f"FROM {p}ducklake_column WHERE table_id = ? AND end_snapshot IS NULL",
            [table_id],
        )
        return p + name, column_tree(cols)


def column_tree(rows: Sequence[Sequence[Any]]) -> list[ColumnInfo]:
    nodes = [
        ColumnInfo(
            int(r[0]), int(r[1]), r[2], int(r[3]), int(r[4]), r[5], r[6], r[7], r[8],
            bool(r[9]), None if r[10] is None else int(r[10]),
        )
        for r in rows
    ]
    kids: dict[int | None, list[ColumnInfo]] = {}
    for node in nodes:
        kids.setdefault(node.parent_column, []).append(node)

    def attach(node: ColumnInfo) -> ColumnInfo:
        children = sorted(kids.get(node.column_id, []), key=lambda c: c.column_order)
        return replace(node, children=tuple(attach(c) for c in children))

    return sorted((attach(n) for n in kids.get(None, [])), key=lambda c: c.column_order)


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Site]:
    """A fresh lake per test: a new SQLite file, or a new metadata schema on PostgreSQL."""
    data = f"{tmp_path}/data/"
    if request.param == "sqlite":
        meta = tmp_path / "meta.sqlite"
        s = Site(
            "sqlite",
            f"ATTACH 'ducklake:sqlite:{meta}' AS l (DATA_PATH '{data}')",
            "",
            lambda: sqlite3.connect(meta),
        )
        yield s
        s.close_ducks()
        if s._raw is not None:
            s._raw.close()
        return
    user = require_pg()
    import psycopg

    schema = f"dl_inline_{uuid.uuid4().hex[:12]}"
    s = Site(
        "postgresql",
        f"ATTACH 'ducklake:postgres:dbname=test host=127.0.0.1 port=5432 user={user}' AS l "
        f"(DATA_PATH '{data}', METADATA_SCHEMA '{schema}')",
        f'"{schema}".',
        lambda: psycopg.connect(PG_URL.format(user=user), autocommit=True),
    )
    try:
        yield s
    finally:
        s.close_ducks()
        s.raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        s.raw.close()


def col(name: str, type_: str, *children: ColumnInfo) -> ColumnInfo:
    return ColumnInfo(0, 1, None, 1, 0, name, type_, None, None, True, None, children=children)


# --------------------------------------------------------------------------------------------
# Comparison: one normal form for DuckDB's fetchall values and ours


def norm(value: Any, column: ColumnInfo) -> Any:
    """Make DuckDB's fetchall output and our decoded values comparable (NaN, -0.0, maps, zones)."""
    if value is None:
        return None
    name = column.type.name
    if name == "struct":
        return {c.column_name: norm(value.get(c.column_name), c) for c in column.children}
    if name == "list":
        return [norm(v, column.children[0]) for v in value]
    if name == "map":
        items = value.items() if isinstance(value, dict) else value
        key, val = column.children
        return [(norm(k, key), norm(v, val)) for k, v in items]
    if name in ("float32", "float64"):
        return "nan" if math.isnan(value) else (value, math.copysign(1.0, value))
    if name == "timestamptz":
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if name == "interval" and isinstance(value, MonthDayNano):
        # DuckDB's Python client folds months into 30-day blocks.
        days = value.months * 30 + value.days
        return timedelta(days=days, microseconds=value.nanoseconds // 1000)
    return value


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and str(a) == str(b))
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------------------------
# The table every backend test uses

COLUMNS = [
    ("id", "INTEGER"),
    ("b", "BOOLEAN"),
    ("i8", "TINYINT"),
    ("i16", "SMALLINT"),
    ("i32", "INTEGER"),
    ("i64", "BIGINT"),
    ("u8", "UTINYINT"),
    ("u16", "USMALLINT"),
    ("u32", "UINTEGER"),
    ("u64", "UBIGINT"),
    ("i128", "HUGEINT"),
    ("u128", "UHUGEINT"),
    ("f32", "FLOAT"),
    ("f64", "DOUBLE"),
    ("d41", "DECIMAL(4,1)"),
    ("d183", "DECIMAL(18,3)"),
    ("d3810", "DECIMAL(38,10)"),
    ("dt", "DATE"),
    ("t", "TIME"),
    ("ts", "TIMESTAMP"),
    ("ts_s", "TIMESTAMP_S"),
    ("ts_ms", "TIMESTAMP_MS"),
    ("ts_ns", "TIMESTAMP_NS"),
    ("tstz", "TIMESTAMPTZ"),
    ("v", "VARCHAR"),
    ("bl", "BLOB"),
    ("u", "UUID"),
    ("j", "JSON"),
    ("st", "STRUCT(x INTEGER, y VARCHAR)"),
    ("li", "INTEGER[]"),
    ("m", "MAP(VARCHAR, INTEGER)"),
    ("ls", "STRUCT(a INTEGER, b VARCHAR)[]"),
]

# Struct strings stay free of quotes and backslashes here: DuckDB 1.5.5 cannot read its own
# inlined top-level structs with those (see test_duckdb_struct_spelling_is_recovered).
ROWS = [
    "(1, true, -128, -32768, -2147483648, -9223372036854775808, 0, 0, 0, 0, "
    "-170141183460469231731687303715884105728, 0, "
    "1.5, 0.1, -999.9, 123456789012345.678, 1234567890123456789012345678.0123456789, "
    "DATE '2024-01-15', TIME '12:30:00.123456', TIMESTAMP '2024-01-15 12:30:00.123456', "
    "TIMESTAMP_S '2024-01-15 12:30:00', TIMESTAMP_MS '2024-01-15 12:30:00.12', "
    "TIMESTAMP_NS '2024-01-15 12:30:00.123456789', TIMESTAMPTZ '2024-07-01 00:00:00.5+02', "
    "'it''s, [x] {y} a=b: \"q\"', from_hex('00FF27005C'), '12345678-1234-5678-1234-567812345678', "
    "'{\"a\": [1, 2]}', {'x': 1, 'y': 'a, b'}, [1, NULL, 3], MAP {'k 1': 1, 'NULL': NULL, '': 2}, "
    "[{'a': 1, 'b': 'it''s'}, NULL, {'a': NULL, 'b': NULL}])",
    "(2, false, 127, 32767, 2147483647, 9223372036854775807, 255, 65535, 4294967295, "
    "18446744073709551615, 170141183460469231731687303715884105727, "
    "340282366920938463463374607431768211455, "
    "'nan', '-inf', 0.0, -0.001, -0.0000000001, "
    "DATE 'infinity', TIME '00:00:00', TIMESTAMP 'infinity', TIMESTAMP_S '-infinity', "
    "TIMESTAMP_MS '2262-04-11 23:47:16.854', TIMESTAMP_NS '1677-09-22 00:00:00', "
    "TIMESTAMPTZ '-infinity', "
    "'', ''::BLOB, '00000000-0000-0000-0000-000000000000', 'null', "
    "{'x': NULL, 'y': NULL}, [], MAP {}, [])",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "'-0.0'::FLOAT, '-0.0'::DOUBLE, NULL, NULL, NULL, "
    "DATE '-infinity', TIME '23:59:59.999999', TIMESTAMP '0001-01-01 00:00:00', "
    "TIMESTAMP_S '1970-01-01', NULL, NULL, TIMESTAMPTZ '0001-01-01 00:00:00+00', "
    "'NULL', 'abc'::BLOB, NULL, '\"x\"', {'x': 2, 'y': 'NULL'}, [NULL], "
    "MAP {'it''s': 3, 'a=b': 4, ' sp ': 5}, [{'a': 2, 'b': 'x\\y, [z]'}, {'a': 3, 'b': ''}])",
    "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "'inf', 'inf', NULL, NULL, NULL, DATE '0001-01-01', NULL, "
    "TIMESTAMP '1900-01-01 00:00:00.000001', NULL, NULL, NULL, "
    "TIMESTAMPTZ '2024-01-15 12:30:00+00', "
    "'ünï ☃', NULL, NULL, NULL, {'x': NULL, 'y': ''}, NULL, NULL, NULL)",
    "(5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "3.4028235e38, 5e-324, NULL, NULL, NULL, DATE '9999-12-31', NULL, NULL, NULL, NULL, NULL, "
    "NULL, ' lead and trail ', NULL, NULL, NULL, {'x': 3, 'y': ' sp ünï'}, NULL, NULL, NULL)",
    "(6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "0.1, 1e300, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "'back\\slash\nnew line', NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]


def create_sql(table: str, columns: Sequence[tuple[str, str]]) -> str:
    return f"CREATE TABLE {table} (" + ", ".join(f"{n} {t}" for n, t in columns) + ")"


def raw_cells(site: Site, table: str) -> tuple[list[ColumnInfo], dict[int, dict[str, Any]]]:
    """Column tree and the raw backend cells of every inlined row, keyed by ``id``."""
    name, columns = site.inlined_table(table)
    names, rows = site.query(f"SELECT * FROM {name} ORDER BY row_id")
    cells = {}
    for row in rows:
        cell = dict(zip(names, row, strict=True))
        assert cell["end_snapshot"] is None
        cells[cell["id"]] = cell
    return columns, cells


# --------------------------------------------------------------------------------------------
# Column types, read from the DDL DuckDB actually sends


DDL_TYPES = COLUMNS + [
    ("iv", "INTERVAL"),
    ("ttz", "TIMETZ"),
    ("nest", "STRUCT(p INTEGER[], q MAP(INTEGER, VARCHAR[]))"),
]
PG_INFO = {
    "BOOLEAN": "boolean",
    "SMALLINT": "smallint",
    "INTEGER": "integer",
    "BIGINT": "bigint",
    "REAL": "real",
    "DOUBLE PRECISION": "double precision",
    "TIME": "time without time zone",
    "TIME WITH TIME ZONE": "time with time zone",
    "INTERVAL": "interval",
    "BYTEA": "bytea",
    "UUID": "uuid",
    "VARCHAR": "character varying",
}


def test_inlined_column_types_match_duckdb_ddl(site: Site) -> None:
    columns = DDL_TYPES + ([("tns", "TIME_NS")] if site.dialect == "sqlite" else [])
    site.duck().execute(create_sql("l.types", columns))
    site.close_ducks()
    name, tree = site.inlined_table("types")
    ours = {c.column_name: inlined_column_type(c, site.dialect) for c in tree}
    if site.dialect == "sqlite":
        _, info = site.query(f"PRAGMA table_info({name})")
        actual = {r[1]: r[2] for r in info}
        expected = ours
    else:
        schema, table = (part.strip('"') for part in name.split("."))
        _, info = site.query(
            "SELECT column_name, data_type, numeric_precision, numeric_scale "
            "FROM information_schema.columns WHERE table_schema = ? AND table_name = ?",
            [schema, table],
        )
        actual = {
            r[0]: f"numeric({r[2]},{r[3]})" if r[1] == "numeric" else r[1] for r in info
        }
        expected = {
            k: f"numeric{v[7:]}" if v.startswith("DECIMAL(") else PG_INFO[v]
            for k, v in ours.items()
        }
    assert {k: v for k, v in actual.items() if k in expected} == expected
    # spot checks of the documented mapping
    by_name = {c.column_name: c for c in tree}
    if site.dialect == "postgresql":
        assert ours["i8"] == "SMALLINT" and ours["u32"] == "BIGINT" and ours["u64"] == "VARCHAR"
        assert ours["d183"] == "DECIMAL(18,3)" and ours["v"] == "BYTEA" and ours["dt"] == "VARCHAR"
        with pytest.raises(UnsupportedTypeError):
            inlined_column_type(col("t", "time_ns"), "postgresql")
    else:
        assert ours["b"] == "BIGINT" and ours["f64"] == "VARCHAR" and ours["bl"] == "BLOB"
    assert inlined_column_type(by_name["nest"], site.dialect) == "VARCHAR"


# --------------------------------------------------------------------------------------------
# (a) DuckDB writes, we decode


def test_duckdb_writes_we_decode(site: Site) -> None:
    con = site.duck()
    con.execute(create_sql("l.t", COLUMNS))
    con.execute("INSERT INTO l.t VALUES " + ", ".join(ROWS))
    con.execute(UTC_SESSION)  # Python cannot shift year 1 west of UTC
    expected = {r[0]: r for r in con.execute("SELECT * FROM l.t").fetchall()}
    site.close_ducks()
    assert site.query(f"SELECT count(*) FROM {site.prefix}ducklake_data_file")[1] == [(0,)]

    columns, cells = raw_cells(site, "t")
    assert sorted(cells) == sorted(expected)
    for row_id, want in expected.items():
        for position, column in enumerate(columns):
            raw = cells[row_id][column.column_name]
            got = decode_inlined(raw, column, site.dialect)
            assert norm(got, column) == norm(want[position], column), (column.column_name, raw)
            if column.column_type == "struct":
                continue  # DuckDB writes structs as SQL literals; we write the cast form
            if isinstance(raw, str) and raw.endswith("infinity"):
                continue  # Python holds infinity as date.max / datetime.max, a real value
            # Our encoding reproduces DuckDB's own bytes for every other cell.
            again = encode_inlined(got, column, site.dialect)
            if column.column_type == "timestamp_ns" and raw is not None:
                assert raw.startswith(again)  # Python datetimes stop at microseconds
                continue
            if column.column_type == "float32" and site.dialect == "postgresql":
                # psycopg reads REAL via its shortest text; both bind to the same float4
                assert same(decode_inlined(again, column, site.dialect), got)
                continue
            assert same(again, bytes(raw) if isinstance(raw, memoryview) else raw), (
                column.column_name,
                raw,
                again,
            )


# --------------------------------------------------------------------------------------------
# (b) We encode, DuckDB reads


def overwrite_and_read(site: Site, table: str, values: dict[int, dict[str, Any]]) -> list[tuple]:
    """Replace the value cells of DuckDB-inlined rows by our encoding; DuckDB reads them anew."""
    site.close_ducks()
    name, columns = site.inlined_table(table)
    _, ids = site.query(f"SELECT row_id, id FROM {name}")
    for row_id, ident in ids:
        targets = [c for c in columns if c.column_name != "id"]
        params = [encode_inlined(values[ident][c.column_name], c, site.dialect) for c in targets]
        assignments = ", ".join(f"{c.column_name} = ?" for c in targets)
        site.execute(f"UPDATE {name} SET {assignments} WHERE row_id = ?", [*params, row_id])
    con = site.duck(tz="Asia/Kolkata")
    return con.execute(f"SELECT * FROM l.{table} ORDER BY id").fetchall()


def test_we_encode_duckdb_reads(site: Site) -> None:
    con = site.duck()
    con.execute(create_sql("memory.main.ref", COLUMNS))
    con.execute("INSERT INTO memory.main.ref VALUES " + ", ".join(ROWS))
    con.execute(UTC_SESSION)
    reference = con.execute("SELECT * FROM memory.main.ref ORDER BY id").fetchall()
    con.execute(create_sql("l.t", COLUMNS))
    con.execute("INSERT INTO l.t (id) SELECT range FROM range(1, ?)", [len(ROWS) + 1])
    names = [n for n, _ in COLUMNS]
    values = {r[0]: dict(zip(names, r, strict=True)) for r in reference}
    # Feed pyarrow's shapes too: maps as (key, value) pairs, hugeints as Decimal.
    for row in values.values():
        if row["m"] is not None:
            row["m"] = list(row["m"].items())
        if row["i128"] is not None:
            row["i128"] = Decimal(row["i128"])

    read = overwrite_and_read(site, "t", values)

    _, columns = site.inlined_table("t")
    assert len(read) == len(reference)
    for got, want in zip(read, reference, strict=True):
        for position, column in enumerate(columns):
            assert norm(got[position], column) == norm(want[position], column), column.column_name


# --------------------------------------------------------------------------------------------
# DuckDB's top-level struct spelling (Value::ToString), which DuckDB itself cannot read back

STRUCT_COLUMNS = [
    ("id", "INTEGER"),
    (
        "s",
        "STRUCT(v VARCHAR, d DATE, ts TIMESTAMPTZ, f DOUBLE, r FLOAT, bl BLOB, dec DECIMAL(5,2), "
        "u UUID, iv INTERVAL, tt TIME, inner_s STRUCT(q VARCHAR, l VARCHAR[]), "
        "m MAP(VARCHAR, VARCHAR), \"it's\" INTEGER)",
    ),
]
STRUCT_ROWS = [
    "(1, {'v': 'it''s', 'd': DATE '2024-01-02', 'ts': TIMESTAMPTZ '2024-01-02 03:04:05.5+01', "
    "'f': 'nan', 'r': 0.1, 'bl': from_hex('00275C41'), 'dec': -1.5, "
    "'u': '12345678-1234-5678-1234-567812345678', 'iv': INTERVAL '1 year 2 days 00:00:03', "
    "'tt': TIME '01:02:03', 'inner_s': {'q': 'a\\''b', 'l': ['x y', 'it''s', NULL]}, "
    "'m': MAP {'k': 'v,w'}, 'it''s': 7})",
    "(2, {'v': 'back\\slash', 'd': DATE 'infinity', 'ts': NULL, 'f': '-inf', 'r': NULL, "
    "'bl': NULL, 'dec': NULL, 'u': NULL, 'iv': NULL, 'tt': NULL, "
    "'inner_s': {'q': '\\', 'l': []}, 'm': MAP {}, 'it''s': NULL})",
    "(3, {'v': '''', 'd': NULL, 'ts': NULL, 'f': 1e300, 'r': NULL, 'bl': NULL, 'dec': NULL, "
    "'u': NULL, 'iv': NULL, 'tt': NULL, 'inner_s': NULL, 'm': NULL, 'it''s': NULL})",
    "(4, NULL)",
]


def test_duckdb_struct_spelling_is_recovered(site: Site) -> None:
    """DuckDB writes ``{'v': 'it''s', 'd': CAST('…' AS DATE)}``; we decode the intended value."""
    con = site.duck()
    con.execute(create_sql("memory.main.ref", STRUCT_COLUMNS))
    con.execute("INSERT INTO memory.main.ref VALUES " + ", ".join(STRUCT_ROWS))
    reference = {r[0]: r[1] for r in con.execute("SELECT * FROM memory.main.ref").fetchall()}
    con.execute(create_sql("l.t", STRUCT_COLUMNS))
    con.execute("INSERT INTO l.t VALUES " + ", ".join(STRUCT_ROWS))
    site.close_ducks()

    columns, cells = raw_cells(site, "t")
    struct_col = columns[1]
    assert "CAST(" in cells[1]["s"] and "'it''s'" in cells[1]["s"]  # the SQL-literal spelling
    for ident, want in reference.items():
        got = decode_inlined(cells[ident]["s"], struct_col, site.dialect)
        assert norm(got, struct_col) == norm(want, struct_col), cells[ident]["s"]

    # Our spelling of the same values is one DuckDB reads correctly.
    values = {i: {"s": v} for i, v in reference.items()}
    read = overwrite_and_read(site, "t", values)
    for ident, value in read:
        assert norm(value, struct_col) == norm(reference[ident], struct_col)


# --------------------------------------------------------------------------------------------
# Types outside the main table


EXTRA_COLUMNS = [
    ("id", "INTEGER"),
    ("iv", "INTERVAL"),
    ("ttz", "TIMETZ"),
    ("fl", "FLOAT[]"),
    ("bls", "BLOB[]"),
    ("tzl", "TIMESTAMPTZ[]"),
    ("nest", "STRUCT(p INTEGER[], q MAP(INTEGER, VARCHAR[]))"),
    ("dl", "DECIMAL(4,1)[]"),
    ("dates", "DATE[]"),
]
EXTRA_ROWS = [
    "(1, INTERVAL '3 days 04:05:06.789', TIMETZ '12:30:00+05:30', [0.1, 'nan', '-inf', 3.4e38], "
    "[from_hex('00275C4120'), ''::BLOB, NULL, 'NULL'::BLOB], "
    "[TIMESTAMPTZ '2024-01-15 12:30:00+00', NULL], {'p': [], 'q': MAP {1: ['a', NULL], 2: NULL}}, "
    "[1.5, -0.1], [DATE '2024-01-01', NULL])",
    "(2, INTERVAL '-1 day -00:00:01.5', TIMETZ '00:00:00-08', [], [], [], "
    "{'p': [1, NULL], 'q': MAP {}}, [], [])",
    "(3, INTERVAL '100 hours', TIMETZ '23:59:59.999999+00', NULL, NULL, NULL, NULL, NULL, NULL)",
]


def test_extra_types_both_ways(site: Site) -> None:
    columns = EXTRA_COLUMNS
    rows = EXTRA_ROWS
    if site.dialect == "sqlite":  # PostgreSQL cannot hold TIME_NS nor keep months via psycopg
        columns = columns + [("tns", "TIME_NS"), ("ivm", "INTERVAL"), ("u128", "UHUGEINT")]
        extra = [
            ", TIME_NS '01:02:03.123456789', INTERVAL '1 year 2 months 3 days', 0)",
            ", NULL, INTERVAL '-13 months', 340282366920938463463374607431768211455)",
            ", TIME_NS '00:00:00', INTERVAL '1 month -1 day 1 second', NULL)",
        ]
        rows = [r[:-1] + e for r, e in zip(rows, extra, strict=True)]
    con = site.duck()
    con.execute(create_sql("memory.main.ref", columns))
    con.execute("INSERT INTO memory.main.ref VALUES " + ", ".join(rows))
    reference = con.execute("SELECT * FROM memory.main.ref ORDER BY id").fetchall()
    con.execute(create_sql("l.t", columns))
    con.execute("INSERT INTO l.t VALUES " + ", ".join(rows))
    own = con.execute("SELECT * FROM l.t ORDER BY id").fetchall()
    site.close_ducks()

    tree, cells = raw_cells(site, "t")
    for got_row, want in zip(own, reference, strict=True):  # DuckDB reads these back itself
        assert [norm(v, c) for v, c in zip(got_row, tree, strict=True)] == [
            norm(v, c) for v, c in zip(want, tree, strict=True)
        ]
    for want in reference:
        for position, column in enumerate(tree):
            got = decode_inlined(cells[want[0]][column.column_name], column, site.dialect)
            assert norm(got, column) == norm(want[position], column), column.column_name

    names = [n for n, _ in columns]
    values = {r[0]: dict(zip(names, r, strict=True)) for r in reference}
    for row in values.values():  # intervals as pyarrow gives them
        for key in ("iv", "ivm"):
            if isinstance(row.get(key), timedelta):
                delta = row[key]
                nanos = (delta.seconds * 10**6 + delta.microseconds) * 1000
                row[key] = MonthDayNano(0, delta.days, nanos)
    read = overwrite_and_read(site, "t", values)
    for got_row, want in zip(read, reference, strict=True):
        for position, column in enumerate(tree):
            got, expected = norm(got_row[position], column), norm(want[position], column)
            assert got == expected, column.column_name


def test_json_lists(site: Site) -> None:
    """DuckDB reads our raw JSON array; we also read DuckDB's own (unreadable to it) spelling."""
    column = col("jl", "list", col("element", "json"))
    duckdb_spelling = "['{\"a\": 1}', '\"x,y\"', NULL, 'null', '[1, 2]', '\"it\\'s\"', 7]"
    assert decode_inlined(duckdb_spelling, column, site.dialect) == [
        '{"a": 1}', '"x,y"', None, "null", "[1, 2]", '"it\'s"', "7"
    ]
    value = ['{"a": [1, 2]}', '"x,y"', None, "null", '"it\'s"', "3.5", '"ünï"']
    encoded = encode_inlined(value, column, site.dialect)
    read_back = ['{"a":[1,2]}', '"x,y"', "null", "null", '"it\'s"', "3.5", '"ünï"']
    assert decode_inlined(encoded, column, site.dialect) == read_back
    con = site.duck()
    con.execute("CREATE TABLE l.t (id INTEGER, jl JSON[])")
    con.execute("INSERT INTO l.t VALUES (1, NULL), (2, NULL)")
    got = overwrite_and_read(site, "t", {1: {"jl": value}, 2: {"jl": []}})
    assert got == [(1, read_back), (2, [])]


@pytest.mark.postgres
def test_postgres_interval_text_keeps_months(tmp_path: Path) -> None:
    """psycopg folds months into days; reading ``interval::text`` keeps them."""
    user = require_pg()
    import psycopg

    with psycopg.connect(PG_URL.format(user=user), autocommit=True) as pg:
        sql = "SELECT '1 year 2 mons -3 days -04:05:06.5'::interval::text"
        text = pg.execute(sql).fetchone()[0]
        iv = col("iv", "interval")
        assert decode_inlined(text, iv, "postgresql") == MonthDayNano(
            14, -3, -(4 * 3600 + 5 * 60 + 6) * 10**9 - 500_000_000
        )
        encoded = encode_inlined(MonthDayNano(14, -3, -1_500_000_000), iv, "postgresql")
        back = pg.execute("SELECT %s::interval::text", (encoded,)).fetchone()[0]
        assert decode_inlined(back, iv, "postgresql") == MonthDayNano(14, -3, -1_500_000_000)


# --------------------------------------------------------------------------------------------
# The nested text grammar against DuckDB's VARCHAR cast (no lake needed)

AWKWARD = [
    "plain", "it's", "a,b", "[x]", "{y}", " lead", "trail ", "", "NULL", "null", "Null", "a\"b",
    "back\\slash", "a=b", "x: y", "'", "''", "new\nline", "tab\tx", "ünï ☃", "a\\'b", "(p)",
    "   ", "\\", "x\\", "\\'", "\x01ctrl", "\t", " ", "a b  c", "\u00a0nbsp\u00a0", "\\x00",
] + [f"a{chr(c)}b" for c in range(1, 128)]


def test_nested_text_matches_duckdb_cast() -> None:
    con = duck()
    lst = col("l", "list", col("element", "varchar"))
    mp = col("m", "map", col("key", "varchar"), col("value", "varchar"))
    nested = col("n", "list", col("element", "struct", col("s", "varchar"), col("k", "int32")))
    for text in AWKWARD:
        want = con.execute(
            "SELECT [?]::VARCHAR, MAP {?: ?}::VARCHAR, [{'s': ?, 'k': 1}]::VARCHAR",
            [text, text, text, text],
        ).fetchone()
        ours = (
            encode_inlined([text], lst, "sqlite"),
            encode_inlined({text: text}, mp, "sqlite"),
            encode_inlined([{"s": text, "k": 1}], nested, "sqlite"),
        )
        assert ours == want, text
        assert decode_inlined(want[0], lst, "sqlite") == [text]
        assert decode_inlined(want[1], mp, "sqlite") == [(text, text)]
        assert decode_inlined(want[2], nested, "sqlite") == [{"s": text, "k": 1}]
    # and DuckDB parses our top-level struct spelling back to the same strings
    st = col("s", "struct", col("y", "varchar"), col("z", "varchar"))
    for text in AWKWARD:
        encoded = encode_inlined({"y": text, "z": None}, st, "sqlite")
        got = con.execute("SELECT CAST(? AS STRUCT(y VARCHAR, z VARCHAR))", [encoded]).fetchone()
        assert got == ({"y": text, "z": None},), encoded
        assert decode_inlined(encoded, st, "sqlite") == {"y": text, "z": None}


def test_scalar_text_matches_duckdb_cast() -> None:
    con = duck()
    cases = [
        ("float32", "FLOAT", [0.1, 1.5, 3.4028234663852886e38, 1e-45, 123456789012345678.0, -0.0]),
        ("float64", "DOUBLE", [0.1, 1e15, 1e16, 1e-5, 5e-324, 9007199254740993.0, -0.0, 1e300]),
        ("decimal(38,10)", "DECIMAL(38,10)", [Decimal("0"), Decimal("-1.5"), Decimal("1e27") - 1]),
        ("decimal(4,0)", "DECIMAL(4,0)", [Decimal("12"), Decimal("-0")]),
        ("time", "TIME", [time(1, 2, 3, 500000), time(0, 0), time(23, 59, 59, 1)]),
        ("timestamp_ms", "TIMESTAMP_MS", [datetime(2024, 1, 1, 0, 0, 0, 120000)]),
        ("timestamp", "TIMESTAMP", [datetime(1, 1, 1), datetime(2024, 1, 1, 1, 2, 3, 100)]),
        ("date", "DATE", [date(1, 1, 1), date(2024, 2, 29)]),
        ("blob", "BLOB", [bytes(range(256)), b"", b"'\\\"x"]),
        ("interval", "INTERVAL", [timedelta(days=-1, seconds=1), timedelta(hours=100)]),
    ]
    for lake_type, duck_type, values in cases:
        column = col("c", lake_type)
        for value in values:
            if isinstance(value, Decimal):
                value = format(value, "f")  # DuckDB mis-binds exponent-form Decimals
            want = con.execute(f"SELECT CAST(?::{duck_type} AS VARCHAR)", [value]).fetchone()[0]
            assert encode_inlined(value, column, "sqlite") == want or lake_type == "blob"
            lst = col("l", "list", column)
            nested_want = con.execute(f"SELECT [?::{duck_type}]::VARCHAR", [value]).fetchone()[0]
            assert encode_inlined([value], lst, "sqlite") == nested_want, (lake_type, value)
    zones = [timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8)), UTC]
    for zone in zones:
        moment = datetime(2024, 6, 1, 12, 0, tzinfo=zone)
        con.execute(UTC_SESSION)
        want = con.execute("SELECT CAST(?::TIMESTAMPTZ AS VARCHAR)", [moment]).fetchone()[0]
        assert encode_inlined(moment, col("c", "timestamptz"), "sqlite") == want


# --------------------------------------------------------------------------------------------
# Pure round trips and argument checks


def test_pyarrow_shapes_round_trip() -> None:
    tree = col(
        "m", "map", col("key", "varchar"),
        col("value", "list", col("element", "struct", col("a", "int64"), col("b", "blob"))),
    )
    value = [("k", [{"a": 1, "b": b"\x00'"}, None]), ("", []), ("NULL", None)]
    for dialect in ("sqlite", "postgresql"):
        assert decode_inlined(encode_inlined(value, tree, dialect), tree, dialect) == value
        as_dict = dict(value)
        assert encode_inlined(as_dict, tree, dialect) == encode_inlined(value, tree, dialect)
    iv = col("iv", "interval")
    for v in (MonthDayNano(14, 3, 4 * 10**9), MonthDayNano(-13, 0, -1000), MonthDayNano(0, 0, 0)):
        assert decode_inlined(encode_inlined(v, iv, "sqlite"), iv, "sqlite") == v
    huge = col("h", "int128")
    assert decode_inlined(encode_inlined(Decimal(-(2**127)), huge, "sqlite"), huge, "sqlite") == -(
        2**127
    )
    ttz = col("t", "timetz")
    aware = time(12, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert encode_inlined(aware, ttz, "sqlite") == "12:30:00+05:30"
    assert decode_inlined("12:30:00+05:30", ttz, "sqlite") == aware
    tz = col("ts", "timestamptz")
    naive_utc = datetime(2024, 1, 1, 12)
    assert encode_inlined(naive_utc, tz, "postgresql") == "2024-01-01 12:00:00+00"
    aware_utc = naive_utc.replace(tzinfo=UTC)
    assert decode_inlined("2024-01-01 12:00:00+00", tz, "postgresql") == aware_utc
    assert decode_inlined("infinity", tz, "sqlite") == datetime.max.replace(tzinfo=UTC)


def test_driver_value_shapes() -> None:
    """psycopg/SQLAlchemy hand back memoryview, Decimal, time and UUID objects."""
    assert decode_inlined(memoryview(b"caf\xc3\xa9"), col("v", "varchar"), "postgresql") == "café"
    assert decode_inlined(memoryview(b"\x00\x01"), col("b", "blob"), "postgresql") == b"\x00\x01"
    assert decode_inlined(Decimal("0E-10"), col("d", "decimal(38,10)"), "postgresql") == 0
    f32 = col("f", "float32")
    assert decode_inlined(0.10000000149011612, f32, "postgresql") == 0.10000000149011612
    assert decode_inlined(0.1, f32, "postgresql") == 0.10000000149011612
    assert decode_inlined(1, col("b", "boolean"), "sqlite") is True
    assert encode_inlined(True, col("b", "boolean"), "sqlite") == 1
    assert encode_inlined("x", col("v", "varchar"), "postgres") == b"x"
    u = uuid.uuid4()
    assert encode_inlined(str(u), col("u", "uuid"), "postgresql") == u
    assert decode_inlined(str(u), col("u", "uuid"), "sqlite") == u


def test_bad_values_are_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        encode_inlined(128, col("i", "int8"), "sqlite")
    with pytest.raises(InvalidArgumentError):
        encode_inlined(1e39, col("f", "float32"), "sqlite")
    with pytest.raises(InvalidArgumentError):
        encode_inlined(Decimal("12345"), col("d", "decimal(4,1)"), "sqlite")
    with pytest.raises(InvalidArgumentError):
        encode_inlined({"nope": 1}, col("s", "struct", col("a", "int32")), "sqlite")
    with pytest.raises(InvalidArgumentError):
        int_map = col("m", "map", col("key", "int32"), col("value", "int32"))
        encode_inlined({None: 1}, int_map, "sqlite")
    with pytest.raises(InvalidArgumentError):
        encode_inlined(1, col("i", "int32"), "duckdb")
    with pytest.raises(UnsupportedTypeError):
        decode_inlined("0045-03-15 (BC) 00:00:00", col("t", "timestamp"), "sqlite")
    with pytest.raises(InvalidArgumentError):
        decode_inlined("[1, 2", col("l", "list", col("element", "int32")), "sqlite")
