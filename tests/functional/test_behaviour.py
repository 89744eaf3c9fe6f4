"""dbt-level behaviour beyond dbt's own suite: atomic failures, identity-keeping rebuilds,
parallel commits, pinned reads, and clear errors for bad input."""

from __future__ import annotations

import os

import pytest
from dbt.tests.adapter.relations.test_changing_relation_type import (
    BaseChangeRelationTypeValidator,
)
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from dbt.adapters.ducklake.lake import Catalog
from dbt.adapters.ducklake.spark.skipping import MIN_BYTES_CONF

pytestmark = [pytest.mark.spark]


def lake_of(project) -> Catalog:  # noqa: ANN001
    target = project.adapter.config.credentials
    return Catalog.open(target.catalog)


def data_files(project) -> list[str]:  # noqa: ANN001
    path = project.adapter.config.credentials.data_path
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)


class TestFailedModelLeavesNoTrace:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "good.sql": "select id, id * 2 as v from range(100)",
            "bad.sql": "{{ config(materialized='table') }}\n"
                       "select id, assert_true(id < 50) as ok from range(100)",
        }

    def test_failure_commits_nothing(self, project):  # noqa: ANN001
        run_dbt(["run", "-s", "good"])
        lake = lake_of(project)
        before = len(lake.snapshots())
        files = data_files(project)
        results = run_dbt(["run", "-s", "bad"], expect_pass=False)
        assert "is not true" in results.results[0].message
        assert len(lake.snapshots()) == before
        assert data_files(project) == files
        assert lake.relations(project.test_schema) == [("view", "good")]


class TestTableRebuildKeepsIdentity:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"t.sql": "{{ config(materialized='table') }}\n"
                         "select id, cast(id as int) as v from range({{ var('n', 20) }})"}

    def test_rebuild_in_place_with_schema_change(self, project):  # noqa: ANN001
        run_dbt(["run"])
        lake = lake_of(project)
        first = lake.table(project.test_schema, "t")
        v1 = lake.latest_snapshot().snapshot_id
        write_file("{{ config(materialized='table') }}\n"
                   "select id, cast(id as bigint) as v, 'x' as w from range({{ var('n', 20) }})",
                   project.project_root, "models", "t.sql")
        run_dbt(["run", "--vars", "{n: 30}"])
        second = lake.table(project.test_schema, "t")
        assert second.table_id == first.table_id
        columns = {c.column_name: c.column_type for c in lake.columns(second.table_id)}
        assert columns == {"id": "int64", "v": "int64", "w": "varchar"}
        assert [s.changes for s in lake.snapshots()][-1] == [
            f"inserted_into_table:{first.table_id}", f"deleted_from_table:{first.table_id}",
            f"altered_table:{first.table_id}"]
        rows = project.run_sql(
            f"select count(*) from `{project.test_schema}.t@v{v1}`", fetch="one")
        assert rows[0] == 20
        assert project.run_sql(f"select count(*) from `{project.test_schema}.t`",
                               fetch="one")[0] == 30


class TestParallelModelsAllCommit:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {f"m{i}.sql": "{{ config(materialized='table') }}\n"
                             f"select id, {i} as model from range({200 * (i + 1)})"
                for i in range(8)}

    def test_threads(self, project):  # noqa: ANN001
        results = run_dbt(["run", "--threads", "4"])
        assert len(results) == 8
        lake = lake_of(project)
        for i in range(8):
            got = project.run_sql(f"select count(*) from `{project.test_schema}.m{i}`",
                                  fetch="one")
            assert got[0] == 200 * (i + 1)
        messages = [s.commit_message for s in lake.snapshots() if s.commit_message]
        for i in range(8):
            assert any(f".m{i} (" in m for m in messages), messages


class TestUnknownMaterialization:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"x.sql": "{{ config(materialized='tabel') }} select 1 as id"}

    def test_clear_error(self, project):  # noqa: ANN001
        _, output = run_dbt_and_capture(["run"], expect_pass=False)
        assert "tabel" in output


class TestInvalidFileFormat:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"x.sql": "{{ config(materialized='table', file_format='delta') }} select 1 as id"}

    def test_lists_accepted_values(self, project):  # noqa: ANN001
        results = run_dbt(["run"], expect_pass=False)
        message = results.results[0].message
        assert "Invalid file_format 'delta'" in message
        assert "Accepted values: parquet, ducklake" in message


