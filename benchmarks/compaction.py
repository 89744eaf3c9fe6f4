"""Scanning many small files, before and after merging adjacent files.

A table receives ``--scale`` (default 1,000) small commits of ``--rows-per-file`` rows each,
with inlining off, so it holds that many small Parquet files (the state a streaming job without
inlining leaves behind). DuckDB 1.5.5 makes the commits (one file each, cheaply). Then:

- ``ours``: a full scan with our reader (``LakeTable.read()`` + an aggregation that touches
  every row and two columns), ``--reps`` times after a warm-up;
- the files are merged with DuckDB's ``ducklake_merge_adjacent_files`` on the same lake (this
  branch has no merge API of its own yet), timed once;
- the same scan again over the merged files; DuckDB runs the same query before and after too.

Reported: scan time before and after, the speed-up, file counts, and the merge time.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

QUERY = "SELECT count(*), sum(v), count(DISTINCT g) FROM {t}"


def live_files(spec: C.LakeSpec, table: str) -> int:
    return spec.catalog_query(
        "SELECT count(*) FROM {s}ducklake_data_file f JOIN {s}ducklake_table t "
        "ON t.table_id = f.table_id AND t.end_snapshot IS NULL "
        "WHERE f.end_snapshot IS NULL AND t.table_name = :n", n=table)[0][0]


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "small files before compaction", 1_000)
    p.add_argument("--rows-per-file", type=int, default=1_000)
    args = p.parse_args()
    C.check_reps(args)
    C.banner("compaction", args)
    results = C.Results("compaction", args)
    from dbt.adapters.ducklake.spark import SparkLake

    spark = C.spark_session()
    files, rows = int(args.scale), args.rows_per_file
    with C.workdir(args) as root:
        spec = C.new_lake(root, "compaction", args.catalog)
        con = C.duckdb_connect()
        lake = None
        try:
            con.execute(spec.attach(data_inlining_row_limit=0))
            for name in ("t", "d"):
                con.execute(f"CREATE TABLE lake.main.{name} "
                            "(id BIGINT, g INTEGER, v DOUBLE, s VARCHAR)")
                with C.Timer() as load:
                    for i in range(files):
                        con.execute(
                            f"INSERT INTO lake.main.{name} SELECT i, i % 101, i * 0.5, "
                            f"'row ' || i FROM range({i * rows}, {(i + 1) * rows}) r(i)")
                print(f"   {name}: {files} commits in {load.seconds:.1f} s", flush=True)
            lake = SparkLake.open(spark, spec.catalog, spec.data_path, **spec.open_kwargs())
            table = lake.table("main.t")

            def ours() -> float:
                with C.Timer() as t:
                    table.read().createOrReplaceTempView("t")
                    spark.sql(QUERY.format(t="t")).collect()
                return t.seconds

            def duck() -> float:
                with C.Timer() as t:
                    con.execute(QUERY.format(t="lake.main.d")).fetchall()
                return t.seconds

            for phase in ("before", "after"):
                if phase == "after":
                    with C.Timer() as merge:
                        table.merge_adjacent_files()
                    results.add("ours", "merge adjacent files", merge.seconds)
                    with C.Timer() as merge:
                        con.execute("CALL ducklake_merge_adjacent_files('lake', 'd')")
                    results.add("duckdb", "merge adjacent files", merge.seconds)
                for system, name in (("ours", "t"), ("duckdb", "d")):
                    results.add(system, f"live files {phase}", live_files(spec, name), "files")
                ours()
                duck()
                for _ in range(args.reps):
                    results.add("ours", f"scan {phase}", ours())
                    results.add("duckdb", f"scan {phase}", duck())
        finally:
            if lake is not None:
                lake.close()
            con.close()
            spec.drop()
    results.print_table()
    out = [{"metric": "merge adjacent files", "system": "ours", "baseline": "duckdb",
            "ratio": results.get("ours", "merge adjacent files")
            / results.get("duckdb", "merge adjacent files"), "target": ""}]
    for system in ("ours", "duckdb"):
        ratio = results.get(system, "scan before") / results.get(system, "scan after")
        print(f"{system}: scan over {files} small files / after merging = {ratio:.2f}x")
        out.append({"metric": "scan speed-up from compaction", "system": system,
                    "baseline": "after merge", "ratio": ratio, "target": ""})
    ours_vs_duck = results.get("ours", "scan after") / results.get("duckdb", "scan after")
    out.append({"metric": "scan after", "system": "ours", "baseline": "duckdb",
                "ratio": ours_vs_duck, "target": ""})
    print(f"ours / duckdb after merging: {ours_vs_duck:.2f}x\n")
    results.save(out)


if __name__ == "__main__":
    main()
