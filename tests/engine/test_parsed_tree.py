"""The parsed-tree class compiled into Spark's JVM writes the tree a py4j walk of the same plan
finds, node for node; it is compiled once and then loaded from its cached class file."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.spark import jvm_classes
from dbt.adapters.ducklake.sql import parsed_tree as pt
from dbt.adapters.ducklake.sql.plans import relation_names, writing_node

pytestmark = pytest.mark.spark

STATEMENTS = [
    "SELECT 1",
    "SELECT * FROM s.t",
    "WITH c AS (SELECT * FROM s.t), d AS (SELECT * FROM c) SELECT * FROM d JOIN s.u u "
    "ON d.id = u.id",
    "SELECT * FROM s.t x WHERE id IN (SELECT id FROM s.u) AND EXISTS "
    "(SELECT 1 FROM `a\tb`.`c\\d` WHERE a = x.a) AND b = (SELECT max(b) FROM s.v)",
    "SELECT * FROM (SELECT * FROM s.t) AS q(a, b) UNION ALL SELECT * FROM s.u",
    "SELECT * FROM cat.s.t, `odd name`, s.t VERSION AS OF 3",
    "INSERT INTO s.t SELECT * FROM s.u",
    "INSERT OVERWRITE DIRECTORY '/tmp/x' SELECT 1",
    "CREATE TABLE s.t AS WITH c AS (SELECT 1 AS a) SELECT * FROM c",
    "CREATE OR REPLACE TEMPORARY VIEW v AS SELECT * FROM s.t",
    "CREATE VIEW s.v AS SELECT * FROM s.t",
    "MERGE INTO s.t t USING (SELECT * FROM s.u) u ON t.id = u.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "DELETE FROM s.t WHERE id IN (SELECT id FROM s.u)",
    "SET spark.sql.shuffle.partitions = 2",
    "CACHE TABLE c AS SELECT * FROM s.t",
    "EXPLAIN SELECT * FROM s.t",
]


@pytest.mark.parametrize("sql", STATEMENTS)
def test_the_class_writes_the_tree_py4j_walks(spark, sql: str) -> None:  # noqa: ANN001
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
    writer = pt._writer(spark)
    assert writer is not None, "the class did not compile or load: see the debug log"
    written = pt.decode(str(writer.write(plan)))
    walked = pt._walked(spark, plan)
    assert written == walked
    assert relation_names(written) == relation_names(walked)
    assert writing_node(written) == writing_node(walked)


def test_the_class_is_compiled_once_then_loaded_from_its_file(spark, tmp_path,  # noqa: ANN001
                                                                monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(jvm_classes, "_instances", {})
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan("SELECT * FROM s.t")
    expected = pt._walked(spark, plan)
    assert pt.parsed_tree(spark, plan) == expected
    (cached,) = tmp_path.glob("dbt-ducklake/DuckLakeParsedTree-*/DuckLakeParsedTree.class")
    monkeypatch.setattr(jvm_classes, "_instances", {})
    # a class file that is there is loaded, not compiled again
    monkeypatch.setattr(jvm_classes, "java_class", _no_compiler(jvm_classes.java_class))
    assert pt.parsed_tree(spark, plan) == expected
    assert jvm_classes._instances and None not in jvm_classes._instances.values()
    assert cached.is_file()


def _no_compiler(java_class):  # noqa: ANN001, ANN202
    def without(spark, name: str):  # noqa: ANN001, ANN202
        assert "janino" not in name, "compiled again although the class file is cached"
        return java_class(spark, name)
    return without


def test_without_the_class_the_tree_is_walked(spark, monkeypatch) -> None:  # noqa: ANN001
    client = spark.sparkContext._gateway._gateway_client
    monkeypatch.setitem(jvm_classes._instances, (id(client), pt.CLASS_NAME), None)
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(STATEMENTS[2])
    named = relation_names(pt.parsed_tree(spark, plan))
    assert [name for _, _, name in named.qualified] == [("s", "u"), ("s", "t")]
    assert named.ctes == {"c", "d"}
