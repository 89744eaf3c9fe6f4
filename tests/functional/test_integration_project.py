"""End to end: the ``integration_project`` shop built by dbt, then read back by DuckDB.

One module-scoped fixture copies the project to a temporary directory and runs ``dbt build``
in-process on a fresh embedded lake (the profile's defaults: ``lake/catalog.sqlite`` and
``lake/data/`` under the project). It records what the first build left behind, appends a new
day of orders to the seeds (what a shop's next export looks like) and runs ``dbt build`` again,
which rebuilds every table in place. The tests then check the lake with DuckDB's ``ducklake``
extension as the independent reader:

- every table reads the same in DuckDB and in our Spark reader, now and at the first build;
- DuckDB runs every view (stored as DuckDB SQL) and gets the rows ``dbt show`` gives;
- ``persist_docs`` descriptions are DuckLake comments DuckDB shows;
- every snapshot carries dbt's commit info, naming the node that made it;
- the second build kept each table's identity, and time travel returns the first build's rows;
- between the builds an order also changes status: the incremental merge on a composite key
  re-merges the recent days (DuckDB's table_changes shows update pre/post images), the
  snapshot of the orders seed records the change as a new version, and a microbatch model
  backfills its year with ``--event-time-start/--event-time-end``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import duckdb_connect
from oracle import duck_rows, spark_rows

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.dbt_artifacts]

PROJECT = Path(__file__).resolve().parents[2] / "integration_project"
PACKAGE = "ducklake_shop"
MARTS = {  # table name -> materialization language
    "customer_lifetime_value": "sql",
    "daily_revenue": "sql",
    "product_performance": "sql",
    "customer_segments": "python",
}
SEEDS = {"customers", "products", "orders", "order_items"}
# merge on a composite key; microbatch; a change-driven append of daily_product_sales' feed
INCREMENTAL = {"daily_product_sales", "order_events", "sales_corrections"}
SNAPSHOTS = {"orders_snapshot"}  # dbt snapshot of the orders seed, in shop_snapshots
VIEWS = {
    ("shop_staging", "stg_customers"),
    ("shop_staging", "stg_products"),
    ("shop_staging", "stg_orders"),
    ("shop_staging", "stg_order_items"),
    ("shop", "order_status_summary"),
}
META = "__ducklake_metadata_lake"  # where DuckDB attaches the lake's catalog database

# The shop's next export: a new day of orders, one of them from a customer who had never
# ordered and one for a product that had never sold.
NEW_ORDERS = """\
5051,1023,2025-03-18 09:12:44,completed,4.90,WELCOME10,"First order, be gentle"
5052,1005,2025-03-18 11:30:02,placed,0.00,,
5053,1010,2025-03-18 16:05:51,completed,7.50,,
"""
NEW_ORDER_ITEMS = """\
90061,5051,513,2,14.00,0.10
90062,5051,518,1,6.49,
90063,5052,509,1,129.99,
90064,5053,501,3,24.90,0.25
"""
# ... and an order placed two days before is cancelled (the snapshot and the merge see it).
CHANGED_ORDER = ("5047,1018,2025-03-16 08:37:21,placed,",
                 "5047,1018,2025-03-16 08:37:21,cancelled,")


@dataclass
class Build:
    """What one ``dbt build`` left: its invocation, the lake's version and the marts' rows."""

    invocation_id: str
    version: int
    table_ids: dict[str, int]
    mart_rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)


@dataclass
class Shop:
    project: Path
    catalog: Path
    manifest: dict[str, Any]
    first: Build
    second: Build


def _dbt_build(project: Path, *args: str) -> str:
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke(
        ["build", "--project-dir", str(project), "--profiles-dir", str(project), *args])
    failures = []
    if result.result is not None and hasattr(result.result, "results"):
        failures = [f"{r.node.unique_id}: {r.status} {r.message}" for r in result.result.results
                    if str(r.status) not in ("success", "pass")]
    assert result.success, f"dbt build failed: {result.exception}\n" + "\n".join(failures)
    run_results = json.loads((project / "target" / "run_results.json").read_text())
    return run_results["metadata"]["invocation_id"]


def _attach(catalog: Path):  # noqa: ANN202 - duckdb connection
    con = duckdb_connect()
    # No DATA_PATH: DuckDB must find the data through the absolute path stored in the lake.
    con.execute(f"ATTACH 'ducklake:sqlite:{catalog}' AS lake")
    return con


def _live_table_ids(con) -> dict[str, int]:  # noqa: ANN001
    rows = con.execute(f"""
        SELECT s.schema_name || '.' || t.table_name, t.table_id
        FROM {META}.ducklake_table t JOIN {META}.ducklake_schema s USING (schema_id)
        WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL""").fetchall()
    return dict(rows)


def _snapshot(con, invocation_id: str) -> Build:  # noqa: ANN001
    version = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    build = Build(invocation_id, version, _live_table_ids(con))
    for mart in MARTS:
        build.mart_rows[mart] = duck_rows(con, f"SELECT * FROM lake.shop.{mart}")
    return build


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory, spark) -> Shop:  # noqa: ANN001
    """The project built twice on a fresh lake (``spark`` first: dbt joins that session)."""
    project = tmp_path_factory.mktemp("shop") / "integration_project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("lake", "target", "logs"))
    catalog = project / "lake" / "catalog.sqlite"
    with pytest.MonkeyPatch.context() as env:
        # The profile's defaults must be used: a lake relative to the project directory.
        env.delenv("DUCKLAKE_CATALOG", raising=False)
        env.delenv("DUCKLAKE_DATA_PATH", raising=False)

        first_invocation = _dbt_build(project)
        assert catalog.is_file(), "the lake must live under the project dir, not the cwd"
        con = _attach(catalog)
        try:
            first = _snapshot(con, first_invocation)
        finally:
            con.close()

        with open(project / "seeds" / "orders.csv", "a") as f:
            f.write(NEW_ORDERS)
        with open(project / "seeds" / "order_items.csv", "a") as f:
            f.write(NEW_ORDER_ITEMS)
        orders = project / "seeds" / "orders.csv"
        orders.write_text(orders.read_text().replace(CHANGED_ORDER[0], CHANGED_ORDER[1]))
        # A backfill for the microbatch model: dbt widens March 2025 to its batch, the year 2025
        # (other models build as usual).
        second_invocation = _dbt_build(project, "--event-time-start", "2025-03-01",
                                       "--event-time-end", "2025-04-01")
        con = _attach(catalog)
        try:
            second = _snapshot(con, second_invocation)
        finally:
            con.close()

    manifest = json.loads((project / "target" / "manifest.json").read_text())
    return Shop(project, catalog, manifest, first, second)


@pytest.fixture
def duck(shop: Shop):  # noqa: ANN201
    con = _attach(shop.catalog)
    yield con
    con.close()


@pytest.fixture
def reader(shop: Shop, spark):  # noqa: ANN001, ANN201
    from dbt.adapters.ducklake.spark import SparkLake

    lake = SparkLake.open(spark, f"sqlite:///{shop.catalog}")
    yield lake
    lake.close()


def _nodes(shop: Shop) -> dict[str, dict[str, Any]]:
    """Models and seeds by the lake relation they build (``schema.alias``)."""
    return {f"{n['schema']}.{n['alias']}": n for n in shop.manifest["nodes"].values()
            if n["resource_type"] in ("model", "seed", "snapshot") and n["package_name"] == PACKAGE
            and n["config"]["materialized"] != "ephemeral"}


# ---------------------------------------------------------------------------------- tables
def test_lake_holds_the_expected_relations(shop: Shop, duck) -> None:  # noqa: ANN001
    tables = set(duck.execute(
        "SELECT schema_name || '.' || table_name FROM duckdb_tables() "
        "WHERE database_name = 'lake'").fetchall())
    expected = ({(f"shop_raw.{s}",) for s in SEEDS} | {(f"shop.{m}",) for m in MARTS}
                | {(f"shop.{m}",) for m in INCREMENTAL}
                | {(f"shop_snapshots.{m}",) for m in SNAPSHOTS})
    assert tables == expected
    relations = {name for name, n in _nodes(shop).items()}
    assert relations == {t for (t,) in expected} | {f"{s}.{v}" for s, v in VIEWS}


@pytest.mark.parametrize("when", ["latest", "first build"])
def test_every_table_reads_the_same_in_duckdb_and_spark(shop: Shop, duck, reader,  # noqa: ANN001
                                                        when: str) -> None:
    version = None if when == "latest" else shop.first.version
    clause = "" if version is None else f" AT (VERSION => {version})"
    tables = duck.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake' "
        "ORDER BY ALL").fetchall()
    assert len(tables) == len(SEEDS) + len(MARTS) + len(INCREMENTAL) + len(SNAPSHOTS)
    for schema, table in tables:
        df = reader.read(f"{schema}.{table}", version=version)
        duck_columns = [d[0] for d in duck.execute(
            f"DESCRIBE SELECT * FROM lake.{schema}.{table}{clause}").fetchall()]
        assert df.columns == duck_columns, f"{schema}.{table}: column names differ"
        cols = ", ".join(f'"{c}"' for c in df.columns)
        expected = duck_rows(duck, f"SELECT {cols} FROM lake.{schema}.{table}{clause}")
        actual = spark_rows(df)
        assert expected, f"{schema}.{table} is empty at {when}"
        assert actual == expected, (
            f"{schema}.{table} at {when}:\nspark : {actual[:3]}\nduckdb: {expected[:3]}")


def test_seed_values_survive_the_round_trip(duck) -> None:  # noqa: ANN001
    """Quoted commas and quotes, NULLs, decimals, dates and timestamps as in the CSVs."""
    row = duck.execute("SELECT city, email FROM lake.shop_raw.customers "
                       "WHERE customer_id = 1022").fetchone()
    assert row == ("Washington, D.C.", None)
    name, cost, price = duck.execute(
        "SELECT product_name, unit_cost, unit_price FROM lake.shop_raw.products "
        "WHERE product_id = 517").fetchone()
    assert name == 'Gift Card "Coffee Lover"'
    assert str(cost) == "25.00" and str(price) == "25.00"
    types = dict(duck.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = 'lake' "
        "AND schema_name = 'shop_raw' AND table_name = 'orders'").fetchall())
    assert types["ordered_at"].startswith("TIMESTAMP")
    assert types["shipping_cost"] == "DECIMAL(8,2)"
    note = duck.execute("SELECT delivery_note FROM lake.shop_raw.orders "
                        "WHERE order_id = 5051").fetchone()[0]
    assert note == "First order, be gentle"


# ---------------------------------------------------------------------------------- views
def test_duckdb_runs_every_view_as_dbt_show_does(shop: Shop, duck) -> None:  # noqa: ANN001
    """dbt's views are stored as DuckDB SQL (dialect ``duckdb``, their Spark text in a tag),
    so DuckDB runs each one and gets the rows ``dbt show`` gives."""
    from dbt.cli.main import dbtRunner

    views = set(duck.execute(
        "SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = 'lake'"
    ).fetchall())
    assert views == VIEWS
    dialects = duck.execute(f"""
        SELECT s.schema_name, v.view_name, v.dialect
        FROM {META}.ducklake_view v JOIN {META}.ducklake_schema s USING (schema_id)
        WHERE v.end_snapshot IS NULL AND s.end_snapshot IS NULL""").fetchall()
    assert {(s, v) for s, v, _ in dialects} == VIEWS
    assert {d for _, _, d in dialects} == {"duckdb"}
    result = dbtRunner().invoke([
        "show", "--select", *sorted(v for _, v in VIEWS), "--indirect-selection", "empty",
        "--limit", "-1", "--project-dir",
        str(shop.project), "--profiles-dir", str(shop.project), "--output", "json"])
    assert result.success, result.exception
    shown = {r.node.name: r.agate_table for r in result.result.results}
    assert set(shown) == {v for _, v in VIEWS}
    for schema, view in sorted(VIEWS):
        table = shown[view]
        theirs = duck.execute(f"SELECT * FROM lake.{schema}.{view}")
        assert [d[0] for d in theirs.description] == list(table.column_names), view
        expected = _comparable(theirs.fetchall())
        assert expected, view
        assert _comparable(table.rows) == expected, view


def _comparable(rows) -> list[tuple[Any, ...]]:  # noqa: ANN001
    """Rows of DuckDB or of agate as the oracle compares them: agate reads whole numbers as
    Decimal and drops a timestamp's time zone (the session's, UTC here)."""
    import datetime as dt
    from decimal import Decimal

    from oracle import norm

    def value(v: Any) -> Any:
        if isinstance(v, Decimal) and v == v.to_integral_value():
            return int(v)
        if isinstance(v, dt.datetime) and v.tzinfo is None:
            return v.replace(tzinfo=dt.timezone.utc)
        return norm(v)

    return sorted((tuple(value(v) for v in row) for row in rows), key=repr)


# ---------------------------------------------------------------------------------- docs
def test_persist_docs_comments_are_visible_in_duckdb(shop: Shop, duck) -> None:  # noqa: ANN001
    nodes = _nodes(shop)
    table_comments = dict(duck.execute(
        "SELECT schema_name || '.' || table_name, comment FROM duckdb_tables() "
        "WHERE database_name = 'lake'").fetchall())
    column_comments = {(f"{s}.{t}", c): comment for s, t, c, comment in duck.execute(
        "SELECT schema_name, table_name, column_name, comment FROM duckdb_columns() "
        "WHERE database_name = 'lake'").fetchall()}
    for mart in MARTS:
        node = nodes[f"shop.{mart}"]
        assert node["config"]["persist_docs"] == {"relation": True, "columns": True}
        assert node["description"]
        assert table_comments[f"shop.{mart}"] == node["description"], mart
        described = {c: col["description"] for c, col in node["columns"].items()
                     if col["description"]}
        assert described, f"{mart} documents no columns"
        for column, text in described.items():
            assert column_comments[(f"shop.{mart}", column)] == text, f"{mart}.{column}"
        undocumented = [c for (t, c), v in column_comments.items()
                        if t == f"shop.{mart}" and c not in described and v is not None]
        assert not undocumented, f"{mart}: comments on undocumented columns {undocumented}"
    # Seeds carry descriptions too, but persist_docs is configured on the marts only.
    for seed in SEEDS:
        assert table_comments[f"shop_raw.{seed}"] is None
    view_comments = dict(duck.execute(
        "SELECT schema_name || '.' || view_name, comment FROM duckdb_views() "
        "WHERE database_name = 'lake'").fetchall())
    assert view_comments["shop.order_status_summary"] == \
        nodes["shop.order_status_summary"]["description"]
    assert all(view_comments[f"shop_staging.{v}"] is None
               for s, v in VIEWS if s == "shop_staging")


# ---------------------------------------------------------------------------------- snapshots
def _snapshots(duck) -> list[dict[str, Any]]:  # noqa: ANN001
    cur = duck.execute("SELECT * FROM lake.snapshots() ORDER BY snapshot_id")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _relations_changed(duck, snapshot: dict[str, Any]) -> set[str]:  # noqa: ANN001
    """``schema.name`` of every table or view a snapshot created, wrote, altered or dropped."""
    tables = dict(duck.execute(f"""
        SELECT DISTINCT t.table_id, s.schema_name || '.' || t.table_name
        FROM {META}.ducklake_table t JOIN {META}.ducklake_schema s USING (schema_id)
    """).fetchall())
    views = dict(duck.execute(f"""
        SELECT DISTINCT v.view_id, s.schema_name || '.' || v.view_name
        FROM {META}.ducklake_view v JOIN {META}.ducklake_schema s USING (schema_id)
    """).fetchall())
    out = set()
    for kind, entries in (snapshot["changes"] or {}).items():
        if kind.startswith("schemas_"):
            continue
        for entry in entries:
            if entry.isdigit():
                out.add((views if kind.startswith("views_") else tables)[int(entry)])
            else:
                out.add(entry.replace('"', ""))
    return out


def test_every_snapshot_carries_dbt_commit_info(shop: Shop, duck) -> None:  # noqa: ANN001
    snapshots = _snapshots(duck)
    assert snapshots[0]["snapshot_id"] == 0 and snapshots[0]["author"] is None  # lake created
    assert snapshots[-1]["snapshot_id"] == shop.second.version
    for snap in snapshots[1:]:
        sid = snap["snapshot_id"]
        assert snap["author"], f"snapshot {sid} has no author"
        extra = json.loads(snap["commit_extra_info"])
        expected_run = (shop.first.invocation_id if sid <= shop.first.version
                        else shop.second.invocation_id)
        assert extra["invocation_id"] == expected_run, sid
        assert "node_unique_id" in extra, sid
        assert snap["commit_message"].startswith("dbt build: "), snap["commit_message"]
        if extra["node_unique_id"] is not None:
            assert extra["node_unique_id"] in snap["commit_message"], snap


def _misattributed(shop: Shop, duck, kinds: set[str]) -> list[str]:  # noqa: ANN001
    """Snapshots writing a relation of the given node kinds whose commit info names another
    node (or none). Kinds: ``seed``, ``sql`` (SQL models), ``python`` (Python models)."""
    nodes = _nodes(shop)
    wrong, seen = [], set()
    for snap in _snapshots(duck)[1:]:
        relations = _relations_changed(duck, snap)
        if not relations:
            continue  # CREATE SCHEMA: made for the run, not for one node
        assert len(relations) == 1, f"snapshot {snap['snapshot_id']} changed {relations}"
        node = nodes[relations.pop()]
        kind = "seed" if node["resource_type"] == "seed" else node["language"]
        if kind not in kinds:
            continue
        seen.add(node["unique_id"])
        extra = json.loads(snap["commit_extra_info"])
        if (extra["node_unique_id"] != node["unique_id"]
                or node["unique_id"] not in snap["commit_message"]):
            wrong.append(f"snapshot {snap['snapshot_id']} ({node['unique_id']}): "
                         f"{snap['commit_message']!r}, node_unique_id="
                         f"{extra['node_unique_id']!r}")
    expected = {n["unique_id"] for n in nodes.values()
                if ("seed" if n["resource_type"] == "seed" else n["language"]) in kinds}
    assert seen == expected, f"nodes without snapshots: {expected - seen}"
    return wrong


def test_sql_model_snapshots_name_their_node(shop: Shop, duck) -> None:  # noqa: ANN001
    wrong = _misattributed(shop, duck, {"sql"})
    assert not wrong, "\n".join(wrong)


def test_seed_and_python_model_snapshots_name_their_node(shop: Shop, duck) -> None:  # noqa: ANN001
    wrong = _misattributed(shop, duck, {"seed", "python"})
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------------- rebuilds
def test_second_build_rebuilds_tables_in_place(shop: Shop, duck, reader) -> None:  # noqa: ANN001
    first, second = shop.first, shop.second
    assert second.version > first.version
    tables = [f"shop.{m}" for m in MARTS] + [f"shop_raw.{s}" for s in SEEDS]
    for name in tables:
        assert second.table_ids[name] == first.table_ids[name], f"{name} got a new table id"
    # The second build wrote every table again, through the same table id.
    written = set()
    for snap in _snapshots(duck):
        if snap["snapshot_id"] > first.version:
            for entry in (snap["changes"] or {}).get("tables_inserted_into", []):
                written.add(int(entry))
    assert {second.table_ids[n] for n in tables} <= written

    for mart in MARTS:
        # The new day of orders changed every mart ...
        assert second.mart_rows[mart] != first.mart_rows[mart], mart
        # ... and time travel to the first build returns its rows, in both engines.
        old = duck_rows(duck, f"SELECT * FROM lake.shop.{mart} AT (VERSION => {first.version})")
        assert old == first.mart_rows[mart], mart
        assert spark_rows(reader.read(f"shop.{mart}", version=first.version)) == old, mart
        assert duck_rows(duck, f"SELECT * FROM lake.shop.{mart}") == second.mart_rows[mart]

    days = duck.execute("SELECT count(*), max(order_date) FROM lake.shop.daily_revenue"
                        ).fetchone()
    old_days = duck.execute("SELECT count(*), max(order_date) FROM lake.shop.daily_revenue "
                            f"AT (VERSION => {first.version})").fetchone()
    assert days[0] == old_days[0] + 1
    assert str(days[1]) == "2025-03-18" and str(old_days[1]) == "2025-03-17"
    segment = duck.execute("SELECT segment FROM lake.shop.customer_segments "
                           "WHERE customer_id = 1023").fetchone()[0]
    old_segment = duck.execute("SELECT segment FROM lake.shop.customer_segments AT (VERSION => "
                               f"{first.version}) WHERE customer_id = 1023").fetchone()[0]
    assert (old_segment, segment) == ("prospect", "new")


def test_lake_data_stays_inside_the_project(shop: Shop) -> None:
    data = shop.project / "lake" / "data"
    assert any(data.rglob("*.parquet")), "expected Parquet files under the project's lake/data"


# ---------------------------------------------------------------------------------- incremental
STG_SALES = """
    SELECT CAST(o.ordered_at AS DATE) AS order_date, i.product_id,
           count(DISTINCT o.order_id) AS orders, sum(i.quantity) AS units,
           CAST(sum(CASE WHEN lower(o.status) IN ('placed', 'shipped', 'completed')
                         THEN CAST(i.quantity * i.unit_price * (1 - coalesce(i.discount_rate, 0))
                                   AS DECIMAL(12, 2)) ELSE 0 END) AS DECIMAL(14, 2)) AS revenue
    FROM lake.shop_raw.order_items i JOIN lake.shop_raw.orders o USING (order_id)
    GROUP BY ALL"""


def test_incremental_merge_on_a_composite_key(shop: Shop, duck) -> None:  # noqa: ANN001
    """After two runs with new and changed orders in between, the incremental model equals a
    full recomputation, and its second run re-merged the recent days as updates."""
    expected = duck_rows(duck, STG_SALES)
    actual = duck_rows(duck, "SELECT order_date, product_id, orders, units, revenue "
                             "FROM lake.shop.daily_product_sales")
    assert actual == expected
    table_id = shop.second.table_ids["shop.daily_product_sales"]
    assert table_id == shop.first.table_ids["shop.daily_product_sales"]
    changes = duck_rows(duck, "SELECT change_type, count(*) FROM ducklake_table_changes("
                              f"'lake', 'shop', 'daily_product_sales', {shop.first.version + 1}, "
                              f"{shop.second.version}) GROUP BY 1")
    kinds = dict(changes)
    assert kinds.get("insert", 0) >= 4  # 2025-03-18's products
    assert kinds.get("update_preimage", 0) == kinds.get("update_postimage", 0) >= 1
    # The cancelled order's day lost its revenue to lost_revenue.
    day = duck.execute("SELECT revenue, lost_revenue FROM lake.shop.daily_product_sales "
                       "WHERE order_date = DATE '2025-03-16' AND product_id = 506").fetchone()
    assert day is not None and day[1] > 0


def test_snapshot_of_a_changing_seed(duck) -> None:  # noqa: ANN001
    versions = duck.execute(
        "SELECT status, dbt_valid_to IS NULL FROM lake.shop_snapshots.orders_snapshot "
        "WHERE order_id = 5047 ORDER BY dbt_valid_from").fetchall()
    assert versions == [("placed", False), ("cancelled", True)]
    current = duck.execute("SELECT count(*) FROM lake.shop_snapshots.orders_snapshot "
                           "WHERE dbt_valid_to IS NULL").fetchone()[0]
    assert current == duck.execute("SELECT count(*) FROM lake.shop_raw.orders").fetchone()[0]


def test_microbatch_model_loads_every_order(shop: Shop, duck) -> None:  # noqa: ANN001
    rows = duck_rows(duck, "SELECT order_id, order_status FROM lake.shop.order_events")
    expected = duck_rows(duck, "SELECT order_id, lower(status) FROM lake.shop_raw.orders")
    assert rows == expected
    first = duck.execute("SELECT count(*) FROM lake.shop.order_events AT (VERSION => "
                         f"{shop.first.version})").fetchone()[0]
    assert (first, len(rows)) == (50, 53)


def test_change_driven_model_sees_each_change_once(shop: Shop, duck) -> None:  # noqa: ANN001
    feed = duck_rows(duck, "SELECT change_type, order_date, product_id, revenue FROM "
                           "ducklake_table_changes('lake', 'shop', 'daily_product_sales', 0, "
                           f"{shop.second.version}) "
                           "WHERE change_type IN ('insert', 'update_postimage', 'delete')")
    log = duck_rows(duck, "SELECT change_type, order_date, product_id, revenue "
                          "FROM lake.shop.sales_corrections")
    assert log == feed
    assert any(kind == "update_postimage" for kind, *_ in log)


def test_time_travel_analysis(shop: Shop) -> None:
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke([
        "show", "--select", "revenue_since_snapshot", "--project-dir", str(shop.project),
        "--profiles-dir", str(shop.project), "--vars",
        json.dumps({"compare_version": shop.first.version}), "--output", "json"])
    assert result.success, result.exception
    rows = result.result.results[0].agate_table.rows
    # The second build added 2025-03-18 and changed 2025-03-16 (a cancelled order).
    days = {str(r["order_date"]): r for r in rows}
    assert "2025-03-18" in days and days["2025-03-18"]["revenue_before"] is None
    assert "2025-03-16" in days and days["2025-03-16"]["change"] < 0


def test_maintenance_run_operations_change_no_result(shop: Shop, duck) -> None:  # noqa: ANN001
    """Last in the module (it maintains the shared lake): flushing inlined rows and merging
    small files through `dbt run-operation` changes no table at any build, in DuckDB."""
    from dbt.cli.main import dbtRunner

    tables = [f"shop.{m}" for m in (*MARTS, *INCREMENTAL)] + [f"shop_raw.{s}" for s in SEEDS]
    versions = (shop.first.version, shop.second.version)

    def contents() -> dict[tuple[str, int], list[tuple[Any, ...]]]:
        return {(t, v): duck_rows(duck, f"SELECT * FROM lake.{t} AT (VERSION => {v})")
                for t in tables for v in versions}

    before = contents()
    for operation in ("ducklake_flush_inlined_data", "ducklake_merge_adjacent_files"):
        result = dbtRunner().invoke(["run-operation", operation, "--project-dir",
                                     str(shop.project), "--profiles-dir", str(shop.project)])
        assert result.success, f"{operation}: {result.exception}"
    # the flush drops inlined-data tables it emptied, which a DuckDB session that read them
    # still names (as after another DuckDB process's flush): read with a new session
    duck = _attach(shop.catalog)
    try:
        assert contents() == before
    finally:
        duck.close()
