"""dbt-tests-adapter's `constraints` group: model contracts and constraints.

Fixtures written for PostgreSQL are overridden with their Spark SQL equivalents, in the
style of dbt-spark's own functional tests.
"""

from __future__ import annotations

import pytest
from conftest import postgres_profile_target
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

pytestmark = [pytest.mark.spark]


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


# -- check, primary_key and unique, enforced: the same rollback tests, broken by those ------
# model_schema_yml's id: not_null, primary_key, check (id > 0), check id >= 1.

_table_negative_id_sql = """
{{ config(materialized = "table") }}
select -1 as id, 'red' as color, '2019-01-01' as date_day
"""

_table_duplicate_id_sql = """
{{ config(materialized = "table") }}
select 1 as id, 'red' as color, '2019-01-01' as date_day
union all
select 1 as id, 'green' as color, '2019-01-02' as date_day
"""

# The incremental model's second run adds id 1 again: the new rows alone are unique, the
# merged result is not.
_incremental_same_id_sql = """
{{ config(materialized = "incremental", on_schema_change='append_new_columns') }}
select 1 as id, 'red' as color, '2019-01-01' as date_day
"""

_incremental_negative_id_sql = """
{{ config(materialized = "incremental", on_schema_change='append_new_columns') }}
select -1 as id, 'red' as color, '2019-01-01' as date_day
"""


class TestTableCheckConstraintRollback(BaseConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"my_model.sql": constraint_fixtures.my_model_sql,
                "constraints_schema.yml": _constraints_yml}

    @pytest.fixture(scope="class")
    def null_model_sql(self):  # noqa: ANN201
        return _table_negative_id_sql

    @pytest.fixture(scope="class")
    def expected_error_messages(self):  # noqa: ANN201
        return ["CHECK constraint ((id > 0))", "id=-1", "Nothing was committed"]


class TestTablePrimaryKeyRollback(TestTableCheckConstraintRollback):
    @pytest.fixture(scope="class")
    def null_model_sql(self):  # noqa: ANN201
        return _table_duplicate_id_sql

    @pytest.fixture(scope="class")
    def expected_error_messages(self):  # noqa: ANN201
        return ["PRIMARY KEY constraint (id) violated", "id=1 (2 rows)"]


class TestIncrementalPrimaryKeyRollback(BaseIncrementalConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"my_model.sql": constraint_fixtures.my_incremental_model_sql,
                "constraints_schema.yml": _constraints_yml}

    @pytest.fixture(scope="class")
    def null_model_sql(self):  # noqa: ANN201
        return _incremental_same_id_sql

    @pytest.fixture(scope="class")
    def expected_error_messages(self):  # noqa: ANN201
        return ["PRIMARY KEY constraint (id) violated", "id=1 (2 rows)"]


class TestIncrementalCheckConstraintRollback(TestIncrementalPrimaryKeyRollback):
    @pytest.fixture(scope="class")
    def null_model_sql(self):  # noqa: ANN201
        return _incremental_negative_id_sql

    @pytest.fixture(scope="class")
    def expected_error_messages(self):  # noqa: ANN201
        return ["CHECK constraint", "(id > 0)", "id=-1"]


@pytest.mark.postgres
class TestIncrementalPrimaryKeyRollbackPostgres(TestIncrementalPrimaryKeyRollback):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory):  # noqa: ANN001, ANN201
        yield from postgres_profile_target(tmp_path_factory, threads=2)
