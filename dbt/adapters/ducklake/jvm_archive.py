"""A class data sharing archive for Spark's JVM: Spark's classes, parsed and verified once.

Every Spark driver JVM loads and verifies the same few thousand classes from pyspark's 280
jars before it does any work: most of the seconds between ``Concurrency: 4 threads`` and the
first model of a ``dbt run``, and much of the first statement's time. The JVM can map those
classes from an archive instead (JDK class data sharing, ``-XX:SharedArchiveFile``).

The archive is built by running a small lake workload in a JVM started with
``-XX:ArchiveClassesAtExit`` (about 40 s of CPU, once per pyspark and JDK installation), and
kept under the user's cache directory (``~/.cache/dbt-ducklake/``, or ``$XDG_CACHE_HOME``). The
adapter uses it when it starts Spark, and when it is missing starts its build in the background
at the lowest CPU priority, for the next run. A missing, stale or foreign archive only costs
the speed-up: the JVM checks the archive against its own version and class path and, if they
differ, loads classes from the jars as usual (its warning is switched off). A failed build is
logged in the cache directory and ignored; it is not retried for a day.

    python -m dbt.adapters.ducklake.jvm_archive     build the archive now and print its path

``DUCKLAKE_JVM_ARCHIVE`` names another file, or ``off`` (no archive, no build). The tests share
the implementation (``tests/jvm_archive.py``) and the file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from .spark.user_cache import cache_directory

log = logging.getLogger("dbt.adapters.ducklake")

ENV = "DUCKLAKE_JVM_ARCHIVE"
OFF = ("off", "0", "false", "no")
# Unused or mismatched archives are not worth a warning on every JVM's stdout.
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
MODULE = "dbt.adapters.ducklake.jvm_archive"  # run with -m, where __name__ is __main__
RETRY_AFTER = 24 * 3600  # seconds before a failed or abandoned build is tried again


def archive_path(env: str = ENV) -> str | None:
    """Where the archive is (or is to be built); ``None`` when ``env`` switches it off."""
    configured = os.environ.get(env)
    if configured:
        return None if configured.lower() in OFF else configured
    import pyspark

    java = shutil.which("java") or "java"
    home = os.environ.get("JAVA_HOME", os.path.realpath(java))
    key = hashlib.sha256(f"{os.path.dirname(os.path.realpath(pyspark.__file__))}\n"
                         f"{pyspark.__version__}\n{home}".encode()).hexdigest()[:16]
    return str(cache_directory() / f"spark-{pyspark.__version__}-{key}.jsa")


def java_options(path: str | None) -> str:
    """The JVM options that use the archive at ``path``, if it exists."""
    if path and os.path.isfile(path):
        return f" -XX:SharedArchiveFile={path} {QUIET}"
    return ""


def with_archive(conf: Mapping[str, str], path: str | None) -> dict[str, str]:
    """``conf`` (Spark settings) with the driver JVM mapping the archive at ``path``, if it
    exists; unchanged when the settings already name an archive of their own."""
    out = dict(conf)
    options = out.get(JAVA_OPTIONS, "")
    extra = java_options(path)
    if extra and "SharedArchiveFile" not in options and "ArchiveClassesAtExit" not in options:
        out[JAVA_OPTIONS] = (options + extra).strip()
    return out


def for_driver(conf: Mapping[str, str]) -> dict[str, str]:
    """The profile's Spark settings for a new driver JVM: with the archive when it is built,
    else as they are, with the archive's build started in the background for the next run.
    Never raises (a start must not fail for a speed-up)."""
    try:
        if "SharedArchiveFile" in conf.get(JAVA_OPTIONS, ""):
            return dict(conf)
        path = archive_path()
        if path is None:
            return dict(conf)
        if os.path.isfile(path):
            return with_archive(conf, path)
        build_in_background(path)
    except Exception:  # noqa: BLE001 - e.g. no writable cache directory
        log.debug("jvm_archive: not used", exc_info=True)
    return dict(conf)


def build(path: str, env: str = ENV) -> bool:
    """Build the archive at ``path`` unless it exists; ``False`` if the JVM could not (the
    reason is on stderr)."""
    if os.path.isfile(path):
        return True
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    started = time.monotonic()
    command = [sys.executable, "-m", MODULE, "--workload", partial]
    try:
        proc = subprocess.run(command, env={**os.environ, env: "off", ENV: "off"},
                              capture_output=True, text=True, timeout=900, check=False)
        failure = None if proc.returncode == 0 and os.path.isfile(partial) else \
            f"exit code {proc.returncode}, no archive written\n{proc.stderr[-2000:]}"
        report = proc.stdout.strip().splitlines()[-1:]
    except subprocess.TimeoutExpired:
        failure = "the workload took more than 15 minutes"
    if failure is not None:
        sys.stderr.write(f"jvm_archive: no archive built; Spark starts without it ({env}=off "
                         f"skips this attempt):\n{failure}\n")
        if os.path.exists(partial):
            os.unlink(partial)
        return False
    os.replace(partial, path)  # whole or not at all: a JVM never maps a half-written file
    print(f"jvm_archive: built {path} in {time.monotonic() - started:.0f} s "
          f"({''.join(report)})", file=sys.stderr)
    return True


def build_in_background(path: str) -> bool:
    """Start building the archive at ``path`` in a detached process at the lowest CPU
    priority, unless it exists or a build started less than a day ago (its marker file says
    so, whether it runs, failed or was killed); ``True`` if one was started. Never raises:
    the archive is a speed-up, and a start must not fail for it."""
    if os.path.isfile(path):
        return False
    marker = f"{path}.building"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            if time.time() - os.path.getmtime(marker) < RETRY_AFTER:
                return False
            os.unlink(marker)
        except FileNotFoundError:
            pass
        handle = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(handle)
        with open(f"{path}.log", "a") as out:
            subprocess.Popen(  # noqa: S603 - this interpreter, this module
                [sys.executable, "-m", MODULE, "--build", path],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                env={k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")
                     or k == "PYSPARK_PYTHON"},
                preexec_fn=_lowest_priority)  # noqa: PLW1509 - only os.nice
    except OSError as exc:
        log.debug("jvm_archive: cannot start the background build: %s", exc)
        return False
    log.info("Spark starts faster from the next run on: its JVM class archive is being built "
             "in the background (%s; log beside it)", path)
    return True


def _lowest_priority() -> None:
    os.nice(19)


def _build_here(path: str) -> int:
    """The background build: build, then remove the marker if it worked (a failure keeps it,
    so that the build is not retried for a day)."""
    ok = build(path)
    if ok:
        try:
            os.unlink(f"{path}.building")
        except FileNotFoundError:
            pass
    return 0 if ok else 1


# What a dbt run does on a lake: written and read through SQL and the Python API, with Spark's
# defaults (code generation on, so its classes are archived too: a superset costs nothing).
WORKLOAD_SQL = (
    "CREATE TABLE main.t AS SELECT id, concat('r', id) AS s, "
    "CAST(id AS DECIMAL(10, 2)) AS d, DATE '2024-01-01' + CAST(id % 20 AS INT) AS day, "
    "TIMESTAMP '2024-01-01 00:00:00' AS ts FROM range(2000)",
    "INSERT INTO main.t SELECT id, 'x', 1.5, DATE '2024-02-01', "
    "TIMESTAMP '2024-02-01 00:00:00' FROM range(2000, 2005)",
    "UPDATE main.t SET s = 'u' WHERE id < 10",
    "DELETE FROM main.t WHERE id BETWEEN 100 AND 120",
    "CREATE VIEW main.v AS SELECT day, count(*) AS n, sum(d) AS total FROM main.t "
    "GROUP BY day",
    "MERGE INTO main.t AS t USING (SELECT id, 'm' AS s FROM range(0, 3000, 7)) AS s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.s = s.s "
    "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, s.s)",
    "CREATE TABLE main.w AS SELECT t.id, row_number() OVER (PARTITION BY t.day "
    "ORDER BY t.id DESC) AS rn, v.n FROM main.t t JOIN main.v v ON t.day = v.day "
    "WHERE t.ts IS NOT NULL",
    "CREATE TABLE main.lit AS SELECT * FROM (VALUES (1, 'a', 1.5), (2, 'b', 2.5)) "
    "AS t(id, s, x)",
)
WORKLOAD_QUERIES = (
    "SELECT * FROM main.v ORDER BY day", "SELECT count(*) FROM main.w",
    "SELECT * FROM main.t WHERE id IN (1, 2, 3)",
    "SELECT count(*) AS failures FROM (SELECT id FROM main.t GROUP BY id HAVING count(*) > 1)",
    "SELECT count(*) FROM (SELECT * FROM main.lit WHERE s IS NULL OR x NOT IN (1.5, 2.5))",
)


def _workload(partial: str) -> None:
    """Run :data:`WORKLOAD_SQL` in a JVM that writes the classes it loaded to ``partial`` when
    it exits."""
    from pyspark.sql import SparkSession

    from .spark import SparkLake
    from .spark.datasource.workers import use_this_python_for_workers
    from .spark.merge import MergeClause
    from .sql.engine import Engine
    from .sql.temp_views import ViewRegistry

    use_this_python_for_workers()  # the bucket partition UDF below runs in Python workers
    builder = SparkSession.builder.master("local[2]").appName("dbt-ducklake-jvm-archive")
    for key, value in {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                       "spark.sql.session.timeZone": "UTC",
                       # C1 only: the archive holds the classes loaded, not compiled code, so
                       # the optimising compiler would only add CPU (the build's user time 32 s
                       # instead of 50 s; a later JVM maps the same 13,440 classes from it)
                       JAVA_OPTIONS: f"-XX:ArchiveClassesAtExit={partial} "
                                     "-XX:TieredStopAtLevel=1 "
                                     "-Xlog:cds=off -Xlog:cds+dynamic=off"}.items():
        builder = builder.config(key, value)
    started = time.monotonic()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    gateway: Any = spark.sparkContext._gateway  # noqa: SLF001 - to wait for the JVM's exit
    with tempfile.TemporaryDirectory() as tmp:
        lake = SparkLake.open(spark, f"sqlite:///{tmp}/catalog.sqlite", f"{tmp}/data/")
        engine = Engine(spark, lake, ViewRegistry(spark, lake))
        for sql in WORKLOAD_SQL:
            engine.execute(sql)
        for sql in WORKLOAD_QUERIES:
            result = engine.execute(sql)
            if result.df is not None:
                result.df.collect()
        table = lake.table("main.t")
        table.merge(spark.range(5).selectExpr("id", "'p' AS s"), "t.id = s.id",
                    [MergeClause("matched", "update_star")], "t", "s")
        table.changes(1).toArrow()
        table.read(version=2).toPandas()
        lake.create_table("main.p", spark.range(100).selectExpr("id", "id % 4 AS k"),
                          partition_by=["k", "bucket(4, id)"])
        lake.flush_inlined_data()
        lake.merge_adjacent_files()
        lake.close()
    spark.stop()
    ran = time.monotonic()
    gateway.shutdown()
    gateway.proc.stdin.close()  # the JVM exits when its stdin closes, writing the archive
    gateway.proc.wait(timeout=300)
    print(f"workload {ran - started:.0f} s, archive written in {time.monotonic() - ran:.0f} s")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--workload":
        _workload(argv[1])
        return 0
    if len(argv) == 2 and argv[0] == "--build":
        return _build_here(argv[1])
    target = archive_path()
    if target is None:
        print(f"{ENV} is off")
        return 0
    if build(target):
        print(target)
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
