"""The DuckLake catalog client: no Spark, no dbt; SQLAlchemy Core over SQLite or PostgreSQL.

It writes the catalog as DuckDB's ``ducklake`` extension 1.5.5 does (format version 1.0). The
comments cite DuckLake's specification (https://ducklake.select/docs/stable/specification/) and
the extension's source as ``duckdb/ducklake@v1.5-variegata <path>``: a file of
https://github.com/duckdb/ducklake on the branch ``v1.5-variegata``, which DuckDB 1.5.5 ships.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .catalog import Catalog
    from .commit import Transaction
    from .errors import (
        AlreadyExistsError,
        CatalogConnectionError,
        CommitConflictError,
        CommitFailedError,
        CommitUnknownError,
        DataFileError,
        DuckLakeError,
        FormatVersionError,
        InvalidArgumentError,
        NotFoundError,
        SchemaMismatchError,
        SnapshotNotFoundError,
        UnsafeViewError,
        UnsupportedTypeError,
        UnsupportedViewError,
    )
    from .models import ColumnSpec, Snapshot, TableRef

# The names below come from their modules on first use (PEP 562): a process that needs only
# one module of this package (Spark's Python workers for ``format("ducklake")``) does not
# import SQLAlchemy and the catalog client with it.
_HOMES = {
    "Catalog": "catalog", "Transaction": "commit", "ColumnSpec": "models", "Snapshot": "models",
    "TableRef": "models",
}


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{_HOMES.get(name, 'errors')}", __name__), name)


__all__ = [
    "AlreadyExistsError",
    "Catalog",
    "CatalogConnectionError",
    "ColumnSpec",
    "CommitConflictError",
    "CommitFailedError",
    "CommitUnknownError",
    "DataFileError",
    "DuckLakeError",
    "FormatVersionError",
    "InvalidArgumentError",
    "NotFoundError",
    "SchemaMismatchError",
    "Snapshot",
    "SnapshotNotFoundError",
    "TableRef",
    "Transaction",
    "UnsafeViewError",
    "UnsupportedTypeError",
    "UnsupportedViewError",
]
