"""Statistics encodings checked against what DuckDB 1.5.5's ducklake extension writes.

DuckDB prunes files and answers MIN/MAX from these rows, so the strongest test is to let DuckDB
write a lake and require our footer-derived rows to be equal to its rows, byte for byte, and to
be NULL (never different) only where the footer cannot prove a bound.
"""

from __future__ import annotations

import glob
import math
import os
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import duckdb_extension_ducklake
import duckdb_extension_sqlite_scanner
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.ducklake.lake import file_stats
from dbt.adapters.ducklake.lake.file_stats import file_column_stats
from dbt.adapters.ducklake.lake.models import FileColumnStats, TableColumnStats
from dbt.adapters.ducklake.lake.stats import compare_encoded, widen_table_column_stats
from dbt.adapters.ducklake.lake.types import LakeType
from dbt.adapters.ducklake.lake.value_text import encode_value, inlined_value_text

T = LakeType.parse
STAT_COLUMNS = "column_size_bytes, value_count, null_count, min_value, max_value, contains_nan"

# ---------------------------------------------------------------------------------------------
# A DuckDB-written lake
# ---------------------------------------------------------------------------------------------


def _connect(tmp: Path, *, time_zone: str | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the pinned ducklake extension attached as ``l`` (no downloads)."""
    con = duckdb.connect(
        config={
            "allow_unsigned_extensions": True,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
    )
    for module in (duckdb_extension_ducklake, duckdb_extension_sqlite_scanner):
        pattern = os.path.join(
            os.path.dirname(module.__file__),
            "extensions",
            f"v{duckdb.__version__}",
            "*.duckdb_extension",
        )
        for ext in glob.glob(pattern):
            con.execute(f"LOAD '{ext}'")
    if time_zone:
        con.execute(f"SET TimeZone = '{time_zone}'")
    con.execute(f"ATTACH 'ducklake:sqlite:{tmp}/meta.sqlite' AS l (DATA_PATH '{tmp}/data/')")
    return con


class Lake:
    """Read access to the catalog DuckDB wrote (through sqlite3, as our writer would)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.db = sqlite3.connect(tmp / "meta.sqlite")

    def table_id(self, name: str) -> int:
        row = self.db.execute(
            "SELECT table_id FROM ducklake_table WHERE table_name = ? AND end_snapshot IS NULL",
            (name,),
        ).fetchone()
        return int(row[0])

    def leaves(self, table: str) -> dict[str, tuple[int, LakeType]]:
        """Parquet ``path_in_schema`` of every leaf column -> (column_id, type)."""
        rows = self.db.execute(
            "SELECT column_id, column_name, column_type, parent_column FROM ducklake_column "
            "WHERE table_id = ? AND end_snapshot IS NULL",
            (self.table_id(table),),
        ).fetchall()
        by_id = {r[0]: r for r in rows}

        def path(column_id: int) -> str:
            node = by_id[column_id]
            parts = [node[1]]
            while node[3] is not None:
                parent = by_id[node[3]]
                if parent[2] in ("list", "map"):
                    parts.insert(0, "list" if parent[2] == "list" else "key_value")
                parts.insert(0, parent[1])
                node = parent
            return ".".join(parts)

        return {path(r[0]): (r[0], T(r[2])) for r in rows if r[2] not in ("struct", "list", "map")}

    def names(self, table: str) -> dict[int, str]:
        rows = self.db.execute(
            "SELECT column_id, column_name FROM ducklake_column WHERE table_id = ?",
            (self.table_id(table),),
        )
        return dict(rows.fetchall())

    def files(self, table: str) -> list[tuple[int, Path]]:
        rows = self.db.execute(
            "SELECT data_file_id, path FROM ducklake_data_file WHERE table_id = ? "
            "ORDER BY data_file_id",
            (self.table_id(table),),
        ).fetchall()
        found = []
        for file_id, rel in rows:
            (match,) = glob.glob(str(self.tmp / "data" / "**" / rel), recursive=True)
            found.append((file_id, Path(match)))
        return found

    def file_stats(self, file_id: int) -> dict[int, FileColumnStats]:
        rows = self.db.execute(
            f"SELECT column_id, {STAT_COLUMNS} FROM ducklake_file_column_stats "
            "WHERE data_file_id = ?",
            (file_id,),
        ).fetchall()
        return {r[0]: _file_row(*r) for r in rows}

    def table_stats(self, table: str) -> dict[int, TableColumnStats]:
        tid = self.table_id(table)
        rows = self.db.execute(
            "SELECT column_id, contains_null, contains_nan, min_value, max_value "
            "FROM ducklake_table_column_stats WHERE table_id = ?",
            (tid,),
        ).fetchall()
        return {
            r[0]: TableColumnStats(tid, r[0], _bool(r[1]), _bool(r[2]), r[3], r[4]) for r in rows
        }


def _bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _file_row(
    cid: int, size: Any, values: Any, nulls: Any, lo: Any, hi: Any, nan: Any
) -> FileColumnStats:
    return FileColumnStats(cid, size, values, nulls, lo, hi, _bool(nan))


# Columns whose values vary over 20 rows (with NULLs): (name, DuckDB type, expression of i).
RANGED: list[tuple[str, str, str]] = [
    ("i8", "TINYINT", "(i * 13 - 128)"),
    ("i16", "SMALLINT", "(i * 1000 - 10000)"),
    ("i32", "INTEGER", "(i * 100000007 - 1000000000)"),
    ("i64", "BIGINT", "(i * 461168601842738790 - 4611686018427387904)"),
    ("u8", "UTINYINT", "(i * 13)"),
    ("u16", "USMALLINT", "(i * 3000)"),
    ("u32", "UINTEGER", "(i * 200000000)"),
    ("u64", "UBIGINT", "(18446744073709551615 - i * 1000)"),
    ("f32", "FLOAT", "(i * 0.1 - 0.5)"),
    ("f64", "DOUBLE", "(i * 1.1e15 - 3.3)"),
    (
        "f64inf",
        "DOUBLE",
        "CASE i WHEN 3 THEN 'inf'::DOUBLE WHEN 4 THEN '-inf'::DOUBLE ELSE i / 7 END",
    ),
    ("f64nan", "DOUBLE", "CASE i WHEN 2 THEN 'nan'::DOUBLE ELSE i * 2.5 END"),
    ("f32nan", "FLOAT", "CASE i WHEN 2 THEN 'nan'::FLOAT ELSE i * 0.3 END"),
    ("dec4", "DECIMAL(4,1)", "(i * 10.3 - 99.9)"),
    ("dec18", "DECIMAL(18,3)", "(i * 123456789.123 - 1000)"),
    ("dec38", "DECIMAL(38,10)", "(i::DECIMAL(38,10) * 1234567890123.0123456789 - 9999999999)"),
    ("b", "BOOLEAN", "(i % 3 = 0)"),
    ("dt", "DATE", "(DATE '1969-12-20' + (i * 37)::INT)"),
    (
        "tm",
        "TIME",
        "(TIME '00:00:01.5' + INTERVAL (i * 4321) SECOND + INTERVAL (i * 17) MICROSECOND)",
    ),
    (
        "ts",
        "TIMESTAMP",
        "(TIMESTAMP '1969-12-31 23:59:59.999999' + INTERVAL (i * 86399) SECOND "
        "+ INTERVAL (i * 13) MICROSECOND)",
    ),
    ("ts_s", "TIMESTAMP_S", "(TIMESTAMP '1960-01-01' + INTERVAL (i * 9999999) SECOND)"),
    (
        "ts_ms",
        "TIMESTAMP_MS",
        "(TIMESTAMP '2024-02-29 12:00:00' + INTERVAL (i * 1234567) MILLISECOND)",
    ),
    ("ts_ns", "TIMESTAMP_NS", "make_timestamp_ns(1700000000123456789 + i * 1000000001)"),
    (
        "tstz",
        "TIMESTAMPTZ",
        "(TIMESTAMPTZ '2024-03-10 01:30:00.25+05:30' + INTERVAL (i * 3600) SECOND)",
    ),
    ("v", "VARCHAR", "CASE WHEN i = 1 THEN '' WHEN i % 2 = 0 THEN 'é' || i ELSE '日本' || i END"),
    (
        "bl",
        "BLOB",
        "CASE WHEN i = 1 THEN ''::BLOB ELSE unhex(printf('%02X%02X', i * 13, 255 - i)) END",
    ),
    ("u", "UUID", "uuid()"),
    ("allnull", "DOUBLE", "NULL"),
    ("s", "STRUCT(x INTEGER, y VARCHAR)", "{'x': i - 3, 'y': 'y' || i}"),
    ("l", "INTEGER[]", "CASE WHEN i % 4 = 1 THEN [] ELSE [i, NULL, i * 2] END"),
    ("m", "MAP(VARCHAR, DOUBLE)", "MAP {'k' || i: i * 0.5}"),
]

# One constant edge value per column (20 rows, every 4th NULL): DuckDB type -> SQL literals.
EDGES: dict[str, list[str]] = {
    "TINYINT": ["-128", "127"],
    "SMALLINT": ["-32768", "32767"],
    "INTEGER": ["-2147483648", "2147483647"],
    "BIGINT": ["-9223372036854775808", "9223372036854775807"],
    "UTINYINT": ["255"],
    "USMALLINT": ["65535"],
    "UINTEGER": ["4294967295"],
    "UBIGINT": ["18446744073709551615", "0"],
    "FLOAT": [
        "1e20",
        "1e-5",
        "123456789.123",
        "3.4028234663852886e38",
        "'-0.0'",
        "'inf'",
        "'-inf'",
        "1e-45",
        "16777217",
        "1.1754943508222875e-38",
        "0.3",
        "1e16",
    ],
    "DOUBLE": [
        "1e20",
        "1e-5",
        "1e15",
        "1e16",
        "'-0.0'",
        "5e-324",
        "1.7976931348623157e308",
        "12345678901234567",
        "0.0001",
        "123e-20",
        "'inf'",
        "'-inf'",
        "0.1",
    ],
    "DECIMAL(4,1)": ["-999.9", "999.9", "0"],
    "DECIMAL(18,3)": ["-999999999999999.999", "0.001"],
    "DECIMAL(38,10)": ["-9999999999999999999999999999.9999999999", "0.0000000001"],
    "DECIMAL(9,9)": ["0.123456789", "-0.000000001"],
    "DECIMAL(38,0)": ["-99999999999999999999999999999999999999"],
    "BOOLEAN": ["true", "false"],
    "DATE": [
        "'infinity'",
        "'-infinity'",
        "'0044-03-15 (BC)'",
        "'0001-01-01'",
        "'12345-01-01'",
        "'1969-12-31'",
    ],
    "TIME": ["'00:00:00'", "'23:59:59.999999'", "'24:00:00'", "'01:02:03.0001'"],
    "TIMESTAMP": [
        "'infinity'",
        "'-infinity'",
        "'0044-03-15 (BC) 10:00:00'",
        "'1900-01-01 00:00:00.1'",
        "'12345-01-01 00:00:00'",
    ],
    "TIMESTAMP_S": ["'0044-03-15 (BC) 10:00:00'", "'1969-12-31 23:59:59'"],
    "TIMESTAMP_MS": ["'infinity'", "'-infinity'", "'1969-12-31 23:59:59.999'"],
    "TIMESTAMP_NS": [
        "'infinity'",
        "'-infinity'",
        "'1677-09-22 00:00:00'",
        "'1969-12-31 23:59:59.999999999'",
    ],
    "TIMESTAMPTZ": [
        "'infinity'",
        "'-infinity'",
        "'0044-03-15 (BC) 10:00:00+00'",
        "'2024-01-15 00:30:00+05:30'",
    ],
    "VARCHAR": [
        "''",
        "'a\tb\nc'",
        "'O''Reilly'",
        "'日本'",
        "repeat('x', 300)",
        "repeat('a', 255) || 'é'",
    ],
    "BLOB": ["'\\xFF\\x00ab'::BLOB", "''::BLOB", "repeat('x', 300)::BLOB"],
    "UUID": ["'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF'", "'00000000-0000-0000-0000-000000000000'"],
}
EDGE_COLUMNS = [
    (f"e{n}", typ, f"CASE WHEN i % 4 = 0 THEN NULL ELSE ({lit})::{typ} END")
    for n, (typ, lit) in enumerate((t, lit) for t, lits in EDGES.items() for lit in lits)
]


def _create(
    con: duckdb.DuckDBPyConnection, table: str, columns: list[tuple[str, str, str]]
) -> None:
    con.execute(f"CREATE TABLE l.{table} ({', '.join(f'{n} {t}' for n, t, _ in columns)})")
    exprs = ", ".join(
        f"CASE WHEN i = 5 THEN NULL ELSE ({e})::{t} END" if n != "u" else e for n, t, e in columns
    )
    con.execute(f"INSERT INTO l.{table} SELECT {exprs} FROM range(20) r(i)")


@pytest.fixture(scope="module")
def lake(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Lake, duckdb.DuckDBPyConnection]]:
    """One DuckDB-written lake with a ``ranged`` and an ``edges`` table of 20 rows each."""
    tmp = tmp_path_factory.mktemp("duck")
    con = _connect(tmp)
    _create(con, "ranged", RANGED)
    _create(con, "edges", EDGE_COLUMNS)
    yield Lake(tmp), con
    con.close()


