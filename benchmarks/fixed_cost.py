"""What a dbt user waits for on small invocations: start-up and the fixed cost of every node.

One generated project of ``--models`` small table models (default 50) with four data tests
each (default 200 tests), tiny data (a few dozen rows per model). Each system runs the same
project, in the same invocation, with the same number of threads:

- ``ours``: dbt-ducklake (Spark ``local[*]``, SQLite catalog), the adapter's own defaults;
- ``ours-daemon``: the same with ``driver_daemon: true``: each dbt process attaches to a
  Spark driver an earlier one left running (the first process of the run starts it, measured
  apart as "first use");
- ``dbt-spark``: dbt-spark ``method: session``, ``file_format: parquet``, the embedded Hive
  metastore, Spark's defaults (same UI and time-zone settings as ours);
- ``dbt-duckdb``: dbt-duckdb on a DuckLake (DuckDB 1.5.5, SQLite catalog), if installed; one
  thread (with more, its concurrent DuckLake commits fail on the SQLite catalog: "database is
  locked", "Failed to commit DuckLake transaction").

Measured, as medians of ``--reps`` (default 5; 3 for a quick run):

(a) ``dbt run -s model_00`` in a fresh process (cold: dbt start-up, Spark start-up, one model),
    as a developer runs it again on an unchanged project (dbt reads its partial-parse file),
    and once more with a full parse (``partial_parse.msgpack`` removed first, as after an
    edit of ``dbt_project.yml`` or a dbt upgrade);
(b) ``dbt build`` of the whole project: cold (a fresh process on an empty target, partial
    parse) and warm (the same build again in one process, after a first one: ``dbtRunner``, as
    an IDE or a scheduler that keeps its process would);
(c) one data test's time as dbt reports it (``run_results.json`` ``execution_time``), median
    over the project's tests in the warm build.

Each system has its own copy of the project, so that each keeps its own partial-parse file
(dbt parses in full when the target or profile of its last parse differs).

Cold runs are also measured in CPU seconds of the whole process tree (Python and the JVM):
on a shared, loaded machine wall time stretches with the load, CPU time much less.

Targets (issue 39): (a) and (b) at most 0.5x dbt-spark; (c) at most 0.25 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
from collections.abc import Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

SYSTEMS = ("ours", "ours-daemon", "dbt-spark", "dbt-duckdb")
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC"}
FAN = 10  # the first FAN models read literal rows; each later one reads one of them


def model_sql(index: int, rows: int) -> str:
    """Model ``index``: literal rows (the first ``FAN``) or a small aggregate of one of them;
    the same SQL is valid Spark SQL and DuckDB SQL."""
    if index < FAN:
        values = ", ".join(f"({i}, {i % 5}, 'r{i}', {i * 1.5})" for i in range(rows))
        return f"select * from (values {values}) as t(id, k, s, amount)\n"
    source = f"model_{index % FAN:02d}"
    return textwrap.dedent(f"""\
        select id, k, s, amount * {index} as amount
        from {{{{ ref('{source}') }}}}
        where id % {2 + index % 3} <> 1 or k = {index % 5}
        """)


def schema_yml(models: int) -> str:
    """Four data tests per model: unique and not_null ids, accepted k values, not_null s."""
    out = ["version: 2", "models:"]
    for index in range(models):
        out += [f"  - name: model_{index:02d}", "    columns:",
                "      - name: id", "        data_tests: [unique, not_null]",
                "      - name: k", "        data_tests:",
                "          - accepted_values:", "              arguments:",
                "                values: [0, 1, 2, 3, 4]", "                quote: false",
                "      - name: s", "        data_tests: [not_null]"]
    return "\n".join(out) + "\n"


PROJECT_YML = """\
name: fixed_cost
version: '1.0'
profile: fixed_cost
config-version: 2
models:
  fixed_cost:
    +materialized: table
    +file_format: "{{ 'parquet' if target.type == 'spark' else none }}"
"""


def write_project(path: str, models: int, rows: int) -> None:
    os.makedirs(os.path.join(path, "models"), exist_ok=True)
    for index in range(models):
        with open(os.path.join(path, "models", f"model_{index:02d}.sql"), "w") as f:
            f.write(model_sql(index, rows))
    with open(os.path.join(path, "models", "schema.yml"), "w") as f:
        f.write(schema_yml(models))
    with open(os.path.join(path, "dbt_project.yml"), "w") as f:
        f.write(PROJECT_YML)


def profiles(root: str, target: str, threads: int) -> str:
    conf = "".join(f"        {k}: \"{v}\"\n" for k, v in SPARK_CONF.items())
    duckdb = ""
    try:
        from dbt_project import extension_directory

        ext = extension_directory(root)
        duckdb = f"""\
    dbt-duckdb:
      type: duckdb
      path: "{target}/duckdb/local.duckdb"
      threads: 1
      schema: bench
      database: lake
      config_options:
        extension_directory: "{ext}"
        allow_unsigned_extensions: true
      settings:
        TimeZone: UTC
      attach:
        - path: "ducklake:sqlite:{target}/duckdb/catalog.sqlite"
          alias: lake
          options:
            data_path: "{target}/duckdb/data/"
