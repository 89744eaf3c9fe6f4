"""``spark.read.format("ducklake")`` against the native read, on a table of many files.

A table of ``--scale`` rows (id, v, day) partitioned by day into ``--files`` files (400 by
default) is read three ways, each query timed including planning:

- ``native``: ``SparkLake.table(...).read()``, Spark's own Parquet scan;
- ``format``: ``spark.read.format("ducklake").load(...)``, the Python data source (pyarrow in
  Python workers, Arrow to the JVM), filter pushdown on;
- ``duckdb``: DuckDB 1.5.5 over the same lake.

Queries: ``scan`` (count and sum over every row), ``day`` (one partition: file skipping by
partition value), ``ids`` (a narrow id range: skipping by min/max), ``one-col`` (sum of one
column: the native scan reads one column, the Python reader all three).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

QUERIES = ("scan", "day", "ids", "one-col")
SYSTEMS = ("native", "format", "duckdb")


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "rows in the table", 4_000_000)
    p.add_argument("--files", type=int, default=400, help="days, one file each")
    args = p.parse_args()
    C.check_reps(args)
    C.banner("format_read", args)
    results = C.Results("format_read", args)
    from pyspark.sql import functions as F

    from dbt.adapters.ducklake.spark import SparkLake

    rows, days = int(args.scale), args.files
    spark = C.spark_session()
    with C.workdir(args) as root:
        spec = C.new_lake(root, "format_read", args.catalog)
        lake = SparkLake.open(spark, spec.catalog, spec.data_path, **spec.open_kwargs())
        con = C.duckdb_connect()
        try:
            data = spark.range(rows).selectExpr(
                "id", "id % 1000 AS v",
                f"date_add(DATE '2024-01-01', CAST(id * {days} DIV {rows} AS INT)) AS day")
            table = lake.create_table("main.t", data.repartition(days, "day"),
                                      partition_by=["day"])
            print(f"   {rows:,} rows in {C.parquet_files(spec.data_path)} files", flush=True)
            con.execute(spec.attach())
            where = {"scan": None, "day": f"day = DATE '2024-01-01' + {days // 2}",
                     "ids": f"id BETWEEN {rows // 2} AND {rows // 2 + 10}", "one-col": None}

            def frame(system: str):  # noqa: ANN202
                if system == "native":
                    return table.read()
                reader = spark.read.format("ducklake").option("catalog", spec.catalog)
                if spec.metadata_schema:
                    reader = reader.option("metadata_schema", spec.metadata_schema)
                return reader.load("main.t")

            def run(system: str, query: str) -> tuple:
                if system == "duckdb":
                    clause = f" WHERE {where[query]}" if where[query] else ""
                    what = "sum(v)" if query == "one-col" else "count(*), sum(v)"
                    return con.execute(f"SELECT {what} FROM lake.main.t{clause}").fetchone()
                df = frame(system)
                if where[query]:
                    df = df.where(where[query])
                aggs = [F.sum("v")] if query == "one-col" else [F.count(F.lit(1)), F.sum("v")]
                return tuple(df.agg(*aggs).first())

            for query in QUERIES:
                answers = {s: run(s, query) for s in SYSTEMS}
                if len({tuple(int(x or 0) for x in a) for a in answers.values()}) != 1:
                    raise SystemExit(f"{query}: the systems disagree: {answers}")
                for _ in range(args.reps):
                    for system in SYSTEMS:
                        seconds, _ = C.timed(lambda s=system, q=query: run(s, q))
                        results.add(system, query, seconds)
        finally:
            con.close()
            lake.close()
            spec.drop()
    results.print_table()
    results.save(results.print_ratios([(q, "format", "native", "") for q in QUERIES]))


if __name__ == "__main__":
    main()
