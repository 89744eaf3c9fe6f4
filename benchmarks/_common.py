"""Shared helpers for the benchmark scripts: timing, tables, lakes, Spark, DuckDB, results.

Every script times a few *systems* (ours and its peers) on the same data, repeats each
measurement ``--reps`` times (at least 3), prints one table of median/min/max per metric and
the ratios of ours against each peer, and writes ``benchmarks/results/<name>.json`` for
``benchmarks/plot.py`` (which draws the PNG charts in a separate environment with matplotlib).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("TZ", "UTC")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS_DIR = os.path.join(HERE, "results")

PG_CONNINFO = "dbname=test host=127.0.0.1 port=5432 user=postgres"
MIN_REPS = 3


# ------------------------------------------------------------------------------ measurements
@dataclass
class Metric:
    """Repeated samples of one quantity for one system (seconds unless ``unit`` says else)."""

    system: str
    name: str
    unit: str = "s"
    samples: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.samples.append(float(value))

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def low(self) -> float:
        return min(self.samples) if self.samples else float("nan")

    @property
    def high(self) -> float:
        return max(self.samples) if self.samples else float("nan")


class Results:
    """All metrics of one benchmark run, keyed by (system, metric name)."""

    def __init__(self, benchmark: str, args: argparse.Namespace) -> None:
        self.benchmark = benchmark
        self.args = args
        self.metrics: dict[tuple[str, str], Metric] = {}
        self.notes: list[str] = []
        self.load_before = os.getloadavg()

    def metric(self, system: str, name: str, unit: str = "s") -> Metric:
        key = (system, name)
        if key not in self.metrics:
            self.metrics[key] = Metric(system, name, unit)
        return self.metrics[key]

    def add(self, system: str, name: str, value: float, unit: str = "s") -> None:
        self.metric(system, name, unit).add(value)

    def get(self, system: str, name: str) -> float:
        metric = self.metrics.get((system, name))
        return metric.median if metric else float("nan")

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"note: {text}", flush=True)

    def print_table(self) -> None:
        """One row per (metric, system): median, min, max and the number of samples."""
        rows = [("metric", "system", "unit", "median", "min", "max", "n")]
        for m in sorted(self.metrics.values(), key=lambda m: (m.name, m.system)):
            rows.append((m.name, m.system, m.unit, fmt(m.median), fmt(m.low), fmt(m.high),
                         str(len(m.samples))))
        print_rows(rows)

    def print_ratios(self, pairs: Sequence[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
        """Ratios of medians: ``(metric, system, baseline, target text)`` per line."""
        rows = [("metric", "system / baseline", "ratio", "target")]
        out = []
        for name, system, base, target in pairs:
            a, b = self.get(system, name), self.get(base, name)
            ratio = a / b if b and b == b and a == a else float("nan")
            rows.append((name, f"{system} / {base}", f"{ratio:.2f}x", target))
            out.append({"metric": name, "system": system, "baseline": base,
                        "ratio": ratio, "target": target})
        print_rows(rows)
        return out

    def save(self, ratios: list[dict[str, Any]] | None = None) -> str:
        os.makedirs(RESULTS_DIR, exist_ok=True)
        suffix = "" if getattr(self.args, "catalog", "sqlite") == "sqlite" \
            else f"-{self.args.catalog}"
        path = os.path.join(RESULTS_DIR, f"{self.benchmark}{suffix}.json")
        data = {
            "benchmark": self.benchmark,
            "args": vars(self.args),
            "command": " ".join([os.path.relpath(sys.argv[0], REPO), *sys.argv[1:]]),
            "machine": machine(),
            "load_before": self.load_before,
            "load_after": os.getloadavg(),
            "metrics": [{"system": m.system, "name": m.name, "unit": m.unit,
                         "median": m.median, "min": m.low, "max": m.high,
                         "samples": m.samples} for m in self.metrics.values()],
            "ratios": ratios or [],
            "notes": self.notes,
        }
        with open(path, "w") as f:
            json.dump(data, f, indent=2, default=str)
        print(f"results: {path}  (load average before {fmt_load(self.load_before)}, "
              f"after {fmt_load(os.getloadavg())})")
        return path


def fmt(value: float) -> str:
    if value != value:
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.3f}"
    return f"{value:.4f}"


def fmt_load(load: Sequence[float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def print_rows(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * w for w in widths))
    print(flush=True)


class Timer:
    """``with Timer() as t: ...`` then ``t.seconds``."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def parser(description: str, scale_help: str, default_scale: float) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--scale", type=float, default=default_scale, help=scale_help)
    p.add_argument("--reps", type=int, default=MIN_REPS,
                   help=f"repetitions per system (at least {MIN_REPS})")
    p.add_argument("--catalog", choices=("sqlite", "postgres"), default="sqlite",
                   help="catalog backend of every lake in the run")
    p.add_argument("--workdir", default=None, help="scratch directory (default: a temp dir)")
    return p


def check_reps(args: argparse.Namespace) -> None:
    if args.reps < MIN_REPS:
        raise SystemExit(f"--reps must be at least {MIN_REPS}")


