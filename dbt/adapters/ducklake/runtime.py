"""The runtime of a profile: one SparkSession, lake and statement engine, shared by all of
dbt's threads and set up once per process (the catalog first, as it fails fast; Spark takes
seconds to start), and what each thread records for its commits (the dbt node it works for,
the change-feed watermarks it consumed).
"""

from __future__ import annotations

import getpass
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from . import driver_daemon, jvm_archive
from .__version__ import version as adapter_version
from .credentials import DuckLakeCredentials
from .lake.errors import DuckLakeError
from .lake.secrets import redact
from .model_settings import ModelLock
from .spark.datasource.workers import use_this_python_for_workers

if TYPE_CHECKING:  # imported on the first connection: a command that never connects
    # (`dbt ls`, `parse`, `debug`) then never loads the lake's libraries (SQLAlchemy, pyarrow,
    # numpy: 0.45 s of a 2.7 s `dbt ls`)
    from .spark.lake import CommitInfo, SparkLake
    from .sql.engine import Engine
    from .sql.temp_views import ViewRegistry

logger = AdapterLogger("DuckLake")


class _ToDbtLog(logging.Handler):
    """The library's Python log records (``dbt.adapters.ducklake``: per-read file skipping,
    maintenance notes) in dbt's own log, at their level."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = redact(record.getMessage())
        except Exception:  # noqa: BLE001 - a bad log call must not fail a statement
            return
        if record.levelno >= logging.WARNING:
            logger.warning(message)
        elif record.levelno >= logging.INFO:
            logger.info(message)
        else:
            logger.debug(message)


_library_log = logging.getLogger("dbt.adapters.ducklake")
if not any(isinstance(h, _ToDbtLog) for h in _library_log.handlers):
    _library_log.addHandler(_ToDbtLog())
    if _library_log.level == logging.NOTSET:
        _library_log.setLevel(logging.DEBUG)

_runtimes: dict[tuple[Any, ...], Runtime] = {}
_runtimes_lock = threading.Lock()
_local = threading.local()


@dataclass
class Runtime:
    """The SparkSession, lake and statement engine shared by all threads of one profile."""

    spark: Any
    lake: SparkLake
    registry: ViewRegistry
    engine: Engine
    credentials: DuckLakeCredentials
    # models with their own spark_conf run alone (model_settings.py)
    model_lock: ModelLock = field(default_factory=ModelLock)
    # the lake.branch.Branch an atomic invocation writes to (publish_gate.py); None when
    # every statement commits to the lake itself
    branch: Any = None


def set_current_node(name: str | None) -> None:
    """Record the dbt node this thread works for; commits name it in their metadata."""
    if getattr(_local, "node", None) != name:
        _local.watermarks = {}
    _local.node = name


def set_statement_node(name: str | None) -> None:
    """Record the dbt node a statement of this thread runs for (its cursor's), keeping the
    watermarks recorded so far: they belong to the node's next data write."""
    _local.node = name


# Statements that write a model's rows: the ones that carry its change-feed watermarks.
DATA_WRITES = frozenset({"MERGE", "INSERT", "INSERT REPLACE", "INSERT OVERWRITE",
                         "CREATE TABLE", "CREATE OR REPLACE TABLE", "PYTHON MODEL"})
WATERMARKS_KEY = "ducklake_watermarks"


def set_watermark(table: str, snapshot_id: int) -> None:
    """Record that the current node has consumed ``table``'s changes up to ``snapshot_id``.

    The watermark is written into ``commit_extra_info`` of the node's next data write, in the
    same snapshot as the rows computed from those changes: it advances exactly when they land.
    """
    if not hasattr(_local, "watermarks"):
        _local.watermarks = {}
    _local.watermarks[table] = snapshot_id


def _project_dir() -> str | None:
    try:
        from dbt.flags import get_flags

        return getattr(get_flags(), "PROJECT_DIR", None)
    except Exception:  # noqa: BLE001 - outside a dbt invocation
        return None


def _invocation() -> tuple[str | None, str | None]:
    invocation_id = command = None
    try:
        from dbt_common.invocation import get_invocation_id

        invocation_id = get_invocation_id()
    except Exception:  # noqa: BLE001
        pass
    try:
        from dbt.flags import get_flags

        command = getattr(get_flags(), "WHICH", None)
    except Exception:  # noqa: BLE001
        pass
    return invocation_id, command


def check_java() -> None:
    """Spark needs a JVM; say so in one line instead of a py4j gateway trace."""
    import shutil

    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return
    if shutil.which("java") is None:
        raise DbtRuntimeError(
            "Java was not found: install Java 17 (e.g. apt-get install openjdk-17-jre) and put "
            "it on PATH or set JAVA_HOME; Spark needs it")


def check_data_path(data_path: str) -> None:
    """The data path must exist (or be creatable) and accept new files.

    The probe file gets an unpredictable name and is created exclusively (``mkstemp``:
    ``O_CREAT | O_EXCL``, which never follows a symbolic link), so a link planted under
    the data path cannot make the check write or remove a file elsewhere."""
    if "://" in data_path and not data_path.startswith("file:"):
        return  # object stores are checked by the first write
    path = data_path.removeprefix("file:")
    try:
        os.makedirs(path, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".ducklake-write-check-", dir=path)
        try:
            os.write(handle, b"ok")
        finally:
            os.close(handle)
            os.unlink(probe)
    except OSError as exc:
        raise DbtRuntimeError(
            f"the data path {data_path} is not writable ({exc.strerror or exc}); fix its "
            "permissions or point data_path in the profile elsewhere") from exc


# dbt's commands that open a connection: Spark starts for them while dbt parses the project
_CONNECTING_COMMANDS = frozenset({
    "build", "run", "seed", "snapshot", "test", "show", "run-operation", "retry", "clone",
    "generate",  # docs generate
})
_early_start: threading.Thread | None = None


def start_spark_early(credentials: DuckLakeCredentials) -> None:
    """Start Spark in the background when dbt creates the adapter, for a command that will
    open a connection (:data:`_CONNECTING_COMMANDS`) in a process without a SparkContext.

    dbt creates the adapter just before it parses the project (0.5-2 s of Python), and the
    first connection waits for Spark's start (JVM, SparkContext, SparkSession: 2.5-3.5 s on a
    2-core machine, most of it in the JVM): started here, the two overlap. The connection's
    own :func:`spark_session` waits for this start and takes its session; should this start
    fail, that call starts Spark again and raises the error for dbt to report."""
    global _early_start
    if _early_start is not None or not _command_connects():
        return
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:  # noqa: SLF001
        return
    _early_start = threading.Thread(target=_start_quietly, args=(credentials,),
                                    name="ducklake-spark-start", daemon=True)
    _early_start.start()


def _command_connects() -> bool:
    try:
        from dbt.flags import get_flags

        return getattr(get_flags(), "WHICH", None) in _CONNECTING_COMMANDS
    except Exception:  # noqa: BLE001 - outside a dbt invocation
        return False


def _start_quietly(credentials: DuckLakeCredentials) -> None:
    try:
        spark_session(credentials)
    except Exception:  # noqa: BLE001 - the connection starts Spark again and reports it
        logger.debug("Spark's early start failed; the first connection starts it")


# Every session's settings, before the profile's spark_conf (which may override them).
SESSION_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.fieldId.read.enabled": "true",
}


