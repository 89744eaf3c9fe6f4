"""A crafted ``ducklake_inlined_data_tables.table_name`` never reaches SQL (SQLite and
PostgreSQL): table names cannot be bound parameters, and the row may come from anyone who can
write the catalog, so every read, write and maintenance operation refuses it, naming the row,
and changes nothing."""

from __future__ import annotations

import datetime as dt

import pytest
from reliability.support import lake_state
from sqlalchemy import text

from dbt.adapters.ducklake.lake.errors import UnsafeCatalogNameError

pytestmark = pytest.mark.spark

FUTURE = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)


def catalog_write(lake, sql: str, **params: object) -> None:  # noqa: ANN001
    """Change catalog rows as another writer of the catalog could (``{m}.``: its schema)."""
    with lake.catalog.write() as conn:
        conn.execute(text(sql.replace("{m}.", lake.catalog.prefix)), params)


def catalog_rows(lake, sql: str, **params: object) -> list:  # noqa: ANN001
    with lake.catalog.read() as conn:
        return [tuple(r) for r in conn.execute(text(sql.replace("{m}.", lake.catalog.prefix)),
                                               params)]


def test_a_crafted_inlined_table_name_is_refused_before_any_sql(spark, lake):  # noqa: ANN001
    table = lake.create_table("main.t", spark.range(3).selectExpr("id"))
    (tid, real, version), = catalog_rows(
        lake, "SELECT table_id, table_name, schema_version FROM {m}.ducklake_inlined_data_tables")
    catalog_write(lake, "CREATE TABLE {m}.sentinel (x INTEGER)")
    catalog_write(lake, "INSERT INTO {m}.sentinel VALUES (1)")
    sentinel = f"{lake.catalog.prefix}sentinel"
    crafted = [f"{real}; DROP TABLE {sentinel}; --", f'{real}"; DELETE FROM {sentinel}; --',
               "ducklake_snapshot", f"ducklake_inlined_data_{tid}_{version + 1}"]
    for name in crafted:
        catalog_write(lake, "UPDATE {m}.ducklake_inlined_data_tables SET table_name = :n",
                      n=name)
        before = lake_state(lake.catalog)
        operations = [lambda: table.read().collect(), lake.flush_inlined_data, lake.checkpoint,
                      lambda: table.append(spark.range(3, 5).selectExpr("id")),
                      lambda: lake.table("main.t").delete("id = 1")]
        for operation in operations:
            with pytest.raises(UnsafeCatalogNameError, match="ducklake_inlined_data_tables row"):
                operation()
        assert lake_state(lake.catalog) == before, name
        assert catalog_rows(lake, "SELECT x FROM {m}.sentinel") == [(1,)], name
    # expiry purges a dropped table's inlined tables by name: refused, and rolled back
    catalog_write(lake, "UPDATE {m}.ducklake_inlined_data_tables SET table_name = :n", n=real)
    lake.drop_table("main.t")
    catalog_write(lake, "UPDATE {m}.ducklake_inlined_data_tables SET table_name = :n",
                  n=crafted[0])
    before = lake_state(lake.catalog)
    with pytest.raises(UnsafeCatalogNameError, match=f"table_id {tid}"):
        lake.expire_snapshots(older_than=FUTURE)
    assert lake_state(lake.catalog) == before
    assert catalog_rows(lake, "SELECT x FROM {m}.sentinel") == [(1,)]
