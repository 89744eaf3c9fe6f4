"""Read planning against long histories and many live files.

Planning a read is our driver's work before Spark runs anything: ``load_state`` (the table's
schema, live data and delete files, inlined rows at the snapshot) plus building the scan
DataFrame (``spark.read.parquet`` of the live files, the delete anti-join, inlined rows). It is
timed with ``LakeTable.read()`` and no action, ``--reps`` times after three warm-ups.

Setup, on one lake, made cheaply with DuckDB 1.5.5:

- table ``t`` gets 100 live Parquet files (``ducklake_add_data_files`` of files written with
  pyarrow), table ``wide`` 10,000 (``--max-files``);
- history grows to 100, 1,000 and 10,000 snapshots (``--scale`` is the largest) by tiny commits
  that leave ``t``'s live data unchanged: alternately ``INSERT`` of one row into ``t`` (inlined)
  and ``DELETE`` of that row again, so the dead inlined rows pile up in ``t``'s own history.
  (``wide`` sees the same snapshots as history of another table.)

Target: planning time grows with live files, not with history; at 10,000 snapshots it is
within 1.5× of 100.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402


def write_files(directory: str, count: int, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    for i in range(count):
        start = i * rows
        pq.write_table(pa.table({
            "id": pa.array(range(start, start + rows), pa.int64()),
            "v": pa.array([float(x % 97) for x in range(start, start + rows)], pa.float64()),
        }), os.path.join(directory, f"part-{i:06d}.parquet"))


def snapshot_count(con) -> int:  # noqa: ANN001 - DuckDB connection
    return con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()[0]


def grow_history(con, target: int) -> None:  # noqa: ANN001 - DuckDB connection
    """Tiny commits until the lake has ``target`` snapshots; ``t``'s live rows stay the same."""
    n = snapshot_count(con)
    while n < target:
        if n % 2 == 0:
            con.execute(f"INSERT INTO lake.main.t VALUES ({-n - 1}, 0.0)")
        else:
            con.execute("DELETE FROM lake.main.t WHERE id < 0")
        n += 1


def measure(results: C.Results, lake, name: str, system: str, metric: str,  # noqa: ANN001
            reps: int) -> None:
    table = lake.table(name)
    for _ in range(3):  # warm-up: JVM code paths, catalog connection
        table.read()
    for _ in range(reps):
        seconds, _ = C.timed(table.read)
        results.add(system, metric, seconds)


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "largest history (snapshots)", 10_000)
    p.add_argument("--files", type=int, default=100, help="live files of the history table")
    p.add_argument("--max-files", type=int, default=10_000, help="live files of the wide table")
    p.add_argument("--rows-per-file", type=int, default=100)
    args = p.parse_args()
    C.check_reps(args)
    C.banner("planning", args)
    results = C.Results("planning", args)
    from dbt.adapters.ducklake.spark import SparkLake

    spark = C.spark_session()
    steps = [s for s in (100, 1_000, 10_000) if s < args.scale] + [int(args.scale)]
    with C.workdir(args) as root:
        spec = C.new_lake(root, "planning", args.catalog)
        con = C.duckdb_connect()
        lake = None
        try:
            con.execute(spec.attach())
            for name, count in (("t", args.files), ("wide", args.max_files)):
                directory = os.path.join(root, f"incoming_{name}")
                write_files(directory, count, args.rows_per_file)
                con.execute(f"CREATE TABLE lake.main.{name} (id BIGINT, v DOUBLE)")
                con.execute(f"CALL ducklake_add_data_files('lake', '{name}', "
                            f"'{directory}/*.parquet')")
            lake = SparkLake.open(spark, spec.catalog, spec.data_path, **spec.open_kwargs())
            for step in steps:
                with C.Timer() as grow:
                    grow_history(con, step)
                print(f"   {step} snapshots ({grow.seconds:.1f} s to grow)", flush=True)
                measure(results, lake, "main.t", f"{args.files} files",
                        f"plan @ {step:>6} snapshots", args.reps)
            measure(results, lake, "main.wide", f"{args.max_files} files",
                    f"plan @ {steps[-1]:>6} snapshots", args.reps)
        finally:
            if lake is not None:
                lake.close()
            con.close()
            spec.drop()
    results.print_table()
    first, last = f"plan @ {steps[0]:>6} snapshots", f"plan @ {steps[-1]:>6} snapshots"
    few = f"{args.files} files"
    history = results.get(few, last) / results.get(few, first)
    files = results.get(f"{args.max_files} files", last) / results.get(few, last)
    print(f"history {steps[-1]} / {steps[0]} snapshots: {history:.2f}x (target <= 1.5x)")
    print(f"live files {args.max_files} / {args.files}: {files:.2f}x\n")
    results.save([
        {"metric": "planning", "system": f"{few} @ {steps[-1]} snapshots",
         "baseline": f"{few} @ {steps[0]} snapshots", "ratio": history, "target": "<= 1.5x"},
        {"metric": "planning", "system": f"{args.max_files} files",
         "baseline": few, "ratio": files, "target": ""},
    ])


if __name__ == "__main__":
    main()