def spark_session(credentials: DuckLakeCredentials) -> Any:
    """The session every thread of this profile shares: in the driver daemon's JVM when the
    profile asks for it and the daemon is free (driver_daemon.py), else Spark started (or
    already running) in this process."""
    early = _early_start
    if early is not None and early is not threading.current_thread():
        early.join()  # its session, or its failure, before this start
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    check_java()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if credentials.master.startswith("local"):
        use_this_python_for_workers()
    # pyspark keeps the running SparkContext only in this private attribute
    active = SparkContext._active_spark_context  # noqa: SLF001
    conf = {key: str(value) for key, value in (credentials.spark_conf or {}).items()}
    if active is None:
        conf = jvm_archive.for_driver(with_collector(conf))
        if credentials.driver_daemon:
            session = driver_daemon.attach(
                credentials.master, {**SESSION_SETTINGS, **conf}, credentials.app_name,
                credentials.driver_daemon_idle_minutes)
            if session is not None:
                return session
    builder = SparkSession.builder.master(credentials.master).appName(credentials.app_name)
    for key, value in {**SESSION_SETTINGS, **conf}.items():
        builder = builder.config(key, value)
    with _stderr_to(jvm_output_file(credentials, joining=active is not None)):
        session = builder.getOrCreate()
    # Task failures reach the user as the statement's error; the JVM's own log is noise.
    session.sparkContext.setLogLevel("FATAL")
    return session


# The garbage collector of a driver JVM the adapter starts, unless the profile or the
# environment picks one (see with_collector).
DRIVER_COLLECTOR = "-XX:+UseParallelGC"
_JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions")
_JAVA_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")


