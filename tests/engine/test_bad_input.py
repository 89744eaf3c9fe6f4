"""Bad input gets a clear error that names the problem, and leaves the lake as it was."""

from __future__ import annotations

import os

import pytest

from dbt.adapters.ducklake.lake import DataFileError, SchemaMismatchError, UnsupportedTypeError

# Spark-side behaviour: PostgreSQL runs the postgres_too tests (conftest.on_postgres_too).
pytestmark = [pytest.mark.spark, pytest.mark.sqlite_mostly]



def test_dataframe_that_does_not_match_the_table(spark, lake):  # noqa: ANN001
    table = lake.create_table("main.t", spark.range(20).selectExpr("id", "'a' AS name"))
    before = len(lake.snapshots())
    with pytest.raises(SchemaMismatchError, match="missing name; not in the table: nme"):
        table.append(spark.range(3).selectExpr("id", "'b' AS nme"))
    with pytest.raises(SchemaMismatchError, match="column 'name' is int .* varchar"):
        table.append(spark.range(3).selectExpr("id", "1 AS name"))
    with pytest.raises(UnsupportedTypeError, match="column 'i'.*interval"):
        lake.create_table("main.bad", spark.sql("SELECT INTERVAL 1 DAY AS i"))
    assert len(lake.snapshots()) == before


def test_truncated_data_file_is_named(spark, lake, lake_target):  # noqa: ANN001
    table = lake.create_table("main.t", spark.range(50).selectExpr("id", "id * 2 AS v"))
    before = len(lake.snapshots())
    data_file = sorted(os.path.join(d, f) for d, _, fs in os.walk(lake_target.data_path)
                       for f in fs if f.endswith(".parquet"))[0]
    with open(data_file, "r+b") as handle:
        handle.truncate(os.path.getsize(data_file) // 2)
    with pytest.raises(DataFileError, match=os.path.basename(data_file) + ".*truncated"):
        table.read().collect()
    with pytest.raises(DataFileError, match=os.path.basename(data_file)):
        table.delete("id = 3")
    assert len(lake.snapshots()) == before
    os.remove(data_file)
    with pytest.raises(DataFileError, match="missing"):
        table.read()


# Names that break naive SQL building: quotes, spaces, unicode, reserved words, commas (the
# change-token separator), SQL that would run if pasted unquoted, and names longer than
# PostgreSQL's 63-byte identifiers (inlined-data tables have one column per table column).
ODD_SCHEMA = 'sch "q", ü'
ODD_TABLE = "order; DROP TABLE ducklake_snapshot; --"
ODD_COLUMNS = ['we"ird', "with space", "ünï_表", "select", "a,b", "it's",
               'x"); DROP TABLE ducklake_snapshot; --', "long_" + "n" * 115]


def _duck_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.mark.postgres_too
def test_odd_identifiers_round_trip_and_injection_is_inert(spark, lake, lake_target, duck):  # noqa: ANN001
    from oracle import duck_rows, spark_rows
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("id", LongType())] +
                        [StructField(c, StringType()) for c in ODD_COLUMNS])

    def rows(start: int, n: int) -> list[tuple]:
        return [(i, *(f"{c[:6]}-{i}" for c in ODD_COLUMNS)) for i in range(start, start + n)]

    lake.create_schema(ODD_SCHEMA)
    table = lake.create_table((ODD_SCHEMA, ODD_TABLE), spark.createDataFrame(rows(0, 30), schema))
    table.append(spark.createDataFrame(rows(100, 3), schema))  # inlined into the catalog
    name = f"lake.{_duck_ident(ODD_SCHEMA)}.{_duck_ident(ODD_TABLE)}"
    values = ", ".join(["200"] + [f"'duck-{i}'" for i in range(len(ODD_COLUMNS))])
    duck.execute(f"INSERT INTO {name} VALUES ({values})")
    cols = ", ".join(_duck_ident(c) for c in ["id", *ODD_COLUMNS])
    assert table.read().count() == 34
    assert [f.name for f in table.read().schema.fields] == ["id", *ODD_COLUMNS]
    assert spark_rows(table.read()) == duck_rows(duck, f"SELECT {cols} FROM {name}")
    assert lake.tables(ODD_SCHEMA) == [f"{ODD_SCHEMA}.{ODD_TABLE}"]
    tid = table.info().table_id
    assert lake.snapshots()[2].changes_made == \
        f'created_table:"sch ""q"", ü"."{ODD_TABLE}",inserted_into_table:{tid}'
    # the catalog is whole: every snapshot is readable, by us and by DuckDB
    for snap in lake.snapshots()[2:]:
        assert spark_rows(table.read(version=snap.snapshot_id)) == duck_rows(
            duck, f"SELECT {cols} FROM {name} AT (VERSION => {snap.snapshot_id})")
    # names reach the change-token parser of both engines: a concurrent-style commit still
    # checks conflicts against them (DuckDB throws on a token it cannot parse)
    table.delete(F_id_lt(5))
    duck.execute(f"DELETE FROM {name} WHERE id = 200")
    assert table.read().count() == 28


def F_id_lt(n: int) -> str:  # noqa: N802 - reads as SQL
    return f"id < {n}"


