"""Every error the lake raises. One module, one suffix, messages that name the fix."""

from __future__ import annotations

from .secrets import redact


class DuckLakeError(Exception):
    """Base class for errors raised by the DuckLake client."""


class CatalogConnectionError(DuckLakeError):
    """The catalog database cannot be reached or the catalog string is not understood."""


class FormatVersionError(DuckLakeError):
    """The lake was written in a DuckLake format this client does not speak."""


class SnapshotNotFoundError(DuckLakeError):
    """No snapshot matches the requested version or timestamp (unknown or expired)."""


class NotFoundError(DuckLakeError):
    """A schema, table, view or column does not exist at the snapshot read."""


class AlreadyExistsError(DuckLakeError):
    """A schema, table or view with that name already exists."""


class UnsupportedTypeError(DuckLakeError):
    """A column type cannot be stored in DuckLake or held by Spark."""


class SchemaMismatchError(DuckLakeError):
    """Data written to a table does not match its columns."""


class CommitConflictError(DuckLakeError):
    """A concurrent commit changed what this commit depends on; it was not applied."""


class CommitFailedError(DuckLakeError):
    """The commit could not be applied after all retries; the lake is unchanged."""


class DataFileError(DuckLakeError):
    """A data or delete file is missing, truncated or corrupt."""


class InvalidArgumentError(DuckLakeError):
    """A caller passed a value the lake does not accept."""


class ReadOnlyError(InvalidArgumentError):
    """A write asked of a lake opened to read one snapshot (a profile pinned with
    ``snapshot_version`` or ``snapshot_time``). Refused before anything was committed,
    written or deleted."""

    @classmethod
    def pinned(cls, snapshot_id: int | None, what: str) -> ReadOnlyError:
        """The refusal of ``what`` (a statement, an operation) on a connection pinned to
        ``snapshot_id``, saying how to write instead."""
        return cls(
            f"{what} is not a read, and this connection is pinned to snapshot {snapshot_id} "
            "(snapshot_version or snapshot_time in the profile), so it only reads: nothing was "
            "done. Remove snapshot_version / snapshot_time from the profile (or use an "
            "unpinned target) to write")


class UnsupportedViewError(DuckLakeError):
    """A view's stored query cannot be run by this engine as its writer meant it."""


class UnsafePathError(DuckLakeError):
    """A file or directory path from a catalog row points outside the lake's data path (or
    at something that is not a Parquet file): it is neither read, written nor deleted."""


class UnsafeCatalogNameError(DuckLakeError):
    """A name from a catalog row that would be put into SQL does not have the exact shape
    DuckLake gives it: it is not used."""


class UnsafeViewError(UnsupportedViewError):
    """A view's stored query is refused because it is more than a query over lake relations.

    Lake content is written by others (DuckDB users, other writers of the catalog), and a
    view runs with the reader's rights: a script transformation, a read of files by path or a
    call of a Java method in it would run on the reader's driver and executors.
    """


class CommitUnknownError(DuckLakeError):
    """The catalog connection failed during COMMIT and the outcome could not be checked.

    The snapshot may or may not have landed; its files are kept so that it stays readable if
    it did. Look at the latest snapshots before writing again.
    """


def first_line(exc: BaseException) -> str:
    """The first line of a driver's error (or the error's type when it says nothing), to
    quote in a message of our own; any password the process knows is masked in it."""
    orig = getattr(exc, "orig", None) or exc
    message = redact(str(orig).strip())
    return message.splitlines()[0] if message else type(orig).__name__


class ConstraintViolationError(DuckLakeError):
    """A write would leave rows in a table that break one of the CHECK, PRIMARY KEY or
    UNIQUE constraints it was given (a dbt model contract). Raised before the commit:
    nothing was committed."""