"""
    except ImportError:
        pass
    return f"""\
fixed_cost:
  target: ours
  outputs:
    ours:
      type: ducklake
      catalog: "sqlite:///{target}/ours/catalog.sqlite"
      data_path: "{target}/ours/data/"
      schema: bench
      threads: {threads}
      spark_conf:
{conf}    ours-daemon:
      type: ducklake
      catalog: "sqlite:///{target}/ours/catalog.sqlite"
      data_path: "{target}/ours/data/"
      schema: bench
      threads: {threads}
      driver_daemon: true
      spark_conf:
{conf}    dbt-spark:
      type: spark
      method: session
      host: localhost
      schema: bench
      threads: {threads}
      server_side_parameters:
{conf}        spark.sql.warehouse.dir: "{target}/spark/warehouse"
{duckdb}"""


def installed(system: str) -> bool:
    from importlib.util import find_spec

    module = {"ours": "dbt.adapters.ducklake", "ours-daemon": "dbt.adapters.ducklake",
              "dbt-spark": "dbt.adapters.spark",
              "dbt-duckdb": "dbt.adapters.duckdb"}[system]
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def reset_target(target: str) -> None:
    shutil.rmtree(target, ignore_errors=True)
    for sub in ("ours/data", "duckdb/data", "spark"):
        os.makedirs(os.path.join(target, sub))


def _cpu_of_tree(root: int, seen: dict[int, float]) -> None:
    """Record the CPU seconds (user + system) of ``root`` and every process below it."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        if int(entry) in seen or int(entry) == root:
            seen[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    stack = [root]
    while stack:
        pid = stack.pop()
        for child in children.get(pid, []):
            if child not in seen:
                seen[child] = 0.0
            stack.append(child)


def run_measured(cmd: list[str], cwd: str) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``cmd``: wall seconds, and the CPU seconds of its whole process tree (the JVM
    included), sampled from /proc every 0.2 s (so that a loaded machine, which stretches wall
    time, still gives comparable figures)."""
    seen: dict[int, float] = {}
    with C.Timer() as t:
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(os.environ), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out: list[str] = []
        import threading

        reader = threading.Thread(target=lambda: out.extend(proc.communicate()))
        reader.start()
        while reader.is_alive():
            _cpu_of_tree(proc.pid, seen)
            reader.join(0.2)
    done = subprocess.CompletedProcess(cmd, proc.returncode, *(out or ["", ""]))
    return t.seconds, sum(seen.values()), done


def dbt_process(project: str, target: str, system: str, *args: str,
                full_parse: bool = False) -> tuple[float, float]:
    """One dbt invocation in a fresh process, as a user starts it: wall and CPU seconds.
    ``full_parse`` removes the project's partial-parse file first."""
    if full_parse:
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(project, "target", "partial_parse.msgpack"))
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    cmd = [dbt, *args, "--project-dir", project, "--profiles-dir", project, "--target", system]
    wall, cpu, done = run_measured(cmd, os.path.join(target, "spark"))
    if done.returncode != 0:
        raise RuntimeError(f"{system}: {' '.join(args)} failed\n{done.stdout[-4000:]}\n"
                           f"{done.stderr[-2000:]}")
    return wall, cpu


WARM = """\
import json, os, sys, time
from dbt.cli.main import dbtRunner
project, system, out = sys.argv[1:4]
args = ["build", "--project-dir", project, "--profiles-dir", project, "--target", system]
runner = dbtRunner()
times = []
for _ in range(2):
    start = time.perf_counter()
    result = runner.invoke(args)
    times.append(time.perf_counter() - start)
    if not result.success:
        sys.exit(f"dbt build failed: {result.exception}")
with open(os.path.join(project, "target", "run_results.json")) as f:
    results = json.load(f)["results"]
tests = [r["execution_time"] for r in results if r["unique_id"].startswith("test.")]
models = [r["execution_time"] for r in results if r["unique_id"].startswith("model.")]
json.dump({"first": times[0], "warm": times[1], "tests": tests, "models": models},
          open(out, "w"))
"""