def _nan_columns(duck: dict[int, FileColumnStats]) -> dict[int, bool]:
    """The contains_nan DuckDB knew from the data, as a writer scanning its data would."""
    return {cid: bool(s.contains_nan) for cid, s in duck.items() if s.contains_nan is not None}


def _footer_has_bounds(path: Path, column: str) -> bool:
    md = pq.read_metadata(path)
    for i in range(md.num_columns):
        if md.schema.column(i).path == column:
            st = md.row_group(0).column(i).statistics
            return bool(st is not None and st.has_min_max)
    raise KeyError(column)


# ---------------------------------------------------------------------------------------------
# file_column_stats on DuckDB's own files == DuckDB's rows
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["ranged", "edges"])
def test_file_stats_equal_duckdb_rows(lake: tuple[Lake, Any], table: str) -> None:
    cat, _ = lake
    leaves = cat.leaves(table)
    by_id = {cid: (path, lt) for path, (cid, lt) in leaves.items()}
    ((file_id, path),) = cat.files(table)
    duck = cat.file_stats(file_id)
    ours = file_column_stats(pq.read_metadata(path), leaves, _nan_columns(duck))
    assert {s.column_id for s in ours} == set(duck)
    matched = 0
    for mine in ours:
        theirs = duck[mine.column_id]
        leaf, lake_type = by_id[mine.column_id]
        if mine == theirs:
            matched += 1
            continue
        # Documented reasons for a NULL where DuckDB has a bound; nothing else may differ.
        assert (mine.min_value, mine.max_value) == (None, None), (leaf, mine, theirs)
        assert mine.column_size_bytes == theirs.column_size_bytes
        assert (mine.value_count, mine.null_count, mine.contains_nan) == (
            theirs.value_count,
            theirs.null_count,
            theirs.contains_nan,
        )
        if lake_type.name in ("float32", "float64"):
            # NaN present: DuckDB keeps bounds in the catalog but writes none to the footer.
            assert theirs.contains_nan and not _footer_has_bounds(path, leaf)
        else:
            # Long varchar/blob: DuckDB truncates footer and catalog bounds to 256 bytes and
            # flags them inexact in the footer; an inexact bound is useless for MIN/MAX.
            assert lake_type.name in ("varchar", "blob")
            assert len(theirs.min_value or "") >= 255 or theirs.min_value is None
    assert len(ours) - matched <= 3


