"""MERGE of a small change set into a large table: merge-on-read against a full rebuild.

A target of N rows (``--scale``, default 1,000,000; written by Spark as ``--files`` Parquet
files) receives a source that updates 1% of its rows and inserts 1% new rows (``--fraction``).
``--changes scattered`` (the default) spreads the updates evenly over every file, the worst
case for rewriting and for file pruning; ``--changes recent`` updates the newest rows, as late
corrections to recent facts do (results in ``merge-recent.json``). Systems, each on a fresh
copy of the target in one lake:

- ``ours-merge``: ``LakeTable.merge`` (what ``MERGE INTO`` and dbt's ``merge`` strategy run):
  positional deletes of the matched rows plus the new row versions, one snapshot;
- ``ours-rebuild``: the full rebuild dbt's ``table`` materialization would do, ``CREATE OR
  REPLACE`` of the merged result (target minus matched rows, plus the source) with
  ``LakeTable.overwrite``;
- ``duckdb-merge``: DuckDB 1.5.5's ``MERGE INTO`` on the same lake (same target files).

Measured: wall time of the statement, data and delete files written, bytes written, and data
files rewritten (live files the statement ended). Target: our merge ≤ 0.3× the rebuild and no
untouched data file rewritten. The row count is checked after every run. Each system runs
once untimed before the ``--reps`` timed rounds. By default every merge applies the same
source, so from the second one on Spark finds the code it generates for the statement already
compiled (as a job repeating a statement over the same keys would); ``--fresh-sources`` gives
each round a source of its own, with other keys and values (results in ``*-fresh.json``), as
consecutive incremental runs have.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

SYSTEMS = ("ours-merge", "ours-rebuild", "duckdb-merge")


def make_data(spark, n: int, files: int, changes: str,  # noqa: ANN001, ANN201 - DataFrames
              fraction: float = 0.01, shift: int = 0):
    """Target rows 0..n-1 and a source updating ``fraction`` of them and adding as many rows.

    ``scattered`` updates every (1/fraction)th row, so every target file holds updated rows;
    ``recent`` updates the newest ones (the highest ids), as late corrections to recent facts
    do, so only the last file does. A ``shift`` moves the source's keys by that many ids (the
    updates down, the inserts up) and changes its values: another run's changes.
    """
    from pyspark.sql import functions as F

    def rows(start: int, end: int, version: int):  # noqa: ANN202
        return (spark.range(start, end)
                .select(F.col("id"), (F.col("id") % 1000).cast("int").alias("k"),
                        (F.col("id") * 0.5 + version).alias("amount"),
                        F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
                        F.lit(version).cast("int").alias("version")))

    changed = int(n * fraction)
    target = rows(0, n, 0).repartitionByRange(files, "id")
    version = 1 + shift
    if changes == "scattered":
        step = n // changed
        updates = rows(0, n, version).where(F.col("id") % step == (7 + shift) % step)
    else:
        updates = rows(n - changed - shift, n - shift, version)
    inserts = rows(n + shift, n + changed + shift, version)
    return target, updates.unionByName(inserts).coalesce(1)


def written(spec: C.LakeSpec, table_id: int, before: int) -> dict[str, float]:
    """Files and bytes the snapshots after ``before`` added, and data files they ended."""
    q = ("SELECT count(*), coalesce(sum(file_size_bytes), 0) FROM {s}%s "
         "WHERE table_id = :t AND begin_snapshot > :b")
    data = spec.catalog_query(q % "ducklake_data_file", t=table_id, b=before)[0]
    deletes = spec.catalog_query(q % "ducklake_delete_file", t=table_id, b=before)[0]
    ended = spec.catalog_query(
        "SELECT count(*) FROM {s}ducklake_data_file WHERE table_id = :t AND end_snapshot > :b "
        "AND begin_snapshot <= :b", t=table_id, b=before)[0]
    return {"data files written": data[0], "delete files written": deletes[0],
            "bytes written": data[1] + deletes[1], "data files rewritten": ended[0]}


def last_snapshot(spec: C.LakeSpec) -> int:
    return spec.catalog_query("SELECT max(snapshot_id) FROM {s}ducklake_snapshot")[0][0]


def run(args: argparse.Namespace, results: C.Results, lake, spec: C.LakeSpec,  # noqa: ANN001
        system: str, rep: int, target, expected: int, src: str) -> None:  # noqa: ANN001
    from dbt.adapters.ducklake.spark.merge import MergeClause

    name = f"tgt_{system.replace('-', '_')}_{rep + 1}"
    table = lake.create_table(f"main.{name}", target)
    table_id = table.info().table_id
    before = last_snapshot(spec)
    if system == "ours-merge":
        with C.Timer() as t:
            table.merge(lake.table(f"main.{src}").read(), "t.id = s.id",
                        [MergeClause("matched", "update_star"),
                         MergeClause("not_matched", "insert_star")], "t", "s")
    elif system == "ours-rebuild":
        with C.Timer() as t:
            source = lake.table(f"main.{src}").read()
            kept = table.read().join(source.select("id"), "id", "left_anti")
            table.overwrite(kept.unionByName(source))
    else:
        duck = C.duckdb_connect()
        duck.execute(spec.attach())
        with C.Timer() as t:
            duck.execute(
                f"MERGE INTO lake.main.{name} AS t USING lake.main.{src} AS s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET k = s.k, amount = s.amount, name = s.name, "
                "version = s.version WHEN NOT MATCHED THEN INSERT VALUES "
                "(s.id, s.k, s.amount, s.name, s.version)")
        duck.close()
    results.add(system, "time", t.seconds)
    for metric, value in written(spec, table_id, before).items():
        results.add(system, metric, value, "bytes" if metric.startswith("bytes") else "files")
    count = table.read().count()
    if count != expected:
        raise AssertionError(f"{system}: {count} rows after the merge, expected {expected}")
    lake.drop_table(f"main.{name}")


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "target rows", 1_000_000)
    p.add_argument("--files", type=int, default=8, help="Parquet files of the target")
    p.add_argument("--changes", choices=("scattered", "recent"), default="scattered",
                   help="which rows the source updates: evenly spread (default; every "
                        "file is touched) or the newest")
    p.add_argument("--fraction", type=float, default=0.01,
                   help="share of the rows the source updates, and of new rows it adds "
                        "(default 0.01; 0.0005 is a typical incremental run's few changes)")
    p.add_argument("--fresh-sources", action="store_true",
                   help="a source of its own for each repetition (keys and values shifted), "
                        "as consecutive incremental runs have; by default every merge "
                        "applies the same source")
    args = p.parse_args()
    args.n = int(args.scale)
    C.check_reps(args)
    name = "merge" if args.changes == "scattered" else f"merge-{args.changes}"
    if args.fraction != 0.01:
        name += f"-{args.fraction:g}"
    if args.fresh_sources:
        name += "-fresh"
    C.banner(name, args)
    results = C.Results(name, args)
    from dbt.adapters.ducklake.spark import SparkLake

    spark = C.spark_session()
    with C.workdir(args) as root:
        spec = C.new_lake(root, "merge", args.catalog)
        lake = SparkLake.open(spark, spec.catalog, spec.data_path, **spec.open_kwargs())
        try:
            target, source = make_data(spark, args.n, args.files, args.changes, args.fraction)
            target = target.cache()
            target.count()
            lake.create_table("main.src", source)
            expected = args.n + int(args.n * args.fraction)

            def source_of(rep: int) -> str:
                """The repetition's source table: one for all, or one each (rep -1 the
                warm-up's)."""
                if not args.fresh_sources:
                    return "src"
                name = f"src_{rep + 1}"
                lake.create_table(f"main.{name}", make_data(
                    spark, args.n, args.files, args.changes, args.fraction, shift=rep + 2)[1])
                return name

            # One untimed round first: the JVM compiles the code paths of each statement on
            # its first run (a first merge took 2-4x a later one), as a long-running job's would.
            warm = C.Results("warm-up", args)
            src = source_of(-1)
            for system in SYSTEMS:
                run(args, warm, lake, spec, system, -1, target, expected, src)
            for rep in range(args.reps):
                print(f"-- repetition {rep + 1}/{args.reps}", flush=True)
                src = source_of(rep)
                for system in SYSTEMS:
                    run(args, results, lake, spec, system, rep, target, expected, src)
        finally:
            lake.close()
            spec.drop()
    results.print_table()
    ratios = results.print_ratios([
        ("time", "ours-merge", "ours-rebuild", "<= 0.3x"),
        ("time", "ours-merge", "duckdb-merge", ""),
        ("bytes written", "ours-merge", "ours-rebuild", ""),
    ])
    print(f"ours-merge rewrote {results.get('ours-merge', 'data files rewritten'):.0f} data "
          f"files of {args.files} (target: 0 untouched files rewritten)\n")
    results.save(ratios)


if __name__ == "__main__":
    main()
