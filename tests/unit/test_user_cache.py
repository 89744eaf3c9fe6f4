"""Everything the package keeps between processes (the JVM's class archive, compiled helper
classes, driver daemons) lives in one directory of the user's cache."""

from __future__ import annotations

from pathlib import Path

from dbt.adapters.ducklake import driver_daemon, jvm_archive
from dbt.adapters.ducklake.spark import jvm_classes
from dbt.adapters.ducklake.spark.user_cache import cache_directory


def test_the_cache_directory_follows_xdg_else_home(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "dbt-ducklake"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_directory() == tmp_path / "home" / ".cache" / "dbt-ducklake"


def test_every_cached_thing_is_under_it(monkeypatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    monkeypatch.delenv(driver_daemon.DIRECTORY_ENV, raising=False)
    root = tmp_path / "dbt-ducklake"
    archive = jvm_archive.archive_path()
    assert archive is not None and Path(archive).parent == root
    assert jvm_classes.class_directory("class X {}", "4.3.0", "X").parent == root
    assert driver_daemon.daemons_root() == root / "driver-daemon"