def test_types_without_duckdb_bounds(tmp_path: Path) -> None:
    """int128/interval/timetz: NULL bounds like DuckDB, but no false ``value_count = 0``.

    DuckDB writes no footer statistics for INTERVAL and TIMETZ and records ``value_count = 0,
    null_count = 0`` for them -- a count that would let a reader prune the file. Without a
    footer null count ours are NULL (unknown) instead.
    """
    con = _connect(tmp_path)
    cat = Lake(tmp_path)
    con.execute("CREATE TABLE l.x (h HUGEINT, iv INTERVAL, tz TIMETZ)")
    con.execute(
        "INSERT INTO l.x SELECT i * 1e30, INTERVAL (i) DAY, TIMETZ '12:00:00+02' "
        "FROM range(20) r(i)"
    )
    ((file_id, path),) = cat.files("x")
    duck = cat.file_stats(file_id)
    rows = {r.column_id: r for r in file_column_stats(pq.read_metadata(path), cat.leaves("x"))}
    names = {v: k for k, v in cat.names("x").items()}
    assert rows[names["h"]] == duck[names["h"]]  # counts exact, bounds NULL on both sides
    for name in ("iv", "tz"):
        mine, theirs = rows[names[name]], duck[names[name]]
        assert (theirs.value_count, theirs.null_count, theirs.min_value) == (0, 0, None)
        assert (mine.value_count, mine.null_count, mine.min_value, mine.max_value) == (
            None,
            None,
            None,
            None,
        )
    con.close()


