"""Atomic publish: the cost of a branch (the catalog copy) and of its publish, by catalog size.

A lake gets ``--tables`` tables and ``--scale`` (default 2,000) Parquet files spread over them,
made by DuckDB 1.5.5 (one small INSERT per file, inlining off). For two catalog sizes (a
quarter of the files, then all of them), ``--reps`` times:

- ``copy``: ``Branch.open(lake)``: the SQLite online backup, or the PostgreSQL schema copy;
- ``publish 1 table`` / ``publish N tables``: DuckDB, attached to the branch's catalog (it is
  a real DuckLake catalog), appends one file to one table / to every table; then
  ``branch.publish()`` replays that as one snapshot on the lake (reading the delta, the
  commit, and dropping the copy).

No Spark: the writes are DuckDB's, the copy and the publish are the library's. The publish
should scale with the tables and files it touches, not with the catalog's size; the copy
scales with the catalog.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

ROWS_PER_FILE = 20


def fill(con, tables: int, files: int, start: int) -> None:  # noqa: ANN001
    """``files`` more one-file INSERT commits, round-robin over the tables."""
    for i in range(start, start + files):
        con.execute(f"INSERT INTO lake.main.t{i % tables} SELECT r, r * 0.5, 'row ' || r "
                    f"FROM range({i * ROWS_PER_FILE}, {(i + 1) * ROWS_PER_FILE}) x(r)")


def branch_attach(spec: C.LakeSpec, branch) -> str:  # noqa: ANN001
    """DuckDB's ATTACH for the branch's private catalog."""
    cat = branch.catalog
    if cat.dialect == "sqlite":
        return (f"ATTACH 'ducklake:sqlite:{cat.target.sqlite_path}' AS br "
                f"(DATA_PATH '{spec.data_path}', DATA_INLINING_ROW_LIMIT 0)")
    return (f"ATTACH 'ducklake:postgres:{C.PG_CONNINFO}' AS br (DATA_PATH "
            f"'{spec.data_path}', METADATA_SCHEMA '{cat.metadata_schema}', "
            "DATA_INLINING_ROW_LIMIT 0)")


def measure(results: C.Results, spec: C.LakeSpec, lake, con, tables: int,  # noqa: ANN001
            label: str, reps: int) -> None:
    from dbt.adapters.ducklake.lake.branch import Branch

    for _ in range(reps):
        for touched in (1, tables):
            with C.Timer() as copy:
                branch = Branch.open(lake)
            results.add("ours", f"copy ({label})", copy.seconds)
            con.execute(branch_attach(spec, branch))
            for t in range(touched):
                con.execute(f"INSERT INTO br.main.t{t} SELECT r, r * 0.5, 'b' FROM "
                            f"range({ROWS_PER_FILE}) x(r)")
            con.execute("DETACH br")
            with C.Timer() as pub:
                snap = branch.publish(commit_message="benchmark")
            assert snap is not None
            results.add("ours", f"publish {touched} table(s) ({label})", pub.seconds)


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "Parquet files in the lake", 2_000)
    p.add_argument("--tables", type=int, default=20)
    args = p.parse_args()
    C.check_reps(args)
    C.banner("publish", args)
    results = C.Results("publish", args)
    from dbt.adapters.ducklake.lake import Catalog

    files, tables = int(args.scale), args.tables
    with C.workdir(args) as root:
        spec = C.new_lake(root, "publish", args.catalog)
        con = C.duckdb_connect()
        lake = None
        try:
            con.execute(spec.attach(data_inlining_row_limit=0))
            for t in range(tables):
                con.execute(f"CREATE TABLE lake.main.t{t} (id BIGINT, v DOUBLE, s VARCHAR)")
            done = 0
            lake = Catalog.open(spec.catalog, spec.data_path, **spec.open_kwargs())
            for size in (files // 4, files):
                with C.Timer() as load:
                    fill(con, tables, size - done, done)
                done = size
                rows = spec.catalog_rows()
                label = f"{size} files"
                print(f"   {label}: loaded in {load.seconds:.1f} s; {rows} catalog rows",
                      flush=True)
                results.add("ours", f"catalog rows ({label})", rows, "rows")
                measure(results, spec, lake, con, tables, label, args.reps)
        finally:
            if lake is not None:
                lake.close()
            con.close()
            spec.drop()
    results.print_table()
    results.save()


if __name__ == "__main__":
    main()