class TestSourceFreshness:
    @pytest.fixture(scope="class")
    def seeds(self):  # noqa: ANN201
        return {"events.csv": "id,loaded_at\n1,2020-01-01 00:00:00\n2,2020-01-02 00:00:00\n"}

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"sources.yml": """
version: 2
sources:
  - name: raw
    schema: "{{ target.schema }}"
    freshness:
      warn_after: {count: 1, period: day}
    tables:
      - name: events
        loaded_at_field: loaded_at
      - name: events_by_snapshot
        identifier: events
"""}

    def test_both_kinds_of_freshness(self, project):  # noqa: ANN001
        run_dbt(["seed"])
        results = run_dbt(["source", "freshness"], expect_pass=True)
        by_name = {r.node.name: r for r in results.results}
        # loaded_at is years old: a warning; the lake table was just written: fresh
        assert str(by_name["events"].status) == "warn"
        assert str(by_name["events_by_snapshot"].status) == "pass"


class TestInvalidIncrementalStrategy:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"x.sql": "{{ config(materialized='incremental', incremental_strategy='upsert') }}"
                         " select 1 as id"}

    def test_lists_accepted_values(self, project):  # noqa: ANN001
        results = run_dbt(["run"], expect_pass=False)  # checked before anything is built
        message = results.results[0].message
        assert "Invalid incremental_strategy 'upsert'" in message
        assert "merge, append, delete+insert" in message


class TestMergeVocabulary:
    """Databricks' merge configs, carried out by the engine's MERGE INTO."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"m.sql": """
{{ config(materialized='incremental', unique_key='id',
          matched_condition="DBT_INTERNAL_SOURCE.v > DBT_INTERNAL_DEST.v",
          not_matched_condition="DBT_INTERNAL_SOURCE.id < 100",
          not_matched_by_source_action='delete',
          not_matched_by_source_condition="DBT_INTERNAL_DEST.id < 3") }}
{% if is_incremental() %}
select id, v from values (1, 50), (4, 1), (7, 70), (99, 9), (150, 15) as s(id, v)
{% else %}
select id, id * 10 as v from range(10)
{% endif %}
"""}

    def test_configs_shape_the_merge(self, project):  # noqa: ANN001
        run_dbt(["run"])
        run_dbt(["run"])
        rows = dict(project.run_sql(f"select id, v from `{project.test_schema}.m`",
                                    fetch="all"))
        # 0 and 2: not in the source and id < 3 -> deleted; 1: matched, 50 > 10 -> updated;
        # 4: matched, 1 < 40 -> kept; 7: 70 > 70 is false -> kept; 99 inserted; 150 not.
        assert rows == {1: 50, 3: 30, 4: 40, 5: 50, 6: 60, 7: 70, 8: 80, 9: 90, 99: 9}


class TestInvalidNotMatchedBySourceAction:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"m.sql": "{{ config(materialized='incremental', unique_key='id', "
                         "not_matched_by_source_action='truncate') }} select 1L as id"}

    def test_lists_accepted_values(self, project):  # noqa: ANN001
        run_dbt(["run"])
        results = run_dbt(["run"], expect_pass=False)
        assert "Accepted values: delete, or 'update set" in results.results[0].message


class TestNarrowedTypeIsANewColumn:
    """A narrowed type keeps the table (its id, history and change feed): the column is new,
    and the log says so. The same change with a failing query leaves the table as it was."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"t.sql": "{{ config(materialized='table') }} select 1L as id, 'a' as v, "
                         "1L as n"}

    def test_failing_rebuild_keeps_the_table_then_a_new_column(self, project):  # noqa: ANN001
        run_dbt(["run"])
        lake = lake_of(project)
        first = lake.table(project.test_schema, "t").table_id
        snapshots = len(lake.snapshots())
        write_file("{{ config(materialized='table') }} select 1L as id, 2 as v, "
                   "cast(assert_true(false, 'no') as int) as n", project.project_root,
                   "models", "t.sql")
        run_dbt(["run"], expect_pass=False)
        assert len(lake.snapshots()) == snapshots
        assert project.run_sql(f"select id, v from `{project.test_schema}.t`",
                               fetch="all") == [(1, "a")]
        write_file("{{ config(materialized='table') }} select 1L as id, 2 as v, 1 as n",
                   project.project_root, "models", "t.sql")
        _, output = run_dbt_and_capture(["run"])
        assert "column v: varchar -> int32" in output and "cannot be altered in place" in output
        assert lake.table(project.test_schema, "t").table_id == first
        assert project.run_sql(f"select v, n from `{project.test_schema}.t`",
                               fetch="all") == [(2, 1)]


