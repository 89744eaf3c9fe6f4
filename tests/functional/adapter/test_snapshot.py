"""dbt snapshots on lake tables: the basic check-cols and timestamp classes and the whole
simple_snapshot group (meta column names, dbt_valid_to_current, hard_deletes new_record,
multi-column keys, ephemeral sources, new columns)."""

from __future__ import annotations

import datetime

import pytest
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.simple_snapshot import fixtures, new_record_dbt_valid_to_current
from dbt.tests.adapter.simple_snapshot import new_record_timestamp_mode as timestamp_mode
from dbt.tests.adapter.simple_snapshot import test_ephemeral_snapshot_hard_deletes as ephemeral
from dbt.tests.adapter.simple_snapshot import test_various_configs as various
from dbt.tests.adapter.simple_snapshot.new_record_check_mode import (
    BaseSnapshotNewRecordCheckMode,
)
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import (
    BaseSnapshotNewRecordDbtValidToCurrent,
)
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import (
    BaseSnapshotNewRecordTimestampMode,
)
from dbt.tests.adapter.simple_snapshot.test_ephemeral_snapshot_hard_deletes import (
    BaseSnapshotEphemeralHardDeletes,
    BaseSnapshotNewColumnSpecificCheckCols,
    BaseSnapshotNewColumnTimestampStrategy,
    BaseSnapshotNewColumnWithDeletes,
)
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.adapter.simple_snapshot.test_various_configs import (
    BaseSnapshotColumnNames,
    BaseSnapshotColumnNamesFromDbtProject,
    BaseSnapshotDbtValidToCurrent,
    BaseSnapshotInvalidColumnNames,
    BaseSnapshotMultiUniqueKey,
)
from dbt.tests.util import check_relations_equal, run_dbt, run_sql_with_adapter

pytestmark = [pytest.mark.spark]


def _two_part(sql: str) -> str:
    """The suite's SQL names tables ``{{target.database}}.{{target.schema}}.seed`` or
    ``{database}.{schema}.seed``; a lake is one database and relations are named
    ``schema.table``, so the database part is dropped."""
    return sql.replace("{{target.database}}.", "").replace("{database}.", "")


class _TwoPartNewRecordStatements:
    @pytest.fixture(scope="class")
    def snapshots(self):  # noqa: ANN201
        return {"snapshot.sql": _two_part(timestamp_mode._snapshot_actual_sql)}

    @pytest.fixture(scope="class")
    def seed_new_record_mode_statements(self):  # noqa: ANN201
        return [_two_part(s) for s in timestamp_mode._seed_new_record_mode_statements]

    @pytest.fixture(scope="class")
    def invalidate_sql_statements(self):  # noqa: ANN201
        return [_two_part(s) for s in timestamp_mode._invalidate_sql_statements]

    @pytest.fixture(scope="class")
    def update_sql(self):  # noqa: ANN201
        return _two_part(timestamp_mode._update_sql)

    @pytest.fixture(scope="class")
    def delete_sql(self):  # noqa: ANN201
        return _two_part(timestamp_mode._delete_sql)

    @pytest.fixture(scope="class")
    def reinsert_sql(self):  # noqa: ANN201
        return _two_part(timestamp_mode._reinsert_sql)


class _TwoPartEphemeralSources:
    @pytest.fixture(scope="class")
    def source_create_sql(self):  # noqa: ANN201
        return _two_part(ephemeral._source_create_sql)

    @pytest.fixture(scope="class")
    def source_insert_sql(self):  # noqa: ANN201
        return _two_part(ephemeral._source_insert_sql)

    @pytest.fixture(scope="class")
    def source_alter_sql(self):  # noqa: ANN201
        return _two_part(ephemeral._source_alter_sql)

    @pytest.fixture(scope="class")
    def source_delete_sql(self):  # noqa: ANN201
        return _two_part(ephemeral._source_delete_sql)


class _TwoPartSnapshotSource:
    @pytest.fixture(scope="class")
    def snapshots(self):  # noqa: ANN201
        return {"snapshot.sql": _two_part(fixtures.snapshot_actual_sql)}


class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    pass


class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    pass


