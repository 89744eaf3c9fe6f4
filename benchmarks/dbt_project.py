"""``dbt build`` of one star-schema project on three adapters.

The raw data is a star schema written once as Parquet (with DuckDB): ``line_items`` (the fact
table, ``--scale`` rows, default 100,000; documented at 1,000,000 and 10,000,000), ``orders``
(a quarter as many), ``customers`` (a hundredth) and 1,000 ``products``. The same dbt project
runs on each adapter: four ephemeral staging models over the raw files (a DuckLake view may not
read files by path: docs/security.md), two joined marts, two aggregates,
one incremental model (``append``, new orders only) and a few data tests. Systems:

- ``ours``: dbt-ducklake (Spark ``local[*]``, SQLite catalog);
- ``ours-atomic``: the same with ``publish: atomic`` (the build staged on a branch of the
  catalog and published as one snapshot; issue 34's target: <= 1.1x ``ours``);
- ``dbt-spark``: dbt-spark ``method: session`` on the same Spark, tables as plain Parquet
  (``file_format: parquet``) in a local warehouse with the embedded Hive metastore;
- ``dbt-duckdb``: dbt-duckdb writing to a DuckLake (DuckDB 1.5.5 with ``ducklake``, SQLite
  catalog).

Each repetition starts from an empty target and runs ``dbt build`` twice as a separate process
(what a scheduler does): the first builds everything, the second is the incremental run with no
new data. Wall time includes process and Spark start-up, as a user sees it.
Target: ours ≤ 1.25× dbt-spark.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402

SYSTEMS = ("ours", "ours-atomic", "dbt-spark", "dbt-duckdb")
SPARK_CONF = {"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4",
              "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC"}

MODELS: dict[str, str] = {
    "staging/stg_customers.sql": """\
        select customer_id, name as customer_name, segment, country, signup_date
        from {{ raw('customers') }}""",
    "staging/stg_products.sql": """\
        select product_id, name as product_name, category, cast(price as double) as price
        from {{ raw('products') }}""",
    "staging/stg_orders.sql": """\
        select order_id, customer_id, order_date, status
        from {{ raw('orders') }} where status <> 'test'""",
    "staging/stg_line_items.sql": """\
        select order_id, line_no, product_id, quantity, discount
        from {{ raw('line_items') }}""",
    "marts/fct_order_lines.sql": """\
        select o.order_id, l.line_no, o.order_date, o.status, c.customer_id, c.segment,
               c.country, p.product_id, p.category, l.quantity,
               l.quantity * p.price * (1 - l.discount) as revenue
        from {{ ref('stg_line_items') }} l
        join {{ ref('stg_orders') }} o on o.order_id = l.order_id
        join {{ ref('stg_products') }} p on p.product_id = l.product_id
        join {{ ref('stg_customers') }} c on c.customer_id = o.customer_id""",
    "marts/dim_customers.sql": """\
        select c.customer_id, c.customer_name, c.segment, c.country,
               count(distinct f.order_id) as orders, min(f.order_date) as first_order,
               max(f.order_date) as last_order, coalesce(sum(f.revenue), 0) as lifetime_revenue
        from {{ ref('stg_customers') }} c
        left join {{ ref('fct_order_lines') }} f on f.customer_id = c.customer_id
        group by c.customer_id, c.customer_name, c.segment, c.country""",
    "marts/agg_daily_category.sql": """\
        select order_date, category, count(distinct order_id) as orders,
               sum(quantity) as units, sum(revenue) as revenue
        from {{ ref('fct_order_lines') }} group by order_date, category""",
    "marts/agg_segment_month.sql": """\
        select segment, country, cast(date_trunc('month', order_date) as date) as month,
               count(*) as lines, sum(revenue) as revenue, avg(revenue) as avg_line_revenue
        from {{ ref('fct_order_lines') }}
        group by segment, country, cast(date_trunc('month', order_date) as date)""",
    "marts/fct_orders.sql": """\
        {{ config(materialized='incremental', incremental_strategy='append') }}
        select order_id, customer_id, order_date, status, count(*) as lines,
               sum(revenue) as revenue
        from {{ ref('fct_order_lines') }}
        {% if is_incremental() %}
        where order_date > (select max(order_date) from {{ this }})
        {% endif %}
        group by order_id, customer_id, order_date, status""",
}

SCHEMA_YML = """\
version: 2
models:
  - name: fct_orders
    columns:
      - name: order_id
        data_tests: [unique, not_null]
  - name: dim_customers
    columns:
      - name: customer_id
        data_tests: [unique, not_null]
