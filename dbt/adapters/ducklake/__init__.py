"""dbt-ducklake: the dbt adapter (:data:`Plugin`, which dbt looks up by name) and, below it,
the lake and Spark layers.

``Plugin`` is built on first access: importing this package (as every import of
``dbt.adapters.ducklake.lake`` or ``.spark`` does, in Spark's Python workers too) then does
not import dbt. A worker importing dbt-core would hold ten times the Python objects, and
PySpark's daemon runs a full garbage collection after every task a worker runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dbt.adapters.base import AdapterPlugin

    Plugin: AdapterPlugin


def __getattr__(name: str) -> Any:
    if name != "Plugin":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from dbt.adapters.base import AdapterPlugin

    from dbt.adapters.ducklake.connections import DuckLakeConnectionManager  # noqa: F401
    from dbt.adapters.ducklake.credentials import DuckLakeCredentials
    from dbt.adapters.ducklake.impl import DuckLakeAdapter
    from dbt.adapters.ducklake.process_exit import install as exit_without_collections
    from dbt.include import ducklake

    exit_without_collections()

    plugin = AdapterPlugin(
        adapter=DuckLakeAdapter,  # type: ignore[arg-type]
        credentials=DuckLakeCredentials,
        include_path=ducklake.PACKAGE_PATH,
        dependencies=["spark"],
    )
    globals()["Plugin"] = plugin
    return plugin