def with_collector(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the driver JVM collecting garbage by :data:`DRIVER_COLLECTOR`, unless
    a collector is already chosen (in the profile's Java options or the JVM's environment
    variables: two would stop the JVM from starting).

    The JVM's default on a machine of two or more cores is G1, made for short pauses on large
    heaps; a dbt invocation is a batch job, where throughput is what the user waits for, and
    in local mode the driver JVM also runs the tasks. Measured on a 2-core VM (2026-11-30,
    five alternating pairs): a warm 250-node `dbt build` about 8% faster, with 7% less CPU,
    and a 30M-row aggregate and sort as fast or faster (docs/fixed-cost.md, change 17)."""
    chosen = [conf.get(key, "") for key in _JAVA_OPTION_KEYS]
    chosen += [os.environ.get(name, "") for name in _JAVA_OPTION_VARIABLES]
    if any(_names_collector(options) for options in chosen):
        return dict(conf)
    key = _JAVA_OPTION_KEYS[0]
    return {**conf, key: f"{conf.get(key, '')} {DRIVER_COLLECTOR}".strip()}


def _names_collector(options: str) -> bool:
    return any(word.startswith("-XX:+Use") and word.endswith("GC") for word in options.split())


def jvm_output_file(credentials: DuckLakeCredentials, joining: bool) -> str | None:
    """Where a starting JVM's own output goes: dbt's log file, so the console holds dbt's lines
    only; ``None`` (the console, Spark's default) when the profile says ``spark_console: true``
    or when the adapter joins a session already running (no JVM starts, and its output is
    its owner's business)."""
    if credentials.spark_console or joining:
        return None
    return _dbt_log_file()


def _dbt_log_file() -> str | None:
    """dbt's log file (``logs/dbt.log`` of the project unless ``--log-path`` says else)."""
    try:
        from dbt.flags import get_flags

        flags = get_flags()
        log_path = getattr(flags, "LOG_PATH", None) or os.path.join(
            getattr(flags, "PROJECT_DIR", None) or os.getcwd(), "logs")
        os.makedirs(log_path, exist_ok=True)
        return os.path.join(str(log_path), "dbt.log")
    except Exception:  # noqa: BLE001 - outside a dbt invocation, or no writable log dir
        return None


@contextmanager
def _stderr_to(path: str | None) -> Iterator[None]:
    """Point this process's stderr at ``path`` while Spark starts its JVM.

    The JVM inherits the file descriptor and keeps it: its start-up lines (``Using incubator
    modules``, log4j's defaults, ``NativeCodeLoader``) and everything it prints later land in
    dbt's log file instead of between dbt's own console lines, which go to stdout. Python's
    stderr is restored as soon as the JVM is up.
    """
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        os.close(saved)
        yield
        return
    try:
        os.dup2(target, 2)
        os.close(target)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def runtime_for(credentials: DuckLakeCredentials) -> Runtime:
    key = (credentials.catalog, credentials.password, credentials.data_path,
           credentials.metadata_schema,
           credentials.master, credentials.snapshot_version, credentials.snapshot_time,
           _project_dir())
    with _runtimes_lock:
        runtime = _runtimes.get(key)
        if runtime is not None:
            return runtime
        catalog, data_path = credentials.resolved_paths(_project_dir())
        base_dir = _project_dir()
        from .lake.catalog import Catalog

        # The catalog first: it fails fast, Spark takes seconds to start.
        lake = Catalog.open(catalog, data_path, metadata_schema=credentials.metadata_schema,
                         data_inlining_row_limit=credentials.data_inlining_row_limit,
                         base_dir=base_dir, password=credentials.password,
                         read_paths=credentials.read_paths)
        lake.max_retry_count = credentials.max_retry_count
        try:
            pinned = pinned_snapshot(lake, credentials)
        except DbtRuntimeError:
            lake.close()
            raise
        try:
            spark = spark_session(credentials)
        except DbtRuntimeError:
            lake.close()
            raise
        except Exception as exc:
            lake.close()
            raise DbtRuntimeError(
                f"could not start Spark (master {credentials.master!r}): {_short(exc)}. Check "
                "that Java 17 is installed (java -version) and JAVA_HOME points to it."
            ) from exc
        if pinned is not None:
            spark = _own_session(spark)
            lake.read_only_snapshot = pinned  # no catalog write, whatever asks for one
        from .spark.lake import SparkLake
        from .sql.engine import Engine
        from .sql.temp_views import ViewRegistry

        spark_lake = SparkLake(spark, lake)
        registry = ViewRegistry(spark, spark_lake, pinned, function_schema=credentials.schema)
        engine = Engine(spark, spark_lake, registry, commit_info=_commit_info(credentials),
                        read_only=pinned is not None)
        runtime = Runtime(spark, spark_lake, registry, engine, credentials)
        _runtimes[key] = runtime
        return runtime


def branch_runtime(base: Runtime, branch: Any) -> Runtime:
    """A runtime over ``branch.catalog`` (an atomic invocation's private copy of the lake),
    sharing the base runtime's Spark context.

    It gets a session of its own: the registry registers `schema.table` temp views of the
    branch's state, which must neither shadow nor replace the base runtime's views of the
    same names (after a discarded branch the base registry would read the branch's rows).
    Its catalog is another object than the lake's, so the table states kept per catalog
    (``spark/table_state.py``) of the branch never serve a read of the lake either.
    """
    from .spark.lake import SparkLake
    from .sql.engine import Engine
    from .sql.temp_views import ViewRegistry

    spark = _own_session(base.spark)
    spark_lake = SparkLake(spark, branch.catalog)
    registry = ViewRegistry(spark, spark_lake, None, function_schema=base.credentials.schema)
    engine = Engine(spark, spark_lake, registry, commit_info=_commit_info(base.credentials))
    return Runtime(spark, spark_lake, registry, engine, base.credentials, branch=branch)


def _own_session(spark: Any) -> Any:
    """A session with its own temp views: a pinned runtime registers `schema.table` at its
    snapshot, which must not shadow (or be shadowed by) another runtime's views of the same
    name in this process. Runtime SQL settings are copied over."""
    session = spark.newSession()
    for key, value in spark.conf.getAll.items():
        try:
            session.conf.set(key, value)
        except Exception:  # noqa: BLE001 - static settings are shared anyway
            continue
    return session


def pinned_snapshot(lake: Any, credentials: DuckLakeCredentials) -> int | None:
    """The snapshot the profile pins every read to (``snapshot_version`` exactly, or the latest
    at or before ``snapshot_time``), checked to exist; ``None`` without a pin."""
    if credentials.snapshot_version is None and credentials.snapshot_time is None:
        return None
    try:
        if credentials.snapshot_time is not None:
            return lake.snapshot(timestamp=credentials.snapshot_time).snapshot_id
        return lake.snapshot(version=credentials.snapshot_version).snapshot_id
    except DuckLakeError as exc:
        raise DbtRuntimeError(f"the profile pins a snapshot the lake cannot give: {exc}") \
            from exc


def _commit_info(credentials: DuckLakeCredentials):  # noqa: ANN202
    from .spark.lake import CommitInfo

    def build(kind: str) -> CommitInfo:
        invocation_id, command = _invocation()
        node = getattr(_local, "node", None)
        dbt_version: str | None
        try:
            from dbt.version import __version__ as dbt_version
        except Exception:  # noqa: BLE001
            dbt_version = None
        author = credentials.author or getpass.getuser()
        message = f"dbt {command or 'run'}: {node or 'ad hoc'} ({kind})"
        extra = {"invocation_id": invocation_id, "node_unique_id": node,
                 "dbt_version": dbt_version, "adapter": "dbt-ducklake",
                 "adapter_version": adapter_version, "statement": kind}
        watermarks = getattr(_local, "watermarks", None)
        if watermarks and kind in DATA_WRITES:
            extra[WATERMARKS_KEY] = dict(watermarks)
        return CommitInfo(author, message, extra)

    return build


def _short(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def check_not_branched(runtime: Runtime, what: str) -> None:
    """Lake maintenance rewrites, expires and deletes what other readers share: it is refused
    inside an atomic invocation (whose writes are staged on a branch), before it starts."""
    if runtime.branch is not None:
        raise DbtRuntimeError(
            f"{what} is refused in an atomic invocation (publish: atomic): maintenance acts "
            "on the lake others read, not on this invocation's staged writes. Run it in an "
            "invocation of its own with DUCKLAKE_PUBLISH=per_model (e.g. after the build)")


def check_writable(runtime: Runtime, what: str = "this write") -> None:
    """A runtime pinned to a snapshot reads only: refuse ``what`` as dbt's error, before it
    starts (nothing committed, written or deleted)."""
    try:
        runtime.engine.check_writable(what)
    except DuckLakeError as exc:
        raise DbtRuntimeError(str(exc)) from exc
