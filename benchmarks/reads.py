"""Reads: what a query over a lake table costs against a bare Parquet scan of the same files.

One table of ``--scale`` rows in ``--files`` files, partitioned by ``day`` (one file per day),
written by ``SparkLake.create_table(..., partition_by=["day"])``. Three queries, each timed as a
user waits for it (planning the read plus running the query), ``--reps`` times after a
warm-up, in one process:

- ``scan``: ``count(*), sum(v)`` over the whole table;
- ``day``: the same ``where day = <one day>``;
- ``ids``: ``count(*) where id between a and b`` (11 rows, one file).

Systems: ours (``LakeTable.read()``), ``spark.read.parquet(<table dir>)`` of the same files (Spark
prunes the hive directories for ``day``), and DuckDB's ``ducklake`` on the same lake. ``plan``
is ``LakeTable.read()`` alone (no Spark job). The script prints ``explain()`` of our whole-table
query, so what is timed can be seen.

Target: a whole-table read within 1.2x of the bare Parquet scan.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

QUERIES = ("scan", "day", "ids")


def main() -> None:  # noqa: PLR0915 - one linear script
    p = C.parser(__doc__.splitlines()[0], "rows in the table", 2_000_000)
    p.add_argument("--files", type=int, default=100, help="days, one file each")
    args = p.parse_args()
    C.check_reps(args)
    C.banner("reads", args)
    results = C.Results("reads", args)
    from pyspark.sql import functions as F

    from dbt.adapters.ducklake.spark import SparkLake

    rows, days = int(args.scale), args.files
    spark = C.spark_session()
    with C.workdir(args) as root:
        spec = C.new_lake(root, "reads", args.catalog)
        lake = SparkLake.open(spark, spec.catalog, spec.data_path, **spec.open_kwargs())
        con = C.duckdb_connect()
        try:
            data = spark.range(rows).selectExpr(
                "id", "id % 1000 AS v",
                f"date_add(DATE '2024-01-01', CAST(id * {days} DIV {rows} AS INT)) AS day")
            with C.Timer() as write:
                table = lake.create_table("main.t", data.repartition(days, "day"),
                                          partition_by=["day"])
            print(f"   wrote {rows:,} rows in {C.parquet_files(spec.data_path)} files "
                  f"({write.seconds:.1f} s)", flush=True)
            con.execute(spec.attach())
            table_dir = table.state(contents=False).table_dir
            middle_day = "2024-01-01"
            low = rows // 2
            where = {"scan": None, "day": f"day = DATE '{middle_day}' + {days // 2}",
                     "ids": f"id BETWEEN {low} AND {low + 10}"}

            def ours(query: str) -> tuple:
                df = table.read()
                return _run(df, where[query], F)

            def bare(query: str) -> tuple:
                df = spark.read.parquet(table_dir)
                return _run(df, where[query], F)

            def duck(query: str) -> tuple:
                clause = f" WHERE {where[query]}" if where[query] else ""
                select = "count(*), sum(v)" if query != "ids" else "count(*)"
                return con.execute(f"SELECT {select} FROM lake.main.t{clause}").fetchone()

            print("   explain of ours, whole table:")
            df = table.read().agg(F.count(F.lit(1)), F.sum("v"))
            plan = df._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001
            print("\n".join("      " + line[:160] for line in plan.splitlines()[:30]))
            for query in QUERIES:
                answers = {name: fn(query) for name, fn in
                           (("ours", ours), ("spark.read.parquet", bare), ("duckdb", duck))}
                if len({tuple(int(x or 0) for x in a) for a in answers.values()}) != 1:
                    raise SystemExit(f"{query}: the systems disagree: {answers}")
                for _ in range(args.reps):
                    for name, fn in (("ours", ours), ("spark.read.parquet", bare),
                                     ("duckdb", duck)):
                        seconds, _ = C.timed(lambda fn=fn, q=query: fn(q))
                        results.add(name, query, seconds)
            for _ in range(args.reps):
                seconds, _ = C.timed(table.read)
                results.add("ours", "plan", seconds)
        finally:
            con.close()
            lake.close()
            spec.drop()
    results.print_table()
    pairs = [(q, "ours", "spark.read.parquet", "<= 1.2x" if q == "scan" else "")
             for q in QUERIES] + [(q, "ours", "duckdb", "") for q in QUERIES]
    results.save(results.print_ratios(pairs))


def _run(df, where: str | None, F) -> tuple:  # noqa: ANN001, N803
    if where is not None:
        df = df.where(where)
    if "BETWEEN" in (where or ""):
        return (df.count(),)
    row = df.agg(F.count(F.lit(1)), F.sum("v")).first()
    return (row[0], row[1])


if __name__ == "__main__":
    main()
