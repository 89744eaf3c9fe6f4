"""Statements see the session's SQL settings from any thread (dbt runs models in its own
threads): Spark's parser reads them from the thread's active session, which a py4j thread
does not have until the engine sets it."""

from __future__ import annotations

import threading

import pytest

from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

pytestmark = pytest.mark.spark

KEY = "spark.ducklake.test.sessionSetting"


def in_new_thread(work):  # noqa: ANN001, ANN201
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = work()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out["value"]


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_settings_apply_to_statements_of_other_threads(spark, lake) -> None:  # noqa: ANN001
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set(KEY, "seen")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        row = in_new_thread(lambda: engine.execute(
            f"select '${{{KEY}}}' as v, cast('x' as int) as lenient").df.collect()[0])
        assert (row["v"], row["lenient"]) == ("seen", None)
        # and a CTAS in another thread writes what the settings say
        in_new_thread(lambda: engine.execute(
            f"create table main.u as select '${{{KEY}}}' as v, cast('x' as int) as lenient"))
        assert tuple(engine.execute("select * from main.u").df.collect()[0]) == ("seen", None)
    finally:
        spark.conf.unset(KEY)
        spark.conf.set("spark.sql.ansi.enabled", ansi)


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_a_variable_beside_a_lake_table_name(spark, lake) -> None:  # noqa: ANN001
    """``${var}`` changes the statement's length before the lake table's name, which is
    rewritten to its temp view at the position the parse gave: both must index one text."""
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("create table main.t as select id from range(3)")
    spark.conf.set(KEY, "a much longer value than the name of the variable")
    try:
        rows = engine.execute(f"select '${{{KEY}}}' as v, id from main.t order by id").df
        assert [tuple(r) for r in rows.collect()] == [
            ("a much longer value than the name of the variable", i) for i in range(3)]
    finally:
        spark.conf.unset(KEY)