class TestSimpleSnapshot(BaseSimpleSnapshot):
    pass


class TestSnapshotCheck(BaseSnapshotCheck):
    pass


class TestSnapshotColumnNames(_TwoPartSnapshotSource, BaseSnapshotColumnNames):
    pass


class TestSnapshotColumnNamesFromDbtProject(_TwoPartSnapshotSource,
                                            BaseSnapshotColumnNamesFromDbtProject):
    pass


class TestSnapshotInvalidColumnNames(_TwoPartSnapshotSource, BaseSnapshotInvalidColumnNames):
    pass


class TestSnapshotDbtValidToCurrent(_TwoPartSnapshotSource, BaseSnapshotDbtValidToCurrent):
    """The suite's test reads rows by position from a SELECT without ORDER BY (PostgreSQL's
    heap order). A lake scan has no such order (an updated row moves to a new file), so the
    same checks are made on rows picked by id and validity."""

    def test_valid_to_current(self, project):  # noqa: ANN001, ANN201
        for sql in (various.create_seed_sql, various.create_snapshot_expected_sql,
                    various.seed_insert_sql,
                    various.populate_snapshot_expected_valid_to_current_sql):
            project.run_sql(sql)
        assert len(run_dbt(["snapshot"])) == 1
        current = datetime.datetime(2099, 12, 31, 0, 0)
        query = ("select id, test_valid_from, test_valid_to from {schema}.snapshot_actual "
                 "order by id, test_valid_from")
        rows = run_sql_with_adapter(project.adapter, query, "all")
        assert len(rows) == 20 and all(r[2] == current for r in rows)
        project.run_sql(various.invalidate_sql)
        project.run_sql(various.update_with_current_sql)
        assert len(run_dbt(["snapshot"])) == 1
        rows = run_sql_with_adapter(project.adapter, query, "all")
        by_id: dict[int, list] = {}
        for r in rows:
            by_id.setdefault(r[0], []).append(r[2])
        assert by_id[1] == [current]
        # The updated row's old version now ends at its update time; the new one is current.
        assert by_id[10] == [datetime.datetime(2016, 8, 20, 16, 44, 49), current]
        check_relations_equal(project.adapter, ["snapshot_actual", "snapshot_expected"])


class TestSnapshotMultiUniqueKey(BaseSnapshotMultiUniqueKey):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"seed.sql": _two_part(fixtures.model_seed_sql),
                "snapshots.yml": fixtures.snapshots_multi_key_yml}


class TestSnapshotNewRecordTimestampMode(_TwoPartNewRecordStatements,
                                         BaseSnapshotNewRecordTimestampMode):
    pass


class TestSnapshotNewRecordCheckMode(_TwoPartNewRecordStatements, BaseSnapshotNewRecordCheckMode):
    pass


class TestSnapshotNewRecordDbtValidToCurrent(BaseSnapshotNewRecordDbtValidToCurrent):
    @pytest.fixture(scope="class")
    def snapshots(self):  # noqa: ANN201
        return {"snapshot.sql": _two_part(new_record_dbt_valid_to_current._snapshot_actual_sql)}

    @pytest.fixture(scope="class")
    def seed_new_record_mode_statements(self):  # noqa: ANN201
        return [_two_part(s)
                for s in new_record_dbt_valid_to_current._seed_new_record_mode_statements]

    @pytest.fixture(scope="class")
    def delete_sql(self):  # noqa: ANN201
        return _two_part(new_record_dbt_valid_to_current._delete_sql)


class TestSnapshotEphemeralHardDeletes(_TwoPartEphemeralSources, BaseSnapshotEphemeralHardDeletes):
    pass


class TestSnapshotNewColumnTimestampStrategy(_TwoPartEphemeralSources,
                                            BaseSnapshotNewColumnTimestampStrategy):
    pass


class TestSnapshotNewColumnSpecificCheckCols(_TwoPartEphemeralSources,
                                             BaseSnapshotNewColumnSpecificCheckCols):
    pass


class TestSnapshotNewColumnWithDeletes(_TwoPartEphemeralSources, BaseSnapshotNewColumnWithDeletes):
    pass
