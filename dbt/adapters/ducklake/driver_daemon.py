"""A Spark driver that outlives the dbt process (profile: ``driver_daemon: true``).

Each dbt invocation otherwise starts a JVM, and its first Spark jobs run before the JIT has
compiled Spark's code: on a 2-core machine a fresh ``dbt build`` of 250 small nodes takes
about twice as long as the same build run again in one process (docs/fixed-cost.md). dbt-spark
users get a warm JVM from a Thrift server they run themselves; this module keeps one for the
user, on this machine, for local masters.

- A **keeper** process (``python -m dbt.adapters.ducklake.driver_daemon serve <directory>``) starts
  the driver JVM with pyspark's gateway, makes its SparkContext and a base session, and writes
  ``server.json`` (its pid, the gateway's port on the loopback and the gateway's secret; mode
  0600 in a 0700 directory). The directory is named after everything the JVM was started
  with (:func:`daemon_key`): another interpreter, Spark version, package version or static
  setting gets a keeper of its own.
- A dbt process **attaches** while it holds the directory's ``lease``, an exclusive ``flock``
  that the operating system releases when the process ends, however it ends. It connects to
  the gateway and works in a session of its own (``newSession``: its own SQL settings,
  temporary views and functions; the SparkContext and the JVM shared). One process at a time:
  a dbt process that finds the lease taken starts Spark in its own process, as it would
  without the daemon.
- When the lease is free again the keeper cancels every job still running (a killed dbt leaves
  none behind) and drops cached data. It exits after :data:`RECYCLE_AFTER` uses (objects the
  ended processes held through py4j are only freed with the JVM) and when no process attached
  for the profile's ``driver_daemon_idle_minutes``. Killing the keeper ends its JVM (the JVM
  exits when the keeper's end of its standard input closes); ``python -m
  dbt.adapters.ducklake.driver_daemon stop`` stops every keeper of the user.

Nothing of a commit happens in the JVM (the catalog is written from the dbt process), so a
dbt process that dies while attached commits nothing, as without the daemon.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from dbt.adapters.events.logging import AdapterLogger

from .spark.user_cache import cache_directory

log = AdapterLogger("DuckLake")

DIRECTORY_ENV = "DUCKLAKE_DRIVER_DAEMON_DIR"
MODULE = "dbt.adapters.ducklake.driver_daemon"
RECYCLE_AFTER = 100  # uses before the keeper exits and the next dbt process starts a new one
START_TIMEOUT = 180.0  # seconds a dbt process waits for a keeper it started
LEASE_TRIES = 5  # the keeper's check of the lease holds it for an instant: try again
POLL = 0.25  # seconds between the keeper's checks of the lease

# What pyspark's own gateway imports into its JVM view (pyspark.java_gateway), for the calls
# pyspark makes by short names.
JVM_IMPORTS = (
    "org.apache.spark.SparkConf", "org.apache.spark.api.java.*", "org.apache.spark.api.python.*",
    "org.apache.spark.ml.python.*", "org.apache.spark.mllib.api.python.*",
    "org.apache.spark.resource.*", "org.apache.spark.sql.Encoders",
    "org.apache.spark.sql.OnSuccessCall", "org.apache.spark.sql.functions",
    "org.apache.spark.sql.classic.*", "org.apache.spark.sql.api.python.*",
    "org.apache.spark.sql.hive.*", "scala.Tuple2",
)

_held: list[IO[str]] = []  # this process's lease, held until it ends


def daemon_key(master: str, conf: Mapping[str, str]) -> str:
    """What the keeper's JVM was started with: this interpreter, pyspark, this package (its
    version and its files' modification times: the JVM's reused Python workers import it),
    Java, the master and every Spark setting."""
    import pyspark

    from .__version__ import version

    package = Path(__file__).parent
    newest = max((p.stat().st_mtime_ns for p in package.rglob("*.py")), default=0)
    text = json.dumps({
        "python": [sys.prefix, os.path.realpath(sys.executable)], "pyspark": pyspark.__version__,
        "pyspark_path": os.path.dirname(os.path.realpath(pyspark.__file__)),
        "package": [version, str(package), newest], "java_home": os.environ.get("JAVA_HOME"),
        "master": master, "conf": sorted(conf.items()),
    }, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def daemons_root() -> Path:
    """``$DUCKLAKE_DRIVER_DAEMON_DIR``, else ``driver-daemon`` in the user's cache directory."""
    configured = os.environ.get(DIRECTORY_ENV)
    return Path(configured) if configured else cache_directory() / "driver-daemon"


