"""Structured Streaming into a lake: N micro-batches of 10 rows through Spark's sinks and ours.

The seeds' streaming case (the 23-column sensor table of ``streaming.py``) as a Spark stream:
a file source holding one 10-row Parquet file per micro-batch (``maxFilesPerTrigger`` 1,
``availableNow``), written by

- ``noop``: Spark's ``noop`` sink, the per-batch floor of the engine itself;
- ``spark-parquet``: Spark's own Parquet file sink with a checkpoint;
- ``ours-inlined``: ``writeStream.format("ducklake")`` with inlining (limit 10: each batch
  is inlined rows in the catalog, no file);
- ``ours-files``: the same with inlining off (a Parquet file per batch, written by the task);
- ``foreach-append``: ``foreachBatch`` calling ``LakeTable.append(df, stream_id, batch_id)``.

Every system first streams ``--warmup`` batches untimed (all of them, before any is timed),
so that none pays the JVM's, the Python workers' or the lake's warm-up for the others: the
``noop`` floor is measured on a warm session, as the systems after it are.

Per system: batches per second, p50/p99 of a batch's duration (Spark's ``triggerExecution``),
Parquet files created. Then the nine aggregations of ``streaming.py`` over ``ours-inlined``'s
table: inlined rows, after a flush, and in DuckDB over the same lake.

Targets: our inlined sink within the ``noop`` floor + 30 ms per batch, at least 2x the Parquet
sink's batches per second, zero Parquet files while inlined, aggregations over inlined rows at
most 2x the flushed ones.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402
import streaming as S  # noqa: E402

SYSTEMS = ("noop", "spark-parquet", "ours-inlined", "ours-files", "foreach-append")


def write_source(path: str, batches: int) -> None:
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    for b in range(batches):
        pq.write_table(S.arrow_batch(b), os.path.join(path, f"b{b:06d}.parquet"))


def run_stream(spark, src: str, writer_of, checkpoint: str) -> list[float]:  # noqa: ANN001
    """Drain the source through the sink ``writer_of`` builds; each batch's seconds."""
    df = spark.readStream.schema(S.spark_schema()).option("maxFilesPerTrigger", 1).parquet(src)
    writer = writer_of(df.writeStream).option("checkpointLocation", checkpoint)
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    return [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress
            if p["numInputRows"]]


def run_system(args: argparse.Namespace, results: C.Results | None, root: str, system: str,
               src: str) -> None:
    """Stream ``src`` through ``system`` into a new lake; ``results`` ``None``: a warm-up,
    recorded nowhere."""
    from dbt.adapters.ducklake.spark import SparkLake

    spark = C.spark_session()
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(args.batches + 10))
    spec = C.new_lake(root, system.replace("-", "_"), args.catalog)
    limit = 0 if system == "ours-files" else 10
    lake = SparkLake.open(spark, spec.catalog, spec.data_path,
                          **spec.open_kwargs(data_inlining_row_limit=limit))
    out = os.path.join(root, system, "out")
    try:
        table = lake.create_table("main.events", S.spark_schema())

        def ducklake(w):  # noqa: ANN001, ANN202
            w = w.format("ducklake").option("catalog", spec.catalog) \
                .option("table", "main.events").option("data_inlining_row_limit", str(limit))
            return w.option("metadata_schema", spec.metadata_schema) \
                if spec.metadata_schema else w

        def foreach(w):  # noqa: ANN001, ANN202
            return w.foreachBatch(lambda df, batch_id: table.append(
                df, stream_id="bench", batch_id=batch_id))

        writers: dict[str, Any] = {
            "noop": lambda w: w.format("noop"),
            "spark-parquet": lambda w: w.format("parquet").option("path", out),
            "ours-inlined": ducklake, "ours-files": ducklake, "foreach-append": foreach}
        with C.Timer() as total:
            seconds = run_stream(spark, src, writers[system],
                                 os.path.join(root, system, "ck"))
        if results is None:
            return
        results.add(system, "batches/s", len(seconds) / total.seconds, "batches/s")
        results.add(system, "batch p50", C.percentile(seconds, 0.5))
        results.add(system, "batch p99", C.percentile(seconds, 0.99))
        results.add(system, "parquet files created",
                    C.parquet_files(spec.data_path) + C.parquet_files(out), "files")
        if system == "ours-inlined":
            aggregations(results, spark, lake, table, spec)
    finally:
        lake.close()
        spec.drop()


def aggregations(results: C.Results, spark, lake, table, spec: C.LakeSpec) -> None:  # noqa: ANN001
    def ours() -> float:
        with C.Timer() as t:
            table.read().createOrReplaceTempView("events")
            for query in S.QUERIES:
                spark.sql(query.format(t="events")).collect()
        return t.seconds

    ours()  # warm the JVM's code paths once, as a long-running job would be
    results.add("ours-inlined", "aggregations (inlined)", ours())
    table.flush_inlined_data()
    ours()
    results.add("ours-inlined", "aggregations (flushed)", ours())
    con = C.duckdb_connect()
    try:
        con.execute(spec.attach())
        with C.Timer() as t:
            for query in S.QUERIES:
                con.execute(query.format(t="lake.main.events")).fetchall()
        results.add("duckdb", "aggregations (flushed)", t.seconds)
    finally:
        con.close()


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "number of 10-row micro-batches", 1000)
    p.add_argument("--skip", default="", help="comma-separated systems to skip")
    p.add_argument("--warmup", type=int, default=10,
                   help="untimed micro-batches streamed through every system first")
    # one repetition by default: a system's figures are percentiles over its N batches, and
    # a repetition of 200 batches takes minutes per system on a small machine
    p.set_defaults(reps=1)
    args = p.parse_args()
    args.batches = int(args.scale)
    C.banner("streaming_spark", args)
    results = C.Results("streaming_spark", args)
    skip = set(filter(None, args.skip.split(",")))
    with C.workdir(args) as root:
        src = os.path.join(root, "source")
        write_source(src, args.batches)
        if args.warmup:
            warm = os.path.join(root, "warm-source")
            write_source(warm, args.warmup)
            print(f"-- warm-up: {args.warmup} untimed batches through each system", flush=True)
            for system in SYSTEMS:
                if system not in skip:
                    run_system(args, None, os.path.join(root, "warm"), system, warm)
        for rep in range(args.reps):
            print(f"-- repetition {rep + 1}/{args.reps}", flush=True)
            for system in SYSTEMS:
                if system not in skip:
                    run_system(args, results, os.path.join(root, f"r{rep}"), system, src)
    results.print_table()
    ratios = results.print_ratios([
        ("batch p50", "ours-inlined", "noop", "<= noop + 30 ms"),
        ("batches/s", "ours-inlined", "spark-parquet", ">= 2x"),
        ("batches/s", "ours-inlined", "ours-files", ""),
        ("batches/s", "ours-inlined", "foreach-append", ""),
        ("aggregations (flushed)", "ours-inlined", "duckdb", ""),
    ])
    inl = results.get("ours-inlined", "aggregations (inlined)")
    fl = results.get("ours-inlined", "aggregations (flushed)")
    floor = results.get("noop", "batch p50")
    ours = results.get("ours-inlined", "batch p50")
    print(f"ours-inlined p50 - noop p50 = {1000 * (ours - floor):.1f} ms (target <= 30 ms)")
    print(f"ours: aggregations inlined / flushed = {inl / fl if fl else float('nan'):.2f}x "
          "(target <= 2x)\n")
    results.save(ratios)


if __name__ == "__main__":
    main()
