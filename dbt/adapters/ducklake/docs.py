"""What ``dbt docs generate`` and source freshness read, and what ``persist_docs`` writes:
the catalog's rows from DuckLake metadata and statistics, and ``comment`` tags (which DuckDB
shows as its comments)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dbt.adapters.base.relation import BaseRelation

from .column import type_name
from .lake.errors import NotFoundError
from .relation import lake_name
from .sql.names import quote

if TYPE_CHECKING:
    import agate

    from .runtime import Runtime


def persist_docs(runtime: Runtime, relation: BaseRelation, description: str | None,
                 columns: dict[str, Any] | None) -> None:
    """Store descriptions as DuckLake ``comment`` tags (readable by DuckDB)."""
    from .spark.lake import UNCHANGED  # the façade: not with the adapter's import

    lake = runtime.lake.catalog
    name = schema, identifier = lake_name(relation)
    comments: dict[str, str | None] = {}
    try:
        names = [c.column_name for c in lake.columns(lake.table(*name).table_id)]
    except NotFoundError:
        if not any(v.view_name == identifier for v in lake.views(schema)):
            return
        names = []  # a view's columns take no comments
    for key, column in (columns or {}).items():
        text = column.get("description") if isinstance(column, dict) else None
        quoted = isinstance(column, dict) and column.get("quote")
        match = key if key in names else None
        if match is None and not quoted:
            match = next((n for n in names if n.lower() == key.lower()), None)
        if text and match is not None:
            comments[match] = text
    runtime.lake.set_comments(name, UNCHANGED if description is None else description,
                              comments, info=runtime.engine.commit_info("COMMENT"))



def catalog(runtime: Runtime, schemas: list[str]) -> agate.Table:
    """Rows of ``dbt docs generate``'s catalog, from DuckLake metadata and statistics."""
    from dbt_common.clients.agate_helper import table_from_rows

    from .lake.inlining import rows as inlined_rows  # SQLAlchemy: not with the adapter's import

    lake = runtime.lake.catalog
    rows = []
    view_comments = {}
    with lake.read() as conn:
        wanted = {s.lower() for s in schemas}
        for table in lake.tables(None, None, conn):
            if table.schema_name.lower() not in wanted:
                continue
            stats = inlined_rows.live_size(lake, table.table_id, conn)
            comment = lake.comment(table.table_id, conn)
            col_comments = lake.column_comments(table.table_id, conn)
            for i, col in enumerate(lake.columns(table.table_id, None, conn)):
                rows.append(_catalog_row(table.schema_name, table.table_name, "table",
                                         comment, col.column_name, i + 1,
                                         type_name(col),
                                         col_comments.get(col.column_id), stats))
        views = [v for v in lake.views(None, None, conn)
                 if v.schema_name.lower() in wanted]
        for view in views:
            view_comments[view.view_id] = lake.comment(view.view_id, conn)
    for view in views:
        name = quote(f"{view.schema_name}.{view.view_name}")
        try:
            fields = runtime.registry.run_with_views(
                lambda n=name: runtime.spark.table(n)).schema.fields
        except Exception:  # noqa: BLE001 - a view Spark cannot analyse has no columns
            continue
        for i, f in enumerate(fields):
            rows.append(_catalog_row(view.schema_name, view.view_name, "view",
                                     view_comments[view.view_id], f.name, i + 1,
                                     f.dataType.simpleString(), None, None))
    columns = ["table_database", "table_schema", "table_name", "table_type", "table_comment",
               "table_owner", "column_name", "column_index", "column_type", "column_comment",
               "stats:row_count:label", "stats:row_count:value",
               "stats:row_count:description", "stats:row_count:include",
               "stats:bytes:label", "stats:bytes:value", "stats:bytes:description",
               "stats:bytes:include"]
    # Nodes carry no database (the lake is the only one), so neither do catalog rows.
    return table_from_rows([[None, *r] for r in rows], columns)



def catalog_table(runtime: Runtime, relation: BaseRelation) -> Any:
    """Table and column metadata of one relation, from the same rows as the docs catalog."""
    from dbt_common.contracts.metadata import (
        CatalogTable,
        ColumnMetadata,
        StatsItem,
        TableMetadata,
    )

    schema, identifier = lake_name(relation)
    table = catalog(runtime, [schema])
    rows = [r for r in table.rows if r["table_schema"] == schema
            and r["table_name"] == identifier]
    if not rows:
        return None
    first = rows[0]
    # The shape `dbt docs generate` builds from the same catalog columns (dbt-core's
    # format_stats): the stats that are shown, plus `has_stats`, never shown itself.
    stats = {key: StatsItem(id=key, label=first[f"stats:{key}:label"],
                            value=first[f"stats:{key}:value"], include=True,
                            description=first[f"stats:{key}:description"])
             for key in ("row_count", "bytes") if first[f"stats:{key}:include"]}
    stats["has_stats"] = StatsItem(
        id="has_stats", label="Has Stats?", value=len(stats) > 0, include=False,
        description="Indicates whether there are statistics for this table")
    return CatalogTable(
        metadata=TableMetadata(type=first["table_type"], schema=schema,
                               name=identifier, database=None,
                               comment=first["table_comment"], owner=None),
        columns={r["column_name"]: ColumnMetadata(type=r["column_type"],
                                                  index=int(r["column_index"]),
                                                  name=r["column_name"],
                                                  comment=r["column_comment"])
                 for r in rows if r["column_name"] is not None},
        stats=stats,
    )



def last_modified(runtime: Runtime, relations: list[BaseRelation]) -> Any:
    """For source freshness: the time of the last snapshot that changed each table.

    Returns what dbt expects of the macro: an object with ``response`` and ``table``.
    """
    import datetime as dt
    from types import SimpleNamespace

    from dbt.adapters.contracts.connection import AdapterResponse
    from dbt_common.clients.agate_helper import table_from_rows

    lake = runtime.lake.catalog
    snapshots = lake.snapshots()
    rows = []
    for relation in relations:
        schema, identifier = lake_name(relation)
        try:
            table = lake.table(schema, identifier)
        except NotFoundError:
            continue
        created = f'created_table:"{schema}"."{identifier}"'
        touched = {f"{kind}:{table.table_id}" for kind in (
            "inserted_into_table", "deleted_from_table", "inlined_insert", "inlined_delete",
            "altered_table")} | {created}
        last = None
        for snapshot in snapshots:
            if touched & set(snapshot.changes):
                last = snapshot
        if last is not None:
            now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
            when = last.snapshot_time.astimezone(dt.timezone.utc).replace(tzinfo=None)
            rows.append([schema, identifier, when, now])
    table = table_from_rows(rows, ["schema", "identifier", "last_modified", "snapshotted_at"])
    return SimpleNamespace(response=AdapterResponse(_message="OK"), table=table)



def _catalog_row(schema: str, name: str, kind: str, comment: str | None, column: str | None,
                 index: int | None, column_type: str | None, column_comment: str | None,
                 stats: Any) -> list[Any]:
    has_stats = stats is not None
    rows, size = stats if has_stats else (None, None)
    return [schema, name, kind, comment, None, column, index, column_type, column_comment,
            "Row count", rows, "Live rows at the latest snapshot (DuckLake metadata)", has_stats,
            "Size", size, "Bytes of live Parquet data files", has_stats]
