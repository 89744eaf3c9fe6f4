"""Incremental strategies and partitioning through dbt, checked in the catalog and with DuckDB:
insert_overwrite replaces only the partitions present, microbatch replaces its windows,
delete+insert is one snapshot, partition_by lays files out in hive paths, and small appends
stay inlined."""

from __future__ import annotations

import os

import pytest
from conftest import duckdb_connect
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.ducklake.lake import Catalog

pytestmark = [pytest.mark.spark]


def lake_of(project) -> Catalog:  # noqa: ANN001
    return Catalog.open(project.adapter.config.credentials.catalog)


def duck_of(project):  # noqa: ANN001, ANN201
    creds = project.adapter.config.credentials
    con = duckdb_connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{creds.catalog.removeprefix('sqlite:///')}' AS lake "
                f"(DATA_PATH '{creds.data_path}')")
    return con


def parquet_files(project) -> list[str]:  # noqa: ANN001
    path = project.adapter.config.credentials.data_path
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, fs in os.walk(path) for f in fs if f.endswith(".parquet"))


class _NoInlining:
    """Small test data would be inlined in the catalog; these tests look at Parquet layout."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, dbt_profile_target):  # noqa: ANN001, ANN201
        return {**dbt_profile_target, "data_inlining_row_limit": 0}


EVENTS = """
{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
          partition_by=['region', 'month(ts)']) }}
