"""The catalog's bootstrap: the 28 catalog tables of DuckLake 1.0, as DuckDB 1.5.5 creates
them on each backend when a lake is created, the lake's first snapshot, and the format checks
of ``ducklake_metadata`` when a lake is opened.

Types are DuckDB logical types; :func:`backend_type` renders them the way DuckDB's sqlite and
postgres scanners do (SQLite: BOOLEAN stored as BIGINT, UUID and TIMESTAMPTZ as VARCHAR).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from sqlalchemy import Connection, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from .conflicts import quote_name
from .connect import CatalogDatabase
from .errors import CatalogConnectionError, FormatVersionError, first_line

FORMAT_VERSION = "1.0"
CREATED_BY = "DuckDB d8cdaa33fd"

B, V, U, T, BOOL = "BIGINT", "VARCHAR", "UUID", "TIMESTAMPTZ", "BOOLEAN"

# (table name, [(column, type)], primary key column or None)
TABLES: list[tuple[str, list[tuple[str, str]], str | None]] = [
    ("ducklake_metadata", [("key", V), ("value", V), ("scope", V), ("scope_id", B)], None),
    ("ducklake_snapshot", [("snapshot_id", B), ("snapshot_time", T), ("schema_version", B),
                           ("next_catalog_id", B), ("next_file_id", B)], "snapshot_id"),
    ("ducklake_snapshot_changes", [("snapshot_id", B), ("changes_made", V), ("author", V),
                                   ("commit_message", V), ("commit_extra_info", V)],
     "snapshot_id"),
    ("ducklake_schema", [("schema_id", B), ("schema_uuid", U), ("begin_snapshot", B),
                         ("end_snapshot", B), ("schema_name", V), ("path", V),
                         ("path_is_relative", BOOL)], "schema_id"),
    ("ducklake_table", [("table_id", B), ("table_uuid", U), ("begin_snapshot", B),
                        ("end_snapshot", B), ("schema_id", B), ("table_name", V), ("path", V),
                        ("path_is_relative", BOOL)], None),
    ("ducklake_view", [("view_id", B), ("view_uuid", U), ("begin_snapshot", B),
                       ("end_snapshot", B), ("schema_id", B), ("view_name", V), ("dialect", V),
                       ("sql", V), ("column_aliases", V)], None),
    ("ducklake_tag", [("object_id", B), ("begin_snapshot", B), ("end_snapshot", B), ("key", V),
                      ("value", V)], None),
    ("ducklake_column_tag", [("table_id", B), ("column_id", B), ("begin_snapshot", B),
                             ("end_snapshot", B), ("key", V), ("value", V)], None),
    ("ducklake_data_file", [("data_file_id", B), ("table_id", B), ("begin_snapshot", B),
                            ("end_snapshot", B), ("file_order", B), ("path", V),
                            ("path_is_relative", BOOL), ("file_format", V),
                            ("record_count", B), ("file_size_bytes", B), ("footer_size", B),
                            ("row_id_start", B), ("partition_id", B), ("encryption_key", V),
                            ("mapping_id", B), ("partial_max", B)], "data_file_id"),
    ("ducklake_file_column_stats", [("data_file_id", B), ("table_id", B), ("column_id", B),
                                    ("column_size_bytes", B), ("value_count", B),
                                    ("null_count", B), ("min_value", V), ("max_value", V),
                                    ("contains_nan", BOOL), ("extra_stats", V)], None),
    ("ducklake_file_variant_stats", [("data_file_id", B), ("table_id", B), ("column_id", B),
                                     ("variant_path", V), ("shredded_type", V),
                                     ("column_size_bytes", B), ("value_count", B),
                                     ("null_count", B), ("min_value", V), ("max_value", V),
                                     ("contains_nan", BOOL), ("extra_stats", V)], None),
    ("ducklake_delete_file", [("delete_file_id", B), ("table_id", B), ("begin_snapshot", B),
                              ("end_snapshot", B), ("data_file_id", B), ("path", V),
                              ("path_is_relative", BOOL), ("format", V), ("delete_count", B),
                              ("file_size_bytes", B), ("footer_size", B),
                              ("encryption_key", V), ("partial_max", B)], "delete_file_id"),
    ("ducklake_column", [("column_id", B), ("begin_snapshot", B), ("end_snapshot", B),
                         ("table_id", B), ("column_order", B), ("column_name", V),
                         ("column_type", V), ("initial_default", V), ("default_value", V),
                         ("nulls_allowed", BOOL), ("parent_column", B),
                         ("default_value_type", V), ("default_value_dialect", V)], None),
    ("ducklake_table_stats", [("table_id", B), ("record_count", B), ("next_row_id", B),
                              ("file_size_bytes", B)], None),
    ("ducklake_table_column_stats", [("table_id", B), ("column_id", B), ("contains_null", BOOL),
                                     ("contains_nan", BOOL), ("min_value", V), ("max_value", V),
                                     ("extra_stats", V)], None),
    ("ducklake_partition_info", [("partition_id", B), ("table_id", B), ("begin_snapshot", B),
                                 ("end_snapshot", B)], None),
    ("ducklake_partition_column", [("partition_id", B), ("table_id", B),
                                   ("partition_key_index", B), ("column_id", B),
                                   ("transform", V)], None),
    ("ducklake_file_partition_value", [("data_file_id", B), ("table_id", B),
                                       ("partition_key_index", B), ("partition_value", V)],
     None),
    ("ducklake_files_scheduled_for_deletion", [("data_file_id", B), ("path", V),
                                               ("path_is_relative", BOOL),
                                               ("schedule_start", T)], None),
    ("ducklake_inlined_data_tables", [("table_id", B), ("table_name", V),
                                      ("schema_version", B)], None),
    ("ducklake_column_mapping", [("mapping_id", B), ("table_id", B), ("type", V)], None),
    ("ducklake_name_mapping", [("mapping_id", B), ("column_id", B), ("source_name", V),
                               ("target_field_id", B), ("parent_column", B),
                               ("is_partition", BOOL)], None),
    ("ducklake_schema_versions", [("begin_snapshot", B), ("schema_version", B),
                                  ("table_id", B)], None),
    ("ducklake_macro", [("schema_id", B), ("macro_id", B), ("macro_name", V),
                        ("begin_snapshot", B), ("end_snapshot", B)], None),
    ("ducklake_macro_impl", [("macro_id", B), ("impl_id", B), ("dialect", V), ("sql", V),
                             ("type", V)], None),
    ("ducklake_macro_parameters", [("macro_id", B), ("impl_id", B), ("column_id", B),
                                   ("parameter_name", V), ("parameter_type", V),
                                   ("default_value", V), ("default_value_type", V)], None),
    ("ducklake_sort_info", [("sort_id", B), ("table_id", B), ("begin_snapshot", B),
                            ("end_snapshot", B)], None),
    ("ducklake_sort_expression", [("sort_id", B), ("table_id", B), ("sort_key_index", B),
                                  ("expression", V), ("dialect", V), ("sort_direction", V),
                                  ("null_order", V)], None),
]

BOOLEAN_COLUMNS = {
    (table, column) for table, columns, _ in TABLES for column, kind in columns if kind == BOOL
}

_SQLITE = {B: "BIGINT", V: "VARCHAR", U: "VARCHAR", T: "VARCHAR", BOOL: "BIGINT"}
_POSTGRES = {B: "BIGINT", V: "VARCHAR", U: "UUID", T: "TIMESTAMP WITH TIME ZONE",
             BOOL: "BOOLEAN"}


def backend_type(kind: str, dialect: str) -> str:
    return (_SQLITE if dialect == "sqlite" else _POSTGRES)[kind]


def create_statements(dialect: str, prefix: str) -> list[str]:
    """CREATE TABLE statements for every catalog table; ``prefix`` is ``""`` or ``"schema".``."""
    out = []
    for name, columns, pk in TABLES:
        cols = []
        for column, kind in columns:
            line = f"{column} {backend_type(kind, dialect)}"
            if column == pk:
                line += " PRIMARY KEY"
            if name == "ducklake_metadata" and column in ("key", "value"):
                line += " NOT NULL"
            cols.append(line)
        out.append(f"CREATE TABLE {prefix}{name}({', '.join(cols)})")
    return out


def create_lake(db: CatalogDatabase, data_path: str) -> None:
    """Create the 28 tables and snapshot 0 in one transaction, as DuckDB does."""
    now = datetime.now(timezone.utc)
    with db.write() as conn:
        if db.metadata_schema:
            conn.execute(text("CREATE SCHEMA IF NOT EXISTS " + quote_name(db.metadata_schema)))
        for statement in create_statements(db.dialect, db.prefix):
            conn.execute(text(statement))
        conn.execute(
            text(f"INSERT INTO {db.t('ducklake_snapshot')} VALUES (0, :t, 0, 1, 0)"),
            {"t": db.encode_time(now)},
        )
        conn.execute(
            text(
                f"INSERT INTO {db.t('ducklake_snapshot_changes')} "
                "VALUES (0, :c, NULL, NULL, NULL)"
            ),
            {"c": 'created_schema:"main"'},
        )
        for key, value in (
            ("version", FORMAT_VERSION),
            ("created_by", CREATED_BY),
            ("data_path", data_path),
            ("encrypted", "false"),
        ):
            conn.execute(
                text(f"INSERT INTO {db.t('ducklake_metadata')} (key, value) VALUES (:k, :v)"),
                {"k": key, "v": value},
            )
        conn.execute(
            text(
                f"INSERT INTO {db.t('ducklake_schema')} "
                "VALUES (0, :u, 0, NULL, 'main', 'main/', :rel)"
            ),
            {"u": str(uuid.uuid4()), "rel": True},
        )


def read_metadata(db: CatalogDatabase) -> dict[str, str] | None:
    """The lake's global ``ducklake_metadata`` (``version``, ``data_path``, ...), or ``None``
    when the catalog holds no lake yet (the table does not exist)."""
    try:
        with db.read() as conn:
            rows = conn.execute(
                text(f"SELECT key, value FROM {db.t('ducklake_metadata')} WHERE scope IS NULL")
            ).all()
    except CatalogConnectionError:
        raise
    except (ProgrammingError, OperationalError) as exc:
        msg = str(exc).lower()
        if "no such table" in msg or "does not exist" in msg and "relation" in msg:
            return None
        raise CatalogConnectionError(
            f"cannot read the DuckLake catalog {db.target.display}: {first_line(exc)}"
        ) from exc
    return dict(rows)


def require_format_version(db: CatalogDatabase, version: str | None) -> None:
    """Refuse a lake in another format version, without touching it."""
    if version != FORMAT_VERSION:
        raise FormatVersionError(
            f"the lake in {db.target.display} has DuckLake format version {version!r}; "
            "this client reads and writes only version "
            f"{FORMAT_VERSION!r}. The lake "
            "was not modified. Migrate it with DuckDB 1.5.5 (ATTACH ... "
            "(AUTOMATIC_MIGRATION true)) or use a client that supports its version."
        )


def check_version(db: CatalogDatabase, conn: Connection) -> None:
    """Refuse to go on if the lake's format changed since it was opened (a migration)."""
    version = conn.execute(
        text(f"SELECT value FROM {db.t('ducklake_metadata')} WHERE key = 'version' "
             "AND scope IS NULL")).scalar()
    require_format_version(db, version)