@pytest.mark.postgres_too
@pytest.mark.postgres
@pytest.mark.parametrize("lake_target", ["postgres"], indirect=True)
def test_metadata_schema_name_is_quoted(spark, lake_target):  # noqa: ANN001
    import psycopg
    from conftest import PG_DB, PG_HOST, PG_PORT, PG_USER

    from dbt.adapters.ducklake.lake import Catalog

    odd = lake_target.metadata_schema + '"; DROP SCHEMA public; --'
    lake = Catalog.open(lake_target.catalog, lake_target.data_path, metadata_schema=odd)
    try:
        assert lake.latest_snapshot().snapshot_id == 0
    finally:
        lake.close()
    conninfo = f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT schema_name FROM information_schema.schemata").fetchall()]
        assert odd in names and "public" in names
        conn.execute("DROP SCHEMA " + _duck_ident(odd) + " CASCADE")


def test_corrupt_data_file_is_named(spark, lake, lake_target):  # noqa: ANN001
    table = lake.create_table("main.t", spark.range(50).selectExpr("id", "id * 2 AS v"))
    data_file = sorted(os.path.join(d, f) for d, _, fs in os.walk(lake_target.data_path)
                       for f in fs if f.endswith(".parquet"))[0]
    size = os.path.getsize(data_file)
    with open(data_file, "r+b") as handle:  # same size, garbage where the footer was
        handle.seek(size - 40)
        handle.write(b"\xff" * 32)
    # The size is right, so the read starts; Spark's failure names the file it could not read
    with pytest.raises(Exception, match="FAILED_READ_FILE.*" + os.path.basename(data_file)):
        table.read().collect()


def test_a_column_named_with_a_backtick_is_written_and_read(spark, lake, duck):  # noqa: ANN001
    """Every Spark column reference built from a name doubles its backticks: a column named
    a`b is created, inserted into, updated, merged, compacted and read, by us and DuckDB."""
    from oracle import duck_rows, spark_rows

    from dbt.adapters.ducklake.sql.engine import Engine
    from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE SCHEMA s")
    engine.execute("CREATE TABLE s.t AS SELECT id, CAST(id AS STRING) AS `a``b`, "
                   "id * 10 AS `v``` FROM range(20)")
    engine.execute("INSERT INTO s.t SELECT 20 AS id, 'twenty' AS `a``b`, 200 AS `v```")
    engine.execute("INSERT INTO s.t SELECT id, 'many', 0 FROM range(21, 40)")
    engine.execute("UPDATE s.t SET `a``b` = 'updated' WHERE id = 1")
    engine.execute("UPDATE s.t AS x SET x.`v``` = -1 WHERE x.`a``b` = '2'")
    engine.execute("DELETE FROM s.t WHERE `a``b` = '3'")
    engine.execute("MERGE INTO s.t AS t USING (SELECT 4 AS id, 'merged' AS `a``b`, 4 AS `v``` "
                   "UNION ALL SELECT 99, 'new', 99) AS src ON t.id = src.id "
                   "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    engine.execute("MERGE INTO s.t AS t USING (SELECT 5 AS id, 'set' AS `a``b`) AS src "
                   "ON t.id = src.id WHEN MATCHED THEN UPDATE SET t.`a``b` = src.`a``b`, "
                   "`v``` = 55")
    lake.merge_adjacent_files("s", "t")
    df = engine.execute("SELECT * FROM s.t ORDER BY id").df
    assert df.columns == ["id", "a`b", "v`"]
    ours = sorted(spark_rows(df))
    assert ours == sorted(duck_rows(duck, 'SELECT id, "a`b", "v`" FROM lake.s.t'))
    assert ours[:6] == [(0, "0", 0), (1, "updated", 10), (2, "2", -1), (4, "merged", 4),
                        (5, "set", 55), (6, "6", 60)]
    assert ours[-1] == (99, "new", 99) and len(ours) == 40


@pytest.mark.parametrize("escaped_literals", ["false", "true"])
def test_bound_values_are_themselves_whatever_the_parser_settings(spark, lake,
                                                                  escaped_literals):  # noqa: ANN001
    """dbt's ``%s`` bindings are inlined without backslash escapes, whose meaning
    ``spark.sql.parser.escapedStringLiterals`` turns on and off."""
    from dbt.adapters.ducklake.connections import _bind
    from dbt.adapters.ducklake.sql.engine import Engine
    from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

    values = ["it's", "back\\slash", "\\'; DROP TABLE x; --", "tab\tnew\nline", "plain"]
    engine = Engine(spark, lake, ViewRegistry(spark, lake))
    engine.execute("CREATE TABLE main.b (i INT, v STRING)")
    spark.conf.set("spark.sql.parser.escapedStringLiterals", escaped_literals)
    try:
        for i, value in enumerate(values):
            engine.execute(_bind("INSERT INTO main.b VALUES (%s, %s)", [i, value]))
        assert engine.execute(_bind("SELECT %s AS v", [values[2]])).df.first()[0] == values[2]
    finally:
        spark.conf.unset("spark.sql.parser.escapedStringLiterals")
    rows = engine.execute("SELECT i, v FROM main.b ORDER BY i").df.collect()
    assert [r.v for r in rows] == values


def test_bound_numbers_are_themselves(spark):  # noqa: ANN001
    """A bound float is a double, whatever its value (``nan`` and ``inf`` spelled bare are
    column names, ``0.1`` a decimal); integers and decimals keep their exact digits."""
    import math
    from decimal import Decimal

    from dbt.adapters.ducklake.connections import _bind

    values = [float("nan"), float("inf"), -float("inf"), 0.1, 1e20, 2**62, Decimal("12.345")]
    row = spark.sql(_bind("SELECT " + ", ".join(["%s"] * len(values)), values)).first()
    assert math.isnan(row[0]) and list(row)[1:] == values[1:]
    assert [f.dataType.simpleString() for f in spark.sql(
        _bind("SELECT %s, %s", [0.1, float("nan")])).schema.fields] == ["double", "double"]