def daemon_directory(key: str) -> Path:
    return daemons_root() / key


def attach(master: str, conf: Mapping[str, str], app_name: str,
           idle_minutes: float) -> Any:
    """A SparkSession of this process in the keeper's JVM for ``master`` and ``conf``
    (starting the keeper if none runs); ``None`` when another dbt process holds it or it
    cannot be reached, and then the caller starts Spark itself."""
    home = daemon_directory(daemon_key(master, conf))
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)  # the gateway's secret and the profile's Spark settings are inside
    lease = _take(home / "lease", tries=LEASE_TRIES)
    if lease is None:
        log.info("the Spark driver daemon is in use by another dbt process; Spark starts in "
                 "this process")
        return None
    try:
        server = _running(home) or _start(home, master, conf, app_name, idle_minutes)
        session = _connect(server, conf)
    except Exception as exc:  # noqa: BLE001 - the caller starts Spark in this process instead
        lease.close()
        log.warning(f"the Spark driver daemon could not be used ({type(exc).__name__}: {exc}; "
                    f"its log: {home / 'keeper.log'}); Spark starts in this process")
        return None
    _held.append(lease)
    log.debug(f"Spark: attached to the driver daemon (keeper pid {server['pid']}, {home})")
    return session


def _take(path: Path, tries: int = 1) -> IO[str] | None:
    """An exclusive ``flock`` on ``path``, or ``None`` if another process holds it."""
    import fcntl  # POSIX: imported here, so that the adapter itself imports anywhere

    handle = open(path, "a+")  # noqa: SIM115 - held as long as the lock is
    for attempt in range(tries):
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if attempt + 1 < tries:
                time.sleep(0.1)
    handle.close()
    return None


def _is_free(path: Path) -> bool:
    """Whether no process holds the lock on ``path`` (taken and released at once)."""
    handle = _take(path)
    if handle is None:
        return False
    handle.close()
    return True


def _running(home: Path) -> dict[str, Any] | None:
    """The keeper's ``server.json`` if the keeper still runs (it holds ``keeper.lock``)."""
    server = home / "server.json"
    if not server.is_file():
        return None
    if _is_free(home / "keeper.lock"):  # the keeper ended without removing it
        server.unlink(missing_ok=True)
        return None
    return dict(json.loads(server.read_text()))


def _start(home: Path, master: str, conf: Mapping[str, str], app_name: str,
           idle_minutes: float) -> dict[str, Any]:
    """Start a keeper for ``home`` and wait until its JVM is ready."""
    config = home / "config.json"
    _write_private(config, json.dumps({"master": master, "conf": dict(conf),
                                       "app_name": app_name, "idle_minutes": idle_minutes}))
    with open(home / "keeper.log", "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", MODULE, "serve", str(home)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        server = _running(home)
        if server is not None:
            return server
        if proc.poll() is not None and _is_free(home / "keeper.lock"):
            raise RuntimeError(f"the driver daemon's keeper exited ({proc.returncode}) "
                               f"before its JVM was ready")
        time.sleep(0.1)
    raise TimeoutError(f"the driver daemon was not ready within {START_TIMEOUT:.0f} s")


def _connect(server: Mapping[str, Any], conf: Mapping[str, str]) -> Any:
    """This process's session in the keeper's JVM, with ``conf``'s session settings."""
    from py4j.clientserver import (  # type: ignore[import-untyped]
        ClientServer,
        JavaParameters,
        PythonParameters,
    )
    from py4j.java_gateway import java_import  # type: ignore[import-untyped]
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    gateway = ClientServer(
        java_parameters=JavaParameters(port=int(server["port"]), auth_token=server["secret"],
                                       auto_convert=True),
        python_parameters=PythonParameters(port=0, eager_load=False))
    try:
        for name in JVM_IMPORTS:
            java_import(gateway.jvm, name)
        jvm = gateway.jvm
        jsc = jvm.JavaSparkContext.fromSparkContext(
            jvm.org.apache.spark.SparkContext.getOrCreate())
        sc = SparkContext(gateway=gateway, jsc=jsc, conf=SparkConf(_jconf=jsc.getConf()))
        base = jvm.org.apache.spark.sql.classic.SparkSession.getDefaultSession().get()
        session = SparkSession(sc, jsparkSession=base.newSession())
        for key, value in conf.items():
            if session.conf.isModifiable(key):
                session.conf.set(key, value)
        return session
    except BaseException:
        _forget(gateway)
        raise


def _forget(gateway: Any) -> None:
    """Undo a half-made attachment, so that this process can start Spark itself: pyspark's
    globals point at no JVM, and the connection is closed (``close``, not ``shutdown``, which
    would stop the keeper's gateway for every later process)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    SparkContext._active_spark_context = None  # noqa: SLF001 - pyspark keeps them here
    SparkContext._gateway = None  # noqa: SLF001
    SparkContext._jvm = None  # noqa: SLF001
    SparkSession._instantiatedSession = None  # noqa: SLF001
    SparkSession._activeSession = None  # noqa: SLF001
    with contextlib.suppress(Exception):
        gateway.close()


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by this user only, atomically."""
    part = path.with_name(path.name + ".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(part, path)


# ---------------------------------------------------------------------------------------------
# The keeper


def serve(home: Path) -> None:
    """Run the keeper of ``home``: the JVM, then the lease watch until it is time to exit."""
    keeper_lock = _take(home / "keeper.lock")
    if keeper_lock is None:
        return  # another keeper runs for this directory
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop(): the clean-up below runs
    config = json.loads((home / "config.json").read_text())
    sc, base = _start_spark(config)
    params = sc._gateway.gateway_parameters  # noqa: SLF001 - the port and secret to hand on
    _write_private(home / "server.json", json.dumps(
        {"pid": os.getpid(), "port": params.port, "secret": params.auth_token}))
    try:
        for event in _watch(home / "lease", float(config["idle_minutes"]) * 60,
                            lambda: _spark_alive(sc)):
            cancelled = _released(sc, base)
            print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} a dbt process detached ({event}): "
                  f"{cancelled} job(s) cancelled, cached data dropped", flush=True)
    finally:
        (home / "server.json").unlink(missing_ok=True)
        with contextlib.suppress(Exception):
            sc.stop()
        keeper_lock.close()


