"""Every error the lake raises. One module, one suffix, messages that name the fix."""

from __future__ import annotations


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


class UnsupportedViewError(DuckLakeError):
    """A view's stored query cannot be run by this engine as its writer meant it."""


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
    quote in a message of our own."""
    orig = getattr(exc, "orig", None) or exc
    message = str(orig).strip()
    return message.splitlines()[0] if message else type(orig).__name__