class TestStructFieldKeepsTheTable:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"t.sql": "{{ config(materialized='table') }} "
                         "select id, named_struct('x', id) as st from range(3)"}

    def test_change_feed_spans_the_new_field(self, project):  # noqa: ANN001
        run_dbt(["run"])
        lake = lake_of(project)
        first = lake.table(project.test_schema, "t")
        write_file("{{ config(materialized='table') }} "
                   "select id, named_struct('x', id, 'y', 'new') as st from range(4)",
                   project.project_root, "models", "t.sql")
        _, output = run_dbt_and_capture(["run"])
        assert "cannot be altered in place" not in output
        table = lake.table(project.test_schema, "t")
        assert table.table_id == first.table_id
        relation = f"`{project.test_schema}.t`"
        write_file("{{ config(materialized='table') }} select change_type, count(*) as n "
                   f"from {{{{ ducklake_table_changes(ref('t'), {first.begin_snapshot}) }}}} "
                   "group by 1", project.project_root, "models", "feed.sql")
        run_dbt(["run", "--select", "feed"])
        rows = project.run_sql(f"select change_type, n from `{project.test_schema}.feed` "
                               "order by 1", fetch="all")
        assert rows == [("delete", 3), ("insert", 7)]
        assert project.run_sql(f"select st.y from {relation} where id = 3",
                               fetch="all") == [("new",)]


JVM_LINES = ("Using incubator modules", "Setting default log level", "NativeCodeLoader")


class TestSparkOutputGoesToTheLogFile:
    """A ``dbt`` run as a user starts it, in a process of its own: the console is dbt's own
    (the JVM's start-up lines go to ``logs/dbt.log``), and Python workers run dbt's
    interpreter, not the ``python3`` on PATH (a virtual environment's ``dbt`` run without
    activating it): here that ``python3`` is one that fails, and a bucket-partitioned model
    needs a Python worker. One real start (a JVM of its own, the costly part); that
    ``spark_console: true`` leaves the output on the console is the unit test
    ``test_spark_console_sends_the_jvm_output_to_the_console``."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"m.sql": "{{ config(materialized='table', partition_by='bucket(2, id)') }} "
                         "select 1 as id"}

    def test_jvm_output_goes_to_the_log_file(self, project, tmp_path):  # noqa: ANN001
        import subprocess
        import sys

        from reliability.support import child_env

        broken = tmp_path / "bin"
        broken.mkdir()
        (broken / "python3").write_text("#!/bin/sh\necho 'not this python' >&2\nexit 3\n")
        (broken / "python3").chmod(0o755)
        env = child_env()
        del env["PYSPARK_PYTHON"]
        env["PATH"] = f"{broken}{os.pathsep}{env['PATH']}"
        proc = subprocess.run(
            [sys.executable, "-m", "dbt.cli.main", "run", "--project-dir",
             project.project_root, "--profiles-dir", project.profiles_dir, "--log-path",
             os.path.join(project.project_root, "logs")],
            capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        out = proc.stdout + proc.stderr
        assert not [line for line in JVM_LINES if line in out], out
        log = open(os.path.join(project.project_root, "logs", "dbt.log")).read()
        assert "Setting default log level" in log
        assert "Completed successfully" in out


class TestIncrementalReadsOnlyNewFiles:
    """``where day > (select max(day) from {{ this }})`` opens only the upstream files of new
    days: the others are zeroed on disk (same size, so only opening one can tell) and the
    incremental run still succeeds, and dbt's log says how many files were read."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "events.sql": "{{ config(materialized='incremental', partition_by=['day']) }}\n"
                          "select id, date_add(date'2024-01-01', {{ var('d') }}) as day "
                          "from range(50)",
            "fresh.sql": "{{ config(materialized='incremental') }}\n"
                         "select * from {{ ref('events') }}\n"
                         "{% if is_incremental() %}"
                         "where day > (select max(day) from {{ this }}){% endif %}",
        }

    @pytest.fixture(autouse=True)
    def judge_every_read(self, spark):  # noqa: ANN001, ANN201
        """These tables are small: files are judged however few bytes they hold."""
        spark.conf.set(MIN_BYTES_CONF, "0")
        yield
        spark.conf.unset(MIN_BYTES_CONF)

    def test_old_files_are_never_opened(self, project):  # noqa: ANN001
        for day in range(3):
            run_dbt(["run", "--vars", f"d: {day}"])
        root = project.adapter.config.credentials.data_path
        old = [p for p in data_files(project) if "/events/day=2024-01-0" in p.replace(
            os.sep, "/") and "day=2024-01-03" not in p]
        assert len(old) == 2, data_files(project)
        for path in old:
            size = os.path.getsize(path)
            with open(path, "wb") as handle:
                handle.write(b"\0" * size)
        run_dbt(["run", "-s", "events", "--vars", "d: 3"])
        _, log = run_dbt_and_capture(["--debug", "run", "-s", "fresh", "--vars", "d: 3"])
        assert "read 1 of 4 files (skipped by partition: 3, by statistics: 0)" in log, log
        lake = lake_of(project)
        assert lake.table(project.test_schema, "fresh") is not None
        assert root
        results = run_dbt(["show", "--inline",
                           f"select count(*) as n from {project.test_schema}.fresh",
                           "--vars", "d: 3"])
        assert int(results.results[0].agate_table.rows[0][0]) == 200