def stop_all() -> int:
    """Stop every keeper of this user (``python -m dbt.adapters.ducklake.driver_daemon
    stop``); the number stopped. A dbt process attached to one loses its Spark session."""
    stopped = 0
    for server in daemons_root().glob("*/server.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            os.kill(int(json.loads(server.read_text())["pid"]), signal.SIGTERM)
            stopped += 1
    return stopped


def _start_spark(config: Mapping[str, Any]) -> tuple[Any, Any]:
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from .spark.datasource.workers import use_this_python_for_workers

    if str(config["master"]).startswith("local"):
        use_this_python_for_workers()
    conf = SparkConf().setMaster(config["master"]).setAppName(config["app_name"])
    for key, value in config["conf"].items():
        conf.set(key, value)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("FATAL")
    base = SparkSession(sc)  # the JVM's default session: each dbt process makes a new one of it
    return sc, base


def _watch(lease: Path, idle_seconds: float, jvm_alive: Callable[[], bool]) -> Iterator[str]:
    """Yield each time a dbt process lets go of the lease; return when the keeper should
    exit (idle too long, :data:`RECYCLE_AFTER` uses, or its JVM ended)."""
    busy, uses, idle_since = False, 0, time.monotonic()
    while jvm_alive():
        free = _is_free(lease)
        if busy and free:
            uses += 1
            yield f"use {uses}"
            idle_since = time.monotonic()
            if uses >= RECYCLE_AFTER:
                return
        busy = not free
        if free and time.monotonic() - idle_since > idle_seconds:
            return
        time.sleep(POLL)


def _spark_alive(sc: Any) -> bool:
    """Whether the JVM runs and its SparkContext was not stopped (a Python model may call
    ``spark.stop()``): else the keeper exits, and the next dbt process starts another."""
    try:
        return sc._gateway.proc.poll() is None and not sc._jsc.sc().isStopped()  # noqa: SLF001
    except Exception:  # noqa: BLE001 - the JVM does not answer
        return False


def _released(sc: Any, base: Any) -> int:
    """Cancel what a detached process left running (its jobs) and drop the data it cached;
    the number of jobs cancelled."""
    running = list(sc.statusTracker().getActiveJobsIds())
    if running:
        sc.cancelAllJobs()
    with contextlib.suppress(Exception):
        base.catalog.clearCache()
    # the process made its session the JVM's default: the next one starts from the base again
    sc._jvm.SparkSession.setDefaultSession(base._jsparkSession)  # noqa: SLF001
    return len(running)


def main(argv: list[str]) -> int:
    if argv[:1] == ["stop"]:
        print(f"stopped {stop_all()} driver daemon(s)")
        return 0
    if len(argv) == 2 and argv[0] == "serve":
        serve(Path(argv[1]))
        return 0
    print(f"usage: python -m {MODULE} stop", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
