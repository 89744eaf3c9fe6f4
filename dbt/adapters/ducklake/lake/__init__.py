"""The DuckLake catalog client: no Spark, no dbt; SQLAlchemy Core over SQLite or PostgreSQL.

It writes the catalog as DuckDB's ``ducklake`` extension 1.5.5 does (format version 1.0). The
comments cite DuckLake's specification (https://ducklake.select/docs/stable/specification/) and
the extension's source as ``duckdb/ducklake@v1.5-variegata <path>``: a file of
https://github.com/duckdb/ducklake on the branch ``v1.5-variegata``, which DuckDB 1.5.5 ships.
"""

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
