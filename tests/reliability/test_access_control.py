"""PostgreSQL roles as in DuckLake's access-control guide: a reader compiles, shows and time
travels but cannot write (a clear error, nothing left behind); a writer builds.

Grants (the guide's, for a lake whose catalog tables live in one metadata schema):

* reader: ``USAGE`` on the schema, ``SELECT`` on all its tables;
* writer: ``USAGE, CREATE`` on the schema (new tables create inlined-data tables) and
  ``SELECT, INSERT, UPDATE, DELETE`` on all its tables.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import PG_DB, PG_HOST, PG_PORT, PG_USER
from reliability.support import files_on_disk, lake_state

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark, pytest.mark.postgres]

PROJECT = """\
name: acl
version: "1.0"
config-version: 2
profile: acl
"""

SOURCES = """\
version: 2
sources:
  - name: shop
    schema: shop
    tables: [{name: orders}]
"""

PROFILE = """\
acl:
  target: {role}
  outputs:
{outputs}
"""

OUTPUT = """\
    {role}:
      type: ducklake
      catalog: "postgres:dbname={db} host={host} port={port} user={user}"
      metadata_schema: {schema}
      data_path: {data}
      schema: shop
      threads: 1
"""


def dbt(project: Path, *args: str):  # noqa: ANN202
    from dbt.cli.main import dbtRunner

    return dbtRunner().invoke([*args, "--project-dir", str(project), "--profiles-dir",
                               str(project)])


@pytest.mark.parametrize("lake_target", ["postgres"], indirect=True)
def test_reader_and_writer_roles(spark, lake, lake_target, tmp_path):  # noqa: ANN001
    import psycopg

    lake.create_schema("shop")
    orders = lake.create_table("shop.orders", spark.range(100).selectExpr("id", "id * 3 AS v"))
    first = lake.current_snapshot().snapshot_id
    orders.append(spark.range(100, 150).selectExpr("id", "id * 3 AS v"))
    schema = lake_target.metadata_schema
    suffix = uuid.uuid4().hex[:8]
    reader, writer = f"ducklake_reader_{suffix}", f"ducklake_writer_{suffix}"
    admin_info = f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}"
    with psycopg.connect(admin_info, autocommit=True) as admin:
        for role in (reader, writer):
            admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{reader}"')
        admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{reader}"')
        admin.execute(f'GRANT USAGE, CREATE ON SCHEMA "{schema}" TO "{writer}"')
        admin.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA '
                      f'"{schema}" TO "{writer}"')
    try:
        project = tmp_path / "acl"
        (project / "models").mkdir(parents=True)
        (project / "dbt_project.yml").write_text(PROJECT)
        (project / "models" / "sources.yml").write_text(SOURCES)
        (project / "models" / "doubled.sql").write_text(
            "{{ config(materialized='table') }}\n"
            "select id, v * 2 as v2 from {{ source('shop', 'orders') }}")
        outputs = "".join(OUTPUT.format(role=role, db=PG_DB, host=PG_HOST, port=PG_PORT,
                                        user=user, schema=schema, data=lake_target.data_path)
                          for role, user in (("reader", reader), ("writer", writer)))
        (project / "profiles.yml").write_text(PROFILE.format(role="reader", outputs=outputs))

        before, files_before = lake_state(lake.catalog), files_on_disk(lake_target.data_path)
        assert dbt(project, "compile").success
        shown = dbt(project, "show", "--inline",
                    "select count(*) as n from {{ source('shop', 'orders') }}")
        assert shown.success and shown.result.results[0].agate_table.rows[0][0] == 150
        travelled = dbt(project, "show", "--inline", "select count(*) as n from "
                        f"{{{{ ducklake_at(source('shop', 'orders'), version={first}) }}}}")
        assert travelled.success and travelled.result.results[0].agate_table.rows[0][0] == 100

        refused = dbt(project, "run")
        assert not refused.success
        message = refused.result.results[0].message
        assert "permission denied for table ducklake_snapshot" in message, message
        assert "may read the lake but not write" in message and "nothing was committed" in message
        assert lake_state(lake.catalog) == before
        assert files_on_disk(lake_target.data_path) == files_before  # nothing left behind

        assert dbt(project, "run", "--target", "writer").success
        check = Catalog.open(lake_target.catalog, **lake_target.open_kwargs())
        try:
            assert check.table("shop", "doubled") is not None
        finally:
            check.close()
    finally:
        # dbt keeps the last adapter it registered in this process; a later test's project
        # must not get this one, whose role is about to be dropped.
        from dbt.adapters.factory import reset_adapters

        reset_adapters()
        with psycopg.connect(admin_info, autocommit=True) as admin:
            for role in (reader, writer):
                admin.execute(f'DROP OWNED BY "{role}" CASCADE')
                admin.execute(f'DROP ROLE IF EXISTS "{role}"')
