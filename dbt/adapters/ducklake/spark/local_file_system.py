"""Local data files written without a ``chmod`` process per file and per directory.

Hadoop's ``RawLocalFileSystem`` sets the mode of every directory it makes and every file it
creates by starting ``chmod`` (``Shell.execCommand``) unless Hadoop's native library is
loaded, and pyspark ships none. A Spark write of one Parquet file to a local data path makes
its committer's directories and the file with its checksum file: seven processes, each a
``posix_spawn`` from the JVM. Measured on a 2-core VM (2026-11-30, loop 2.8 s): a 100-row
write took 230-260 ms, of which about 7 ms per process; with the modes set in the JVM through
``java.nio`` (``DuckLakeLocalFileSystem.java``), 170-200 ms.

:func:`install` puts that file system under the JVM's cached local file system, the one
``FileSystem.get`` hands every thread for ``file:`` paths (Spark's local-mode tasks too), so
every local write of the process benefits, not only ours. The modes are the same (a mode with
the sticky bit still goes through ``chmod``). Executors in other JVMs (a cluster) keep Hadoop's
own; where the class cannot be made or the local file system is not Hadoop's own (a profile's
``fs.file.impl``), nothing changes.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from . import jvm_classes

log = logging.getLogger("dbt.adapters.ducklake")

CLASS_NAME = "DuckLakeLocalFileSystem"
_SOURCE = Path(__file__).with_name(f"{CLASS_NAME}.java")
_installed: dict[int, bool] = {}  # py4j gateway client -> whether it is installed there
_lock = threading.Lock()


def install(spark: Any) -> bool:
    """Set file modes in ``spark``'s JVM without ``chmod`` processes (tried once per JVM);
    whether that is how they are set."""
    client = id(spark.sparkContext._gateway._gateway_client)  # noqa: SLF001 - py4j's client
    if client not in _installed:
        with _lock:
            if client not in _installed:
                _installed[client] = _install(spark)
    return _installed[client]


def _install(spark: Any) -> bool:
    helper = jvm_classes.instance(spark, _SOURCE, CLASS_NAME)
    if helper is None:
        return False
    try:
        return bool(helper.install(spark.sparkContext._jsc.hadoopConfiguration()))  # noqa: SLF001
    except Exception:  # noqa: BLE001 - Hadoop's internals moved: its own way still works
        log.debug("the local file system keeps Hadoop's chmod processes", exc_info=True)
        return False
