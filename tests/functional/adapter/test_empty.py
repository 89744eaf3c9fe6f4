"""dbt-tests-adapter's `empty` group: --empty.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.empty.test_empty import (
    BaseTestEmpty,
    BaseTestEmptyInlineSourceRef,
    BaseTestEmptySeedFlag,
)

pytestmark = [pytest.mark.spark]


class TestEmpty(BaseTestEmpty):
    pass


class TestEmptyInlineSourceRef(BaseTestEmptyInlineSourceRef):
    pass


_NO_SEED_EMPTY = ("`dbt seed --empty` (and empty seeds under `build --empty`) arrive after "
                  "dbt-core 1.11, the version installed: it has no such option")


class TestEmptySeedFlag(BaseTestEmptySeedFlag):
    @pytest.mark.skip(reason=_NO_SEED_EMPTY)
    def test_seed_empty_creates_table_with_zero_rows(self, project):  # noqa: ANN001, ANN201
        pass

    @pytest.mark.skip(reason=_NO_SEED_EMPTY)
    def test_seed_empty_preserves_column_types(self, project):  # noqa: ANN001, ANN201
        pass

    @pytest.mark.skip(reason=_NO_SEED_EMPTY)
    def test_build_empty_with_seed(self, project):  # noqa: ANN001, ANN201
        pass
