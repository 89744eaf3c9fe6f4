"""The schema-evolution sweep: every schema change x every place a row lives x every read.

One table per storage case goes through the same sequence of schema changes (:data:`STEPS`),
made by DuckDB and, where we support the same change from Spark (top-level ADD / RENAME /
DROP COLUMN, type promotion, SET PARTITIONED BY), by us through the statement engine. After
each change the case writes rows in its place (:data:`CASES`), so rows written under every
earlier schema are read under every later one. Then, with DuckDB 1.5.5 as the oracle, we check

* time travel at every snapshot of the table (columns and values, nested ones included),
* the latest state,
* the change feed over a representative set of ranges (:func:`ranges`): every single
  snapshot ``[s, s]``, the whole history, its two halves, and three-snapshot windows from
  every third snapshot. All n²/2 ranges (~150 per case) would cost minutes of Spark per
  case: a change feed over a table with many schema versions plans one scan per version.

The schema changes cover: add / drop / rename a top-level column (by both engines); add /
drop / rename a nested field at depth 2 (a struct in a struct) and 3 (a struct in a struct in
a list), and in a map's value; add a whole struct field; type promotions int8 → int16 → int32
→ int64, float → double, int32 → double; defaults of added columns (top-level and nested)
for old rows, and ``SET DEFAULT`` for new rows that leave the column out.

Speed: one lake per case, with ~16 snapshots (changes are grouped into three steps); one
shared DuckDB connection. Each case still takes 10-30 s, most of it Spark planning and running
our reads (a change feed over several schema versions is a union of one scan per version); a
union of all reads into one Spark job was tried and is far slower (Catalyst on a plan of 50
branches). So every case is marked slow, and on PostgreSQL only the cases whose rows live in
the catalog (inlined, flushed) run: the Parquet cases read the same catalog rows through the
same queries on both backends. ``DUCKLAKE_SWEEP_ALL_RANGES=1`` checks every range.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from oracle import duckdb_connect, rows, spark_rows
from pyspark.sql import DataFrame

from dbt.adapters.ducklake.lake.models import ColumnInfo
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark

CREATE = (
    "CREATE TABLE lake.t (id INTEGER, a TINYINT, f FLOAT, n INTEGER, "
    "s STRUCT(x INTEGER, n STRUCT(p SMALLINT, q VARCHAR)), "
    "l STRUCT(k INTEGER, m STRUCT(u INTEGER))[], m MAP(VARCHAR, STRUCT(p INTEGER)), "
    "gone VARCHAR, gone2 INTEGER, r VARCHAR, w VARCHAR)")

# Who makes each change and its ALTER TABLE clauses; a DuckDB step is one transaction (one
# snapshot), a Spark step one statement per clause. Rows are written after each step.
STEPS: list[tuple[str, list[str]]] = [
    ("duckdb", ["ADD COLUMN c1 VARCHAR DEFAULT 'dflt'", "ALTER COLUMN a TYPE SMALLINT",
                "ADD COLUMN s.n.t INTEGER DEFAULT 5", "ADD COLUMN l.element.m.v VARCHAR",
                "RENAME COLUMN r TO r_d", "RENAME COLUMN s.n.q TO q2", "DROP COLUMN gone",
                "DROP COLUMN s.n.p", "ALTER COLUMN f TYPE DOUBLE"]),
    ("spark", ["ADD COLUMN c2 INT DEFAULT 42", "ALTER COLUMN a TYPE INT",
               "RENAME COLUMN w TO w_s", "DROP COLUMN gone2"]),
    ("duckdb", ["RENAME COLUMN l.element.m TO mm", "DROP COLUMN l.element.k",
                "ALTER COLUMN n TYPE DOUBLE", "ALTER COLUMN a TYPE BIGINT",
                "ADD COLUMN m.value.q INTEGER", "ADD COLUMN s.z STRUCT(w INTEGER, y INTEGER[])",
                "ALTER COLUMN c1 SET DEFAULT 'newd'"]),
]
FINAL_SCHEMA = (
    "struct<id:int,a:bigint,f:double,n:double,s:struct<x:int,n:struct<q2:string,t:int>,"
    "z:struct<w:int,y:array<int>>>,l:array<struct<mm:struct<u:int,v:string>>>,"
    "m:map<string,struct<p:int,q:int>>,r_d:string,w_s:string,c1:string,c2:int>")


# ------------------------------------------------------------------------------ values
def value(column: ColumnInfo, i: int) -> Any:
    """A deterministic value of ``column`` for row ``i``: NULLs at every level, empty and
    longer lists and maps, and numbers that need the promoted type."""
    key = i * 13 + column.column_id * 7
    kind = column.type.name
    if column.column_name != "id" and key % 9 == 4:
        return None
    if kind == "struct":
        return {c.column_name: value(c, i + 1) for c in column.children}
    if kind == "list":
        return [value(column.children[0], i + 3 * j) for j in range(i % 3)]
    if kind == "map":
        return [(f"k{j}", value(column.children[1], i + 5 * j)) for j in range(i % 3)]
    if column.column_name == "id":
        return i
    scale = {"int8": 1, "int16": 100, "int32": 100_000, "int64": 10**12}
    if kind in scale:
        return (key % 200 - 100) * scale[kind] + (key % 7 if kind != "int8" else 0)
    if kind == "float32":
        return (key % 64) / 4 - 8
    if kind == "float64":
        return key / 8 + 1e10
    return f"v{key}"


def sql_literal(v: Any, column: ColumnInfo) -> str:
    if v is None:
        return "NULL"
    kind = column.type.name
    if kind == "struct":
        return "{" + ", ".join(f"'{c.column_name}': {sql_literal(v[c.column_name], c)}"
                               for c in column.children) + "}"
    if kind == "list":
        return "[" + ", ".join(sql_literal(x, column.children[0]) for x in v) + "]"
    if kind == "map":
        return "MAP {" + ", ".join(f"'{k}': {sql_literal(x, column.children[1])}"
                                   for k, x in v) + "}"
    if kind == "varchar":
        return f"'{v}'"
    return repr(v)


_ARROW = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
          "float32": pa.float32(), "float64": pa.float64(), "varchar": pa.string()}


def arrow_type(column: ColumnInfo) -> pa.DataType:
    kind = column.type.name
    if kind == "struct":
        return pa.struct([pa.field(c.column_name, arrow_type(c)) for c in column.children])
    if kind == "list":
        return pa.list_(arrow_type(column.children[0]))
    if kind == "map":
        return pa.map_(arrow_type(column.children[0]), arrow_type(column.children[1]))
    return _ARROW[kind]


# ------------------------------------------------------------------------------ the sweep
@dataclass
class Sweep:
    """One lake, one table ``main.t``: the writers and compactions the cases combine."""

    spark: Any
    lake: Any
    duck: Any
    target: Any
    tmp_path: Any
    engine: Any = None
    next_id: int = 0
    files: int = 0

    def __post_init__(self) -> None:
        self.engine = Engine(self.spark, self.lake, ViewRegistry(self.spark, self.lake))

    @property
    def table(self) -> Any:
        return self.lake.table("main.t")

    def duckdb(self, *statements: str) -> None:
        for sql in statements:
            self.duck.execute(sql).fetchall()

    def columns(self) -> list[ColumnInfo]:
        return self.table.columns()

    def values(self, n: int) -> tuple[list[ColumnInfo], list[list[Any]]]:
        cols = self.columns()
        out = []
        for _ in range(n):
            out.append([value(c, self.next_id) for c in cols])
            self.next_id += 1
        return cols, out

    # writers -----------------------------------------------------------------
    def duck_insert(self, n: int = 3, omit_defaults: bool = False) -> None:
        """DuckDB INSERTs ``n`` rows (inlined or Parquet, as the lake's limit says);
        ``omit_defaults`` leaves out the columns that have a default."""
        cols, data = self.values(n)
        keep = [k for k, c in enumerate(cols)
                if not (omit_defaults and c.default_value not in (None, "NULL"))]
        names = ", ".join(f'"{cols[k].column_name}"' for k in keep)
        tuples = ", ".join("(" + ", ".join(sql_literal(r[k], cols[k]) for k in keep) + ")"
                           for r in data)
        self.duckdb(f"INSERT INTO lake.t ({names}) VALUES {tuples}")

    def arrow(self, n: int) -> pa.Table:
        cols, data = self.values(n)
        return pa.table({c.column_name: pa.array([r[k] for r in data], arrow_type(c))
                         for k, c in enumerate(cols)})

    def spark_append(self, n: int = 3) -> None:
        """We append ``n`` rows (inlined or Parquet, as the lake's limit says)."""
        self.table.append(self.spark.createDataFrame(self.arrow(n)))

    def add_file(self, n: int = 4) -> None:
        """A Parquet file written outside the lake (no field ids), added by DuckDB's
        ``ducklake_add_data_files`` with a name mapping."""
        path = self.tmp_path / "outside" / f"added{self.files}.parquet"
        path.parent.mkdir(exist_ok=True)
        self.files += 1
        pq.write_table(self.arrow(n), str(path))
        self.lake.catalog.allow_reads_from(str(path.parent))  # outside the data path
        self.duckdb(f"CALL ducklake_add_data_files('lake', 't', '{path}')")

    def reattach(self) -> None:
        """After our flush drops emptied inlined-data tables, DuckDB must attach again (as
        after another DuckDB process's flush)."""
        self.duck.execute("DETACH lake")
        self.duck.execute(self.target.duckdb_attach)

    # changes -----------------------------------------------------------------
    def alter(self, who: str, clauses: list[str]) -> None:
        if who == "duckdb":
            self.duckdb("BEGIN", *[f"ALTER TABLE lake.t {c}" for c in clauses], "COMMIT")
        else:
            for clause in clauses:
                self.engine.execute(f"ALTER TABLE main.t {clause}")

    def duck_update_delete(self, update: str, delete: str) -> None:
        self.duckdb(f"UPDATE lake.t SET w_s = 'upd', n = -n WHERE {update}"
                    if self.has("w_s") else f"UPDATE lake.t SET w = 'upd', n = -n WHERE {update}",
                    f"DELETE FROM lake.t WHERE {delete}")

    def spark_update_delete(self, update: str, delete: str) -> None:
        column = "w_s" if self.has("w_s") else "w"
        self.table.update({column: "'upd'", "n": "-n"}, where=update)
        self.table.delete(delete)

    def has(self, name: str) -> bool:
        return any(c.column_name == name for c in self.columns())


@dataclass(frozen=True)
class Case:
    """A place rows live: how rows are written after each step (``write(sweep, step)``,
    step -1 before the first change), what else happens after a step (``after``), the
    updates and deletes (``modify``), and the last maintenance (``finish``)."""

    write: Callable[[Sweep, int], None]
    inlining: bool = True
    after: Callable[[Sweep, int], None] = lambda sw, step: None
    modify: str = "duckdb"
    finish: Callable[[Sweep], None] = lambda sw: None


def _both(sw: Sweep, step: int) -> None:
    """DuckDB and we take turns; DuckDB leaves out the columns with defaults once they
    have them."""
    if step in (0, 2):
        sw.spark_append()
    if step != 0:
        sw.duck_insert(omit_defaults=step > 0)


def _merged_write(sw: Sweep, step: int) -> None:
    """Two small files per schema version (a merge never crosses one): DuckDB's and ours."""
    sw.duck_insert(2, omit_defaults=step > 0)
    sw.spark_append(2)


def _flushed_after(sw: Sweep, step: int) -> None:
    if step == 0:  # rows inlined under two schema versions
        sw.duckdb("CALL ducklake_flush_inlined_data('lake')")


def _merged_after(sw: Sweep, step: int) -> None:
    if step == 1:
        sw.duckdb("CALL ducklake_merge_adjacent_files('lake')")


def _rewritten_after(sw: Sweep, step: int) -> None:
    if step == 1:
        sw.duckdb("DELETE FROM lake.t WHERE id % 4 <> 0",
                  "CALL ducklake_rewrite_data_files('lake', delete_threshold => 0.5)")


def _partitioned_after(sw: Sweep, step: int) -> None:
    if step == -1:
        sw.duckdb("ALTER TABLE lake.t SET PARTITIONED BY (r)")  # r is renamed later
    if step == 1:
        sw.engine.execute("ALTER TABLE main.t SET PARTITIONED BY (c2, bucket(2, id))")


def _flush_ours(sw: Sweep) -> None:
    sw.table.flush_inlined_data()
    sw.reattach()


def _merge_ours(sw: Sweep) -> None:
    sw.table.merge_adjacent_files()
    sw.reattach()


def _rewrite_ours(sw: Sweep) -> None:
    sw.table.delete("id % 2 = 0")  # half of each later file, all of some rewritten ones
    sw.table.rewrite_data_files(delete_threshold=0.5)
    sw.reattach()


CASES: dict[str, Case] = {
    "duckdb_parquet": Case(lambda sw, step: sw.duck_insert(omit_defaults=step > 0),
                           inlining=False),
    "spark_parquet": Case(lambda sw, step: sw.spark_append(), inlining=False, modify="spark"),
    "duckdb_inlined": Case(lambda sw, step: sw.duck_insert(omit_defaults=step > 0)),
    "spark_inlined": Case(lambda sw, step: sw.spark_append(), modify="spark"),
    "flushed": Case(_both, after=_flushed_after, finish=_flush_ours),
    "merged": Case(_merged_write, inlining=False, after=_merged_after, finish=_merge_ours),
    "rewritten": Case(_merged_write, inlining=False, after=_rewritten_after,
                      finish=_rewrite_ours, modify="spark"),
    "added": Case(lambda sw, step: sw.add_file()),
    "partitioned": Case(_both, inlining=False, after=_partitioned_after),
}


def build(sw: Sweep, case: Case) -> list[int]:
    """Run the case; the table's snapshot ids, creation first."""
    sw.duckdb(CREATE)
    if not case.inlining:
        sw.duckdb("CALL lake.set_option('data_inlining_row_limit', 0)")
    first = sw.lake.current_snapshot().snapshot_id
    case.write(sw, -1)
    case.after(sw, -1)
    for step, (who, clauses) in enumerate(STEPS):
        sw.alter(who, clauses)
        case.write(sw, step)
        case.after(sw, step)
        if step == 1:  # rows of every place so far are updated and deleted
            modify = sw.duck_update_delete if case.modify == "duckdb" else sw.spark_update_delete
            modify("id % 4 = 1", "id % 8 = 2")
    modify = sw.duck_update_delete if case.modify == "duckdb" else sw.spark_update_delete
    modify("id % 4 = 3", "id % 8 = 6")
    case.finish(sw)
    last = sw.lake.current_snapshot().snapshot_id
    return list(range(first, last + 1))


def ranges(snapshots: list[int]) -> list[tuple[int, int]]:
    """Every single snapshot, the whole history, its two halves, and a window of three
    snapshots starting at every third one; every range ``a <= b`` with
    ``DUCKLAKE_SWEEP_ALL_RANGES=1`` (minutes per case: run by hand, not in CI)."""
    if os.environ.get("DUCKLAKE_SWEEP_ALL_RANGES") == "1":
        return [(a, b) for i, a in enumerate(snapshots) for b in snapshots[i:]]
    first, last, mid = snapshots[0], snapshots[-1], snapshots[len(snapshots) // 2]
    out = {(first, last), (first, mid), (mid, last)}
    out |= {(s, s) for s in snapshots}
    out |= {(s, snapshots[k + 2]) for k, s in enumerate(snapshots[:-2]) if k % 3 == 0}
    return sorted(out)


# ------------------------------------------------------------------------------ checking
def check(sw: Sweep, snapshots: list[int]) -> None:
    """Every snapshot read, the latest state and the change feed over :func:`ranges`, ours
    against DuckDB's, columns and values."""
    table = sw.table
    frames: dict[Any, DataFrame] = {("read", None): table.read()}
    queries = {("read", None): "SELECT * FROM lake.t"}
    for s in snapshots:
        frames[("read", s)] = table.read(version=s)
        queries[("read", s)] = f"SELECT * FROM lake.t AT (VERSION => {s})"
    for a, b in ranges(snapshots):
        frames[("changes", a, b)] = table.changes(a, b)
        queries[("changes", a, b)] = (
            f"SELECT * FROM ducklake_table_changes('lake', 'main', 't', {a}, {b})")
    failures = []
    for key, sql in queries.items():
        try:
            ours = spark_rows(frames[key])
        except Exception as exc:  # noqa: BLE001 - report every failing read at once
            failures.append(f"{key}: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        result = sw.duck.execute(sql)
        names = [d[0] for d in result.description]
        theirs = rows(result.fetchall())
        if frames[key].columns != names:
            failures.append(f"{key}: columns {frames[key].columns} != DuckDB's {names}")
        elif ours != theirs:
            only_ours = [r for r in ours if r not in theirs]
            only_theirs = [r for r in theirs if r not in ours]
            failures.append(f"{key}:\n  only ours  : {only_ours[:3]}\n"
                            f"  only DuckDB: {only_theirs[:3]}")
    assert not failures, f"{len(failures)} of {len(queries)} reads differ:\n" + "\n".join(
        failures[:8])


@pytest.fixture(scope="module")
def duck_connection() -> Iterator[Any]:
    con = duckdb_connect()
    yield con
    con.close()


@pytest.fixture
def duck(duck_connection, lake_target):  # noqa: ANN001, ANN201
    """The module's DuckDB connection, attached to this test's lake as ``lake``."""
    duck_connection.execute(lake_target.duckdb_attach)
    yield duck_connection
    duck_connection.execute("USE memory")
    duck_connection.execute("DETACH DATABASE IF EXISTS lake")


# the cases run on PostgreSQL too, whose rows the catalog holds in its own typed columns
# (inlined, and read back from there by a flush); see the module docstring
POSTGRES_CASES = {"duckdb_inlined", "spark_inlined", "flushed"}


# every case on SQLite; on PostgreSQL the cases whose rows or files the catalog holds
SWEEP = [pytest.param(place, "sqlite", id=f"sqlite-{place}") for place in CASES] + [
    pytest.param(place, "postgres", id=f"postgres-{place}", marks=pytest.mark.postgres)
    for place in CASES if place in POSTGRES_CASES]


@pytest.mark.slow
@pytest.mark.parametrize(("place", "lake_target"), SWEEP, indirect=["lake_target"])
def test_schema_sweep(place, spark, lake, duck, lake_target, tmp_path):  # noqa: ANN001
    sw = Sweep(spark, lake, duck, lake_target, tmp_path)
    snapshots = build(sw, CASES[place])
    assert sw.table.read().schema.simpleString() == FINAL_SCHEMA
    check(sw, snapshots)

