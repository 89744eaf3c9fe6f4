"""Reads: what a query over a lake table costs against a bare Parquet scan of the same files.

One table of ``--scale`` rows in ``--files`` files, partitioned by ``day`` (one file per day),
written by ``SparkLake.create_table(..., partition_by=["day"])``. Three queries, each timed as a
user waits for it (planning the read plus running the query), ``--reps`` times after a
warm-up, in one process:

- ``scan``: ``count(*), sum(v)`` over the whole table;
- ``day``: the same ``where day = <one day>``;
- ``ids``: ``count(*) where id between a and b`` (11 rows, one file);
- ``window``: a microbatch window, ``day >= d and day < d + 3`` (three files).

Systems: ours through the Python API (``LakeTable.read().where(...)``), ours through SQL (the
statement engine dbt's models run through, temp-view registry included), ``spark.read.parquet(
<table dir>)`` of the same files (Spark prunes the hive directories for ``day``), and DuckDB's
``ducklake`` on the same lake. ``plan`` is ``LakeTable.read()`` alone (no Spark job). The
script prints ``explain()`` of our one-day query, so what is timed can be seen.

Targets: whole table <= 1.1x the bare Parquet scan; one day <= 1.2x Spark's hive-pruned read;
the id range <= 0.5x the bare scan (one file opened, not all).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

QUERIES = ("scan", "day", "ids", "window")
SYSTEMS = ("ours", "ours-sql", "spark.read.parquet", "duckdb")


def main() -> None:  # noqa: PLR0915 - one linear script
    p = C.parser(__doc__.splitlines()[0], "rows in the table", 2_000_000)
    p.add_argument("--files", type=int, default=100, help="days, one file each")
    args = p.parse_args()
    C.check_reps(args)
    C.banner("reads", args)
    results = C.Results("reads", args)
    from pyspark.sql import functions as F

    from dbt.adapters.ducklake.spark import SparkLake
    from dbt.adapters.ducklake.sql.engine import Engine
    from dbt.adapters.ducklake.sql.views import ViewRegistry

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
                     "ids": f"id BETWEEN {low} AND {low + 10}",
                     "window": f"day >= DATE '{middle_day}' + {days // 3} AND "
                               f"day < DATE '{middle_day}' + {days // 3 + 3}"}
            engine = Engine(spark, lake, ViewRegistry(spark, lake))

            def select(query: str) -> str:
                return "count(*)" if query == "ids" else "count(*), sum(v)"

            def ours(query: str) -> tuple:
                df = table.read()
                return _run(df, where[query], F)

            def sql(query: str) -> tuple:
                clause = f" WHERE {where[query]}" if where[query] else ""
                return tuple(engine.execute(f"SELECT {select(query)} FROM main.t{clause}")
                             .df.first())

            def bare(query: str) -> tuple:
                df = spark.read.parquet(table_dir)
                return _run(df, where[query], F)

            def duck(query: str) -> tuple:
                clause = f" WHERE {where[query]}" if where[query] else ""
                return con.execute(f"SELECT {select(query)} FROM lake.main.t{clause}").fetchone()

            systems = {"ours": ours, "ours-sql": sql, "spark.read.parquet": bare,
                       "duckdb": duck}
            print("   explain of ours, one day:")
            df = table.read().where(where["day"]).agg(F.count(F.lit(1)), F.sum("v"))
            plan = df._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001
            print("\n".join("      " + line[:160] for line in plan.splitlines()[:30]))
            for query in QUERIES:
                answers = {name: systems[name](query) for name in SYSTEMS}
                if len({tuple(int(x or 0) for x in a) for a in answers.values()}) != 1:
                    raise SystemExit(f"{query}: the systems disagree: {answers}")
                for _ in range(args.reps):
                    for name in SYSTEMS:
                        fn = systems[name]
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
    targets = {"scan": "<= 1.1x", "day": "<= 1.2x", "ids": "<= 0.5x", "window": ""}
    pairs = [(q, ours, "spark.read.parquet", targets[q]) for q in QUERIES
             for ours in ("ours", "ours-sql")] + [(q, "ours", "duckdb", "") for q in QUERIES]
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