def test_without_nan_knowledge_float_bounds_are_null(lake: tuple[Lake, Any]) -> None:
    """The footer cannot say whether a float column holds NaN, so its bounds are not trusted."""
    cat, _ = lake
    leaves = cat.leaves("ranged")
    ((file_id, path),) = cat.files("ranged")
    duck = cat.file_stats(file_id)
    for mine in file_column_stats(pq.read_metadata(path), leaves):
        theirs = duck[mine.column_id]
        if theirs.contains_nan is None:
            assert mine.contains_nan is None
            continue
        if theirs.value_count == 0:  # all NULL: provably no NaN
            assert mine.contains_nan is False and mine == theirs
        else:
            assert mine.contains_nan is None and mine.min_value is None and mine.max_value is None
        assert (mine.value_count, mine.null_count) == (theirs.value_count, theirs.null_count)


# ---------------------------------------------------------------------------------------------
# The same data written by pyarrow: same encodings
# ---------------------------------------------------------------------------------------------


def _arrow(con: duckdb.DuckDBPyConnection, table: str) -> pa.Table:
    data = con.execute(f"SELECT * FROM l.{table}").to_arrow_table()
    for i, field in enumerate(data.schema):
        if field.name == "u" or (
            table == "edges" and field.type == pa.string() and _is_uuid_column(data.column(i))
        ):
            raw = [None if x is None else uuid.UUID(x).bytes for x in data.column(i).to_pylist()]
            storage = pa.array(raw, pa.binary(16))
            data = data.set_column(
                i, field.name, pa.ExtensionArray.from_storage(pa.uuid(), storage)
            )
    return data


def _is_uuid_column(column: pa.ChunkedArray) -> bool:
    values = [x for x in column.to_pylist() if x is not None]
    try:
        return bool(values) and all(str(uuid.UUID(x)) == x for x in values)
    except ValueError:
        return False


@pytest.mark.parametrize("table", ["ranged", "edges"])
def test_pyarrow_written_file_gives_duckdb_encodings(
    lake: tuple[Lake, duckdb.DuckDBPyConnection], table: str, tmp_path: Path
) -> None:
    cat, con = lake
    leaves = cat.leaves(table)
    by_id = {cid: (path, lt) for path, (cid, lt) in leaves.items()}
    ((file_id, _),) = cat.files(table)
    duck = cat.file_stats(file_id)
    out = tmp_path / "pa.parquet"
    pq.write_table(_arrow(con, table), out, row_group_size=7)  # 3 row groups to aggregate
    md = pq.read_metadata(out)
    assert md.num_row_groups == 3
    ours = file_column_stats(md, leaves, _nan_columns(duck))
    assert {s.column_id for s in ours} == set(duck)
    for mine in ours:
        theirs = duck[mine.column_id]
        leaf, lake_type = by_id[mine.column_id]
        assert (mine.value_count, mine.null_count, mine.contains_nan) == (
            theirs.value_count,
            theirs.null_count,
            theirs.contains_nan,
        ), leaf
        if theirs.min_value is not None and len(theirs.min_value) >= 255:
            # DuckDB truncated its bounds (a prefix and a bumped prefix); pyarrow's are exact.
            assert mine.min_value is not None and mine.max_value is not None, leaf
            assert mine.min_value.startswith(theirs.min_value), leaf
            assert theirs.max_value is not None
            assert compare_encoded(mine.max_value, theirs.max_value, lake_type) < 0, leaf
            continue
        # pyarrow writes bounds that leave NaN out: with NaN known, they equal DuckDB's.
        got, want = (mine.min_value, mine.max_value), (theirs.min_value, theirs.max_value)
        if got != want and lake_type.name in ("float32", "float64"):
            # Parquet writers must store a zero min as -0.0 and a zero max as +0.0, so the
            # sign of a zero bound is the writer's, not the data's; DuckDB orders -0.0 == 0.0.
            assert {got[0], want[0]} <= {"0.0", "-0.0"} or got[0] == want[0], leaf
            assert {got[1], want[1]} <= {"0.0", "-0.0"} or got[1] == want[1], leaf
            continue
        assert got == want, leaf


@pytest.mark.parametrize("table", ["ranged", "edges"])
def test_encode_value_of_python_values_equals_duckdb(
    lake: tuple[Lake, duckdb.DuckDBPyConnection], table: str
) -> None:
    """min/max over ``as_py()`` values encoded with encode_value == DuckDB's file bounds."""
    cat, con = lake
    leaves = cat.leaves(table)
    ((file_id, _),) = cat.files(table)
    duck = cat.file_stats(file_id)
    names = {cid: path for path, (cid, _) in leaves.items()}
    data = con.execute(f"SELECT * FROM l.{table}").to_arrow_table()
    checked = 0
    for cid, theirs in duck.items():
        path = names[cid]
        if "." in path or path not in data.column_names:
            continue
        lake_type = leaves[path][1]
        if theirs.max_value == "24:00:00":
            continue  # pyarrow turns TIME 24:00:00 into datetime.time(0, 0)
        try:
            values = data.column(path).to_pylist()
        except (ValueError, OverflowError):
            continue  # infinities and BC dates have no Python value
        encoded = [
            encode_value(v, lake_type)
            for v in values
            if v is not None and not (isinstance(v, float) and math.isnan(v))
        ]
        lo, hi = _fold(encoded, lake_type)
        if theirs.min_value is not None and len(theirs.min_value) >= 255:
            assert lo is not None and len(lo) > len(theirs.min_value)  # exact, not truncated
            continue
        assert (lo, hi) == (theirs.min_value, theirs.max_value), path
        checked += 1
    assert checked >= 20


