"""The ``type: ducklake`` profile: where the lake lives and how Spark runs."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.contracts.connection import Credentials
from dbt_common.exceptions import DbtRuntimeError

from .lake.secrets import MASK, mask_catalog

DEFAULT_CATALOG = "sqlite:///lake/catalog.sqlite"
DEFAULT_DATA_PATH = "lake/data/"
# How a dbt invocation's writes reach the lake: each model's own snapshot as it finishes, or
# the whole invocation as one snapshot once every node passed (publish_gate.py).
PUBLISH_MODES = ("per_model", "atomic")


@dataclass
class DuckLakeCredentials(Credentials):
    """A flat profile in dbt's usual style; relative paths resolve against the project dir."""

    # A lake is one database; relations, nodes and sources leave it out (None, as in
    # dbt-spark). (dbt-adapters 1.24 types the field str; optional here as in dbt-spark.)
    database: str | None = None  # type: ignore[assignment,unused-ignore]
    # The profile's `database` (alias `lake`): a name for the lake, which `target.database`
    # renders (empty when unset, as dbt-spark renders it) and adapter methods accept as their
    # database argument. Moved here so that nodes and sources still carry none.
    lake_name: str | None = None
    schema: str = "main"
    catalog: str = DEFAULT_CATALOG
    # The PostgreSQL password, apart from the catalog string (typically
    # "{{ env_var('DBT_ENV_SECRET_LAKE_PASSWORD') }}"); never printed.
    password: str | None = field(default=None, repr=False)
    data_path: str = DEFAULT_DATA_PATH
    master: str = "local[*]"
    spark_conf: dict[str, Any] = field(default_factory=dict)
    metadata_schema: str | None = None
    data_inlining_row_limit: int | None = None
    snapshot_version: int | None = None
    snapshot_time: str | None = None
    author: str | None = None
    max_retry_count: int = 10
    app_name: str = "dbt-ducklake"
    # The JVM's own output (its start-up lines, Spark's log) goes to dbt's log file unless
    # this is true; then it is printed to the console as Spark prints it.
    spark_console: bool = False
    # Directories outside data_path whose Parquet files the catalog may name and that may be
    # read (never written or deleted): files DuckDB's ducklake_add_data_files registered there.
    read_paths: list[str] = field(default_factory=list)
    # per_model (each model commits its own snapshot) or atomic (one snapshot for the whole
    # invocation, published only when no node failed); DUCKLAKE_PUBLISH overrides it
    publish: str = "per_model"
    # Keep the Spark driver JVM running between invocations, for the next one to attach to
    # (driver_daemon.py; local masters only), until no invocation used it for this long.
    driver_daemon: bool = False
    driver_daemon_idle_minutes: float = 30.0

    _ALIASES = {"lake": "database", "dbname": "database", "server_side_parameters": "spark_conf",
                "pass": "password"}

    @property
    def type(self) -> str:
        return "ducklake"

    @property
    def unique_field(self) -> str:
        """What dbt hashes into usage tracking: the catalog without its password."""
        return mask_catalog(self.catalog)

    def __repr__(self) -> str:
        """Printable: the catalog's password masked, the ``password`` key shown as ``***``."""
        shown = dict(self.connection_info())
        if self.password is not None:
            shown["password"] = MASK
        return f"DuckLakeCredentials({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def connection_info(self, *, with_aliases: bool = False) -> Iterable[tuple[str, Any]]:
        """What ``dbt debug`` prints: the connection keys, the catalog's password masked."""
        for key, value in super().connection_info(with_aliases=with_aliases):
            if key == "database":
                # target.database: the lake's name, or empty (never the text "None")
                value = self.lake_name or ""
            yield key, mask_catalog(value) if key == "catalog" and value else value

    def _connection_keys(self) -> tuple[str, ...]:
        return ("database", "catalog", "data_path", "schema", "master", "metadata_schema",
                "data_inlining_row_limit", "snapshot_version", "snapshot_time", "publish")

    @classmethod
    def __pre_deserialize__(cls, data: dict[Any, Any]) -> dict[Any, Any]:
        data = super().__pre_deserialize__(data)
        known = set(cls.__dataclass_fields__) | set(cls._ALIASES) | {
            "type", "threads", "profile_name", "target_name", "retries", "connect_retries",
            "connect_timeout", "retry_all", "method", "host", "port", "user"}
        unknown = sorted(k for k in data if k not in known)
        if unknown:
            raise DbtRuntimeError(
                f"unknown key(s) in the ducklake profile: {', '.join(unknown)}. Accepted keys: "
                + ", ".join(sorted(k for k in cls.__dataclass_fields__ if not k.startswith("_")))
            )
        name = data.pop("database", None)
        if name is not None:
            if not isinstance(name, str) or not name.strip():
                raise DbtRuntimeError(
                    f"database (alias lake) names the lake for target.database; give a "
                    f"non-empty name or leave it out, got {name!r}")
            data["lake_name"] = name
        limit = data.get("data_inlining_row_limit")
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise DbtRuntimeError(
                f"data_inlining_row_limit must be a non-negative integer, got {limit!r}")
        version = data.get("snapshot_version")
        if version is not None and (not isinstance(version, int) or version < 0):
            raise DbtRuntimeError(
                "snapshot_version must be a snapshot id (a non-negative integer), got "
                f"{version!r}")
        if data.get("snapshot_time") is not None:
            if version is not None:
                raise DbtRuntimeError(
                    "snapshot_version and snapshot_time both pin the run to a snapshot; give one")
            data["snapshot_time"] = str(data["snapshot_time"])
        data["publish"] = check_publish_mode(data.get("publish", "per_model"),
                                             "the profile's publish key")
        check_driver_daemon(data)
        if not isinstance(data.get("spark_console", False), bool):
            raise DbtRuntimeError(
                f"spark_console must be true or false, got {data['spark_console']!r}")
        if isinstance(data.get("password"), (int, float)):
            data["password"] = str(data["password"])  # dbt renders "12345" as a number
        paths = data.get("read_paths", [])
        if isinstance(paths, str):
            data["read_paths"] = paths = [paths]
        if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
            raise DbtRuntimeError(
                f"read_paths must be a list of directories, got {paths!r}")
        if not isinstance(data.get("spark_conf", {}), dict):
            raise DbtRuntimeError("spark_conf must be a mapping of Spark configuration keys")
        return data

    def resolved_paths(self, project_dir: str | None) -> tuple[str, str]:
        """The catalog string and data path with relative paths made absolute."""
        base = project_dir or os.getcwd()
        catalog = self.catalog
        data_path = self.data_path
        if "://" not in data_path and not os.path.isabs(data_path):
            data_path = os.path.join(base, data_path)
        return catalog, data_path


