"""The profile: accepted keys, clear errors for unknown keys and invalid values."""

from __future__ import annotations

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.ducklake.credentials import DuckLakeCredentials


def make(**extra):  # noqa: ANN003, ANN201
    return DuckLakeCredentials.from_dict({"schema": "analytics", **extra})


def test_defaults_need_no_server() -> None:
    creds = make()
    assert creds.catalog == "sqlite:///lake/catalog.sqlite"
    assert creds.data_path == "lake/data/"
    assert creds.master == "local[*]"
    assert creds.type == "ducklake"


def test_relative_data_path_resolves_against_the_project(tmp_path) -> None:  # noqa: ANN001
    _, data_path = make().resolved_paths(str(tmp_path))
    assert data_path == f"{tmp_path}/lake/data/"


def test_unknown_key_lists_the_accepted_ones() -> None:
    with pytest.raises(DbtRuntimeError, match=r"unknown key\(s\) in the ducklake profile: "
                                              r"threds\. Accepted keys: .*catalog.*data_path"):
        make(threds=4)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("data_inlining_row_limit", -1, "non-negative integer"),
    ("snapshot_version", "latest", "snapshot id"),
    ("spark_conf", ["a"], "mapping"),
    ("read_paths", [3], "list of directories"),
])
def test_invalid_values(key, value, message) -> None:  # noqa: ANN001
    with pytest.raises(DbtRuntimeError, match=message):
        make(**{key: value})


def test_one_snapshot_pin_at_a_time() -> None:
    assert make(snapshot_time="2026-01-01 00:00:00+00").snapshot_time == "2026-01-01 00:00:00+00"
    with pytest.raises(DbtRuntimeError, match="give one"):
        make(snapshot_version=3, snapshot_time="2026-01-01 00:00:00+00")


def test_read_paths_take_one_directory_or_a_list() -> None:
    assert make(read_paths="/srv/exports").read_paths == ["/srv/exports"]
    assert make(read_paths=["a/", "/b"]).read_paths == ["a/", "/b"]


def test_spark_console_sends_the_jvm_output_to_the_console(monkeypatch) -> None:  # noqa: ANN001
    """``spark_console: true`` leaves the starting JVM's output on the console; by default it
    goes to dbt's log file (the functional test ``TestSparkOutputGoesToTheLogFile`` checks a
    real start), and a session joined, not started, is left alone."""
    from dbt.adapters.ducklake import runtime

    monkeypatch.setattr(runtime, "_dbt_log_file", lambda: "/project/logs/dbt.log")
    assert runtime.jvm_output_file(make(), joining=False) == "/project/logs/dbt.log"
    assert runtime.jvm_output_file(make(spark_console=True), joining=False) is None
    assert runtime.jvm_output_file(make(), joining=True) is None


@pytest.mark.parametrize(("extra", "message"), [
    ({"driver_daemon": "yes"}, "driver_daemon must be true or false"),
    ({"driver_daemon": True, "master": "spark://host:7077"}, "leave driver_daemon out for a "
                                                             "cluster"),
    ({"driver_daemon_idle_minutes": 0}, "positive number of minutes"),
    ({"driver_daemon_idle_minutes": "soon"}, "positive number of minutes"),
])
def test_driver_daemon_settings_are_checked(extra, message) -> None:  # noqa: ANN001
    with pytest.raises(DbtRuntimeError, match=message):
        make(**extra)


def test_driver_daemon_is_off_unless_asked_for() -> None:
    assert (make().driver_daemon, make().driver_daemon_idle_minutes) == (False, 30.0)
    creds = make(driver_daemon=True, master="local[2]", driver_daemon_idle_minutes=5)
    assert (creds.driver_daemon, creds.driver_daemon_idle_minutes) == (True, 5.0)