def _fold(encoded: list[str | None], lake_type: LakeType) -> tuple[str | None, str | None]:
    lo = hi = None
    for text in encoded:
        assert text is not None
        if lo is None or compare_encoded(text, lo, lake_type) < 0:
            lo = text
        if hi is None or compare_encoded(text, hi, lake_type) > 0:
            hi = text
    return lo, hi


# ---------------------------------------------------------------------------------------------
# Inlined inserts: inlined_value_text == DuckDB's table-level stats
# ---------------------------------------------------------------------------------------------

INLINED: list[tuple[str, list[str]]] = [
    ("TINYINT", ["-128", "9", "10"]),
    ("SMALLINT", ["-32768", "32767"]),
    ("INTEGER", ["9", "10", "-5"]),
    ("BIGINT", ["-9223372036854775808", "9223372036854775807"]),
    ("UTINYINT", ["255", "0"]),
    ("USMALLINT", ["65535", "7"]),
    ("UINTEGER", ["4294967295", "1"]),
    ("UBIGINT", ["18446744073709551615", "2"]),
    ("HUGEINT", ["-170141183460469231731687303715884105728", "5"]),
    ("FLOAT", ["0.1", "'inf'", "'-0.0'", "123456789.123"]),
    ("FLOAT", ["'nan'", "1.5", "'-inf'"]),
    ("DOUBLE", ["1e20", "-0.0::DOUBLE", "'-inf'", "1e-5"]),
    ("DOUBLE", ["'nan'", "1.5", "1e300"]),
    ("DECIMAL(4,1)", ["-2.5", "0", "999.9"]),
    ("DECIMAL(18,3)", ["1.5", "-12"]),
    ("DECIMAL(38,10)", ["-1", "3.25", "12345678901234567890.5"]),
    ("DECIMAL(9,9)", ["0.5", "-0.1"]),
    ("BOOLEAN", ["true", "false"]),
    ("BOOLEAN", ["true"]),
    ("DATE", ["'2024-01-15'", "'1969-12-31'", "'0001-01-01'"]),
    ("TIME", ["'23:59:59.999999'", "'00:00:00'", "'12:30:00.123456'"]),  # 24:00 has no Python time
    ("TIMESTAMP", ["'2024-01-15 12:30:00.5'", "'1969-12-31 23:59:59.999999'"]),
    ("TIMESTAMP_S", ["'1900-01-01 00:00:00'", "'2024-01-15 12:30:00'"]),
    ("TIMESTAMP_MS", ["'2024-01-15 12:30:00.12'", "'2024-01-15 12:30:00.001'"]),
    ("TIMESTAMP_NS", ["'2024-01-15 12:30:00.123456789'", "'1677-09-22 00:00:00'"]),
    ("TIMESTAMPTZ", ["'2024-01-15 12:30:00.5+02'", "'2024-01-15 00:30:00+05:30'"]),
    ("VARCHAR", ["'héllo'", "''", "'Z'", "'日本'"]),
    ("BLOB", ["unhex('01022761FF5C7E20')"]),
    ("BLOB", ["unhex('41')"]),
    ("UUID", ["'550E8400-E29B-41D4-A716-446655440000'", "'00000000-0000-0000-0000-000000000001'"]),
    ("INTERVAL", ["INTERVAL '1 year 14 months 3 days 04:05:06.789'"]),
    ("INTERVAL", ["INTERVAL '-1 day -2 hours'"]),
    ("INTERVAL", ["INTERVAL '0 days'"]),
    ("INTERVAL", ["INTERVAL '-1 month'"]),
    ("TIMETZ", ["TIMETZ '12:00:00.5+05:30'"]),
    ("TIMETZ", ["TIMETZ '23:00:00-05'"]),
]


def test_inlined_value_text_equals_duckdb_table_stats(tmp_path: Path) -> None:
    # A non-UTC session proves that inlined timestamptz stats are rendered in UTC anyway.
    con = _connect(tmp_path, time_zone="America/New_York")
    cat = Lake(tmp_path)
    columns = [(f"c{i}", typ) for i, (typ, _) in enumerate(INLINED)]
    con.execute(f"CREATE TABLE l.inl ({', '.join(f'{n} {t}' for n, t in columns)})")
    rows = max(len(lits) for _, lits in INLINED) + 1  # + one all-NULL row
    values = []
    for r in range(rows):
        values.append(
            "("
            + ", ".join(
                f"({lits[r]})::{typ}" if r < len(lits) else f"NULL::{typ}" for typ, lits in INLINED
            )
            + ")"
        )
    con.execute(f"INSERT INTO l.inl VALUES {', '.join(values)}")
    assert not cat.files("inl"), "rows must be inlined"
    duck = cat.table_stats("inl")
    names = {v: k for k, v in cat.names("inl").items()}
    data = con.execute("SELECT * FROM l.inl").to_arrow_table()
    py_rows = con.execute("SELECT * FROM l.inl").fetchall()  # timetz keeps its offset here
    for i, (name, typ) in enumerate(columns):
        lake_type = LakeType.parse(_lake_spelling(typ))
        values_py = (
            [row[i] for row in py_rows] if typ == "TIMETZ" else data.column(name).to_pylist()
        )
        texts = [inlined_value_text(v, lake_type) for v in values_py if v is not None]
        theirs = duck[names[name]]
        assert theirs.contains_null is True
        if len(texts) == 1:  # no order needed (interval, timetz)
            assert (texts[0], texts[0]) == (theirs.min_value, theirs.max_value), typ
        else:
            assert _fold(texts, lake_type) == (theirs.min_value, theirs.max_value), typ
    con.close()


