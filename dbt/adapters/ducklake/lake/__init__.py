"""The DuckLake catalog client: no Spark, no dbt; SQLAlchemy Core over SQLite or PostgreSQL."""

from .catalog import Catalog, Lake
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
    "Lake",
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
