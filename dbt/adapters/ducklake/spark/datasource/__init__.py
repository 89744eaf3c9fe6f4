"""``format("ducklake")``: Spark's own entry points into a lake, through PySpark's Python data
source API.

>>> df = spark.read.format("ducklake").option("catalog", url).load("main.events")
>>> (events.writeStream.format("ducklake")
...     .option("catalog", "sqlite:///lake/catalog.sqlite").option("table", "main.events")
...     .option("checkpointLocation", "ck/events").start())
>>> df.write.format("ducklake").option("catalog", url).mode("append").save("main.events")

The format is known to every SparkSession without a call: Spark registers the
``DefaultSource`` of the top-level module ``pyspark_ducklake`` (shipped with the package) on
its first use of a Python data source. :func:`register` does it explicitly (for a Python
path where that module is not importable); ``SparkLake`` calls it where Spark's own lookup
would not find the format (:func:`make_known`).

Modules: :mod:`.options` (what a read or write was given), :mod:`.sink` (writes),
:mod:`.plan` (what a write needs of its table, kept per worker),
:mod:`.reader` (batch reads), :mod:`.source` (streaming reads), :mod:`.arrow_read` (a
table's rows as Arrow in the Python workers).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from . import workers

if TYPE_CHECKING:
    from .options import LakeOptions, ReadOptions, SinkOptions
    from .reader import LakeBatchReader, LakeFilteringReader
    from .sink import LakeBatchWriter, LakeCommitMessage, LakeStreamWriter
    from .source import LakeStreamReader

# Each of Spark's Python workers imports this package to unpickle the data source (Spark's
# lookup of formats, the planning of a read or a write, a stream's commits), each in a process
# of its own: the modules a method needs are imported in that method, so that none of those
# processes imports more than its work needs (the lookup needs nothing but the class).
_HOMES = {
    "LakeBatchReader": "reader", "LakeFilteringReader": "reader", "LakeBatchWriter": "sink",
    "LakeCommitMessage": "sink", "LakeStreamWriter": "sink", "LakeStreamReader": "source",
    "LakeOptions": "options", "ReadOptions": "options", "SinkOptions": "options",
}


def __getattr__(name: str) -> object:
    """The classes of the modules named in :data:`_HOMES`, imported on first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{_HOMES[name]}", __name__), name)