def _lake_spelling(duck_type: str) -> str:
    spelled = {
        "TINYINT": "int8",
        "SMALLINT": "int16",
        "INTEGER": "int32",
        "BIGINT": "int64",
        "HUGEINT": "int128",
        "UTINYINT": "uint8",
        "USMALLINT": "uint16",
        "UINTEGER": "uint32",
        "UBIGINT": "uint64",
        "FLOAT": "float32",
        "DOUBLE": "float64",
        "BOOLEAN": "boolean",
        "DATE": "date",
        "TIME": "time",
        "TIMESTAMP": "timestamp",
        "TIMESTAMP_S": "timestamp_s",
        "TIMESTAMP_MS": "timestamp_ms",
        "TIMESTAMP_NS": "timestamp_ns",
        "TIMESTAMPTZ": "timestamptz",
        "VARCHAR": "varchar",
        "BLOB": "blob",
        "UUID": "uuid",
        "INTERVAL": "interval",
        "TIMETZ": "timetz",
    }
    return spelled.get(duck_type, duck_type.lower())


# ---------------------------------------------------------------------------------------------
# Widening table stats == DuckDB's merge (where DuckDB is right)
# ---------------------------------------------------------------------------------------------

WIDEN_COLUMNS = (
    "i INT, d DOUBLE, h HUGEINT, v VARCHAR, ts TIMESTAMP, dec DECIMAL(9,2), late INT, b BOOLEAN"
)


def _same_bound(a: str | None, b: str | None, lake_type: LakeType) -> bool:
    if a is None or b is None:
        return a is b
    return compare_encoded(a, b, lake_type) == 0


def test_widen_matches_duckdb_merges(tmp_path: Path) -> None:
    con = _connect(tmp_path)
    cat = Lake(tmp_path)
    con.execute(f"CREATE TABLE l.w ({WIDEN_COLUMNS})")
    steps = [
        "SELECT i, i * 0.5, i, 'm' || i, TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR, i * 1.25, "
        "NULL, i % 2 = 0 FROM range(20) r(i)",
        "SELECT i - 25, CASE WHEN i = 3 THEN 'nan'::DOUBLE ELSE i END, i - 5, 'a' || i, "
        "TIMESTAMP '2023-06-01 00:00:00.5' + INTERVAL (i) DAY, i * -3.5, i + 100, true "
        "FROM range(20) r(i)",
        "VALUES (1000, 1e300, 1000, 'zz', TIMESTAMP '2030-01-01', 99.99, 7, false), "
        "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",  # inlined
        "SELECT i * 2, -i, i, 'q' || i, TIMESTAMP '2000-01-01' + INTERVAL (i) MINUTE, i, -i, "
        "i % 2 = 1 FROM range(20) r(i)",
    ]
    leaves = cat.leaves("w")
    types = dict(leaves.values())
    seen_files: set[int] = set()
    had_values: dict[int, bool] = {}
    ours: dict[int, TableColumnStats] = {}
    before: dict[int, TableColumnStats] = {}
    for step in steps:
        con.execute(f"INSERT INTO l.w {step}")
        after = cat.table_stats("w")
        new_files = [(fid, p) for fid, p in cat.files("w") if fid not in seen_files]
        if not new_files:  # an inlined insert: DuckDB's row becomes our current row
            ours = dict(after)
            had_values = dict.fromkeys(types, True)  # the inlined row has a value everywhere
            before = after
            continue
        ((file_id, path),) = new_files
        seen_files.add(file_id)
        duck_file = cat.file_stats(file_id)
        mine_file = {
            s.column_id: s
            for s in file_column_stats(pq.read_metadata(path), leaves, _nan_columns(duck_file))
        }
        tid = cat.table_id("w")
        for cid, lake_type in types.items():
            # 1. DuckDB's own file row merged into DuckDB's previous table row.
            merged = widen_table_column_stats(
                before.get(cid),
                tid,
                cid,
                duck_file[cid],
                lake_type,
                had_values=had_values.get(cid, False),
            )
            expected = after[cid]
            assert merged.contains_null == expected.contains_null, cid
            assert merged.contains_nan == expected.contains_nan, cid
            assert _same_bound(merged.min_value, expected.min_value, lake_type), (cid, merged)
            assert _same_bound(merged.max_value, expected.max_value, lake_type), (cid, merged)
            # 2. Our own file rows folded into our own table rows: equal, or NULL where our
            #    file row is NULL for a documented reason (float NaN unknowable from footers).
            mine = widen_table_column_stats(
                ours.get(cid),
                tid,
                cid,
                mine_file[cid],
                lake_type,
                had_values=had_values.get(cid, False),
            )
            for got, want in (
                (mine.min_value, expected.min_value),
                (mine.max_value, expected.max_value),
            ):
                assert got is None or _same_bound(got, want, lake_type), (cid, mine, expected)
                if got is None and want is not None:
                    assert lake_type.name == "float64"
            ours[cid] = mine
            had_values[cid] = had_values.get(cid, False) or bool(duck_file[cid].value_count)
        before = after
    con.close()


# ---------------------------------------------------------------------------------------------
# Unit tests: safety rules that DuckDB cannot demonstrate
# ---------------------------------------------------------------------------------------------


def _write(tmp_path: Path, table: pa.Table, **kwargs: Any) -> pq.FileMetaData:
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, **kwargs)
    return pq.read_metadata(path)


def test_skips_unmapped_leaves_and_counts_nested(tmp_path: Path) -> None:
    table = pa.table(
        {
            "a": pa.array([1, None, 3], pa.int32()),
            "l": pa.array([[1, None], None, []], pa.list_(pa.int64())),
            "_ducklake_internal_row_id": pa.array([0, 1, 2], pa.int64()),
        }
    )
    md = _write(tmp_path, table)
    rows = file_column_stats(md, {"a": (1, T("int32")), "l.list.element": (3, T("int64"))})
    assert [
        (r.column_id, r.value_count, r.null_count, r.min_value, r.max_value) for r in rows
    ] == [(1, 2, 1, "1", "3"), (3, 1, 3, "1", "1")]


