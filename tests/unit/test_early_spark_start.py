"""Spark starts in the background when dbt creates the adapter for a command that connects,
while dbt parses the project; the connection's own start waits for it. No JVM: the start
itself is replaced (failure injection), what is checked is when and where it runs."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from imports import imported_by

from dbt.adapters.ducklake import runtime


@pytest.fixture
def command(monkeypatch):  # noqa: ANN001, ANN201
    """Set the dbt command (``flags.WHICH``) the adapter sees; no early start left over, and
    no SparkContext in this process (another test's may be running in this worker)."""
    import dbt.flags
    from pyspark import SparkContext

    monkeypatch.setattr(runtime, "_early_start", None)
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)

    def which(name: str | None) -> None:
        monkeypatch.setattr(dbt.flags, "get_flags", lambda: SimpleNamespace(WHICH=name))
    return which


@pytest.mark.parametrize("name", ["run", "build", "seed", "snapshot", "test", "show",
                                  "run-operation", "retry", "clone", "generate"])
def test_commands_that_connect_start_spark_early(command, monkeypatch, name: str) -> None:  # noqa: ANN001
    command(name)
    started = []

    def fake_session(credentials):  # noqa: ANN001, ANN202
        time.sleep(0.1)
        started.append((credentials, threading.current_thread().name))

    monkeypatch.setattr(runtime, "spark_session", fake_session)
    runtime.start_spark_early("creds")  # type: ignore[arg-type]
    runtime.start_spark_early("creds")  # type: ignore[arg-type]  # once per process
    assert runtime._early_start is not None
    runtime._early_start.join(10)
    assert started == [("creds", "ducklake-spark-start")]


def test_a_running_spark_context_is_used_as_it_is(command, monkeypatch) -> None:  # noqa: ANN001
    from pyspark import SparkContext

    command("run")
    monkeypatch.setattr(SparkContext, "_active_spark_context", object())
    monkeypatch.setattr(runtime, "spark_session", lambda c: pytest.fail("Spark started"))
    runtime.start_spark_early("creds")  # type: ignore[arg-type]
    assert runtime._early_start is None


@pytest.mark.parametrize("name", ["parse", "list", "deps", "debug", "compile", "clean", None])
def test_other_commands_do_not(command, monkeypatch, name: str | None) -> None:  # noqa: ANN001
    command(name)
    monkeypatch.setattr(runtime, "spark_session", lambda c: pytest.fail("Spark started"))
    runtime.start_spark_early("creds")  # type: ignore[arg-type]
    assert runtime._early_start is None


def test_outside_a_dbt_invocation_nothing_starts(command, monkeypatch) -> None:  # noqa: ANN001
    import dbt.flags

    monkeypatch.setattr(dbt.flags, "get_flags", lambda: (_ for _ in ()).throw(RuntimeError()))
    runtime.start_spark_early("creds")  # type: ignore[arg-type]
    assert runtime._early_start is None


def test_the_connection_waits_for_the_early_start(command, monkeypatch) -> None:  # noqa: ANN001
    """The connection's start joins the early one before it starts Spark itself, so the two
    never start a JVM side by side (nor redirect stderr twice); a failed early start is left
    for the connection's start to report."""
    command("run")
    release = threading.Event()
    events = []
    real = runtime.spark_session

    def early_then_fail(credentials):  # noqa: ANN001, ANN202
        if threading.current_thread().name == "ducklake-spark-start":
            release.wait(10)
            events.append("early start ended")
            raise RuntimeError("no Java")
        return real(credentials)

    monkeypatch.setattr(runtime, "spark_session", early_then_fail)
    runtime.start_spark_early("creds")  # type: ignore[arg-type]
    monkeypatch.setattr(runtime, "check_java", lambda: (events.append("connection starts"),
                                                        pytest.skip("stop before Spark")))
    threading.Timer(0.2, release.set).start()
    with pytest.raises(pytest.skip.Exception):
        real("creds")  # type: ignore[arg-type]
    assert events == ["early start ended", "connection starts"]


def test_loading_the_adapter_leaves_the_lakes_libraries_for_the_connection() -> None:
    """dbt imports the adapter for every command; SQLAlchemy, pyarrow and numpy (about 0.45 s
    of a `dbt ls`) are imported when the first connection opens."""
    assert imported_by("dbt.adapters.ducklake.impl",
                       "m.split('.')[0] in ('sqlalchemy', 'pyarrow', 'numpy', 'sqlglot')") == []
