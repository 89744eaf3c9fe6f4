"""dbt-tests-adapter's `store_test_failures` group: storing test failures."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.store_test_failures_tests import basic as stf_basic
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import (
    BaseStoreTestFailures,
    BaseStoreTestFailuresLimit,
)

pytestmark = [pytest.mark.spark]


class TestStoreTestFailures(BaseStoreTestFailures):
    pass


class TestStoreTestFailuresLimit(BaseStoreTestFailuresLimit):
    pass


class TestStoreTestFailuresAsInteractions(stf_basic.StoreTestFailuresAsInteractions):
    pass


class TestStoreTestFailuresAsProjectLevelOff(stf_basic.StoreTestFailuresAsProjectLevelOff):
    pass


class TestStoreTestFailuresAsProjectLevelView(stf_basic.StoreTestFailuresAsProjectLevelView):
    pass


class TestStoreTestFailuresAsGeneric(stf_basic.StoreTestFailuresAsGeneric):
    pass


class TestStoreTestFailuresAsProjectLevelEphemeral(
    stf_basic.StoreTestFailuresAsProjectLevelEphemeral
):
    pass


class TestStoreTestFailuresAsExceptions(stf_basic.StoreTestFailuresAsExceptions):
    pass