"""

RAW_MACRO = """\
{% macro raw(name) -%}
  {%- if target.type == 'duckdb' -%}
    read_parquet('{{ var("raw_path") }}/{{ name }}/*.parquet')
  {%- else -%}
    parquet.`{{ var("raw_path") }}/{{ name }}`
  {%- endif -%}
{%- endmacro %}
"""

PROJECT_YML = """\
name: star
version: '1.0'
profile: star
config-version: 2
models:
  star:
    staging:
      +materialized: ephemeral
    marts:
      +materialized: table
      +file_format: "{{ 'parquet' if target.type == 'spark' else none }}"
"""


def generate(raw: str, fact_rows: int) -> None:
    """The star schema as Parquet under ``raw/<table>/``, deterministic."""
    con = C.duckdb_connect()
    orders, customers = max(fact_rows // 4, 1), max(fact_rows // 100, 100)
    queries = {
        "customers": f"""SELECT i AS customer_id, 'customer ' || i AS name,
            ['retail', 'smb', 'enterprise'][1 + i % 3] AS segment,
            ['NL', 'DE', 'FR', 'BE', 'US'][1 + i % 5] AS country,
            DATE '2020-01-01' + CAST(i % 1500 AS INTEGER) AS signup_date
            FROM range({customers}) t(i)""",
        "products": """SELECT i AS product_id, 'product ' || i AS name,
            'category ' || (i % 20) AS category, CAST(1 + (i * 37) % 500 AS DOUBLE) AS price
            FROM range(1000) t(i)""",
        "orders": f"""SELECT i AS order_id, hash(i) % {customers} AS customer_id,
            DATE '2024-01-01' + CAST(i * 730 // {orders} AS INTEGER) AS order_date,
            CASE WHEN i % 97 = 0 THEN 'test' WHEN i % 7 = 0 THEN 'returned'
                 ELSE 'shipped' END AS status
            FROM range({orders}) t(i)""",
        "line_items": f"""SELECT i // 4 AS order_id, CAST(i % 4 AS INTEGER) AS line_no,
            hash(i * 31) % 1000 AS product_id, CAST(1 + i % 5 AS INTEGER) AS quantity,
            CAST((i % 4) * 0.05 AS DOUBLE) AS discount
            FROM range({orders * 4}) t(i)""",
    }
    for name, query in queries.items():
        out = os.path.join(raw, name)
        os.makedirs(out, exist_ok=True)
        con.execute(f"COPY ({query}) TO '{out}' (FORMAT parquet, PER_THREAD_OUTPUT true, "
                    "OVERWRITE_OR_IGNORE true)")
    con.close()


def write_project(path: str) -> None:
    for rel, sql in MODELS.items():
        os.makedirs(os.path.dirname(os.path.join(path, "models", rel)), exist_ok=True)
        with open(os.path.join(path, "models", rel), "w") as f:
            f.write(textwrap.dedent(sql) + "\n")
    os.makedirs(os.path.join(path, "macros"), exist_ok=True)
    with open(os.path.join(path, "macros", "raw.sql"), "w") as f:
        f.write(RAW_MACRO)
    with open(os.path.join(path, "models", "schema.yml"), "w") as f:
        f.write(SCHEMA_YML)
    with open(os.path.join(path, "dbt_project.yml"), "w") as f:
        f.write(PROJECT_YML)


def extension_directory(root: str) -> str:
    """A DuckDB extension directory holding the pip-installed 1.5.5 extensions, so that
    dbt-duckdb's ATTACH autoloads ``ducklake`` and ``sqlite_scanner`` without a download."""
    import glob
    import platform

    import duckdb_extension_ducklake

    base = os.path.dirname(os.path.dirname(duckdb_extension_ducklake.__file__))
    arch = "linux_amd64" if platform.machine() in ("x86_64", "AMD64") else "linux_arm64"
    target = os.path.join(root, "duckdb_extensions", "v1.5.5", arch)
    os.makedirs(target, exist_ok=True)
    for ext in glob.glob(os.path.join(base, "duckdb_extension_*", "extensions", "v1.5.5",
                                      "*.duckdb_extension")):
        link = os.path.join(target, os.path.basename(ext))
        if not os.path.exists(link):
            os.symlink(ext, link)
    return os.path.join(root, "duckdb_extensions")


def profiles(root: str, target: str) -> str:
    conf = "".join(f"        {k}: \"{v}\"\n" for k, v in SPARK_CONF.items())
    ext = extension_directory(root)
    return f"""\
star:
  target: ours
  outputs:
    ours:
      type: ducklake
      catalog: "sqlite:///{target}/ours/catalog.sqlite"
      data_path: "{target}/ours/data/"
      schema: star
      threads: 1
      master: "local[*]"
      spark_conf:
{conf}    ours-atomic:
      type: ducklake
      catalog: "sqlite:///{target}/ours-atomic/catalog.sqlite"
      data_path: "{target}/ours-atomic/data/"
      schema: star
      threads: 1
      master: "local[*]"
      publish: atomic
      spark_conf:
{conf}    dbt-spark:
      type: spark
      method: session
      host: localhost
      schema: star
      threads: 1
      server_side_parameters:
{conf.replace("        ", "        ")}        spark.sql.warehouse.dir: "{target}/spark/warehouse"
    dbt-duckdb:
      type: duckdb
      path: "{target}/duckdb/local.duckdb"
      threads: 1
      schema: star
      database: lake
      config_options:
        extension_directory: "{ext}"
        allow_unsigned_extensions: true
      settings:
        TimeZone: UTC
      attach:
        - path: "ducklake:sqlite:{target}/duckdb/catalog.sqlite"
          alias: lake
          options:
            data_path: "{target}/duckdb/data/"
"""


def dbt_build(project: str, system: str, raw: str, target: str) -> float:
    env = dict(os.environ, PYTHONPATH=C.REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    cmd = [dbt, "build", "--project-dir", project, "--profiles-dir", project, "--target",
           system, "--vars", f"{{raw_path: '{raw}'}}"]
    cwd = os.path.join(target, "spark")  # dbt-spark's metastore_db and derby.log land here
    os.makedirs(cwd, exist_ok=True)
    with C.Timer() as t:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{system}: dbt build failed\n{done.stdout[-4000:]}\n"
                           f"{done.stderr[-2000:]}")
    return t.seconds


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "fact (line item) rows", 100_000)
    p.add_argument("--systems", default=",".join(SYSTEMS))
    args = p.parse_args()
    C.check_reps(args)
    if args.catalog != "sqlite":
        raise SystemExit("dbt_project.py runs every lake on a SQLite catalog")
    C.banner("dbt_project", args)
    results = C.Results("dbt_project", args)
    systems = [s for s in args.systems.split(",") if s]
    with C.workdir(args) as root:
        raw = os.path.join(root, "raw")
        with C.Timer() as gen:
            generate(raw, int(args.scale))
        print(f"   star schema generated in {gen.seconds:.1f} s", flush=True)
        project = os.path.join(root, "project")
        write_project(project)
        target = os.path.join(root, "target")
        with open(os.path.join(project, "profiles.yml"), "w") as f:
            f.write(profiles(root, target))
        for rep in range(args.reps):
            print(f"-- repetition {rep + 1}/{args.reps}", flush=True)
            for system in systems:
                shutil.rmtree(target, ignore_errors=True)
                os.makedirs(os.path.join(target, "ours", "data"))
                os.makedirs(os.path.join(target, "ours-atomic", "data"))
                os.makedirs(os.path.join(target, "duckdb", "data"))
                results.add(system, "dbt build (first)", dbt_build(project, system, raw, target))
                results.add(system, "dbt build (incremental)",
                            dbt_build(project, system, raw, target))
    results.print_table()
    ratios = results.print_ratios([
        ("dbt build (first)", "ours", "dbt-spark", "<= 1.25x"),
        ("dbt build (incremental)", "ours", "dbt-spark", "<= 1.25x"),
        ("dbt build (first)", "ours-atomic", "ours", "<= 1.1x"),
        ("dbt build (incremental)", "ours-atomic", "ours", "<= 1.1x"),
        ("dbt build (first)", "ours", "dbt-duckdb", ""),
        ("dbt build (incremental)", "ours", "dbt-duckdb", ""),
    ])
    results.save(ratios)


if __name__ == "__main__":
    main()