def test_all_null_and_empty_columns(tmp_path: Path) -> None:
    md = _write(tmp_path, pa.table({"f": pa.array([None, None], pa.float64())}))
    (row,) = file_column_stats(md, {"f": (1, T("float64"))})
    assert (row.value_count, row.null_count, row.min_value, row.contains_nan) == (
        0,
        2,
        None,
        False,
    )


def test_float_nan_rules(tmp_path: Path) -> None:
    md = _write(tmp_path, pa.table({"f": pa.array([1.5, float("nan"), -2.0], pa.float32())}))
    leaves = {"f": (1, T("float32"))}
    (unknown,) = file_column_stats(md, leaves)
    assert (unknown.min_value, unknown.max_value, unknown.contains_nan) == (None, None, None)
    (known,) = file_column_stats(md, leaves, {1: True})
    assert (known.min_value, known.max_value, known.contains_nan) == ("-2.0", "1.5", True)
    assert known.value_count == 3  # NaN is a value


def test_long_strings_have_no_bounds_and_counts_stay(tmp_path: Path) -> None:
    md = _write(tmp_path, pa.table({"s": ["x" * 5000, "y"]}))  # pyarrow drops stats > 4 KiB
    (row,) = file_column_stats(md, {"s": (1, T("varchar"))})
    assert (row.min_value, row.max_value, row.value_count, row.null_count) == (None, None, 2, 0)


def test_unsafe_conversions_give_null(tmp_path: Path) -> None:
    table = pa.table(
        {
            "naive": pa.array([datetime(2024, 1, 1, 12)], pa.timestamp("us")),
            "aware": pa.array([datetime(2024, 1, 1, 12)], pa.timestamp("us", tz="UTC")),
            "ns": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns")),
            "dec": pa.array([Decimal("1.25")], pa.decimal128(5, 2)),
            "big": pa.array([300], pa.int32()),
            "s": pa.array(["00000000-0000-0000-0000-000000000001"]),
        }
    )
    md = _write(tmp_path, table)
    leaves = {
        "naive": (1, T("timestamptz")),  # would go through the session TimeZone
        "aware": (2, T("timestamp")),
        "ns": (3, T("timestamp")),  # sub-microsecond digits would be rounded
        "dec": (4, T("decimal(5,1)")),  # 1.25 is not a decimal(5,1)
        "big": (5, T("int8")),
        "s": (6, T("uuid")),
    }
    assert all(r.min_value is None and r.max_value is None for r in file_column_stats(md, leaves))
    exact = file_column_stats(
        md, {"dec": (4, T("decimal(9,4)")), "big": (5, T("int64")), "aware": (2, T("timestamptz"))}
    )
    assert [(r.min_value, r.max_value) for r in exact] == [
        ("2024-01-01 12:00:00+00", "2024-01-01 12:00:00+00"),
        ("1.2500", "1.2500"),
        ("300", "300"),
    ]


def test_chunk_bounds_reject_deprecated_and_inexact_fields() -> None:
    kind = file_stats._Kind("string")
    lake_type = T("varchar")

    def bounds(raw: dict[int, Any], ordered: bool = True) -> tuple[str | None, str | None]:
        return file_stats._chunk_bounds(raw, ordered, True, kind, "BYTE_ARRAY", lake_type)

    assert bounds({6: b"a", 5: b"z"}) == ("a", "z")
    assert bounds({2: b"a", 1: b"z"}) == (None, None)  # deprecated min/max only
    assert bounds({6: b"a", 5: b"z"}, ordered=False) == (None, None)  # no column order
    assert bounds({6: b"a", 5: b"z", 7: False}) == ("a", None)  # max truncated
    assert bounds({6: b"z", 5: b"a"}) == (None, None)  # min > max: broken footer


