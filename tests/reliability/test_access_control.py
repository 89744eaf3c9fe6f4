"""PostgreSQL roles as in DuckLake's access-control guide: a reader compiles, shows and time
travels but cannot write (a clear error, nothing left behind); a writer builds.

Grants (the guide's, for a lake whose catalog tables live in one metadata schema):

* reader: ``USAGE`` on the schema, ``SELECT`` on all its tables;
* writer: ``USAGE, CREATE`` on the schema (new tables create inlined-data tables) and
  ``SELECT, INSERT, UPDATE, DELETE`` on all its tables.
"""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("lake_target", ["postgres"], indirect=True)
def test_a_reader_role_deletes_no_file_in_cleanup(spark, lake, lake_target):  # noqa: ANN001
    """Cleanup removes files only after a catalog write succeeded: a role that may only read
    the catalog gets a clear error and every file stays (scheduled ones and orphans)."""
    import datetime as dt

    import psycopg
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dbt.adapters.ducklake.lake.cleanup import cleanup_old_files, delete_orphaned_files
    from dbt.adapters.ducklake.lake.errors import CommitFailedError

    lake.set_option("data_inlining_row_limit", 0)
    table = lake.create_table("main.t", spark.range(0, 10, 1, 1).selectExpr("id"))
    table.append(spark.range(10, 20, 1, 1).selectExpr("id"))
    assert lake.merge_adjacent_files().summary()  # its sources are scheduled for deletion
    state = table.state(contents=False)
    orphan = f"{state.table_dir}ducklake-orphan.parquet"
    pq.write_table(pa.table({"x": [1]}), orphan)
    old = (dt.datetime.now() - dt.timedelta(days=3)).timestamp()
    os.utime(orphan, (old, old))
    schema = lake_target.metadata_schema
    reader = f"ducklake_cleaner_{uuid.uuid4().hex[:8]}"
    admin_info = f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}"
    with psycopg.connect(admin_info, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{reader}" LOGIN')
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{reader}"')
        admin.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{reader}"')
    as_reader = Catalog.open(f"postgres:dbname={PG_DB} host={PG_HOST} port={PG_PORT} "
                             f"user={reader}",
                             metadata_schema=schema)
    try:
        before, files = lake_state(lake.catalog), files_on_disk(lake_target.data_path)
        listed = cleanup_old_files(as_reader, cleanup_all=True, dry_run=True)
        assert listed.paths and delete_orphaned_files(as_reader, dry_run=True).paths
        for cleanup in (lambda: cleanup_old_files(as_reader, cleanup_all=True),
                        lambda: delete_orphaned_files(as_reader)):
            with pytest.raises(CommitFailedError, match="permission denied.*nothing was deleted"):
                cleanup()
        assert files_on_disk(lake_target.data_path) == files
        assert lake_state(lake.catalog) == before
        # the writer's cleanup deletes what the reader's dry run listed
        assert lake.cleanup_old_files(cleanup_all=True).paths == listed.paths
        assert lake.delete_orphaned_files().paths == (orphan,)
        assert not any(os.path.exists(p) for p in (*listed.paths, orphan))
    finally:
        as_reader.close()
        with psycopg.connect(admin_info, autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{reader}" CASCADE')
            admin.execute(f'DROP ROLE IF EXISTS "{reader}"')
