"""What a ``format("ducklake")`` read or write was given, parsed once on the driver.

Options reach the data source as Spark's case-insensitive string map; everything here is a
frozen dataclass so that it pickles to the Python workers that plan, write and read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...lake.catalog import Catalog
from ...lake.errors import InvalidArgumentError

_CATALOGS: dict[tuple[Any, ...], Catalog] = {}


def _getter(options: Any) -> Any:
    def get(key: str) -> str | None:
        value = options.get(key)
        return value if value not in (None, "") else None
    return get


def _int(get: Any, key: str, minimum: int = 0) -> int | None:
    value = get(key)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise InvalidArgumentError(
            f'format("ducklake") option {key} must be an integer >= {minimum}, not {value!r}')
    return number


def _flag(get: Any, key: str) -> bool:
    value = (get(key) or "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgumentError(
            f'format("ducklake") option {key} must be true or false, not {get(key)!r}')
    return value == "true"


@dataclass(frozen=True)
class LakeOptions:
    """The lake and the table every read and write names."""

    catalog: str
    schema_name: str
    table_name: str
    data_path: str | None = None
    metadata_schema: str | None = None
    data_inlining_row_limit: int | None = None

    @classmethod
    def parse(cls, options: Any) -> LakeOptions:
        get = _getter(options)
        catalog = get("catalog")
        if catalog is None:
            raise InvalidArgumentError(
                'format("ducklake") needs .option("catalog", ...): the lake\'s catalog, as '
                "in the profile (sqlite:///path/catalog.sqlite, postgresql+psycopg://..., "
                "postgres:dbname=...)")
        table = get("table") or get("path")
        if table is None:
            raise InvalidArgumentError(
                'format("ducklake") needs the table: .option("table", "schema.table"), or '
                '.save("schema.table") / .load("schema.table")')
        schema_name, dot, table_name = table.partition(".")
        if not dot:
            schema_name, table_name = "main", table
        return cls(catalog, schema_name, table_name, get("data_path"), get("metadata_schema"),
                   _int(get, "data_inlining_row_limit"))

    @property
    def table(self) -> str:
        return f"{self.schema_name}.{self.table_name}"

    def open(self) -> Catalog:
        """The lake, opened once per Python worker (a streaming query plans and commits each
        batch from new reader and writer objects)."""
        key = (self.catalog, self.data_path, self.metadata_schema,
               self.data_inlining_row_limit)
        lake = _CATALOGS.get(key)
        if lake is None:
            lake = _CATALOGS[key] = Catalog.open(
                self.catalog, self.data_path, metadata_schema=self.metadata_schema,
                data_inlining_row_limit=self.data_inlining_row_limit, create=False)
        return lake


@dataclass(frozen=True)
class SinkOptions:
    """A write: the lake and table, the stream's identity, commit info, and the inlined-row
    count past which the sink flushes (``flushInlinedRows``; ``None``: never)."""

    lake: LakeOptions
    stream_id: str | None = None
    author: str | None = None
    message: str | None = None
    flush_inlined_rows: int | None = None

    @classmethod
    def parse(cls, options: Any) -> SinkOptions:
        get = _getter(options)
        stream_id = get("streamId")
        if stream_id is None and get("checkpointLocation") is not None:
            stream_id = _checkpoint_id(str(get("checkpointLocation")))
        return cls(LakeOptions.parse(options), stream_id, get("author"),
                   get("commit_message"), _int(get, "flushInlinedRows", minimum=1))

    @property
    def table(self) -> str:
        return self.lake.table

    def open(self) -> Catalog:
        return self.lake.open()


@dataclass(frozen=True)
class ReadOptions:
    """A batch read (``snapshot`` or ``timestamp`` for time travel) or a stream: where it
    starts (``startingSnapshot``: a snapshot id whose inserts are the first emitted, or
    ``latest``; by default the table's rows at the query's start, then every later insert),
    how many snapshots one micro-batch takes (``maxSnapshotsPerTrigger``), and what it does
    with commits that delete or update rows (fail, ``skipChangeCommits``, or emit the change
    feed: ``readChangeFeed``)."""

    lake: LakeOptions
    snapshot: int | None = None
    timestamp: str | None = None
    starting_snapshot: int | str | None = None
    max_snapshots: int | None = None
    skip_change_commits: bool = False
    change_feed: bool = False

    @classmethod
    def parse(cls, options: Any) -> ReadOptions:
        get = _getter(options)
        snapshot = _int(get, "snapshot") if get("snapshot") is not None else \
            _int(get, "versionAsOf")
        timestamp = get("timestamp") or get("timestampAsOf")
        if snapshot is not None and timestamp is not None:
            raise InvalidArgumentError(
                'format("ducklake") takes either the snapshot or the timestamp option, not both')
        starting: int | str | None = get("startingSnapshot")
        if starting is not None and str(starting).strip().lower() == "latest":
            starting = "latest"
        elif starting is not None:
            starting = _int(get, "startingSnapshot")
        return cls(LakeOptions.parse(options), snapshot, timestamp, starting,
                   _int(get, "maxSnapshotsPerTrigger", minimum=1),
                   _flag(get, "skipChangeCommits"), _flag(get, "readChangeFeed"))


def _checkpoint_id(location: str) -> str:
    """A checkpoint location as a stream id: absolute, without a trailing slash."""
    if "://" in location or location.startswith("file:"):
        return location.rstrip("/")
    return os.path.abspath(location)