NAME = "ducklake"
# Spark's switch for Python data sources' filter pushdown (off by default); register() turns
# it on unless the session sets it, so that reads skip files by the filters Spark pushes
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Make ``format("ducklake")`` known to ``spark``, and enable Python filter pushdown
    (:data:`PUSHDOWN_CONF`) unless the session sets it. Spark refuses a second registration
    of a name (``DATA_SOURCE_ALREADY_EXISTS``), and it registers the format by itself where
    ``pyspark_ducklake`` is importable: once is enough.

    A registration costs its JVM's lookup of the modules Spark registers by itself (a Python
    process importing PySpark and this package: about 1.7 s on a 2-core machine), which
    otherwise happens on the first use of a Python data source, if any:
    :func:`make_known` calls this only where that lookup would not find the format."""
    from pyspark.errors import AnalysisException

    enable_pushdown(spark)
    try:
        spark.dataSource.register(DuckLakeDataSource)
    except AnalysisException as exc:
        if exc.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise


def enable_pushdown(spark: SparkSession) -> None:
    """Turn on Spark's filter pushdown to Python data sources (:data:`PUSHDOWN_CONF`), by
    which ``format("ducklake")`` reads skip files, unless the session sets it."""
    if spark.conf.get(PUSHDOWN_CONF, None) is None:
        spark.conf.set(PUSHDOWN_CONF, "true")


def make_known(spark: SparkSession) -> None:
    """What ``SparkLake`` does for ``spark``: enable filter pushdown, and register the format
    unless Spark will find it by itself (:func:`found_without_registering`)."""
    if found_without_registering():
        enable_pushdown(spark)
    else:
        register(spark)


# What Spark's lookup must import for the format: the module, and the packages it needs
_LOOKUP_NEEDS = ("pyspark_ducklake", "pyspark", "pyarrow", "sqlalchemy")


def found_without_registering() -> bool:
    """Whether Spark's own lookup of Python data sources will find the format: it runs
    ``PYSPARK_DRIVER_PYTHON``, else ``PYSPARK_PYTHON``, else ``python3`` from PATH (Spark's
    ``PythonUtils.defaultPythonExec``, read from the JVM's environment, which PySpark starts
    with this process's), and registers the ``DefaultSource`` of every ``pyspark_*`` module
    that interpreter can import. So: can it import ``pyspark_ducklake``? Asked here when it is
    this interpreter, else of it (are the module and what it imports first there?), in a
    process that imports nothing else: tens of milliseconds, against the lookup's seconds."""
    lookup = (os.environ.get("PYSPARK_DRIVER_PYTHON") or os.environ.get("PYSPARK_PYTHON")
              or "python3")
    if os.path.abspath(lookup) == os.path.abspath(sys.executable):
        from importlib.util import find_spec

        try:
            return find_spec("pyspark_ducklake") is not None
        except (ImportError, ValueError):
            return False
    check = ("import importlib.util, sys; "
             "sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))")
    try:
        return subprocess.run([lookup, "-c", check, *_LOOKUP_NEEDS], capture_output=True,
                              timeout=30, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class DuckLakeDataSource(DataSource):
    """The ``ducklake`` format. Options: ``catalog`` (required), ``table`` (or the path of
    ``save``/``load``), ``data_path``, ``metadata_schema``, ``data_inlining_row_limit``;
    writes: ``streamId``, ``author``, ``commit_message``, ``flushInlinedRows``; reads:
    ``snapshot``, ``timestamp``; streams: ``startingSnapshot``, ``maxSnapshotsPerTrigger``,
    ``skipChangeCommits``, ``readChangeFeed``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        """The table's columns (at the read's snapshot); the change feed adds its own."""
        from . import arrow_read
        from .options import ReadOptions
        from .reader import snapshot_of, table_state

        workers.begin_call()
        options = ReadOptions.parse(self.options)
        state = table_state(options.lake, snapshot_of(options.lake.open(), options),
                            contents=False)
        arrow_read.target(state)  # refuses what the Python reader cannot read
        if options.change_feed:
            from .source import change_feed_schema

            return change_feed_schema(state.columns)
        return arrow_read.spark_schema(state.columns)

    def reader(self, schema: StructType) -> LakeBatchReader:
        from ...lake.errors import InvalidArgumentError
        from .options import ReadOptions
        from .reader import LakeBatchReader, LakeFilteringReader, pushdown_enabled

        workers.begin_call()
        options = ReadOptions.parse(self.options)
        if options.change_feed or options.starting_snapshot is not None:
            raise InvalidArgumentError(
                "readChangeFeed and startingSnapshot are options of readStream; a batch read "
                "of the change feed is SparkLake.table(...).changes(start, end)")
        if pushdown_enabled():
            return LakeFilteringReader(options, schema)
        return LakeBatchReader(options, schema)

    def streamReader(self, schema: StructType) -> LakeStreamReader:
        from .options import ReadOptions
        from .source import LakeStreamReader

        workers.begin_call()
        return LakeStreamReader(ReadOptions.parse(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> LakeStreamWriter:
        from .options import SinkOptions
        from .sink import LakeStreamWriter

        workers.begin_call()
        return LakeStreamWriter(SinkOptions.parse(self.options), schema, overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> LakeBatchWriter:
        from .options import SinkOptions
        from .sink import LakeBatchWriter

        workers.begin_call()
        return LakeBatchWriter(SinkOptions.parse(self.options), schema, overwrite)


__all__ = [
    "NAME",
    "DuckLakeDataSource",
    "LakeBatchReader",
    "LakeBatchWriter",
    "LakeCommitMessage",
    "LakeFilteringReader",
    "LakeOptions",
    "LakeStreamReader",
    "LakeStreamWriter",
    "ReadOptions",
    "SinkOptions",
    "enable_pushdown",
    "found_without_registering",
    "make_known",
    "register",
]
