"""A model's own settings without Spark: the spark_conf and grants configs, the lock that
makes a model with its own settings run alone, and the clone_snapshot setting."""

from __future__ import annotations

import threading
import time

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.ducklake.clone import parse_setting
from dbt.adapters.ducklake.model_settings import ModelLock, check_grants, spark_conf_of


def test_spark_conf_values_become_spark_strings() -> None:
    conf = spark_conf_of({"spark_conf": {"spark.sql.ansi.enabled": False,
                                         "spark.sql.shuffle.partitions": 64}})
    assert conf == {"spark.sql.ansi.enabled": "false", "spark.sql.shuffle.partitions": "64"}
    assert spark_conf_of({}) == {} and spark_conf_of({"spark_conf": None}) == {}


@pytest.mark.parametrize("raw, message", [
    ("spark.sql.ansi.enabled=false", "spark_conf of a model is a mapping"),
    ({"spark.x": [1]}, "spark.x takes a string, number or boolean"),
    ({"spark.x": None}, "spark.x takes a string, number or boolean"),
    ({"": 1}, "setting names are strings"),
])
def test_spark_conf_shapes_are_refused(raw: object, message: str) -> None:
    with pytest.raises(DbtRuntimeError, match=message):
        spark_conf_of({"spark_conf": raw})


def test_grants_are_refused_or_warned() -> None:
    check_grants(None, None, "model.p.m")  # nothing asked, nothing said
    with pytest.raises(DbtRuntimeError, match="no per-table privileges.*accepted: error, warn"):
        check_grants({"select": ["r"]}, None, "model.p.m")
    said: list[str] = []
    check_grants({"select": ["r"]}, "WARN", "model.p.m", warn=said.append)
    assert len(said) == 1 and "model.p.m has grants ({'select': ['r']})" in said[0]
    with pytest.raises(DbtRuntimeError, match="got 'ignore'; accepted: error, warn"):
        check_grants({}, "ignore", "model.p.m")


def test_exclusive_waits_for_shared_and_holds_others_back() -> None:
    lock = ModelLock()
    events: list[str] = []
    lock.acquire(False)  # a model running

    def exclusive() -> None:
        with lock.held(True):
            events.append("exclusive in")
            time.sleep(0.2)
            events.append("exclusive out")

    writer = threading.Thread(target=exclusive)
    writer.start()
    time.sleep(0.1)
    assert events == []  # waits for the running model
    lock.release(False)
    time.sleep(0.05)
    assert events == ["exclusive in"]

    def shared() -> None:
        with lock.held(False):
            events.append("shared")

    reader = threading.Thread(target=shared)
    reader.start()
    reader.join()
    writer.join()
    assert events == ["exclusive in", "exclusive out", "shared"]


def test_a_waiting_exclusive_model_does_not_block_shared_ones() -> None:
    """Readers first: a microbatch model's batches (other threads) go on while a model with
    its own settings waits, so they cannot deadlock."""
    lock = ModelLock()
    lock.acquire(False)
    writer = threading.Thread(target=lambda: (lock.acquire(True), lock.release(True)),
                              daemon=True)
    writer.start()
    time.sleep(0.05)
    got = threading.Event()
    threading.Thread(target=lambda: (lock.acquire(False), got.set()), daemon=True).start()
    assert got.wait(2)
    lock.release(False)
    lock.release(False)
    writer.join(2)
    assert not writer.is_alive()  # and it got its turn once both were done


@pytest.mark.parametrize("value, parsed", [
    (None, None), (False, None), ("current", None), ("", None), ("state", "state"),
    ("STATE", "state"), (42, 42), ("42", 42), (0, 0),
])
def test_clone_snapshot_values(value: object, parsed: object) -> None:
    assert parse_setting(value) == parsed


@pytest.mark.parametrize("value", ["yesterday", -1, True, 1.5, ["state"]])
def test_clone_snapshot_bad_values(value: object) -> None:
    with pytest.raises(DbtRuntimeError, match="accepted: 'current'.*'state', or a snapshot id"):
        parse_setting(value)


def test_a_failing_model_end_still_lets_the_other_models_run() -> None:
    """dbt calls ``post_model_hook`` in a ``finally``: if forgetting the model's checks fails
    (an internal error), its settings must still be restored and the lock released."""
    from types import SimpleNamespace

    from dbt.adapters.ducklake.impl import DuckLakeAdapter
    from dbt.adapters.ducklake.model_settings import enter

    class Conf:
        def __init__(self) -> None:
            self.values = {"spark.sql.shuffle.partitions": "2"}
            self.getAll = self.values

        def set(self, key: str, value: str) -> None:
            self.values[key] = value

        def unset(self, key: str) -> None:
            self.values.pop(key, None)

    def broken(runtime: object) -> None:
        raise RuntimeError("internal error")

    lock, spark = ModelLock(), SimpleNamespace(conf=Conf())
    runtime = SimpleNamespace(spark=spark, model_lock=lock)
    settings = enter(spark, lock, {"spark.sql.shuffle.partitions": "64"}, "model.p.m")
    adapter = SimpleNamespace(_ducklake_forget_constraints=broken)
    with pytest.raises(RuntimeError, match="internal error"):
        DuckLakeAdapter.post_model_hook(adapter, {}, (runtime, settings))  # type: ignore[arg-type]
    assert spark.conf.values == {"spark.sql.shuffle.partitions": "2"}
    got = threading.Event()
    threading.Thread(target=lambda: (lock.acquire(True), got.set()), daemon=True).start()
    assert got.wait(5), "the model lock stayed held"
