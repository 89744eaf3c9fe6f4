"""The driver daemon's bookkeeping without a JVM: which keeper a profile's Spark settings
name, where it lives, and the lease that lets one dbt process at a time attach."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from dbt.adapters.ducklake import driver_daemon


def test_the_key_names_everything_the_jvm_was_started_with() -> None:
    conf = {"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "4"}
    key = driver_daemon.daemon_key("local[*]", conf)
    assert key == driver_daemon.daemon_key("local[*]", dict(reversed(list(conf.items()))))
    assert key != driver_daemon.daemon_key("local[2]", conf)
    assert key != driver_daemon.daemon_key("local[*]", {**conf, "spark.driver.memory": "4g"})


def test_the_directory_follows_the_environment(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.setenv(driver_daemon.DIRECTORY_ENV, str(tmp_path))
    assert driver_daemon.daemon_directory("abc") == tmp_path / "abc"
    monkeypatch.delenv(driver_daemon.DIRECTORY_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert driver_daemon.daemon_directory("abc") == \
        tmp_path / "cache" / "dbt-ducklake" / "driver-daemon" / "abc"


def test_the_lease_is_one_process_at_a_time_and_ends_with_it(tmp_path) -> None:  # noqa: ANN001
    lease = tmp_path / "lease"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, sys
        f = open({str(lease)!r}, "a+")
        fcntl.flock(f, fcntl.LOCK_EX)
        print("held", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    assert driver_daemon._take(lease) is None
    assert not driver_daemon._is_free(lease)
    holder.kill()  # however the holder ends, its lease is free again
    holder.wait()
    assert driver_daemon._is_free(lease)
    taken = driver_daemon._take(lease)
    assert taken is not None
    taken.close()


def test_private_files_are_this_users_only(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "server.json"
    driver_daemon._write_private(path, '{"secret": "s"}')
    assert path.read_text() == '{"secret": "s"}' and (path.stat().st_mode & 0o777) == 0o600


def test_the_keeper_counts_each_release_and_knows_when_to_exit(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    """A use ends when its process lets go of the lease; the keeper exits after
    ``RECYCLE_AFTER`` uses, after the idle time, or when its JVM ended."""
    monkeypatch.setattr(driver_daemon, "POLL", 0.02)
    monkeypatch.setattr(driver_daemon, "RECYCLE_AFTER", 2)
    lease = tmp_path / "lease"
    held = driver_daemon._take(lease)
    assert held is not None
    threading.Timer(0.2, held.close).start()
    watch = driver_daemon._watch(lease, idle_seconds=60, jvm_alive=lambda: True)
    assert next(watch) == "use 1"
    again = driver_daemon._take(lease)
    assert again is not None
    threading.Timer(0.2, again.close).start()
    assert next(watch) == "use 2"
    assert next(watch, None) is None  # recycled after two uses

    started = time.monotonic()
    assert list(driver_daemon._watch(lease, idle_seconds=0.2, jvm_alive=lambda: True)) == []
    assert time.monotonic() - started >= 0.2  # idle
    assert list(driver_daemon._watch(lease, idle_seconds=60, jvm_alive=lambda: False)) == []
