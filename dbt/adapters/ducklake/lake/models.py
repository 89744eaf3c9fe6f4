"""Frozen rows of the DuckLake catalog, named and typed as the ``ducklake_*`` tables are, and
the values a writer stages on a :class:`~.commit.Transaction`: columns to create, files to
register and the tables they go to."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar

from .types import LakeType


@lru_cache(maxsize=4096)
def _parsed_type(text: str) -> LakeType:
    """Column types are parsed per value when inlined rows are decoded: parse each once."""
    return LakeType.parse(text)


@dataclass(frozen=True)
class Snapshot:
    """A ``ducklake_snapshot`` row joined with its ``ducklake_snapshot_changes`` row."""

    snapshot_id: int
    snapshot_time: datetime
    schema_version: int
    next_catalog_id: int
    next_file_id: int
    changes_made: str | None = None
    author: str | None = None
    commit_message: str | None = None
    commit_extra_info: str | None = None

    @property
    def changes(self) -> list[str]:
        """The ``changes_made`` tokens, e.g. ``['inserted_into_table:3']``."""
        return split_changes(self.changes_made)


# stage(publish transaction, lake catalog, since, until); see :class:`PublishReplan`
PublishStage = Callable[[Any, Any, Snapshot, Snapshot], None]


@dataclass(frozen=True)
class PublishReplan:
    """What a DELETE, UPDATE or MERGE committed in a branch needs to apply itself, at
    publish, to the rows other writers inserted into its table since the branch's base, as
    ``Transaction.replanner`` does for one statement committing late.

    ``stage(tx, lake, since, until)`` stages on the publish's ``Transaction`` ``tx`` what the
    statement does to the rows snapshots ``since < s <= until`` of the lake catalog ``lake``
    inserted, or raises ``CommitConflictError``. (The types are ``Any`` because the commit
    path and the catalog import this module.)"""

    statement: str  # "DELETE", "UPDATE", "MERGE", ..., for messages
    stage: PublishStage
    # the statement replaces the whole table (CREATE OR REPLACE TABLE): every inserted row
    # goes, whatever the columns, so a schema change in the same statement does not matter
    whole_table: bool = False


@dataclass(frozen=True)
class BranchStatement:
    """A snapshot committed in a branch that deleted rows of base tables (``tables``): what
    the publish needs to re-plan it against rows others inserted meanwhile. ``replan`` is
    ``None`` for a statement that cannot be re-planned there."""

    snapshot_id: int
    tables: frozenset[int]
    replan: PublishReplan | None


def split_changes(changes_made: str | None) -> list[str]:
    """Split a ``changes_made`` string on the commas that separate tokens.

    Names are double-quoted with ``""`` escaping and may contain commas themselves.
    """
    if not changes_made:
        return []
    tokens: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in changes_made:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            tokens.append("".join(current))
            current = []
        else:
            current.append(ch)
    tokens.append("".join(current))
    return tokens


@dataclass(frozen=True)
class SchemaInfo:
    schema_id: int
    schema_uuid: str
    begin_snapshot: int
    end_snapshot: int | None
    schema_name: str
    path: str
    path_is_relative: bool


@dataclass(frozen=True)
class TableInfo:
    table_id: int
    table_uuid: str
    begin_snapshot: int
    end_snapshot: int | None
    schema_id: int
    table_name: str
    path: str
    path_is_relative: bool
    schema_name: str = ""


@dataclass(frozen=True)
class ViewInfo:
    view_id: int
    view_uuid: str
    begin_snapshot: int
    end_snapshot: int | None
    schema_id: int
    view_name: str
    dialect: str
    sql: str
    column_aliases: str
    schema_name: str = ""
    # the view's Spark SQL, kept in a tag when ``sql`` is its DuckDB translation
    spark_sql: str | None = None

    @property
    def aliases(self) -> list[str]:
        """The view's column names when it was created with a column list (``CREATE VIEW
        v(a, b) AS ...``), else empty: DuckDB stores them as quoted identifiers joined by
        commas (``"a","b"``); earlier versions of this adapter wrote them in brackets."""
        return parse_column_aliases(self.column_aliases)


@dataclass(frozen=True)
class MacroParameter:
    """One parameter of a DuckLake macro (``ducklake_macro_parameters``): its lake type
    (``unknown`` when untyped) and its default as DuckDB stores it (``default_value``
    ``'NULL'`` and type ``unknown`` when it has none)."""

    name: str
    type: str = "unknown"
    default_value: str = "NULL"
    default_type: str = "unknown"

    @property
    def has_default(self) -> bool:
        return self.default_type != "unknown"


@dataclass(frozen=True)
class MacroInfo:
    """A DuckLake macro (a SQL function) visible at a snapshot, with its first
    implementation (DuckDB's overloads beyond it are not read) and, for a function created
    here, its Spark definition from the ``spark_sql`` tag."""

    macro_id: int
    schema_id: int
    macro_name: str
    begin_snapshot: int
    end_snapshot: int | None
    schema_name: str
    dialect: str
    sql: str
    kind: str  # 'scalar' or 'table', as ducklake_macro_impl.type
    parameters: tuple[MacroParameter, ...] = ()
    spark_sql: str | None = None


# The ``ducklake_tag`` key holding a view's Spark SQL beside the DuckDB translation in
# ``ducklake_view.sql``: DuckDB ignores tags other than ``comment``, and a view's tags end with it.
SPARK_SQL_TAG = "spark_sql"


def format_column_aliases(names: Sequence[str]) -> str:
    """``ducklake_view.column_aliases`` as DuckDB writes it: ``"a","b"`` (``""`` if none)."""
    return ",".join('"' + n.replace('"', '""') + '"' for n in names)


def parse_column_aliases(text: str) -> list[str]:
    """The names in ``ducklake_view.column_aliases`` (see :func:`format_column_aliases`);
    a name may be quoted (``""`` inside stands for ``"``) or bare."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    pieces = (piece.strip() for piece in split_changes(body))
    return [parse_quoted_name(p)[0] if p.startswith('"') else p for p in pieces if p]


def parse_quoted_name(text: str) -> tuple[str, int]:
    """A leading double-quoted name (``""`` escapes a quote) and the position after it; an
    unquoted name runs to the next dot."""
    if not text.startswith('"'):
        end = text.find(".")
        end = len(text) if end < 0 else end
        return text[:end], end
    out, i = [], 1
    while i < len(text):
        if text[i] == '"':
            if text[i + 1:i + 2] == '"':
                out.append('"')
                i += 2
                continue
            return "".join(out), i + 1
        out.append(text[i])
        i += 1
    return "".join(out), i


@dataclass(frozen=True)
class ColumnInfo:
    """A ``ducklake_column`` row; ``children`` holds the nested nodes of struct, list and map."""

    column_id: int
    begin_snapshot: int
    end_snapshot: int | None
    table_id: int
    column_order: int
    column_name: str
    column_type: str
    initial_default: str | None
    default_value: str | None
    nulls_allowed: bool
    parent_column: int | None
    default_value_type: str | None = None
    default_value_dialect: str | None = None
    children: tuple[ColumnInfo, ...] = field(default=(), compare=False)

    @property
    def type(self) -> LakeType:
        return _parsed_type(self.column_type)

    def walk(self) -> list[ColumnInfo]:
        """This node and all its descendants, parents before children (DuckLake id order)."""
        return _preorder(self)


_Node = TypeVar("_Node", "ColumnInfo", "ColumnSpec")


def _preorder(node: _Node) -> list[_Node]:
    """A column and its nested columns, parents before children: the order DuckLake gives
    column ids in, for the columns of the catalog and the columns to create alike."""
    out = [node]
    for child in node.children:
        out.extend(_preorder(child))
    return out


@dataclass(frozen=True)
class DataFile:
    data_file_id: int
    table_id: int
    begin_snapshot: int
    end_snapshot: int | None
    file_order: int | None
    path: str
    path_is_relative: bool
    file_format: str
    record_count: int
    file_size_bytes: int
    footer_size: int | None
    row_id_start: int | None
    partition_id: int | None
    encryption_key: str | None
    mapping_id: int | None
    partial_max: int | None


@dataclass(frozen=True)
class DeleteFile:
    delete_file_id: int
    table_id: int
    begin_snapshot: int
    end_snapshot: int | None
    data_file_id: int
    path: str
    path_is_relative: bool
    format: str
    delete_count: int
    file_size_bytes: int
    footer_size: int | None
    encryption_key: str | None
    partial_max: int | None


@dataclass(frozen=True)
class FileColumnStats:
    """Statistics of one leaf column in one Parquet file, min/max in DuckDB's text encoding."""

    column_id: int
    column_size_bytes: int | None
    value_count: int | None
    null_count: int | None
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None


@dataclass(frozen=True)
class TableStats:
    table_id: int
    record_count: int
    next_row_id: int
    file_size_bytes: int


@dataclass(frozen=True)
class TableColumnStats:
    table_id: int
    column_id: int
    contains_null: bool | None
    contains_nan: bool | None
    min_value: str | None
    max_value: str | None


@dataclass(frozen=True)
class InlinedDataTable:
    """A registered ``ducklake_inlined_data_{table_id}_{schema_version}`` table."""

    table_id: int
    table_name: str
    schema_version: int


@dataclass(frozen=True)
class NameMapping:
    """One ``ducklake_name_mapping`` row: a source name in a file mapped to a column id."""

    mapping_id: int
    column_id: int
    source_name: str
    target_field_id: int
    parent_column: int | None
    is_partition: bool


@dataclass(frozen=True)
class PartitionColumn:
    partition_key_index: int
    column_id: int
    transform: str


@dataclass(frozen=True)
class PartitionSpec:
    partition_id: int
    table_id: int
    columns: tuple[PartitionColumn, ...]


# ---------------------------------------------------------------------------------- staged
@dataclass(frozen=True)
class ColumnSpec:
    """A column to create: its DuckLake type string, nullability, default and children."""

    name: str
    type: str
    nulls_allowed: bool = True
    children: tuple[ColumnSpec, ...] = ()
    initial_default: str | None = None
    default_value: str | None = None

    def walk(self) -> list[ColumnSpec]:
        return _preorder(self)


@dataclass(frozen=True)
class NameMappingSpec:
    """One node of a file's name mapping: the file's field name for a table column id."""

    source_name: str
    column_id: int
    children: tuple[NameMappingSpec, ...] = ()


@dataclass
class NewDataFile:
    """A Parquet file already written under the table directory, to be registered."""

    path: str  # relative to the table directory when path_is_relative
    record_count: int
    file_size_bytes: int
    footer_size: int | None
    column_stats: list[FileColumnStats]
    path_is_relative: bool = True
    mapping: tuple[NameMappingSpec, ...] | None = None
    row_id_start: int | None = None  # set to keep given row ids (flush, merge)
    embeds_row_ids: bool = False  # file carries _ducklake_internal_row_id
    begin_snapshot: int | None = None  # None: the committing snapshot
    partial_max: int | None = None
    partition_id: int | None = None
    partition_values: list[tuple[int, str | None]] = field(default_factory=list)
    # The spec the file was laid out for, as (column_id, transform) per key; the commit
    # resolves it to the table's live partition_id and refuses a spec changed meanwhile.
    partition_layout: tuple[tuple[int, str], ...] | None = None
    counts_as_insert: bool = True  # False for compaction and flush (no stats advance)


@dataclass(frozen=True)
class TableRef:
    """A table by id, or by name when it is created in the same transaction."""

    table_id: int | None = None
    schema_name: str | None = None
    table_name: str | None = None
