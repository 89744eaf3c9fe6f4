"""Spark settings for small statements: one stage of one task, no adaptive execution, no
whole-stage code generation and no broadcast joins when every input of a statement is small.

Spark's defaults suit big inputs: 200 shuffle partitions that adaptive query execution then
coalesces (running each exchange as a job of its own and planning the rest again), and Java
code generated and compiled for every new query. A dbt data test or a small model reads a few
hundred rows; there each of those costs more than the work (measured: a dbt ``unique`` test on
a 20-row lake table, 260 ms of JVM CPU with the defaults, 150 ms with these settings). What a
statement reads is known before it runs: the size of every relation in its analysed plan, which
for a lake table is the sum of its live data files' sizes from the catalog (the scan hands Spark
exactly those files), and for literal rows their count. Unknown sizes (a source Spark cannot
size) and subqueries in expressions (whose relations are not the plan's leaves) count as big.

A small statement is also planned as one stage (:func:`one_partition`): each input is read into
one partition, so no aggregate, join or sort needs an exchange; joins are then sort-merge joins
inside that stage, not broadcasts (a broadcast is a job of its own). Measured on a warm dbt
process (2026-11-30, 2 cores): the 40 data tests of 10 small models, 4 threads, 5.0 s -> 4.4 s
and 7.3 -> 6.0 s of JVM CPU; a ``relationships``-shaped join 145 -> 122 ms.

All of dbt's threads share one SparkSession, whose settings are the session's: a
:class:`SizingGate` switches the session between the two modes only when no statement of the
other mode runs, and a small statement that would have to wait for that runs with the default
settings instead (they give the same results, only slower). Settings a model's ``spark_conf``
or a ``SET`` changed (they differ from the session's values when the gate was made) are left
alone. None of the settings changes a result: the engine tests run with them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..lake.errors import InvalidArgumentError
from . import jvm_classes
from .expressions import java_class

PATTERNS = "org.apache.spark.sql.catalyst.trees.TreePattern"
CTE_REFERENCE = "CTERelationRef"
_HELPER_SOURCE = Path(__file__).with_name("DuckLakeStatementSize.java")
MAX_BYTES_CONF = "spark.ducklake.smallStatement.maxBytes"
DEFAULT_MAX_BYTES = 32 << 20
SMALL_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
}


def max_bytes(spark: SparkSession) -> int:
    """The input size up to which a statement is small (0: none is)."""
    value = spark.conf.get(MAX_BYTES_CONF, None)
    try:
        return DEFAULT_MAX_BYTES if value is None else int(value)
    except ValueError:
        raise InvalidArgumentError(
            f"{MAX_BYTES_CONF} must be a number of bytes (0: Spark's settings for every "
            f"statement), not {value!r}") from None


def input_bytes(spark: SparkSession, df: DataFrame) -> int | None:
    """The bytes ``df`` reads: the sum of its analysed plan's leaf sizes; ``None`` when one
    is unknown or the plan has subqueries in expressions.

    A reference to a common table expression (``CTERelationRef``) is a leaf Spark cannot
    size, but its definition is in the same plan (under ``WithCTE``), whose leaves are summed
    with the others: so the reference counts nothing (a CTE read twice counts once). dbt's
    ``accepted_values`` test, and many models, are written with CTEs."""
    helper = _helper(spark)
    if helper is not None:
        size = int(helper.inputBytes(df._jdf))  # noqa: SLF001 - the plan is the JVM's
        return None if size < 0 else size
    plan = df._jdf.queryExecution().analyzed()  # noqa: SLF001 - no public plan API
    if plan.containsPattern(java_class(spark, PATTERNS).PLAN_EXPRESSION()):
        return None
    total = 0
    leaves = plan.collectLeaves().iterator()
    while leaves.hasNext():
        leaf = leaves.next()
        if leaf.nodeName() == CTE_REFERENCE:
            continue
        size = int(str(leaf.stats().sizeInBytes()))
        if size >= (1 << 62):  # Spark's defaultSizeInBytes: it does not know
            return None
        total += size
    return total


def layout_is_implicit(spark: SparkSession, df: DataFrame) -> bool:
    """Whether ``df``'s rows are spread over tasks only as its inputs happen to split: no
    repartition, coalesce or rebalance (a method call or a hint) and no ``range`` given a
    number of slices. A write may then choose its own number of tasks."""
    helper = _helper(spark)
    if helper is not None:
        return bool(helper.layoutIsImplicit(df._jdf))  # noqa: SLF001
    plan = df._jdf.queryExecution().analyzed()  # noqa: SLF001 - no public plan API
    patterns = java_class(spark, PATTERNS)
    if plan.containsPattern(patterns.REPARTITION_OPERATION()) or \
            plan.containsPattern(patterns.REBALANCE_PARTITIONS()):
        return False
    leaves = plan.collectLeaves().iterator()
    while leaves.hasNext():
        leaf = leaves.next()
        if leaf.nodeName() == "Range" and leaf.numSlices().isDefined():
            return False
    return True


def one_partition(spark: SparkSession, df: DataFrame) -> DataFrame:
    """``df`` planned as one stage of one task: each of its inputs (and each union) read
    into one partition, which every operator above keeps, so that no aggregate, join, window
    or sort needs an exchange (``df`` itself when its rows were laid out on purpose, see
    :func:`layout_is_implicit`). For statements with small inputs: a dbt data test over a
    small table then runs one stage instead of two or three (the test's count shuffles, and
    so does an aggregate in its query), a fifth less time. Same rows, in one task; ``df``
    itself where the helper class cannot be compiled."""
    helper = _helper(spark)
    if helper is None:
        return df
    single = helper.onePartition(df._jdf)  # noqa: SLF001 - the plan is the JVM's
    return df if single.equals(df._jdf) else DataFrame(single, spark)  # noqa: SLF001


def _helper(spark: SparkSession) -> Any:
    """``DuckLakeStatementSize`` in ``spark``'s JVM: the functions above in one py4j call
    each instead of about 14; ``None`` where it cannot be compiled (then the sizes and the
    layout are read by walking the plan through py4j, and statements keep their stages)."""
    return jvm_classes.instance(spark, _HELPER_SOURCE, "DuckLakeStatementSize")


def is_small(spark: SparkSession, df: DataFrame) -> bool:
    limit = max_bytes(spark)
    if limit <= 0:
        return False
    try:
        size = input_bytes(spark, df)
    except Exception:  # noqa: BLE001 - a plan this cannot size runs as Spark would
        return False
    return size is not None and size <= limit


class SizingGate:
    """Which settings the shared session has (small or Spark's), and who runs under them.

    Small statements share the small mode; statements with big inputs share the default mode.
    The session switches mode only when no statement of the other mode runs. A big statement
    waits for the small ones running to finish; small ones arriving meanwhile wait with it and
    then run with the default settings, rather than extend its wait. While a big statement
    runs, small ones run with the default settings at once."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._cond = threading.Condition()
        self._small = 0  # statements running with the small settings
        self._big = 0  # statements running with the session's own settings
        self._big_waiting = 0
        self._saved: dict[str, str | None] = {}
        self._thread = threading.local()  # the mode this thread holds, if any
        # the session's values, for telling a model's spark_conf or a SET from them
        self._base = {key: spark.conf.get(key, None) for key in SMALL_CONF}

    @contextmanager
    def running(self, df: DataFrame) -> Iterator[bool]:
        """Run the body (which executes ``df``) with the settings its inputs call for;
        yields whether they were the small ones."""
        held = getattr(self._thread, "small", None)
        if held is not None:  # nested in this thread: the mode it holds (waiting would hang)
            yield held
            return
        small = self._enter(is_small(self.spark, df))
        self._thread.small = small
        try:
            yield small
        finally:
            self._thread.small = None
            self._leave(small)

    def _enter(self, small: bool) -> bool:
        with self._cond:
            if small and not self._big and not self._big_waiting:
                if not self._small:
                    self._apply()
                self._small += 1
                return True
            if self._small:  # the small settings are on: wait until their statements end
                self._big_waiting += 1
                try:
                    self._cond.wait_for(lambda: not self._small)
                finally:
                    self._big_waiting -= 1
            self._big += 1
            return False

    def _leave(self, small: bool) -> None:
        with self._cond:
            if small:
                self._small -= 1
                if not self._small:
                    self._restore()
            else:
                self._big -= 1
            self._cond.notify_all()

    def _apply(self) -> None:
        """The small settings, for the keys still at the session's own values."""
        self._saved = {}
        current = self.spark.conf
        for key, value in SMALL_CONF.items():
            before = current.get(key, None)
            if before != self._base[key]:
                continue
            self._saved[key] = before
            current.set(key, value)

    def _restore(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)
        self._saved = {}


_gates: dict[int, SizingGate] = {}
_gates_lock = threading.Lock()


def gate(spark: SparkSession) -> SizingGate:
    """The gate of ``spark`` (one per session, made on first use)."""
    key = id(spark._jsparkSession)  # noqa: SLF001 - one gate per JVM session
    with _gates_lock:
        found = _gates.get(key)
        if found is None or found.spark is not spark:
            found = _gates[key] = SizingGate(spark)
        return found


@contextmanager
def sized(spark: SparkSession, df: DataFrame) -> Iterator[bool]:
    """``with sized(spark, df): <execute df>``: the settings ``df``'s inputs call for."""
    with gate(spark).running(df) as small:
        yield small


def run_sized(spark: SparkSession, df: DataFrame, action: Callable[[DataFrame], Any]) -> Any:
    """``action(df)`` under :func:`sized`; a small ``df`` planned as one stage
    (:func:`one_partition`)."""
    with sized(spark, df) as small:
        return action(one_partition(spark, df) if small else df)