class TestColumnsQualifiedByTheTableName:
    """Models that qualify columns by a relation's name, as dbt users write them for other
    adapters: ``orders.id`` beside ``{{ ref('orders') }}``, ``{{ this }}.col`` in an
    incremental filter, and a singular test doing the same."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "orders.sql": "{{ config(materialized='table') }}\n"
                          "select id, id % 3 as customer, id * 10 as amount from range(9)",
            "customers.sql": "{{ config(materialized='table') }}\n"
                             "select id, concat('c', id) as name from range(3)",
            "totals.sql": "select customers.name, sum(orders.amount) as total\n"
                          "from {{ ref('orders') }} join {{ ref('customers') }}\n"
                          "  on orders.customer = customers.id\n"
                          "group by customers.name",
            "latest.sql": "{{ config(materialized='incremental', unique_key='id') }}\n"
                          "select orders.id, orders.amount from {{ ref('orders') }}\n"
                          "{% if is_incremental() %}\n"
                          "where orders.id > (select max({{ this }}.id) from {{ this }})\n"
                          "{% endif %}",
        }

    @pytest.fixture(scope="class")
    def tests(self):  # noqa: ANN201
        return {"no_negative_totals.sql":
                "select totals.name from {{ ref('totals') }} where totals.total < 0"}

    def test_models_and_tests_resolve_the_names(self, project):  # noqa: ANN001
        run_dbt(["build"])
        schema = project.test_schema
        totals = dict(project.run_sql(f"select name, total from `{schema}.totals`",
                                      fetch="all"))
        assert totals == {"c0": 90, "c1": 120, "c2": 150}
        project.run_sql(f"insert into `{schema}.orders` values (20, 2, 200)")
        run_dbt(["run", "-s", "latest"])
        assert project.run_sql(f"select count(*), max(id) from `{schema}.latest`",
                               fetch="one") == (10, 20)


class TestRelationTypeChangesInOneSnapshot(BaseChangeRelationTypeValidator):
    """dbt's own check that a model switching view <-> table <-> incremental changes its
    relation's type, plus: each switch is one snapshot (the old relation is dropped in the
    snapshot that creates the new one), so a reader never finds the model missing."""

    def _run_and_check_materialization(self, materialization, extra_args=None):  # noqa: ANN001, ANN202
        lake = Catalog.open(self._catalog)
        before = len(lake.snapshots())
        super()._run_and_check_materialization(materialization, extra_args)
        assert len(lake.snapshots()) == before + 1, materialization

    def test_changing_materialization_changes_relation_type(self, project):  # noqa: ANN001
        self._catalog = project.adapter.config.credentials.catalog
        super().test_changing_materialization_changes_relation_type(project)


class TestPythonModelReplacesAView:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"m.sql": "{{ config(materialized='view') }} select 1 as id"}

    def test_one_snapshot(self, project):  # noqa: ANN001
        run_dbt(["run"])
        lake = lake_of(project)
        before = len(lake.snapshots())
        os.remove(os.path.join(project.project_root, "models", "m.sql"))
        write_file("def model(dbt, session):\n    dbt.config(materialized='table')\n"
                   "    return session.range(3)\n", project.project_root, "models", "m.py")
        run_dbt(["run"])
        assert len(lake.snapshots()) == before + 1
        assert project.run_sql(f"select count(*) from `{project.test_schema}.m`",
                               fetch="one") == (3,)