def test_encode_value_python_types() -> None:
    assert encode_value(0.1, T("float32")) == "0.1"
    assert encode_value(0.1, T("float64")) == "0.1"
    assert encode_value(1e16, T("float64")) == "1e+16"
    assert encode_value(float("-inf"), T("float32")) == "-inf"
    assert encode_value(Decimal("-0.5"), T("decimal(9,9)")) == "-.500000000"
    assert encode_value(Decimal("1.005"), T("decimal(4,2)")) is None
    assert encode_value(3, T("decimal(18,3)")) == "3.000"
    assert encode_value(True, T("boolean")) == "1"
    assert encode_value(date(2024, 2, 29), T("date")) == "2024-02-29"
    assert encode_value(time(1, 2, 3, 400), T("time")) == "01:02:03.0004"
    assert encode_value(datetime(2024, 1, 1, 0, 0, 0, 120000), T("timestamp_ms")) == (
        "2024-01-01 00:00:00.12"
    )
    assert encode_value(datetime(2024, 1, 1, 0, 0, 0, 1), T("timestamp_ms")) is None
    aware = datetime(2024, 1, 1, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    assert encode_value(aware, T("timestamptz")) == "2023-12-31 23:30:00+00"
    assert encode_value(aware, T("timestamp")) is None
    assert encode_value(b"\x00\xab", T("blob")) == "00AB"
    assert encode_value(uuid.UUID(int=1), T("uuid")) == "00000000-0000-0000-0000-000000000001"
    assert encode_value("ABCDEF00-0000-0000-0000-000000000000", T("uuid")) == (
        "abcdef00-0000-0000-0000-000000000000"
    )
    assert encode_value(300, T("int8")) is None
    assert encode_value(5, T("int128")) is None
    assert encode_value(None, T("int32")) is None
    pandas = pytest.importorskip("pandas")
    assert encode_value(pandas.Timestamp("2024-01-15 12:30:00.123456789"), T("timestamp_ns")) == (
        "2024-01-15 12:30:00.123456789"
    )


def test_inlined_value_text_python_types() -> None:
    assert inlined_value_text(False, T("boolean")) == "false"
    assert inlined_value_text(timedelta(days=-1, seconds=5), T("interval")) == "-1 day 00:00:05"
    assert inlined_value_text(b"\x01\x02a\xff", T("blob")) == "\\x01\\x02a\\xFF"
    assert inlined_value_text(float("nan"), T("float64")) == "nan"
    assert inlined_value_text(Decimal(5), T("int128")) == "5"
    assert inlined_value_text(timedelta(days=1, hours=2), T("interval")) == "1 day 02:00:00"
    assert inlined_value_text(time(12, 0, tzinfo=timezone(timedelta(hours=2))), T("timetz")) == (
        "12:00:00+02"
    )


def test_compare_encoded_orders_by_value() -> None:
    assert compare_encoded("9", "10", T("int32")) == -1
    assert compare_encoded("18446744073709551615", "2", T("uint64")) == 1
    assert compare_encoded("nan", "inf", T("float64")) == 1
    assert compare_encoded("-0.0", "0.0", T("float64")) == 0
    assert compare_encoded("1e+20", "99.5", T("float64")) == 1
    assert compare_encoded("-.100000000", ".500000000", T("decimal(9,9)")) == -1
    assert compare_encoded("0044-03-15 (BC)", "0001-01-01", T("date")) == -1
    assert compare_encoded("-infinity", "0044-03-15 (BC)", T("date")) == -1
    assert (
        compare_encoded("2024-01-15 10:30:00.5+00", "2024-01-15 12:00:00+02", T("timestamptz"))
        == 1
    )
    assert (
        compare_encoded("2024-01-15 12:30:00.12", "2024-01-15 12:30:00.119", T("timestamp_ms"))
        == 1
    )
    assert compare_encoded("24:00:00", "23:59:59.999999", T("time")) == 1
    assert compare_encoded("Z", "é", T("varchar")) == -1
    assert compare_encoded("FF", "\\x01", T("blob")) == 1
    assert compare_encoded("false", "1", T("boolean")) == -1
    with pytest.raises(ValueError):
        compare_encoded("1 day", "2 days", T("interval"))
    with pytest.raises(ValueError):
        compare_encoded("yes", "true", T("boolean"))
    with pytest.raises(ValueError):
        compare_encoded("1.5", "abc", T("decimal(4,1)"))


def _fs(
    values: int | None,
    lo: str | None,
    hi: str | None,
    nulls: int | None = 0,
    nan: bool | None = None,
) -> FileColumnStats:
    return FileColumnStats(7, 100, values, nulls, lo, hi, nan)


def test_widen_null_bounds_need_had_values() -> None:
    i32 = T("int32")
    first = widen_table_column_stats(None, 1, 7, _fs(3, "5", "9"), i32)
    assert first == TableColumnStats(1, 7, False, None, "5", "9")
    wider = widen_table_column_stats(first, 1, 7, _fs(2, "-1", "7", nulls=1), i32)
    assert wider == TableColumnStats(1, 7, True, None, "-1", "9")
    assert widen_table_column_stats(wider, 1, 7, _fs(0, None, None, nulls=4), i32) == wider
    all_null = widen_table_column_stats(None, 1, 7, _fs(0, None, None, nulls=4), i32)
    assert (all_null.min_value, all_null.max_value, all_null.contains_null) == (None, None, True)
    # NULL because nothing was there yet: the new bounds are the table bounds.
    adopted = widen_table_column_stats(all_null, 1, 7, _fs(2, "3", "4"), i32, had_values=False)
    assert (adopted.min_value, adopted.max_value) == ("3", "4")
    # NULL because unknown (DuckDB's bug would adopt "3".."4" here): stays unknown.
    for flag in (True, None):
        kept = widen_table_column_stats(all_null, 1, 7, _fs(2, "3", "4"), i32, had_values=flag)
        assert (kept.min_value, kept.max_value) == (None, None)
    # New values with unknown bounds make the table bounds unknown.
    lost = widen_table_column_stats(wider, 1, 7, _fs(None, None, None, nulls=None), i32)
    assert (lost.min_value, lost.max_value, lost.contains_null) == (None, None, True)
    # A column whose older rows were never counted (e.g. added by ALTER): prior state unknown.
    late = widen_table_column_stats(None, 1, 7, _fs(2, "3", "4"), i32, had_values=True)
    assert (late.min_value, late.max_value, late.contains_null) == (None, None, None)


def test_widen_float_nan_and_uncomparable_types() -> None:
    f64 = T("float64")
    start = widen_table_column_stats(None, 1, 7, _fs(2, "1.5", "2.5", nan=False), f64)
    assert start.contains_nan is False
    nan = widen_table_column_stats(start, 1, 7, _fs(2, "-inf", "1.0", nan=True), f64)
    assert (nan.contains_nan, nan.min_value, nan.max_value) == (True, "-inf", "2.5")
    inlined = TableColumnStats(1, 7, False, None, "0.5", "nan")  # after a DuckDB inlined insert
    merged = widen_table_column_stats(inlined, 1, 7, _fs(2, "0.1", "9.0", nan=False), f64)
    assert (merged.contains_nan, merged.min_value, merged.max_value) == (None, "0.1", "nan")
    interval = TableColumnStats(1, 7, False, None, "1 day", "2 days")
    widened = widen_table_column_stats(interval, 1, 7, _fs(1, "3 days", "3 days"), T("interval"))
    assert (widened.min_value, widened.max_value) == (None, None)
