"""Streaming micro-batches: DuckLake's data-inlining benchmark, scaled down.

A 23-column sensor table (timestamp, ids, floats for speed and position, booleans, strings)
receives N batches of 10 rows, each its own commit (one DuckLake snapshot). Then 9 aggregation
queries run over the table, then the inlined rows are flushed to Parquet and the queries run
again. Measured per system:

- insert throughput (batches/s) and the median and p99 latency of one 10-row commit;
- aggregation time (the 9 queries, sequentially, including planning) before and after the flush;
- flush time, Parquet files and catalog rows the inserts created.

Systems (each on its own fresh lake, all on the same catalog backend):

- ``ours-inlined``: ``LakeTable.append`` of a 10-row Arrow table (the same batches DuckDB gets)
  with inlining (limit 10): no Spark job, one catalog transaction;
- ``ours-inlined-spark``: the same rows as a local Spark DataFrame (``createDataFrame`` of the
  Arrow table), as a Spark job would hand them over: one small Spark job per commit;
- ``ours-files``: Arrow batches with ``data_inlining_row_limit=0`` (Spark writes a Parquet file
  per commit).

The two Spark-bound variants run ``--file-batches`` batches (default 100): rates are per batch,
and a longer run would only repeat the same cost.
- ``duckdb-inlined`` / ``duckdb-files``: DuckDB 1.5.5's ``ducklake`` extension, ``INSERT`` of a
  10-row Arrow table per commit, with ``DATA_INLINING_ROW_LIMIT`` 10 and 0;
- ``dbt-append``: ``dbt run`` of an incremental model (``append``) that adds 10 rows, run
  ``--dbt-runs`` times in one process through dbt's Python entry point; this shows dbt's
  per-run overhead, not the lake's.

The flush is each system's own: ``LakeTable.flush_inlined_data`` (a Spark write of the inlined
rows into Parquet, one snapshot) and DuckDB's ``ducklake_flush_inlined_data``.

Targets: our inlined commit median ≤ 1.5× DuckDB's; inlining makes our inserts ≥ 5× faster;
our aggregations over inlined rows ≤ 2× the same after the flush into one Parquet file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import textwrap
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

COLUMNS: list[tuple[str, str, str]] = [  # name, Spark type, DuckDB type
    ("ts", "timestamp_ntz", "TIMESTAMP"),
    ("vehicle_id", "bigint", "BIGINT"),
    ("trip_id", "bigint", "BIGINT"),
    ("driver_id", "int", "INTEGER"),
    ("route_id", "int", "INTEGER"),
    ("speed", "double", "DOUBLE"),
    ("lat", "double", "DOUBLE"),
    ("lon", "double", "DOUBLE"),
    ("altitude", "double", "DOUBLE"),
    ("heading", "double", "DOUBLE"),
    ("accel", "double", "DOUBLE"),
    ("fuel", "double", "DOUBLE"),
    ("engine_temp", "double", "DOUBLE"),
    ("odometer", "double", "DOUBLE"),
    ("is_moving", "boolean", "BOOLEAN"),
    ("door_open", "boolean", "BOOLEAN"),
    ("is_charging", "boolean", "BOOLEAN"),
    ("alarm", "boolean", "BOOLEAN"),
    ("status", "string", "VARCHAR"),
    ("region", "string", "VARCHAR"),
    ("driver_name", "string", "VARCHAR"),
    ("plate", "string", "VARCHAR"),
    ("note", "string", "VARCHAR"),
]
assert len(COLUMNS) == 23

# Nine aggregations over several columns; {t} is the table.
QUERIES: list[str] = [
    "SELECT avg(speed) FROM {t}",
    "SELECT stddev_samp(speed) FROM {t}",
    "SELECT min(ts), max(ts) FROM {t}",
    "SELECT max(lat) - min(lat), max(lon) - min(lon) FROM {t}",
    "SELECT count(DISTINCT vehicle_id) FROM {t}",
    "SELECT region, sum(fuel) FROM {t} GROUP BY region ORDER BY region",
    "SELECT avg(engine_temp) FROM {t} WHERE is_moving",
    "SELECT count(*) FROM {t} WHERE alarm OR door_open",
    "SELECT vehicle_id, max(odometer) - min(odometer) FROM {t} GROUP BY vehicle_id "
    "ORDER BY 2 DESC LIMIT 5",
]

REGIONS = ["north", "south", "east", "west", "centre"]
STATUSES = ["ok", "warn", "idle", "service"]
BATCH_ROWS = 10


def batch_rows(batch: int) -> list[tuple[Any, ...]]:
    """Ten deterministic rows for batch number ``batch``."""
    rng = random.Random(batch)
    base = dt.datetime(2026, 1, 1) + dt.timedelta(seconds=batch)
    rows = []
    for i in range(BATCH_ROWS):
        vehicle = rng.randrange(200)
        rows.append((
            base + dt.timedelta(milliseconds=100 * i), vehicle, batch * 16 + i % 4,
            rng.randrange(1000), rng.randrange(50), rng.uniform(0, 130),
            52 + rng.uniform(-1, 1), 4 + rng.uniform(-1, 1), rng.uniform(0, 300),
            rng.uniform(0, 360), rng.uniform(-3, 3), rng.uniform(0, 100), rng.uniform(60, 110),
            batch * 0.01 + vehicle, rng.random() < 0.8, rng.random() < 0.05,
            rng.random() < 0.1, rng.random() < 0.01, rng.choice(STATUSES),
            rng.choice(REGIONS), f"driver-{rng.randrange(1000)}", f"NL-{vehicle:04d}",
            "routine" if rng.random() < 0.9 else "check engine light",
        ))
    return rows


def spark_schema():  # noqa: ANN201 - StructType
    from pyspark.sql.types import StructType, _parse_datatype_string

    return StructType.fromDDL(", ".join(f"{n} {t}" for n, t, _ in COLUMNS)) \
        if hasattr(StructType, "fromDDL") else _parse_datatype_string(
            ", ".join(f"{n} {t}" for n, t, _ in COLUMNS))


def arrow_schema():  # noqa: ANN201 - pa.Schema
    import pyarrow as pa

    types = {"TIMESTAMP": pa.timestamp("us"), "BIGINT": pa.int64(), "INTEGER": pa.int32(),
             "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "VARCHAR": pa.string()}
    return pa.schema([(n, types[d]) for n, _, d in COLUMNS])


def arrow_batch(batch: int):  # noqa: ANN201 - pa.Table
    import pyarrow as pa

    schema = arrow_schema()
    return pa.Table.from_pylist([dict(zip(schema.names, r)) for r in batch_rows(batch)], schema)


def record(results: C.Results, system: str, latencies: list[float], total: float) -> None:
    results.add(system, "insert throughput", len(latencies) / total, "batches/s")
    results.add(system, "commit latency p50", C.percentile(latencies, 0.5))
    results.add(system, "commit latency p99", C.percentile(latencies, 0.99))


def count_created(results: C.Results, system: str, spec: C.LakeSpec, rows_before: int) -> None:
    results.add(system, "parquet files after inserts", C.parquet_files(spec.data_path), "files")
    results.add(system, "catalog rows added by inserts", spec.catalog_rows() - rows_before,
                "rows")


# ------------------------------------------------------------------------------------- ours
def run_ours(args: argparse.Namespace, results: C.Results, root: str, rep: int,
             system: str) -> None:
    from dbt.adapters.ducklake.spark import SparkLake

    spark = C.spark_session()
    inlined = system != "ours-files"
    batches = args.batches if system == "ours-inlined" else min(args.batches, args.file_batches)
    spec = C.new_lake(root, f"{system.replace('-', '_')}_{rep}", args.catalog)
    lake = SparkLake.open(spark, spec.catalog, spec.data_path,
                          **spec.open_kwargs(data_inlining_row_limit=10 if inlined else 0))
    try:
        schema = spark_schema()
        table = lake.create_table("main.events", schema)
        rows_before = spec.catalog_rows()
        frames: list[Any] = [arrow_batch(b) for b in range(batches)]
        if system == "ours-inlined-spark":
            frames = [spark.createDataFrame(f, schema) for f in frames]
        latencies = []
        with C.Timer() as total:
            for frame in frames:
                seconds, _ = C.timed(lambda f=frame: table.append(f))
                latencies.append(seconds)
        record(results, system, latencies, total.seconds)
        count_created(results, system, spec, rows_before)
        if system != "ours-inlined":
            return

        def aggregate() -> float:
            with C.Timer() as t:
                table.read().createOrReplaceTempView("events")
                for query in QUERIES:
                    spark.sql(query.format(t="events")).collect()
            return t.seconds

        aggregate()  # warm the JVM's code paths once, as a long-running job would be
        results.add(system, "aggregations (inlined)", aggregate())
        with C.Timer() as flush:
            table.flush_inlined_data()
        results.add(system, "flush", flush.seconds)
        results.add(system, "parquet files after flush", C.parquet_files(spec.data_path),
                    "files")
        aggregate()
        results.add(system, "aggregations (flushed)", aggregate())
    finally:
        lake.close()
        spec.drop()


# ------------------------------------------------------------------------------------ DuckDB
def run_duckdb(args: argparse.Namespace, results: C.Results, root: str, rep: int,
               inlined: bool) -> None:
    system = "duckdb-inlined" if inlined else "duckdb-files"
    spec = C.new_lake(root, f"{system.replace('-', '_')}_{rep}", args.catalog)
    con = C.duckdb_connect()
    try:
        con.execute(spec.attach(data_inlining_row_limit=10 if inlined else 0))
        con.execute("CREATE TABLE lake.main.events ("
                    + ", ".join(f"{n} {d}" for n, _, d in COLUMNS) + ")")
        rows_before = spec.catalog_rows()
        tables = [arrow_batch(b) for b in range(args.batches)]
        latencies = []
        with C.Timer() as total:
            for batch in tables:  # noqa: B007 - DuckDB reads the local variable by name
                with C.Timer() as t:
                    con.execute("INSERT INTO lake.main.events SELECT * FROM batch")
                latencies.append(t.seconds)
        record(results, system, latencies, total.seconds)
        count_created(results, system, spec, rows_before)

        def aggregate() -> float:
            with C.Timer() as t:
                for query in QUERIES:
                    con.execute(query.format(t="lake.main.events")).fetchall()
            return t.seconds

        aggregate()
        results.add(system, "aggregations (inlined)" if inlined else "aggregations (files)",
                    aggregate())
        if inlined:
            with C.Timer() as flush:
                con.execute("CALL ducklake_flush_inlined_data('lake')")
            results.add(system, "flush", flush.seconds)
            results.add(system, "parquet files after flush", C.parquet_files(spec.data_path),
                        "files")
            aggregate()
            results.add(system, "aggregations (flushed)", aggregate())
    finally:
        con.close()
        spec.drop()


# --------------------------------------------------------------------------------------- dbt
DBT_MODEL = textwrap.dedent("""\
    {{ config(materialized='incremental', incremental_strategy='append') }}
    select
      timestampadd(SECOND, {{ var('batch') }}, timestamp_ntz'2026-01-01 00:00:00') as ts,
      cast(id % 200 as bigint) as vehicle_id, cast({{ var('batch') }} as bigint) as trip_id,
      cast(id as int) as driver_id, cast(id % 50 as int) as route_id,
      rand() * 130 as speed, 52 + rand() as lat, 4 + rand() as lon, rand() * 300 as altitude,
      rand() * 360 as heading, rand() * 6 - 3 as accel, rand() * 100 as fuel,
      60 + rand() * 50 as engine_temp, cast(id as double) as odometer,
      rand() < 0.8 as is_moving, rand() < 0.05 as door_open, rand() < 0.1 as is_charging,
      rand() < 0.01 as alarm, 'ok' as status, 'north' as region,
      concat('driver-', id) as driver_name, concat('NL-', id) as plate, 'routine' as note
    from range(10)
    """)


def run_dbt(args: argparse.Namespace, results: C.Results, root: str, rep: int) -> None:
    """``dbt run`` of a 10-row append, ``--dbt-runs`` times in one process (warm JVM)."""
    from dbt.cli.main import dbtRunner

    spec = C.new_lake(root, f"dbt_{rep}", args.catalog)
    project = os.path.join(root, f"dbt_project_{rep}")
    os.makedirs(os.path.join(project, "models"), exist_ok=True)
    with open(os.path.join(project, "dbt_project.yml"), "w") as f:
        f.write("name: stream\nversion: '1.0'\nprofile: stream\nconfig-version: 2\n")
    with open(os.path.join(project, "models", "events.sql"), "w") as f:
        f.write(DBT_MODEL)
    extra = f"      metadata_schema: {spec.metadata_schema}\n" if spec.metadata_schema else ""
    with open(os.path.join(project, "profiles.yml"), "w") as f:
        f.write(f"stream:\n  target: dev\n  outputs:\n    dev:\n      type: ducklake\n"
                f"      catalog: \"{spec.catalog}\"\n      data_path: {spec.data_path}\n"
                f"      schema: main\n      threads: 1\n      master: local[*]\n{extra}")
    runner = dbtRunner()
    base = ["--quiet", "--project-dir", project, "--profiles-dir", project]
    try:
        latencies = []
        for run in range(args.dbt_runs + 1):
            with C.Timer() as t:
                outcome = runner.invoke(["run", *base, "--vars", f"{{batch: {run}}}"])
            if not outcome.success:
                raise RuntimeError(f"dbt run failed: {outcome.exception}")
            if run == 0:
                results.add("dbt-append", "first dbt run (creates the table)", t.seconds)
            else:
                latencies.append(t.seconds)
        record(results, "dbt-append", latencies, sum(latencies))
    finally:
        spec.drop()


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "number of 10-row batches (alias --batches)", 1000)
    p.add_argument("--batches", type=int, default=None, help="same as --scale")
    p.add_argument("--file-batches", type=int, default=100,
                   help="batches for ours-files (one Spark Parquet write per commit)")
    p.add_argument("--dbt-runs", type=int, default=20, help="dbt runs per repetition")
    p.add_argument("--skip", default="", help="comma-separated systems to skip")
    args = p.parse_args()
    args.batches = int(args.batches or args.scale)
    C.check_reps(args)
    C.banner("streaming", args)
    results = C.Results("streaming", args)
    skip = set(filter(None, args.skip.split(",")))
    if args.file_batches < args.batches:
        results.note(f"ours-inlined-spark and ours-files run {args.file_batches} batches per "
                     f"repetition "
                     f"(the others {args.batches}); rates are per batch")
    with C.workdir(args) as root:
        for rep in range(args.reps):
            print(f"-- repetition {rep + 1}/{args.reps}", flush=True)
            for system in ("ours-inlined", "ours-inlined-spark", "ours-files"):
                if system not in skip:
                    run_ours(args, results, root, rep, system)
            if "duckdb-inlined" not in skip:
                run_duckdb(args, results, root, rep, inlined=True)
            if "duckdb-files" not in skip:
                run_duckdb(args, results, root, rep, inlined=False)
            if "dbt-append" not in skip:
                run_dbt(args, results, root, rep)
    results.print_table()
    ratios = results.print_ratios([
        ("commit latency p50", "ours-inlined", "duckdb-inlined", "<= 1.5x"),
        ("commit latency p99", "ours-inlined", "duckdb-inlined", ""),
        ("insert throughput", "ours-inlined", "ours-files", ">= 5x"),
        ("insert throughput", "ours-inlined-spark", "ours-files", ""),
        ("commit latency p50", "ours-inlined-spark", "duckdb-inlined", ""),
        ("insert throughput", "ours-inlined", "duckdb-inlined", ""),
        ("insert throughput", "duckdb-inlined", "duckdb-files", ""),
        ("aggregations (inlined)", "ours-inlined", "duckdb-inlined", ""),
        ("commit latency p50", "dbt-append", "ours-inlined", ""),
    ])
    inl, fl = results.get("ours-inlined", "aggregations (inlined)"), \
        results.get("ours-inlined", "aggregations (flushed)")
    own = {"metric": "aggregations inlined / flushed", "system": "ours-inlined",
           "baseline": "ours-inlined (flushed)", "ratio": inl / fl if fl else float("nan"),
           "target": "<= 2x"}
    print(f"ours: aggregations inlined / flushed = {own['ratio']:.2f}x (target <= 2x)\n")
    results.save([*ratios, own])


if __name__ == "__main__":
    main()
