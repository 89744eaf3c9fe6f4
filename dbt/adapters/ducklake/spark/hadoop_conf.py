"""The session's Hadoop configuration shipped with each job without the file of each property.

Every Parquet scan broadcasts the session's Hadoop configuration to its tasks, and every write
ships it in its job description (Spark's ``SerializableConfiguration``). That configuration
holds about 1,100 properties (``core-default.xml``, and ``mapred-default.xml`` and
``yarn-default.xml``, which Hadoop adds to every configuration once a write has loaded
``JobConf``), and Hadoop's ``Configuration.write`` writes beside each property the names of
the resources it came from, each as an array of separately gzip-compressed strings: 1,100
compressors for every scan and every write, and as many decompressors in its tasks. Measured
on a 2-core VM (2026-11-30, loop 1.8 s): 9-10 ms to serialise it, and, in a bare PySpark
session, a count over a 10-row Parquet file took 142-152 ms and a 10-row write 93-97 ms
with them, 96-129 ms and 68-79 ms without.

Those names only serve diagnostics (``Configuration.getPropertySources``, a configuration
dump), so :func:`forget_sources` drops them from the configurations every session copies its
own from; the properties and their values stay as they are. It first loads the MapReduce and
YARN defaults itself (``JobConf``'s class initialisation), which a first write would otherwise
add later, making Hadoop read every configuration's resources again and with them the names.
A resource added later still does that; then the names are back until a lake is opened again.
"""

from __future__ import annotations

import logging
from typing import Any

from py4j.java_gateway import get_method  # type: ignore[import-untyped]

log = logging.getLogger("dbt.adapters.ducklake")

_CONFIGURATION = "org.apache.hadoop.conf.Configuration"
_SOURCES_FIELD = "updatingResource"  # Configuration's map: property -> its resources


def forget_sources(spark: Any) -> int:
    """Drop the resource names of every property of ``spark``'s shared Hadoop configurations
    (the context's and the session state's); how many properties had them. Where Hadoop's
    internals differ, nothing changes (0)."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - py4j is the only way in
    try:
        jvm.org.apache.hadoop.mapred.JobConf(False)  # its defaults now, not at the first write
        field = jvm.java.lang.Class.forName(_CONFIGURATION).getDeclaredField(_SOURCES_FIELD)
        field.setAccessible(True)
        forgotten = 0
        for conf in _shared_configurations(spark):
            conf.size()  # loads the resources a new default made Hadoop drop, names included
            sources = field.get(conf)
            forgotten += sources.size()
            # Java's clear, in one call: py4j's map is a Python MutableMapping, whose clear()
            # pops the entries one by one, four calls each (0.4-0.6 s at a JVM's start)
            get_method(sources, "clear")()
        return forgotten
    except Exception:  # noqa: BLE001 - Hadoop's internals moved: the names only cost time
        log.debug("Hadoop configurations keep their resource names", exc_info=True)
        return 0


def _shared_configurations(spark: Any) -> list[Any]:
    """The configurations a session's own are copied from: the SparkContext's, and the shared
    state's copy of it that ``SessionState.newHadoopConf`` starts from."""
    context = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
    shared = spark._jsparkSession.sharedState().hadoopConf()  # noqa: SLF001
    return [context] if shared.equals(context) else [context, shared]
