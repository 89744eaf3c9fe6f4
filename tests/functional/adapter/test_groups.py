"""dbt's own adapter test suite, remaining groups (incremental models and snapshots excluded).

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.aliases import fixtures as alias_fixtures
from dbt.tests.adapter.aliases.test_aliases import (
    BaseAliasErrors,
    BaseAliases,
    BaseSameAliasDifferentDatabases,
    BaseSameAliasDifferentSchemas,
)
from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingUppercaseModel,
    BaseNoPopulateCache,
)
from dbt.tests.adapter.column_types.test_column_types import BaseColumnTypes
from dbt.tests.adapter.concurrency.test_concurrency import BaseConcurrency
from dbt.tests.adapter.constraints import fixtures as constraint_fixtures
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintQuotedColumn,
    BaseConstraintsRollback,
    BaseConstraintsRuntimeDdlEnforcement,
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
    BaseIncrementalConstraintsRuntimeDdlEnforcement,
    BaseIncrementalContractSqlHeader,
    BaseIncrementalForeignKeyConstraint,
    BaseModelConstraintsRuntimeEnforcement,
    BaseTableConstraintsColumnsEqual,
    BaseTableContractSqlHeader,
    BaseViewConstraintsColumnsEqual,
)
from dbt.tests.adapter.dbt_debug.test_dbt_debug import (
    BaseDebugInvalidProjectPostgres,
    BaseDebugPostgres,
    BaseDebugProfileVariable,
)
from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)
from dbt.tests.adapter.empty.test_empty import (
    BaseTestEmpty,
    BaseTestEmptyInlineSourceRef,
    BaseTestEmptySeedFlag,
)
from dbt.tests.adapter.ephemeral.test_ephemeral import (
    BaseEphemeralErrorHandling,
    BaseEphemeralMulti,
    BaseEphemeralNested,
)
from dbt.tests.adapter.hooks import test_model_hooks as model_hooks
from dbt.tests.adapter.hooks.test_model_hooks import (
    BaseDuplicateHooksInConfigs,
    BaseHookRefs,
    BaseHooksRefsOnSeeds,
    BasePrePostModelHooks,
    BasePrePostModelHooksInConfig,
    BasePrePostModelHooksInConfigKwargs,
    BasePrePostModelHooksInConfigWithCount,
    BasePrePostModelHooksOnSeeds,
    BasePrePostModelHooksOnSeedsPlusPrefixed,
    BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace,
)
from dbt.tests.adapter.hooks.test_run_hooks import BaseAfterRunHooks, BasePrePostRunHooks
from dbt.tests.adapter.persist_docs.test_persist_docs import (
    BasePersistDocs,
    BasePersistDocsAllColumnsMissing,
    BasePersistDocsColumnMissing,
    BasePersistDocsCommentOnQuotedColumn,
    BasePersistDocsQuotedColumnCaseSensitive,
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch,
)
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonEmptyTests,
    BasePythonIncrementalTests,
    BasePythonMetaGetTests,
    BasePythonModelTests,
    BasePythonSampleTests,
)
from dbt.tests.adapter.python_model.test_spark import BasePySparkTests
from dbt.tests.adapter.query_comment.test_query_comment import (
    BaseEmptyQueryComments,
    BaseMacroArgsQueryComments,
    BaseMacroInvalidQueryComments,
    BaseMacroQueryComments,
    BaseNullQueryComments,
    BaseQueryComments,
)
from dbt.tests.adapter.relations.test_changing_relation_type import (
    BaseChangeRelationTypeValidator,
)
from dbt.tests.adapter.relations.test_dropping_schema_named import BaseDropSchemaNamed
from dbt.tests.adapter.store_test_failures_tests import basic as stf_basic
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import (
    BaseStoreTestFailures,
    BaseStoreTestFailuresLimit,
)
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.adapter.unit_testing.test_quoted_reserved_word_column_names import (
    BaseUnitTestQuotedReservedWordColumnNames,
)
from dbt.tests.adapter.unit_testing.test_quoted_reserved_word_column_names import (
    my_model_sql as reserved_word_my_model_sql,
)
from dbt.tests.adapter.unit_testing.test_quoted_reserved_word_column_names import (
    test_my_model_csv_fixtures_yml as reserved_word_yml,
)
from dbt.tests.adapter.unit_testing.test_types import (
    BaseUnitTestingTypes,
    BaseUnitTestingVarcharFixtureNoTruncation,
)
from dbt.tests.util import run_dbt

pytestmark = [pytest.mark.spark]



# ====================================================================== persist_docs
class TestPersistDocs(BasePersistDocs):
    def test_has_comments_pglike(self, project):  # noqa: ANN001, ANN201
        # DuckLake keeps column tags for tables only: a view has no column ids to tag (DuckDB
        # refuses COMMENT ON COLUMN for a DuckLake view too), so view column comments stay empty.
        import json

        run_dbt(["docs", "generate"])
        with open("target/catalog.json") as fp:
            catalog_data = json.load(fp)
        assert len(catalog_data["nodes"]) == 4
        self._assert_has_table_comments(catalog_data["nodes"]["model.test.table_model"])
        self._assert_has_view_comments(catalog_data["nodes"]["model.test.view_model"],
                                       has_node_comments=True, has_column_comments=False)
        self._assert_has_view_comments(catalog_data["nodes"]["model.test.no_docs_model"],
                                       False, False)


class TestPersistDocsColumnMissing(BasePersistDocsColumnMissing):
    pass


class TestPersistDocsAllColumnsMissing(BasePersistDocsAllColumnsMissing):
    pass


class TestPersistDocsQuotedColumnCaseSensitive(BasePersistDocsQuotedColumnCaseSensitive):
    pass


class TestPersistDocsQuotedDescriptionNotAppliedOnMismatch(
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch
):
    pass


class TestPersistDocsCommentOnQuotedColumn(BasePersistDocsCommentOnQuotedColumn):
    pass


# ====================================================================== python_model
class TestPythonModel(BasePythonModelTests):
    pass


class TestPythonIncremental(BasePythonIncrementalTests):
    pass


class TestPythonMetaGet(BasePythonMetaGetTests):
    pass


class TestPythonEmpty(BasePythonEmptyTests):
    pass


class TestPythonSample(BasePythonSampleTests):
    pass


def _pandas_on_spark_unavailable() -> str | None:
    try:
        import pyspark.pandas  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return f"pyspark.pandas cannot be imported in this environment: {exc}"
    return None


class TestPySpark(BasePySparkTests):
    def test_different_dataframes(self, project):  # noqa: ANN001, ANN201
        # databricks.koalas was merged into PySpark as pyspark.pandas and is not installable
        # for Spark 4; dbt-spark excludes that model the same way.
        results = run_dbt(["run", "--exclude", "koalas_df", "pandas_on_spark_df"])
        assert len(results) == 2

    def test_pandas_on_spark_dataframe(self, project):  # noqa: ANN001, ANN201
        reason = _pandas_on_spark_unavailable()
        if reason:
            pytest.skip(reason)
        results = run_dbt(["run", "--select", "pandas_on_spark_df"])
        assert len(results) == 1


# ====================================================================== aliases
_CAST_SQL = alias_fixtures.MACROS__CAST_SQL + """
{% macro ducklake__string_literal(s) %}
    cast('{{ s }}' as string)
{% endmacro %}
"""


class _SparkAliasMacros:
    @pytest.fixture(scope="class")
    def macros(self):  # noqa: ANN201
        return {"cast.sql": _CAST_SQL, "expect_value.sql": alias_fixtures.MACROS__EXPECT_VALUE_SQL}


class TestAliases(_SparkAliasMacros, BaseAliases):
    pass


class TestAliasErrors(_SparkAliasMacros, BaseAliasErrors):
    pass


class TestSameAliasDifferentSchemas(_SparkAliasMacros, BaseSameAliasDifferentSchemas):
    pass


@pytest.mark.skip(reason="a DuckLake lake is a single database: relations carry no database "
                         "part, so two databases cannot be targeted")
class TestSameAliasDifferentDatabases(_SparkAliasMacros, BaseSameAliasDifferentDatabases):
    pass


# ====================================================================== caching
class _NoDatabaseCaching:
    """The base check lower()s relation.database; a lake is one database and relations carry
    none (None), so compare the parts as strings, otherwise unchanged."""

    def run_and_inspect_cache(self, project, run_args=None):  # noqa: ANN001, ANN201
        run_dbt(run_args)
        adapter = project.adapter
        assert len(adapter.cache.relations) == 1
        relation = list(adapter.cache.relations).pop()
        assert relation.schema == project.test_schema
        assert relation.schema == project.test_schema.lower()

        run_dbt(run_args)
        adapter = project.adapter
        assert len(adapter.cache.relations) == 1
        second_relation = list(adapter.cache.relations).pop()
        for key in ["database", "schema", "identifier"]:
            assert str(getattr(relation, key) or "").lower() == \
                str(getattr(second_relation, key) or "").lower()


class TestCachingLowercaseModel(_NoDatabaseCaching, BaseCachingLowercaseModel):
    pass


class TestCachingUppercaseModel(_NoDatabaseCaching, BaseCachingUppercaseModel):
    pass


class TestCachingSelectedSchemaOnly(_NoDatabaseCaching, BaseCachingSelectedSchemaOnly):
    pass


class TestNoPopulateCache(_NoDatabaseCaching, BaseNoPopulateCache):
    pass


# ====================================================================== dbt_show
class TestShowLimit(BaseShowLimit):
    pass


class TestShowSqlHeader(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    DATABASE_ERROR_MESSAGE = "Syntax error at or near 'limit'"

    def test_double_limit_throws_syntax_error(self, project):  # noqa: ANN001, ANN201
        # The base asserts on str(ExceptionInfo), whose repr is cut to 240 characters and
        # loses Spark's message; check the exception's own text instead.
        from dbt_common.exceptions import DbtRuntimeError

        with pytest.raises(DbtRuntimeError) as e:
            run_dbt(["show", "--limit", "1", "--inline", "select 1 limit 1"])
        assert "PARSE_SYNTAX_ERROR" in str(e.value)
        assert self.DATABASE_ERROR_MESSAGE in str(e.value)


# ====================================================================== hooks
# The base classes assume PostgreSQL: a data/*.sql file with TEXT columns, "quoted" column
# names, `vacuum`, and a postgres target (dbname "dbt", user "root"). Same checks, our target.
_HOOK_COLUMNS = """(
    test_state string, target_dbname string, target_host string, target_name string,
    target_schema string, target_type string, target_user string, target_pass string,
    target_threads int, run_started_at string, invocation_id string, thread_id string)"""
_HOOK_FIELDS = ["test_state", "target_dbname", "target_host", "target_name", "target_schema",
                "target_threads", "target_type", "target_user", "target_pass",
                "run_started_at", "invocation_id", "thread_id"]
_TOUCH_HOOK = {"sql": "select count(*) from {{ this.schema }}.on_model_hook",
               "transaction": False}


def _check_ctx(ctx, state, project):  # noqa: ANN001, ANN202
    assert ctx["test_state"] == state
    assert ctx["target_name"] == "default"
    assert ctx["target_schema"] == project.test_schema
    assert ctx["target_threads"] == 4
    assert ctx["target_type"] == "ducklake"
    assert ctx["target_pass"] == ""
    assert ctx["run_started_at"], "run_started_at was not set"
    assert ctx["invocation_id"], "invocation_id was not set"
    assert ctx["thread_id"].startswith("Thread-") or ctx["thread_id"] == "MainThread"


class _SparkModelHooks:
    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):  # noqa: ANN001, ANN201
        project.run_sql(f"drop table if exists {project.test_schema}.on_model_hook")
        project.run_sql(f"create table {project.test_schema}.on_model_hook {_HOOK_COLUMNS}")

    def get_ctx_vars(self, state, count, project):  # noqa: ANN001, ANN201
        fields = ", ".join(f"`{f}`" for f in _HOOK_FIELDS)
        vals = project.run_sql(f"select {fields} from {project.test_schema}.on_model_hook "
                               f"where test_state = '{state}'", fetch="all")
        assert len(vals) == count, f"expected {count} {state} rows in hooks table: {vals}"
        return [dict(zip(_HOOK_FIELDS, val)) for val in vals]

    def check_hooks(self, state, project, host, count=1):  # noqa: ANN001, ANN201
        for ctx in self.get_ctx_vars(state, count, project):
            _check_ctx(ctx, state, project)


_PROJECT_HOOKS = {
    "pre-hook": [model_hooks.MODEL_PRE_HOOK, _TOUCH_HOOK],
    "post-hook": [_TOUCH_HOOK, model_hooks.MODEL_POST_HOOK],
}


class TestPrePostModelHooks(_SparkModelHooks, BasePrePostModelHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"test": _PROJECT_HOOKS}}


class TestPrePostModelHooksUnderscores(_SparkModelHooks, BasePrePostModelHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"test": {"pre_hook": _PROJECT_HOOKS["pre-hook"],
                                    "post_hook": _PROJECT_HOOKS["post-hook"]}}}


class TestHookRefs(_SparkModelHooks, BaseHookRefs):
    pass


class TestPrePostModelHooksOnSeeds(BasePrePostModelHooksOnSeeds):
    pass


class TestHooksRefsOnSeeds(BaseHooksRefsOnSeeds):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixed(BasePrePostModelHooksOnSeedsPlusPrefixed):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixedWhitespace(
    BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace
):
    pass


class TestPrePostModelHooksInConfig(_SparkModelHooks, BasePrePostModelHooksInConfig):
    pass


class TestPrePostModelHooksInConfigWithCount(
    _SparkModelHooks, BasePrePostModelHooksInConfigWithCount
):
    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {"models": {"test": _PROJECT_HOOKS}}


class TestPrePostModelHooksInConfigKwargs(_SparkModelHooks, BasePrePostModelHooksInConfigKwargs):
    pass


class TestDuplicateHooksInConfigs(BaseDuplicateHooksInConfigs):
    pass


class TestPrePostRunHooks(BasePrePostRunHooks):
    @pytest.fixture(scope="function")
    def setUp(self, project):  # noqa: ANN001, ANN201
        import os

        project.run_sql(f"drop table if exists {project.test_schema}.on_run_hook")
        project.run_sql(f"create table {project.test_schema}.on_run_hook {_HOOK_COLUMNS}")
        project.run_sql(f"drop table if exists {project.test_schema}.schemas")
        project.run_sql(f"drop table if exists {project.test_schema}.db_schemas")
        os.environ["TERM_TEST"] = "TESTING"

    @pytest.fixture(scope="class")
    def project_config_update(self):  # noqa: ANN201
        return {
            "on-run-start": [
                "{{ custom_run_hook('start', target, run_started_at, invocation_id) }}",
                "create table {{ target.schema }}.start_hook_order_test ( id int )",
                "drop table {{ target.schema }}.start_hook_order_test",
                "{{ log(env_var('TERM_TEST'), info=True) }}",
            ],
            "on-run-end": [
                "{{ custom_run_hook('end', target, run_started_at, invocation_id) }}",
                "create table {{ target.schema }}.end_hook_order_test ( id int )",
                "drop table {{ target.schema }}.end_hook_order_test",
                "create table {{ target.schema }}.schemas ( schema string )",
                "insert into {{ target.schema }}.schemas (schema) values "
                "{% for schema in schemas %}( '{{ schema }}' )"
                "{% if not loop.last %},{% endif %}{% endfor %}",
                "create table {{ target.schema }}.db_schemas ( db string, schema string )",
                "insert into {{ target.schema }}.db_schemas (db, schema) values "
                "{% for db, schema in database_schemas %}('{{ db }}', '{{ schema }}' )"
                "{% if not loop.last %},{% endif %}{% endfor %}",
            ],
            "seeds": {"quote_columns": False},
        }

    def get_ctx_vars(self, state, project):  # noqa: ANN001, ANN201
        fields = ", ".join(f"`{f}`" for f in _HOOK_FIELDS)
        vals = project.run_sql(f"select {fields} from {project.test_schema}.on_run_hook "
                               f"where test_state = '{state}'", fetch="all")
        assert len(vals) == 1, f"expected one {state} row in on_run_hook: {vals}"
        return dict(zip(_HOOK_FIELDS, vals[0]))

    def check_hooks(self, state, project, host):  # noqa: ANN001, ANN201
        _check_ctx(self.get_ctx_vars(state, project), state, project)

    def assert_used_schemas(self, project):  # noqa: ANN001, ANN201
        results = project.run_sql(f"select * from {project.test_schema}.schemas", fetch="all")
        assert [r[0] for r in results] == [project.test_schema]
        results = project.run_sql(f"select * from {project.test_schema}.db_schemas",
                                  fetch="all")
        assert len(results) == 1
        # the lake is the only database: relations carry none
        assert results[0][0] in (project.database, "None", "")
        assert results[0][1] == project.test_schema


class TestAfterRunHooks(BaseAfterRunHooks):
    pass


# ====================================================================== query_comment
class TestQueryComments(BaseQueryComments):
    pass


class TestMacroQueryComments(BaseMacroQueryComments):
    pass


class TestMacroArgsQueryComments(BaseMacroArgsQueryComments):
    pass


class TestMacroInvalidQueryComments(BaseMacroInvalidQueryComments):
    pass


class TestNullQueryComments(BaseNullQueryComments):
    pass


class TestEmptyQueryComments(BaseEmptyQueryComments):
    pass


# ====================================================================== relations
class TestChangeRelationTypes(BaseChangeRelationTypeValidator):
    def test_changing_materialization_changes_relation_type(self, project):  # noqa: ANN001, ANN201
        # The base test also switches to `incremental`; incremental models are a separate
        # feature, so only the view <-> table switches are exercised here.
        self._run_and_check_materialization("view")
        self._run_and_check_materialization("table")
        self._run_and_check_materialization("view")
        self._run_and_check_materialization("table", extra_args=["--full-refresh"])


class TestDropSchemaNamed(BaseDropSchemaNamed):
    pass


# ====================================================================== store_test_failures
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


# ====================================================================== unit_testing
class TestUnitTestingTypes(BaseUnitTestingTypes):
    @pytest.fixture
    def data_types(self):  # noqa: ANN201
        # sql_value, yaml_value (dbt-spark's list)
        return [
            ["1", "1"],
            ["2.0", "2.0"],
            ["'12345'", "12345"],
            ["'string'", "string"],
            ["true", "true"],
            ["date '2011-11-11'", "2011-11-11"],
            ["timestamp '2013-11-03 00:00:00-0'", "2013-11-03 00:00:00-0"],
            ["cast(1 as decimal(10, 2))", "1"],
            ["array(1, 2, 3)", "'array(1, 2, 3)'"],
            ["map('10', 't', '15', 'f', '20', NULL)",
             """'map("10", "t", "15", "f", "20", NULL)'"""],
            ['named_struct("a", 1, "b", 2, "c", 3)',
             """'named_struct("a", 1, "b", 2, "c", 3)'"""],
        ]


class TestUnitTestingVarcharFixtureNoTruncation(BaseUnitTestingVarcharFixtureNoTruncation):
    pass


class TestUnitTestCaseInsensitivity(BaseUnitTestCaseInsensivity):
    pass


class TestUnitTestInvalidInput(BaseUnitTestInvalidInput):
    pass


class TestUnitTestQuotedReservedWordColumnNames(BaseUnitTestQuotedReservedWordColumnNames):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model.sql": reserved_word_my_model_sql,
            "my_upstream_model.sql": "select 1 as `GROUP`",
            "unit_tests.yml": reserved_word_yml,
        }


# ====================================================================== concurrency
class TestConcurrency(BaseConcurrency):
    pass


# ====================================================================== constraints
_constraints_yml = constraint_fixtures.model_schema_yml.replace("text", "string")
_fk_constraints_yml = constraint_fixtures.model_fk_constraint_schema_yml.replace("text", "string")
_model_constraints_yml = constraint_fixtures.constrained_model_schema_yml.replace(
    "text", "string")

# Contracted tables are built with CREATE OR REPLACE TABLE ... AS, the select reordered to
# the contract's column order; NOT NULL is then applied with ALTER TABLE (as in dbt-spark).
_expected_ctas = """
create or replace table <model_identifier>
    as