select * from values
{% if var('batch', 1) == 1 %}
  (1, 'eu', timestamp'2024-01-05 00:00:00', 10), (2, 'eu', timestamp'2024-02-05 00:00:00', 20),
  (3, 'us', timestamp'2024-01-07 00:00:00', 30), (4, 'us', timestamp'2024-02-07 00:00:00', 40)
{% else %}
  (5, 'eu', timestamp'2024-02-09 00:00:00', 50), (6, 'apac', timestamp'2024-02-09 00:00:00', 60)
{% endif %}
as t(id, region, ts, amount)
"""


class TestInsertOverwriteByPartition(_NoInlining):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"events.sql": EVENTS,
                "flat.sql": "{{ config(materialized='incremental', "
                            "incremental_strategy='insert_overwrite') }} select 1 as id"}

    def test_replaces_only_present_partitions(self, project):  # noqa: ANN001
        run_dbt(["run", "-s", "events"])
        files = parquet_files(project)
        assert any("region=eu/month=1/" in f for f in files), files
        run_dbt(["run", "-s", "events", "--vars", "{batch: 2}"])
        rows = project.run_sql(f"select id from `{project.test_schema}.events` order by id",
                               fetch="all")
        # (eu, Feb) was replaced by id 5; (apac, Feb) is new; the other partitions are kept.
        assert [r[0] for r in rows] == [1, 3, 4, 5, 6]
        duck = duck_of(project)
        assert sorted(r[0] for r in duck.execute(
            f'SELECT id FROM lake."{project.test_schema}".events').fetchall()) == [1, 3, 4, 5, 6]
        spec = duck.execute(
            "SELECT c.transform FROM __ducklake_metadata_lake.ducklake_partition_column c "
            "JOIN __ducklake_metadata_lake.ducklake_partition_info i USING (partition_id) "
            "WHERE i.end_snapshot IS NULL ORDER BY c.partition_key_index").fetchall()
        assert [r[0] for r in spec] == ["identity", "month"]

    def test_unpartitioned_table_is_refused(self, project):  # noqa: ANN001
        run_dbt(["run", "-s", "flat"])
        results, log = run_dbt_and_capture(["run", "-s", "flat"], expect_pass=False)
        assert "no partition spec" in log and "overwrite_whole_table" in log


class TestPartitionedTableModels(_NoInlining):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "by_bucket.sql": "{{ config(materialized='table', partition_by='bucket(4, id)') }}"
                             " select id from range(40)",
            "py_model.py": "def model(dbt, spark):\n"
                           "    dbt.config(materialized='table', partitioned_by=['k'])\n"
                           "    return spark.range(10).selectExpr('id', 'id % 2 as k')\n",
            "bad.sql": "{{ config(materialized='table', partition_by='truncate(3, id)') }} "
                       "select 1 as id",
        }

    def test_partitioned_builds(self, project):  # noqa: ANN001
        run_dbt(["run", "-s", "by_bucket", "py_model"])
        files = parquet_files(project)
        assert len([f for f in files if "/bucket=" in f]) == 4
        assert len([f for f in files if "/k=" in f]) == 2
        duck = duck_of(project)
        assert duck.execute(f'SELECT count(*), sum(id) FROM lake."{project.test_schema}"'
                            ".by_bucket").fetchone() == (40, 780)
        results, log = run_dbt_and_capture(["run", "-s", "bad"], expect_pass=False)
        assert "truncate" in log and "bucket" in log


class TestDeleteInsertIsOneSnapshot:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"di.sql": "{{ config(materialized='incremental', "
                          "incremental_strategy='delete+insert', unique_key=['k1', 'k2']) }}\n"
                          "select id % 5 as k1, id % 2 as k2, {{ var('v', 0) }} as v "
                          "from range(10)"}

    def test_one_snapshot(self, project):  # noqa: ANN001
        run_dbt(["run"])
        lake = lake_of(project)
        before = len(lake.snapshots())
        run_dbt(["run", "--vars", "{v: 1}"])
        assert len(lake.snapshots()) == before + 1
        rows = project.run_sql(f"select k1, k2, v from `{project.test_schema}.di`", fetch="all")
        assert len(rows) == 10 and {r[2] for r in rows} == {1}


class TestSmallAppendsStayInlined:
    """Issue 4's streaming case: an incremental append of at most 10 rows, run many times,
    writes no Parquet file, and every row is readable by us and by DuckDB.

    Twelve runs put 120 rows, twelve times the inlining limit, in the catalog: the limit is per
    write, never on the total. The 1,000-commit version is ``benchmarks/streaming.py``."""

    RUNS = 12

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"stream.sql": "{{ config(materialized='incremental', "
                              "incremental_strategy='append') }}\n"
                              "select {{ var('run', 0) }} * 10 + id as id, "
                              "current_timestamp() as seen from range(10)"}

    @pytest.mark.slow
    def test_no_parquet_file(self, project):  # noqa: ANN001
        for run in range(self.RUNS):
            run_dbt(["run", "--vars", f"{{run: {run}}}"])
        assert parquet_files(project) == []
        expected = list(range(10 * self.RUNS))
        ours = project.run_sql(f"select id from `{project.test_schema}.stream` order by id",
                               fetch="all")
        assert [r[0] for r in ours] == expected
        duck = duck_of(project)
        theirs = duck.execute(f'SELECT id FROM lake."{project.test_schema}".stream '
                              "ORDER BY id").fetchall()
        assert [r[0] for r in theirs] == expected


class TestDeleteInsertByColumnName:
    """delete+insert inserts by column name: with append_new_columns, a column the query no
    longer selects gets NULL in the new rows (as with merge and append), and a new column is
    added."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"di.sql": "{{ config(materialized='incremental', unique_key='id', "
                          "incremental_strategy='delete+insert', "
                          "on_schema_change='append_new_columns') }}\n"
                          "{% if var('v', 1) == 1 %}"
                          "select id, 'a' || id as a, id * 10 as b from range(3)"
                          "{% else %}"
                          "select id, 'A' || id as a, id * 100 as c from range(1, 4)"
                          "{% endif %}"}

    def test_missing_column_gets_null(self, project):  # noqa: ANN001
        run_dbt(["run"])
        run_dbt(["run", "--vars", "{v: 2}"])
        rows = project.run_sql(f"select id, a, b, c from `{project.test_schema}.di` order by id",
                               fetch="all")
        assert [tuple(r) for r in rows] == [
            (0, "a0", 0, None), (1, "A1", None, 100), (2, "A2", None, 200), (3, "A3", None, 300)]