# ------------------------------------------------------------------------------------ lakes
@dataclass
class LakeSpec:
    """One lake: our catalog string and open options, and DuckDB's ATTACH statement."""

    catalog: str
    data_path: str
    metadata_schema: str | None
    backend: str

    def open_kwargs(self, **extra: Any) -> dict[str, Any]:
        kw: dict[str, Any] = {"metadata_schema": self.metadata_schema} \
            if self.metadata_schema else {}
        kw.update(extra)
        return kw

    def attach(self, alias: str = "lake", **options: Any) -> str:
        opts = {"DATA_PATH": f"'{self.data_path}'"}
        if self.metadata_schema:
            opts["METADATA_SCHEMA"] = f"'{self.metadata_schema}'"
        for key, value in options.items():
            opts[key.upper()] = str(value)
        target = self.catalog.replace("sqlite:///", "sqlite:", 1)
        rendered = ", ".join(f"{k} {v}" for k, v in opts.items())
        return f"ATTACH 'ducklake:{target}' AS {alias} ({rendered})"

    def drop(self) -> None:
        if self.metadata_schema:
            import psycopg

            with psycopg.connect(PG_CONNINFO, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.metadata_schema}" CASCADE')
        shutil.rmtree(self.data_path, ignore_errors=True)
        if self.catalog.startswith("sqlite:///"):
            path = self.catalog[len("sqlite:///"):]
            for suffix in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)

    def sqlalchemy_engine(self):  # noqa: ANN201 - sqlalchemy Engine
        import sqlalchemy

        if self.backend == "sqlite":
            return sqlalchemy.create_engine(self.catalog)
        return sqlalchemy.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/test")

    def catalog_rows(self) -> int:
        """Rows in every catalog table of the lake (``ducklake_*`` and inlined-data tables)."""
        import sqlalchemy

        engine = self.sqlalchemy_engine()
        try:
            inspector = sqlalchemy.inspect(engine)
            names = inspector.get_table_names(schema=self.metadata_schema)
            total = 0
            with engine.connect() as conn:
                for name in names:
                    if not name.startswith("ducklake_"):
                        continue
                    qualified = f'"{self.metadata_schema}"."{name}"' if self.metadata_schema \
                        else f'"{name}"'
                    total += conn.execute(
                        sqlalchemy.text(f"SELECT count(*) FROM {qualified}")).scalar_one()
            return total
        finally:
            engine.dispose()

    def catalog_query(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        """Run ``sql`` against the catalog; ``{s}`` is replaced by the metadata schema prefix."""
        import sqlalchemy

        prefix = f'"{self.metadata_schema}".' if self.metadata_schema else ""
        engine = self.sqlalchemy_engine()
        try:
            with engine.connect() as conn:
                return [tuple(r) for r in conn.execute(
                    sqlalchemy.text(sql.replace("{s}", prefix)), params)]
        finally:
            engine.dispose()


def parquet_files(path: str) -> int:
    return len(glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))


def parquet_bytes(path: str) -> int:
    return sum(os.path.getsize(p)
               for p in glob.glob(os.path.join(path, "**", "*.parquet"), recursive=True))


@contextmanager
def workdir(args: argparse.Namespace) -> Iterator[str]:
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        yield args.workdir
        return
    path = tempfile.mkdtemp(prefix=f"ducklake-bench-{os.getpid()}-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def new_lake(root: str, name: str, backend: str) -> LakeSpec:
    """A fresh, empty lake location under ``root`` (its catalog is created on first open)."""
    data = os.path.join(root, name, "data") + "/"
    os.makedirs(data, exist_ok=True)
    if backend == "sqlite":
        return LakeSpec(f"sqlite:///{os.path.join(root, name, 'catalog.sqlite')}", data, None,
                        "sqlite")
    schema = f"bench_{name}_{uuid.uuid4().hex[:8]}"
    return LakeSpec(f"postgres:{PG_CONNINFO}", data, schema, "postgres")


# ------------------------------------------------------------------------------------ engines
def spark_session(app: str = "dbt-ducklake-bench"):  # noqa: ANN201 - SparkSession
    """A local SparkSession sized for a 2-core machine (as the tests use)."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[*]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def duckdb_connect():  # noqa: ANN201 - duckdb.DuckDBPyConnection
    """DuckDB 1.5.5 with its extensions loaded by path: the tests' oracle connection."""
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from oracle import duckdb_connect as connect

    return connect()


def machine() -> dict[str, Any]:
    """Machine and versions, stored with every result file."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((line.split(":", 1)[1].strip() for line in f
                                if line.startswith("model name")), "?")
        with open("/proc/meminfo") as f:
            info["memory_gb"] = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    for package in ("pyspark", "duckdb", "duckdb-extension-ducklake", "dbt-core", "dbt-spark",
                    "dbt-duckdb", "SQLAlchemy", "pyarrow"):
        try:
            info[package] = version(package)
        except PackageNotFoundError:
            info[package] = None
    try:
        info["java"] = subprocess.run(["java", "-version"], capture_output=True, text=True,
                                      check=False).stderr.splitlines()[0]
    except (OSError, IndexError):
        info["java"] = None
    try:
        info["git"] = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        info["git"] = None
    return info


def banner(name: str, args: argparse.Namespace) -> None:
    print(f"== {name}: {vars(args)}")
    print(f"   load average {fmt_load(os.getloadavg())} on {os.cpu_count()} cores", flush=True)