select
  id,
  color,
  date_day
from
(
    -- depends_on: <foreign_key_model_identifier>
    select
    'blue' as color,
    1 as id,
    '2019-01-01' as date_day ) as model_subq
"""


class _SparkTypes:
    @pytest.fixture
    def string_type(self):  # noqa: ANN201
        return "string"

    @pytest.fixture
    def int_type(self):  # noqa: ANN201
        return "int"

    @pytest.fixture
    def data_types(self):  # noqa: ANN201
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", "int", "int"],
            ["'1'", "string", "string"],
            ["true", "boolean", "boolean"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2019-01-01 01:02:03' as timestamp)", "timestamp", "timestamp"],
            ["array('a','b','c')", "array<string>", "array<string>"],
            ["array(1,2,3)", "array<int>", "array<int>"],
            ["cast(1.0 as decimal(4, 2))", "decimal(4,2)", "decimal(4,2)"],
        ]


class TestTableConstraintsColumnsEqual(_SparkTypes, BaseTableConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model_wrong_order.sql": constraint_fixtures.my_model_wrong_order_sql,
            "my_model_wrong_name.sql": constraint_fixtures.my_model_wrong_name_sql,
            "constraints_schema.yml": _constraints_yml,
        }


class TestViewConstraintsColumnsEqual(_SparkTypes, BaseViewConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model_wrong_order.sql": constraint_fixtures.my_model_view_wrong_order_sql,
            "my_model_wrong_name.sql": constraint_fixtures.my_model_view_wrong_name_sql,
            "constraints_schema.yml": _constraints_yml,
        }


class TestIncrementalConstraintsColumnsEqual(_SparkTypes, BaseIncrementalConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model_wrong_order.sql": constraint_fixtures.my_model_incremental_wrong_order_sql,
            "my_model_wrong_name.sql": constraint_fixtures.my_model_incremental_wrong_name_sql,
            "constraints_schema.yml": _constraints_yml,
        }


class TestTableConstraintsRuntimeDdlEnforcement(BaseConstraintsRuntimeDdlEnforcement):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model.sql": constraint_fixtures.my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": constraint_fixtures.foreign_key_model_sql,
            "constraints_schema.yml": _fk_constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):  # noqa: ANN201
        return _expected_ctas


class TestIncrementalConstraintsRuntimeDdlEnforcement(
    BaseIncrementalConstraintsRuntimeDdlEnforcement
):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model.sql":
                constraint_fixtures.my_model_incremental_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": constraint_fixtures.foreign_key_model_sql,
            "constraints_schema.yml": _fk_constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):  # noqa: ANN201
        return _expected_ctas


class TestTableConstraintsRollback(BaseConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model.sql": constraint_fixtures.my_model_sql,
            "constraints_schema.yml": _constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_error_messages(self):  # noqa: ANN201
        return ["NOT NULL", "id"]


class TestIncrementalConstraintsRollback(BaseIncrementalConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model.sql": constraint_fixtures.my_incremental_model_sql,
            "constraints_schema.yml": _constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_error_messages(self):  # noqa: ANN201
        return ["NOT NULL", "id"]


class TestTableContractSqlHeader(BaseTableContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            # The PostgreSQL header sets the session time zone; the SparkSession is shared by
            # every test in this process, so the header defines a temp view instead.
            "my_model_contract_sql_header.sql": """
{{ config(materialized = "table") }}
{% call set_sql_header(config) %}
create or replace temporary view header_tz as select 'Asia/Kolkata' as tz;
{%- endcall %}
select tz as column_name from header_tz
""",
            "constraints_schema.yml":
                constraint_fixtures.model_contract_header_schema_yml.replace("text", "string"),
        }


class TestIncrementalContractSqlHeader(BaseIncrementalContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model_contract_sql_header.sql": """
{{ config(materialized = "incremental", on_schema_change="append_new_columns") }}
{% call set_sql_header(config) %}
create or replace temporary view header_tz as select 'Asia/Kolkata' as tz;
{%- endcall %}
select tz as column_name from header_tz
""",
            "constraints_schema.yml":
                constraint_fixtures.model_contract_header_schema_yml.replace("text", "string"),
        }


class TestModelConstraintsRuntimeEnforcement(BaseModelConstraintsRuntimeEnforcement):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model.sql": constraint_fixtures.my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": constraint_fixtures.foreign_key_model_sql,
            "constraints_schema.yml": _model_constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):  # noqa: ANN201
        return _expected_ctas


class TestConstraintQuotedColumn(BaseConstraintQuotedColumn):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {
            "my_model.sql": constraint_fixtures.my_model_with_quoted_column_name_sql,
            "constraints_schema.yml": constraint_fixtures.model_quoted_column_schema_yml.replace(
                "text", "string").replace('"from"', "`from`"),
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):  # noqa: ANN201
        return """
