"""A model's `table_options` (or dbt-spark's `tblproperties`): set with the table's first
data, compared on every later run and updated with its write; the files follow them."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

pytestmark = [pytest.mark.spark]

INCREMENTAL = """
{{ config(materialized='incremental', incremental_strategy='append',
          table_options={'parquet_compression': var('codec', 'zstd'),
                         'data_inlining_row_limit': 0}) }}
select id from range({{ var('start', 0) }}, {{ var('start', 0) }} + 50)
"""

TBLPROPERTIES = """
{{ config(materialized='table', tblproperties={'parquet_row_group_size': 10,
                                              'data_inlining_row_limit': 0}) }}
select id from range(40)
"""


def table_state(project, table: str) -> tuple[dict[str, str], set[str]]:  # noqa: ANN001
    """The table's own options, and the codecs of its live files' first columns."""
    with project.adapter.connection_named("__test"):
        lake = project.adapter.runtime().lake
        info = lake.catalog.table(project.test_schema, table)
        options = {o.key: o.value for o in lake.options()
                   if o.scope == "table" and o.scope_id == info.table_id}
        state = lake.table(f"{project.test_schema}.{table}").state()
        codecs = {pq.ParquetFile(state.path_of(f)).metadata.row_group(0).column(0).compression
                  for f in state.data_files}
        return options, codecs


class TestTableOptions:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"events.sql": INCREMENTAL, "props.sql": TBLPROPERTIES}

    def test_first_run_then_changed(self, project):  # noqa: ANN001
        run_dbt(["run"])
        with project.adapter.connection_named("__test"):
            lake = project.adapter.runtime().lake
            first = lake.current_snapshot().snapshot_id
        options, codecs = table_state(project, "events")
        assert options == {"parquet_compression": "zstd", "data_inlining_row_limit": "0"}
        assert codecs == {"ZSTD"}
        props, _ = table_state(project, "props")
        assert props["parquet_row_group_size"] == "10"
        run_dbt(["run", "-s", "events", "--vars", "{codec: gzip, start: 50}"])
        options, codecs = table_state(project, "events")
        assert options["parquet_compression"] == "gzip"
        assert codecs == {"ZSTD", "GZIP"}  # the new rows' files follow the new codec
        with project.adapter.connection_named("__test"):
            # the append alone: the option went in with it
            assert lake.current_snapshot().snapshot_id == first + 1

    def test_unknown_option_lists_the_accepted_ones(self, project):  # noqa: ANN001
        write_file("{{ config(materialized='table', table_options={'delta.appendOnly': true}) }}"
                   "\nselect 1 as id", project.project_root, "models", "bad.sql")
        _, out = run_dbt_and_capture(["run", "-s", "bad"], expect_pass=False)
        assert "table_options of model.test.bad: unsupported table option 'delta.appendOnly'" \
            in out
        assert "accepted: data_inlining_row_limit, target_file_size, parquet_compression" in out


SORTED = """
{{ config(materialized='incremental', incremental_strategy='append',
          sorted_by=var('order', ['g', 'id desc'])) }}
select cast((id * 7919) % 500 as bigint) as id, id % 3 as g from range(500)
"""


class TestSortedBy:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"sorted.sql": SORTED}

    def sort_order(self, project) -> list[str]:  # noqa: ANN001
        from dbt.adapters.ducklake.lake.compaction import sort_keys
        from dbt.adapters.ducklake.lake.sort_order import describe

        with project.adapter.connection_named("__test"):
            catalog = project.adapter.runtime().lake.catalog
            table = catalog.table(project.test_schema, "sorted")
            with catalog.read() as conn:
                return describe(sort_keys(catalog, conn, table.table_id,
                                          catalog.latest_snapshot(conn).snapshot_id))

    def test_set_then_changed(self, project):  # noqa: ANN001
        run_dbt(["run"])
        assert self.sort_order(project) == ["g", "id DESC"]
        run_dbt(["run", "--vars", "{order: id}"])
        assert self.sort_order(project) == ["id"]
        _, out = run_dbt_and_capture(["run", "--vars", "{order: [id sideways]}"],
                                     expect_pass=False)
        assert "sorted_by of model.test.sorted: cannot read the sort key 'id sideways'" in out