def warm_build(project: str, target: str, system: str) -> dict[str, object]:
    """Two ``dbt build`` in one process; the second's time and its nodes' times."""
    out = os.path.join(target, "warm.json")
    with open(os.path.join(target, "warm.py"), "w") as f:
        f.write(WARM)
    done = subprocess.run([sys.executable, os.path.join(target, "warm.py"), project, system,
                           out], cwd=os.path.join(target, "spark"), env=dict(os.environ),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{system}: warm build failed\n{done.stdout[-4000:]}\n"
                           f"{done.stderr[-2000:]}")
    with open(out) as f:
        return json.load(f)


@contextlib.contextmanager
def driver_daemons(directory: str) -> Iterator[None]:
    """``ours-daemon``'s keepers under ``directory``, stopped at the end of the run."""
    from dbt.adapters.ducklake import driver_daemon

    os.environ[driver_daemon.DIRECTORY_ENV] = directory
    try:
        yield
    finally:
        driver_daemon.stop_all()


def record(results: C.Results, system: str, metric: str, value: float) -> None:
    """Add a sample and print it at once (a long run on a loaded machine may be cut short)."""
    results.add(system, metric, value)
    print(f"   {system:10s} {metric:40s} {value:8.2f}", flush=True)


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "rows per literal model", 20)
    p.set_defaults(reps=5)
    p.add_argument("--models", type=int, default=50)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--systems", default=",".join(SYSTEMS))
    args = p.parse_args()
    C.check_reps(args)
    C.banner("fixed_cost", args)
    results = C.Results("fixed_cost", args)
    systems = [s for s in args.systems.split(",") if s and installed(s)]
    skipped = sorted(set(args.systems.split(",")) - set(systems) - {""})
    if skipped:
        results.note(f"not installed, skipped: {', '.join(skipped)}")
    with C.workdir(args) as root, driver_daemons(os.path.join(root, "daemons")):
        target = os.path.join(root, "target")
        projects = {system: os.path.join(root, f"project-{system}") for system in systems}
        for system, project in projects.items():
            write_project(project, args.models, int(args.scale))
            with open(os.path.join(project, "profiles.yml"), "w") as f:
                f.write(profiles(root, target, args.threads))
            reset_target(target)
            dbt_process(project, target, system, "parse")  # the partial-parse file
        if "ours-daemon" in projects:  # its first process starts the driver daemon
            reset_target(target)
            wall, cpu = dbt_process(projects["ours-daemon"], target, "ours-daemon", "run", "-s",
                                    "model_00")
            record(results, "ours-daemon", "first use: dbt run -s model_00 (daemon starts)",
                   wall)
        runs = (("(a) dbt run -s model_00, cold", ("run", "-s", "model_00"), False),
                ("(a) dbt run -s model_00, cold, full parse", ("run", "-s", "model_00"), True),
                ("(b) dbt build, cold", ("build",), False))
        for rep in range(args.reps):
            print(f"-- repetition {rep + 1}/{args.reps}", flush=True)
            for system in systems:
                project = projects[system]
                for metric, command, full_parse in runs:
                    reset_target(target)
                    wall, cpu = dbt_process(project, target, system, *command,
                                            full_parse=full_parse)
                    record(results, system, metric, wall)
                    record(results, system, f"{metric} [CPU s]", cpu)
                reset_target(target)
                warm = warm_build(project, target, system)
                record(results, system, "(b) dbt build, warm", float(warm["warm"]))  # type: ignore[arg-type]
                record(results, system, "(c) one data test (dbt's time)",
                            statistics.median(warm["tests"]))  # type: ignore[arg-type]
                record(results, system, "one model (dbt's time)",
                            statistics.median(warm["models"]))  # type: ignore[arg-type]
                print(f"   {system}: done", flush=True)
    results.print_table()
    pairs = []
    for metric in ("(a) dbt run -s model_00, cold", "(a) dbt run -s model_00, cold [CPU s]",
                   "(a) dbt run -s model_00, cold, full parse",
                   "(b) dbt build, cold", "(b) dbt build, cold [CPU s]",
                   "(b) dbt build, warm", "(c) one data test (dbt's time)"):
        for ours in ("ours", "ours-daemon"):
            pairs.append((metric, ours, "dbt-spark", "<= 0.5x" if metric[1] != "c" else ""))
            pairs.append((metric, ours, "dbt-duckdb", ""))
    results.save(results.print_ratios(pairs))


if __name__ == "__main__":
    main()
