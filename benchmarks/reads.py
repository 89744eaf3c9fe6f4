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

Microbatch (``--batches``, default 3; 0 skips it): a real dbt microbatch model over the same
table, declared as a dbt source with ``event_time: day`` so that dbt filters it to each batch's
window. The model aggregates its upstream by day (``materialized='incremental',
incremental_strategy='microbatch', event_time='day', batch_size='day'``) and is run as a user
runs it, ``dbt run --event-time-start S --event-time-end S+batches`` in a separate process, once
to create the table and then ``--reps`` times (each batch replaces its window). Measured: the
whole ``dbt run`` (process, dbt and Spark start-up included), each batch's time as dbt reports
it, and the files each batch read of the upstream (the debug line ``main.t@<snapshot>: read K
of N files`` in dbt's log). The same batches, warm, in this process:

- ``ours-sql``: the statements dbt runs per batch (a temp view of the filtered model query, then
  ``INSERT INTO ... REPLACE WHERE <window> SELECT ...``) through our statement engine;
- ``spark.read.parquet``: the upstream's directory filtered to the window (hive-pruned),
  aggregated the same way, written with a dynamic partition overwrite of the window's ``day``;
- ``duckdb``: ``DELETE`` of the window and ``INSERT ... SELECT`` of the aggregate into a table
  of the same lake, in one transaction.

All four results are checked equal at the end.

Targets: whole table <= 1.1x the bare Parquet scan; one day <= 1.2x Spark's hive-pruned read;
the id range <= 0.5x the bare scan (one file opened, not all).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

QUERIES = ("scan", "day", "ids", "window")
SYSTEMS = ("ours", "ours-sql", "spark.read.parquet", "duckdb")


def main() -> None:  # noqa: PLR0915 - one linear script
    p = C.parser(__doc__.splitlines()[0], "rows in the table", 2_000_000)
    p.add_argument("--files", type=int, default=100, help="days, one file each")
    p.add_argument("--batches", type=int, default=3,
                   help="days (batches) of the dbt microbatch run; 0 skips it")
    args = p.parse_args()
    C.check_reps(args)
    C.banner("reads", args)
    results = C.Results("reads", args)
    from pyspark.sql import functions as F

    from dbt.adapters.ducklake.spark import SparkLake
    from dbt.adapters.ducklake.sql.engine import Engine
    from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

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
            if args.batches:
                first = dt.date(2024, 1, 1) + dt.timedelta(days=days // 2)
                microbatch(args, results, root, spec, spark, lake, engine, con, table_dir,
                           first, args.batches)
        finally:
            con.close()
            lake.close()
            spec.drop()
    results.print_table()
    targets = {"scan": "<= 1.1x", "day": "<= 1.2x", "ids": "<= 0.5x", "window": ""}
    pairs = [(q, ours, "spark.read.parquet", targets[q]) for q in QUERIES
             for ours in ("ours", "ours-sql")] + [(q, "ours", "duckdb", "") for q in QUERIES]
    if args.batches:
        pairs += [(m, "ours-dbt", peer, "") for m in ("microbatch batch", "microbatch run")
                  for peer in ("spark.read.parquet", "duckdb")]
        pairs += [("microbatch batch", "ours-sql", peer, "")
                  for peer in ("spark.read.parquet", "duckdb")]
    results.save(results.print_ratios(pairs))


def _run(df, where: str | None, F) -> tuple:  # noqa: ANN001, N803
    if where is not None:
        df = df.where(where)
    if "BETWEEN" in (where or ""):
        return (df.count(),)
    row = df.agg(F.count(F.lit(1)), F.sum("v")).first()
    return (row[0], row[1])


# ------------------------------------------------------------------------------ microbatch
MODEL_CONFIG = ("{{ config(materialized='incremental', incremental_strategy='microbatch', "
                "event_time='day', batch_size='day', begin='2024-01-01', "
                "concurrent_batches=false) }}")
# The model body; {upstream} is the (window-filtered) upstream relation.
MODEL_BODY = """select day, count(*) as events, sum(v) as v_sum, min(id) as first_id,
       max(id) as last_id
from {upstream}
group by day"""
SOURCES_YML = """\
version: 2
sources:
  - name: lake
    schema: main
    tables:
      - name: t
        config:
          event_time: day
"""
READ_LINE = re.compile(r"main\.t@\d+: read (\d+) of (\d+) files \(skipped by partition: (\d+), "
                       r"by statistics: (\d+)\)")


def write_project(path: str, spec: C.LakeSpec) -> None:
    os.makedirs(os.path.join(path, "models"), exist_ok=True)
    with open(os.path.join(path, "models", "daily.sql"), "w") as f:
        f.write(MODEL_CONFIG + "\n" + MODEL_BODY.format(upstream="{{ source('lake', 't') }}")
                + "\n")
    with open(os.path.join(path, "models", "sources.yml"), "w") as f:
        f.write(SOURCES_YML)
    with open(os.path.join(path, "dbt_project.yml"), "w") as f:
        f.write("name: mb\nversion: '1.0'\nprofile: mb\nconfig-version: 2\n")
    extra = "".join(f"      {k}: {v}\n" for k, v in spec.open_kwargs().items())
    conf = "".join(f'        {k}: "{v}"\n' for k, v in {
        "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC"}.items())
    with open(os.path.join(path, "profiles.yml"), "w") as f:
        f.write(textwrap.dedent(f"""\
            mb:
              target: ours
              outputs:
                ours:
                  type: ducklake
                  catalog: "{spec.catalog}"
                  data_path: "{spec.data_path}"
                  schema: main
                  threads: 1
                  master: "local[*]"
            """) + extra + "      spark_conf:\n" + conf)


def dbt_run(project: str, start: dt.date, end: dt.date) -> tuple[float, list[dict]]:
    """One ``dbt run`` of the microbatch model: wall seconds, and per batch its seconds and
    the files it read of the upstream (from the JSON debug log)."""
    logs = os.path.join(project, "logs")
    if os.path.exists(os.path.join(logs, "dbt.log")):
        os.remove(os.path.join(logs, "dbt.log"))
    env = dict(os.environ, PYTHONPATH=C.REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    cmd = [dbt, "run", "--project-dir", project, "--profiles-dir", project,
           "--log-path", logs, "--log-format-file", "json", "--log-level-file", "debug",
           "--event-time-start", start.isoformat(), "--event-time-end", end.isoformat()]
    with C.Timer() as t:
        done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True,
                              check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dbt run failed\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}")
    batches: list[dict] = []
    current: dict | None = None
    with open(os.path.join(logs, "dbt.log")) as f:
        for line in f:
            if not line.startswith("{"):  # Spark's own start-up lines on stderr
                continue
            event = json.loads(line)
            name, data = event["info"]["name"], event.get("data", {})
            if name == "LogStartBatch":
                current = {"index": data.get("batch_index"), "reads": [], "sql": []}
            elif name == "LogBatchResult" and current is not None:
                current["seconds"] = float(data["execution_time"])
                current["status"] = data.get("status")
                batches.append(current)
                current = None
            elif current is not None:
                msg = event["info"].get("msg", "")
                match = READ_LINE.search(msg)
                if match:
                    current["reads"].append(tuple(int(x) for x in match.groups()))
                if name == "SQLQuery":
                    current["sql"].append(data.get("sql", ""))
    return t.seconds, batches


def microbatch(args, results: C.Results, root: str, spec: C.LakeSpec, spark, lake,  # noqa: ANN001, PLR0913
               engine, con, table_dir: str, first: dt.date, count: int) -> None:
    """The dbt microbatch model over ``main.t`` and the same batches on the peers."""
    from pyspark.sql import functions as F

    windows = [(first + dt.timedelta(days=i), first + dt.timedelta(days=i + 1))
               for i in range(count)]
    end = windows[-1][1]
    print(f"   microbatch: {count} daily batches from {first} to {end}", flush=True)
    project = os.path.join(root, "mb_project")
    write_project(project, spec)
    seconds, batches = dbt_run(project, first, end)  # creates main.daily
    results.note(f"first dbt run (creates the table): {seconds:.1f} s, batches "
                 + ", ".join(f"{b['seconds']:.2f} s" for b in batches))
    for batch in batches:
        print(f"      batch {batch['index']}: {batch['seconds']:.2f} s, reads {batch['reads']}")
    if len(batches) != count:
        raise SystemExit(f"expected {count} successful batches: {batches}")
    for rep in range(args.reps):
        seconds, batches = dbt_run(project, first, end)
        results.add("ours-dbt", "microbatch run", seconds)
        for batch in batches:
            results.add("ours-dbt", "microbatch batch", batch["seconds"])
            upstream = batch["reads"][0] if batch["reads"] else None
            if upstream is None:  # not judged: the table is under minTableBytes
                results.note(f"batch {batch['index']}: no file-skipping line for main.t "
                             "(read whole: under spark.ducklake.fileSkipping.minTableBytes)")
                continue
            results.add("ours-dbt", "microbatch files read per batch", upstream[0], "files")
            if upstream[0] > 1:
                results.note(f"batch {batch['index']} read {upstream[0]} of {upstream[1]} "
                             f"files; SQL: {batch['sql']}")
        if rep == 0:
            print("      dbt's statements of batch 1:")
            for sql in batches[0]["sql"]:
                print("\n".join("        " + line for line in sql.strip().splitlines()))
            print(f"      files read per batch: {[b['reads'] for b in batches]}", flush=True)

    def window_filter(start: dt.date, stop: dt.date) -> str:
        return f"day >= '{start} 00:00:00+00:00' and day < '{stop} 00:00:00+00:00'"

    # ours-sql: what dbt's microbatch materialization runs per batch, through the engine
    engine.execute("CREATE TABLE main.daily_sql AS " + MODEL_BODY.format(
        upstream="(select * from main.t where false) t"))

    def ours_sql(start: dt.date, stop: dt.date) -> None:
        upstream = f"(select * from main.t where {window_filter(start, stop)}) t"
        engine.execute("CREATE OR REPLACE TEMPORARY VIEW daily_sql__tmp AS "
                       + MODEL_BODY.format(upstream=upstream))
        engine.execute(
            f"insert into main.daily_sql replace where day >= timestamp'{start}T00:00:00+00:00'"
            f" and day < timestamp'{stop}T00:00:00+00:00' select `day`, `events`, `v_sum`, "
            "`first_id`, `last_id` from daily_sql__tmp")
        engine.execute("DROP VIEW IF EXISTS daily_sql__tmp")

    out = os.path.join(root, "mb_spark")

    def bare(start: dt.date, stop: dt.date) -> None:
        df = (spark.read.parquet(table_dir)
              .where(f"day >= DATE '{start}' AND day < DATE '{stop}'")
              .groupBy("day")
              .agg(F.count(F.lit(1)).alias("events"), F.sum("v").alias("v_sum"),
                   F.min("id").alias("first_id"), F.max("id").alias("last_id")))
        (df.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
         .partitionBy("day").parquet(out))

    con.execute("CREATE TABLE lake.main.daily_duckdb (day DATE, events BIGINT, v_sum BIGINT, "
                "first_id BIGINT, last_id BIGINT)")

    def duck(start: dt.date, stop: dt.date) -> None:
        where = f"day >= DATE '{start}' AND day < DATE '{stop}'"
        con.execute("BEGIN")
        con.execute(f"DELETE FROM lake.main.daily_duckdb WHERE {where}")
        con.execute("INSERT INTO lake.main.daily_duckdb " + MODEL_BODY.format(
            upstream=f"lake.main.t WHERE {where}"))
        con.execute("COMMIT")

    peers = {"ours-sql": ours_sql, "spark.read.parquet": bare, "duckdb": duck}
    for fn in peers.values():  # warm-up: one run of the batches each
        for start, stop in windows:
            fn(start, stop)
    for _ in range(args.reps):
        for name, fn in peers.items():
            total = 0.0
            for start, stop in windows:
                seconds, _ = C.timed(lambda fn=fn, a=start, b=stop: fn(a, b))
                results.add(name, "microbatch batch", seconds)
                total += seconds
            results.add(name, "microbatch run", total)
    query = "SELECT day, events, v_sum, first_id, last_id FROM {} ORDER BY day"
    answers = {
        "ours-dbt": con.execute(query.format("lake.main.daily")).fetchall(),
        "ours-sql": con.execute(query.format("lake.main.daily_sql")).fetchall(),
        "duckdb": con.execute(query.format("lake.main.daily_duckdb")).fetchall(),
        "spark.read.parquet": con.execute(query.format(
            f"read_parquet('{out}/**/*.parquet', hive_partitioning = true)")).fetchall(),
    }
    answers = {k: [tuple(str(x) for x in row) for row in v] for k, v in answers.items()}
    if len({tuple(v) for v in answers.values()}) != 1 or len(answers["duckdb"]) != count:
        raise SystemExit(f"microbatch: the systems disagree: {answers}")
    print(f"      {count} daily rows, equal on every system: {answers['duckdb'][0]} ...",
          flush=True)


if __name__ == "__main__":
    main()
