"""dbt-tests-adapter's `concurrency` group: concurrent models."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.concurrency.test_concurrency import BaseConcurrency

pytestmark = [pytest.mark.spark]


class TestConcurrency(BaseConcurrency):
    pass