create or replace table <model_identifier>
    as
select
  id,
  `from`,
  date_day
from
(
    select
    'blue' as `from`,
    1 as id,
    '2019-01-01' as date_day ) as model_subq
"""


class TestIncrementalForeignKeyConstraint(BaseIncrementalForeignKeyConstraint):
    pass


# ====================================================================== empty
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


# ====================================================================== ephemeral
def _run_sql_text(path):  # noqa: ANN001, ANN202
    import re

    with open(path) as fp:
        text = re.sub(r"\d+", "", fp.read())
    return "".join(text.split())


class TestEphemeralMulti(BaseEphemeralMulti):
    def test_ephemeral_multi(self, project):  # noqa: ANN001, ANN201
        # Same checks; the expected DDL is ours (a DuckLake view replaced in place, relations
        # rendered as one `schema.name` identifier) instead of PostgreSQL's.
        from dbt.tests.util import check_relations_equal

        run_dbt(["seed"])
        results = run_dbt(["run"])
        assert len(results) == 3
        check_relations_equal(project.adapter, ["seed", "dependent"])
        check_relations_equal(project.adapter, ["seed", "double_dependent"])
        check_relations_equal(project.adapter, ["seed", "super_dependent"])
        expected_sql = (
            "create or replace view `test_test_groups.double_dependent` as "
            "with __dbt__cte__base as ("
            "select * from test_test_groups.seed"
            "),  __dbt__cte__base_copy as ("
            "select * from `__dbt__cte__base`"
            ")-- base_copy just pulls from base. Make sure the listed"
            "-- graph of CTEs all share the same dbt_cte__base cte"
            "select * from `__dbt__cte__base` where gender = 'Male'"
            "union all"
            "select * from `__dbt__cte__base_copy` where gender = 'Female'"
        )
        assert _run_sql_text("./target/run/test/models/double_dependent.sql") == \
            "".join(expected_sql.split())


class TestEphemeralNested(BaseEphemeralNested):
    def test_ephemeral_nested(self, project):  # noqa: ANN001, ANN201
        results = run_dbt(["run"])
        assert len(results) == 2
        expected_sql = (
            "create or replace view `test_test_groups.root_view` as "
            "with __dbt__cte__ephemeral_level_two as ("
            "select * from `test_test_groups.source_table`"
            "),  __dbt__cte__ephemeral as ("
            "select * from `__dbt__cte__ephemeral_level_two`"
            ")select * from `__dbt__cte__ephemeral`"
        )
        assert _run_sql_text("./target/run/test/models/root_view.sql") == \
            "".join(expected_sql.split())


class TestEphemeralErrorHandling(BaseEphemeralErrorHandling):
    pass


# ====================================================================== dbt_debug
class _DebugTargets:
    @pytest.fixture(scope="class")
    def profiles_config_update(self, dbt_profile_target, unique_schema):  # noqa: ANN001, ANN201
        # Alternative targets the PostgreSQL suite defines, in ducklake terms: an invalid
        # profile, a lake that cannot be opened, and an empty output.
        bad = dict(dbt_profile_target, schema=unique_schema)
        return {"test": {"outputs": {
            "default": dict(dbt_profile_target, schema=unique_schema),
            "nopass": dict(bad, unknown_key="x"),
            "wronguser": dict(bad, catalog="postgres:host=127.0.0.1 port=1 dbname=nowhere"),
            "none_target": None,
        }, "target": "default"}}


class TestDebug(_DebugTargets, BaseDebugPostgres):
    pass


class TestDebugProfileVariable(_DebugTargets, BaseDebugProfileVariable, BaseDebugPostgres):
    pass


class TestDebugInvalidProject(BaseDebugInvalidProjectPostgres):
    pass


# ====================================================================== column_types
class TestColumnTypes(BaseColumnTypes):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        from dbt.tests.adapter.column_types import fixtures

        return {
            "model.sql": """
select
    cast(1 as smallint) as smallint_col,
    cast(2 as int) as int_col,
    cast(3 as bigint) as bigint_col,
    cast(4.0 as float) as real_col,
    cast(5.0 as double) as double_col,
    cast(6.0 as decimal(10, 2)) as numeric_col,
    cast('7' as string) as text_col,
    cast('8' as varchar(20)) as varchar_col
""",
            "schema.yml": fixtures.schema_yml,
        }

    def test_run_and_test(self, project):  # noqa: ANN001, ANN201
        self.run_and_test()
