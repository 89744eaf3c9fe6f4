from dbt.adapters.base import AdapterPlugin

from dbt.adapters.ducklake.connections import DuckLakeConnectionManager  # noqa: F401
from dbt.adapters.ducklake.credentials import DuckLakeCredentials
from dbt.adapters.ducklake.impl import DuckLakeAdapter
from dbt.include import ducklake

Plugin = AdapterPlugin(
    adapter=DuckLakeAdapter,  # type: ignore[arg-type]
    credentials=DuckLakeCredentials,
    include_path=ducklake.PACKAGE_PATH,
    dependencies=["spark"],
)
