"""A write's projection (:func:`dbt.adapters.ducklake.spark.write.project`): the compiled
``DuckLakeProjection`` (one py4j call) gives the DataFrame PySpark's Columns give, names,
types, field ids (nested ones too) and values, for :func:`.conform` and the hidden columns."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dbt.adapters.ducklake.lake.models import ColumnInfo
from dbt.adapters.ducklake.spark import jvm_classes
from dbt.adapters.ducklake.spark import write as spark_write

pytestmark = pytest.mark.spark


def column(column_id: int, name: str, type_text: str,
           children: tuple[ColumnInfo, ...] = ()) -> ColumnInfo:
    return ColumnInfo(column_id=column_id, begin_snapshot=1, end_snapshot=None, table_id=1,
                      column_order=column_id, column_name=name, column_type=type_text,
                      initial_default=None, default_value=None, nulls_allowed=True,
                      parent_column=None, children=children)


COLUMNS = [
    column(1, "id", "int64"),
    column(2, "Odd `name`", "varchar"),
    column(3, "amount", "decimal(12,2)"),
    column(4, "s", "struct", (column(5, "a", "int32"), column(6, "b", "varchar"))),
]


def frame(spark):  # noqa: ANN001, ANN201
    return spark.sql("select cast(id as int) as ID, cast(id as string) as `odd ``name```, "
                   "cast(id * 1.5 as decimal(6,2)) as amount, "
                   "named_struct('a', cast(id as smallint), 'b', 'x') as s, "
                   "id as _ducklake_internal_row_id from range(5)")


def described(df):  # noqa: ANN001, ANN201
    return ([(f.name, f.dataType.json(), f.metadata) for f in df.schema.fields],
            sorted(tuple(r) for r in df.collect()))


def test_the_compiled_projection_equals_pysparks(spark, monkeypatch) -> None:  # noqa: ANN001
    df = frame(spark)
    assert jvm_classes.instance(spark, spark_write._PROJECTION_SOURCE,
                                "DuckLakeProjection") is not None, "see the debug log"
    compiled = described(spark_write.conform(df, COLUMNS, row_ids=True))
    monkeypatch.setattr(jvm_classes, "instance", lambda *args: None)
    through_pyspark = described(spark_write.conform(df, COLUMNS, row_ids=True))
    assert compiled == through_pyspark
    fields, rows = compiled
    assert [name for name, _, _ in fields] == \
        ["id", "Odd `name`", "amount", "s", "_ducklake_internal_row_id"]
    assert [meta.get("parquet.field.id") for _, _, meta in fields][:4] == [1, 2, 3, 4]
    assert '"parquet.field.id":5' in fields[3][1]  # the struct's children keep theirs
    assert rows[1] == (1, "1", Decimal("1.50"), (1, "x"), 1)
