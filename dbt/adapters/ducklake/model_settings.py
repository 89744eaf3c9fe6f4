"""What a model's config sets around its run: its own Spark settings (``spark_conf``), and
the refusal of ``grants``, which a lake cannot honour.

All of dbt's threads share one SparkSession, whose SQL settings are the session's, not a
thread's. A model with ``spark_conf`` therefore runs alone: it waits until the models, seeds,
snapshots and tests running in other threads have finished, holds the others back while it
runs, and puts every setting back as it was before it lets them go. Its settings are visible
to its own statements (hooks included) and to nothing else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbt_common.exceptions import DbtRuntimeError

ON_GRANTS = ("error", "warn")


class ModelLock:
    """Shared for ordinary models, exclusive for a model with its own Spark settings.

    Readers go first: a model waiting for exclusive use never blocks a shared one, so a
    microbatch model whose batches run in other threads cannot deadlock against it (the
    exclusive model simply starts once nothing else runs)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    @contextmanager
    def held(self, exclusive: bool) -> Iterator[None]:
        self.acquire(exclusive)
        try:
            yield
        finally:
            self.release(exclusive)

    def acquire(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._cond.wait_for(lambda: not self._writer and self._readers == 0)
                self._writer = True
            else:
                self._cond.wait_for(lambda: not self._writer)
                self._readers += 1

    def release(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._writer = False
            else:
                self._readers -= 1
            self._cond.notify_all()


@dataclass
class ModelSettings:
    """What :func:`enter` did, for :func:`leave`: the lock taken and the settings to restore
    (``None``: the key was not set before)."""

    exclusive: bool
    saved: dict[str, str | None] = field(default_factory=dict)


def spark_conf_of(config: Any) -> dict[str, str]:
    """A model's ``spark_conf`` config as Spark setting strings; wrong shapes fail."""
    raw = config.get("spark_conf") if config is not None else None
    if raw is None or raw == {}:
        return {}
    if not isinstance(raw, dict):
        raise DbtRuntimeError(
            f"spark_conf of a model is a mapping of Spark SQL settings, e.g. "
            f"{{'spark.sql.shuffle.partitions': 64}}; got {raw!r}")
    out = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key.strip():
            raise DbtRuntimeError(f"spark_conf: setting names are strings, got {key!r}")
        if isinstance(value, (dict, list, tuple)) or value is None:
            raise DbtRuntimeError(
                f"spark_conf: {key} takes a string, number or boolean, got {value!r}")
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def enter(spark: Any, lock: ModelLock, conf: dict[str, str], node: str) -> ModelSettings:
    """Take the model lock and apply ``conf`` (exclusively when there is any)."""
    if not conf:
        lock.acquire(False)
        return ModelSettings(False)
    lock.acquire(True)
    settings = ModelSettings(True)
    current = spark.conf.getAll
    for key, value in conf.items():
        before = current.get(key)
        try:
            spark.conf.set(key, value)
        except Exception as exc:  # noqa: BLE001 - Spark's refusal, said in dbt's terms
            leave(spark, lock, settings)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise DbtRuntimeError(
                f"spark_conf of {node}: Spark cannot change {key} while it runs ({first}). "
                "Static and cluster settings belong in the profile's spark_conf, which applies "
                "when the SparkSession starts") from None
        settings.saved[key] = before
    return settings


def leave(spark: Any, lock: ModelLock, settings: ModelSettings) -> None:
    """Restore the settings :func:`enter` changed, then release the model lock."""
    try:
        for key, value in settings.saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    finally:
        lock.release(settings.exclusive)


def check_grants(grants: Any, on_grants: Any, node: str,
                 warn: Callable[[str], None] | None = None) -> None:
    """``grants`` on a lake relation: an error (``on_grants: error``, the default) or, with
    ``on_grants: warn``, a warning through ``warn``; nothing is granted or revoked either way."""
    setting = "error" if on_grants is None else str(on_grants).strip().lower()
    if setting not in ON_GRANTS:
        raise DbtRuntimeError(
            f"on_grants of {node}: got {on_grants!r}; accepted: {', '.join(ON_GRANTS)}")
    if not grants:
        return
    problem = (
        f"{node} has grants ({grants}), but a DuckLake lake has no per-table privileges: who "
        "may read or write is decided for the whole lake by the catalog database's roles "
        "(e.g. PostgreSQL GRANTs on the ducklake_* tables) and by the permissions of the data "
        "path's storage, so nothing is granted or revoked.")
    if setting == "error":
        raise DbtRuntimeError(
            f"{problem} Remove `grants` from the model's config (or from dbt_project.yml), or "
            "set `on_grants: warn` to build it anyway with this warning (accepted: error, warn)")
    if warn is not None:
        warn(f"{problem} (on_grants: warn: built without them)")
