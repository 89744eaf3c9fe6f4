"""A class data sharing archive for the tests' JVMs: Spark's classes, parsed and verified once.

Every JVM the tests start (the test processes' own, the writer processes the reliability
tests kill, the ``dbt`` subprocesses, the standalone cluster's daemons and executors) loads
and verifies the same few thousand Spark classes from 280 jars before it does any work: about
half of a writer process's life. The JVM can map those classes from an archive instead
(JDK class data sharing, ``-XX:SharedArchiveFile``): measured on the four SIGKILL fault
tests, 88 s -> 55 s; on ``test_merge.py`` in one process, 68 s -> 60 s.

The archive is built by running a small lake workload in a JVM started with
``-XX:ArchiveClassesAtExit`` (about a minute on 2 cores, once per pyspark and JDK
installation; CI builds it beside the linters). A missing, stale or foreign archive only
costs the speed-up: the JVM checks the archive against its own version and class path and,
if they differ, loads classes from the jars as usual (its warning is switched off so test
output stays the same).

    python tests/jvm_archive.py     build the archive (if missing) and print its path

``DUCKLAKE_TEST_JVM_ARCHIVE`` names the file (``off``: no archive); by default it is under
``~/.cache/dbt-ducklake/``, keyed by the pyspark installation and the JDK.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

ENV = "DUCKLAKE_TEST_JVM_ARCHIVE"
# Unused or mismatched archives are not worth a warning on every JVM's stdout.
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_path() -> str | None:
    """Where the archive is (or is to be built); ``None`` when switched off."""
    configured = os.environ.get(ENV)
    if configured:
        return None if configured.lower() in ("off", "0", "false", "no") else configured
    import pyspark

    java = shutil.which("java") or "java"
    home = os.environ.get("JAVA_HOME", os.path.realpath(java))
    key = hashlib.sha256(f"{os.path.dirname(os.path.realpath(pyspark.__file__))}\n"
                         f"{pyspark.__version__}\n{home}".encode()).hexdigest()[:16]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(cache, "dbt-ducklake", f"spark-{pyspark.__version__}-{key}.jsa")


def java_options(path: str | None) -> str:
    """The JVM options that use the archive at ``path``, if it exists."""
    if path and os.path.isfile(path):
        return f" -XX:SharedArchiveFile={path} {QUIET}"
    return ""


def build(path: str) -> bool:
    """Build the archive at ``path`` unless it exists; ``False`` if the JVM could not."""
    if os.path.isfile(path):
        return True
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    started = time.monotonic()
    env = {**os.environ, ENV: "off"}
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--workload",
                               partial], env=env, capture_output=True, text=True, timeout=600)
        failure = None if proc.returncode == 0 and os.path.isfile(partial) else \
            f"exit code {proc.returncode}, no archive written\n{proc.stderr[-2000:]}"
        report = proc.stdout.strip().splitlines()[-1:]
    except subprocess.TimeoutExpired:
        failure = "the workload took more than 10 minutes"
    if failure is not None:
        sys.stderr.write(f"jvm_archive: no archive built; the tests run without it ({ENV}=off "
                         f"skips this attempt):\n{failure}\n")
        if os.path.exists(partial):
            os.unlink(partial)
        return False
    os.replace(partial, path)  # whole or not at all: a JVM never maps a half-written file
    print(f"jvm_archive: built {path} in {time.monotonic() - started:.0f} s "
          f"({''.join(report)})", file=sys.stderr)
    return True


def _workload(partial: str) -> None:
    """What most tests do, in a JVM that writes the classes it loaded to ``partial`` when it
    exits: a lake on SQLite, written and read through SQL and the Python API."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from conftest import SPARK_TEST_CONF
    from pyspark.sql import SparkSession

    from dbt.adapters.ducklake.spark import SparkLake
    from dbt.adapters.ducklake.spark.merge import MergeClause
    from dbt.adapters.ducklake.sql.engine import Engine
    from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

    conf = dict(SPARK_TEST_CONF)
    conf["spark.driver.extraJavaOptions"] += f" -XX:ArchiveClassesAtExit={partial} " \
                                             "-Xlog:cds=off -Xlog:cds+dynamic=off"
    builder = SparkSession.builder.master("local[2]").appName("dbt-ducklake-jvm-archive")
    for key, value in conf.items():
        builder = builder.config(key, value)
    started = time.monotonic()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    gateway = spark.sparkContext._gateway  # to wait for the JVM's exit
    with tempfile.TemporaryDirectory() as tmp:
        lake = SparkLake.open(spark, f"sqlite:///{tmp}/catalog.sqlite", f"{tmp}/data/")
        engine = Engine(spark, lake, ViewRegistry(spark, lake))
        for sql in (
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
        ):
            engine.execute(sql)
        for sql in ("SELECT * FROM main.v ORDER BY day", "SELECT count(*) FROM main.w",
                    "SELECT * FROM main.t WHERE id IN (1, 2, 3)"):
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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--workload":
        _workload(sys.argv[2])
    else:
        target = archive_path()
        if target is None:
            print(f"{ENV} is off")
        elif build(target):
            print(target)
        else:
            sys.exit(1)
