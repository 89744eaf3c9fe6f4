"""dbt's seed tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot
from dbt.tests.adapter.simple_seed import seeds
from dbt.tests.adapter.simple_seed.test_seed import (
    BaseBasicSeedTests,
    BaseSeedConfigFullRefreshOff,
    BaseSeedConfigFullRefreshOn,
    BaseSeedCustomSchema,
    BaseSeedParsing,
    BaseSeedSpecificFormats,
    BaseSeedWithEmptyDelimiter,
    BaseSeedWithUniqueDelimiter,
    BaseSeedWithWrongDelimiter,
    BaseSimpleSeedWithBOM,
)
from dbt.tests.util import copy_file

pytestmark = [pytest.mark.spark]


CASCADE = ("expects PostgreSQL's DROP ... CASCADE to remove the model built on the seed; "
           "DuckLake tracks no dependencies between relations and views bind late, so "
           "--full-refresh reloads the seed and its dependents keep working")


class SparkExpected:
    """The suite's expected table in Spark SQL: the suite ships PostgreSQL DDL for it."""

    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):  # noqa: ANN001, N802
        sql = seeds.seeds__expected_sql.replace("{schema}", "schema_placeholder")
        for statement in sqlglot.transpile(sql, read="postgres", write="spark"):
            project.run_sql(statement.replace("schema_placeholder", "{schema}"))


class TestBasicSeedTests(SparkExpected, BaseBasicSeedTests):
    @pytest.mark.skip(reason=CASCADE)
    def test_simple_seed_full_refresh_flag(self, project):  # noqa: ANN001
        pass


@pytest.mark.skip(reason=CASCADE)
class TestSeedConfigFullRefreshOn(SparkExpected, BaseSeedConfigFullRefreshOn):
    pass


class TestSeedConfigFullRefreshOff(SparkExpected, BaseSeedConfigFullRefreshOff):
    pass


class TestSeedCustomSchema(SparkExpected, BaseSeedCustomSchema):
    pass


class TestSeedWithUniqueDelimiter(SparkExpected, BaseSeedWithUniqueDelimiter):
    pass


class TestSeedWithWrongDelimiter(SparkExpected, BaseSeedWithWrongDelimiter):
    def test_error_names_the_column_and_the_delimiter(self, project):  # noqa: ANN001
        from dbt.tests.util import run_dbt

        message = run_dbt(["seed"], expect_pass=False).results[0].message
        assert "'seed_id|first_name|email|ip_address|birthday'" in message, message
        assert "set delimiter: '|'" in message, message


class TestSeedWithEmptyDelimiter(SparkExpected, BaseSeedWithEmptyDelimiter):
    pass


class TestSeedParsing(SparkExpected, BaseSeedParsing):
    pass


class TestSimpleSeedWithBOM(SparkExpected, BaseSimpleSeedWithBOM):
    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):  # noqa: ANN001, N802
        SparkExpected.setUp.__wrapped__(self, project)
        copy_file(str(Path(seeds.__file__).parent), "seed_bom.csv",
                  project.project_root / Path("seeds") / "seed_bom.csv", "")


class TestSeedSpecificFormats(SparkExpected, BaseSeedSpecificFormats):
    pass