def check_publish_mode(value: Any, source: str) -> str:
    """``value`` as a publish mode (case and surrounding blanks ignored), or dbt's error
    naming ``source`` and the accepted modes."""
    mode = value.strip().lower() if isinstance(value, str) else value
    if mode not in PUBLISH_MODES:
        raise DbtRuntimeError(
            f"{source} is {value!r}; accepted: {', '.join(PUBLISH_MODES)} (per_model: each "
            "model commits its own snapshot; atomic: the whole invocation is one snapshot, "
            "published only if no node failed)")
    return str(mode)


def check_driver_daemon(data: dict[Any, Any]) -> None:
    """``driver_daemon`` is true or false, only with a local master, and its idle time a
    positive number of minutes."""
    daemon = data.get("driver_daemon", False)
    if not isinstance(daemon, bool):
        raise DbtRuntimeError(f"driver_daemon must be true or false, got {daemon!r}")
    master = str(data.get("master", "local[*]"))
    if daemon and not master.startswith("local"):
        raise DbtRuntimeError(
            f"driver_daemon keeps a local Spark driver running between invocations; the "
            f"profile's master is {master!r}: leave driver_daemon out for a cluster")
    idle = data.get("driver_daemon_idle_minutes", 30.0)
    if isinstance(idle, bool) or not isinstance(idle, (int, float)) or idle <= 0:
        raise DbtRuntimeError(
            f"driver_daemon_idle_minutes must be a positive number of minutes, got {idle!r}")
    data["driver_daemon_idle_minutes"] = float(idle)
