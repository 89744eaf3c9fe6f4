"""dbt's incremental suite (merge, append, delete+insert, microbatch) on lake tables."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.basic.test_incremental import (
    BaseIncremental,
    BaseIncrementalNotSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey

pytestmark = [pytest.mark.spark]


class TestIncremental(BaseIncremental):
    pass


class TestIncrementalNotSchemaChange(BaseIncrementalNotSchemaChange):
    pass


class TestIncrementalUniqueKey(BaseIncrementalUniqueKey):
    pass


class TestIncrementalUniqueKeyDeleteInsert(BaseIncrementalUniqueKey):
    """The same cases with delete+insert: no unique_key (missing, [] or '') appends, as in
    dbt-core's default strategy; a key deletes and reinserts."""

    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"+incremental_strategy": "delete+insert"}}


class TestIncrementalOnSchemaChange(BaseIncrementalOnSchemaChange):
    pass


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    pass


class TestIncrementalPredicatesDeleteInsert(BaseIncrementalPredicates):
    pass


class TestPredicatesDeleteInsert(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"+predicates": ["id != 2"], "+incremental_strategy": "delete+insert"}}


class TestMicrobatch(BaseMicrobatch):
    pass
