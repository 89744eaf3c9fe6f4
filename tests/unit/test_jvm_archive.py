"""The JVM class archive for the adapter's Spark start: used when built, built in the
background once when missing, and never a reason for a start to fail."""

from __future__ import annotations

import os
import sys
import time

import pytest

from dbt.adapters.ducklake import jvm_archive

OPTIONS = jvm_archive.JAVA_OPTIONS


def test_an_existing_archive_is_added_to_the_drivers_options(tmp_path) -> None:  # noqa: ANN001
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"x")
    conf = jvm_archive.with_archive({OPTIONS: "-Xmx1g", "k": "v"}, str(archive))
    assert conf["k"] == "v"
    assert conf[OPTIONS].startswith("-Xmx1g -XX:SharedArchiveFile=")
    assert "-Xshare:auto" in conf[OPTIONS]
    # a profile's own archive wins; a missing file adds nothing
    own = {OPTIONS: "-XX:SharedArchiveFile=/mine.jsa"}
    assert jvm_archive.with_archive(own, str(archive)) == own
    assert jvm_archive.with_archive({}, str(tmp_path / "none.jsa")) == {}


def test_off_means_no_archive_and_no_build(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv(jvm_archive.ENV, "off")
    assert jvm_archive.archive_path() is None
    assert jvm_archive.for_driver({"k": "v"}) == {"k": "v"}


def test_the_default_path_is_under_the_users_cache(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = jvm_archive.archive_path()
    assert path is not None and path.startswith(str(tmp_path / "dbt-ducklake") + os.sep)
    assert path.endswith(".jsa")


def test_a_recent_attempt_is_not_repeated(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    path = str(tmp_path / "spark.jsa")
    monkeypatch.setenv(jvm_archive.ENV, path)
    (tmp_path / "spark.jsa.building").write_text("")  # a build started (or failed) just now
    assert jvm_archive.for_driver({}) == {}
    assert not jvm_archive.build_in_background(path)
    assert not os.path.exists(path)


def test_an_unwritable_cache_never_fails_a_start(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = str(blocker / "sub" / "spark.jsa")  # its directory cannot be made
    monkeypatch.setenv(jvm_archive.ENV, path)
    assert jvm_archive.for_driver({"k": "v"}) == {"k": "v"}
    assert not jvm_archive.build_in_background(path)


@pytest.mark.parametrize("age", [0, jvm_archive.RETRY_AFTER + 60])
def test_an_old_marker_is_retried(monkeypatch, tmp_path, age: int) -> None:  # noqa: ANN001
    """A marker older than a day (a killed build) no longer stops an attempt; the attempt here
    fails at once (no such interpreter), which only leaves a fresh marker."""
    path = str(tmp_path / "spark.jsa")
    marker = tmp_path / "spark.jsa.building"
    marker.write_text("")
    stamp = time.time() - age
    os.utime(marker, (stamp, stamp))
    monkeypatch.setattr(jvm_archive.sys, "executable", str(tmp_path / "no-python"))
    jvm_archive.build_in_background(path)
    assert marker.exists()
    assert (os.path.getmtime(marker) > stamp + 1) == (age > 0)



def test_python_workers_run_this_interpreter_unless_the_user_chose(monkeypatch) -> None:  # noqa: ANN001
    """The archive's workload (bucket partitioning) and the adapter's local sessions run
    Python workers: with ``python3`` from PATH (a venv's ``dbt`` run without activating it)
    they had no pyarrow, and no archive was ever built."""
    from dbt.adapters.ducklake.spark.datasource.workers import use_this_python_for_workers

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    use_this_python_for_workers()
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/mine/python")
    use_this_python_for_workers()
    assert os.environ["PYSPARK_PYTHON"] == "/opt/mine/python"
