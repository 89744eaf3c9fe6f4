"""sorted_by: what a table's sort order buys a range query, through per-file min/max.

Two tables of the same ``--scale`` rows (``k``: a scrambled BIGINT key, ``v``: a DOUBLE),
each written by ``SparkLake.create_table`` in files of about ``--target-file-size`` bytes:
``unsorted`` as the rows come, ``sorted`` with ``sorted_by=["k"]`` (the write is ordered by
``k``, so each file holds a contiguous range of it). The query, ``count(*), sum(v) where k
between a and b`` over 0.1% of the keys, is timed ``--reps`` times after a warm-up through our
statement engine (the path dbt's models take, file skipping included) and through DuckDB's
``ducklake`` on the same lake. Files the query must read are counted from the catalog's
per-file statistics, as both engines' pruning sees them.

    python benchmarks/sorted_by.py --scale 2e6 --reps 5
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common as C  # noqa: E402


def main() -> None:
    parser = C.parser(__doc__.splitlines()[0], "rows per table", 2e6)
    parser.add_argument("--target-file-size", default="2MB")
    args = parser.parse_args()
    rows = int(args.scale)
    with C.workdir(args) as root:
        spec = C.new_lake(root, "sorted_by", "sqlite")
        spark = C.spark_session("sorted-by-bench")
        from dbt.adapters.ducklake.spark import SparkLake
        from dbt.adapters.ducklake.sql import Engine
        from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

        lake = SparkLake.open(spark, spec.catalog, spec.data_path)
        data = spark.sql(f"SELECT CAST(pmod(id * 2654435761, {rows}) AS BIGINT) AS k, "
                         f"CAST(id AS DOUBLE) AS v FROM range({rows})")
        options = {"target_file_size": args.target_file_size, "data_inlining_row_limit": 0}
        for name, order in (("unsorted", None), ("sorted", ["k"])):
            start = time.perf_counter()
            lake.create_table(f"main.{name}", data, table_options=options, sorted_by=order)
            print(f"write {name}: {time.perf_counter() - start:.1f} s")
        engine = Engine(spark, lake, ViewRegistry(spark, lake))
        duck = C.duckdb_connect()
        duck.execute(f"ATTACH 'ducklake:sqlite:{spec.catalog.removeprefix('sqlite:///')}' "
                     f"AS lake (DATA_PATH '{spec.data_path}')")
        low = rows // 2
        high = low + rows // 1000
        where = f"k BETWEEN {low} AND {high}"
        table_rows = []
        for name in ("unsorted", "sorted"):
            sql = f"SELECT count(*), sum(v) FROM `main.{name}` WHERE {where}"
            ours = _timed(lambda sql=sql: engine.execute(sql).df.collect(), args.reps)
            duck_sql = f"SELECT count(*), sum(v) FROM lake.main.{name} WHERE {where}"
            theirs = _timed(lambda q=duck_sql: duck.execute(q).fetchall(), args.reps)
            total, kept = _files(duck, name, low, high)
            table_rows.append([name, f"{kept} of {total}", C.fmt(ours), C.fmt(theirs)])
            assert engine.execute(sql).df.collect()[0][0] == \
                duck.execute(duck_sql).fetchall()[0][0]
        C.print_rows([["table", "files to read", "ours (SQL)", "duckdb"], *table_rows])


def _timed(run, reps: int) -> float:  # noqa: ANN001
    run()  # warm-up
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _files(duck, table: str, low: int, high: int) -> tuple[int, int]:  # noqa: ANN001
    """(live files, files whose k range meets [low, high]) from the catalog's statistics."""
    meta = "__ducklake_metadata_lake"
    (total, kept), = duck.execute(f"""
        SELECT count(*), count(*) FILTER (WHERE CAST(s.min_value AS BIGINT) <= {high}
                                            AND CAST(s.max_value AS BIGINT) >= {low})
        FROM {meta}.ducklake_data_file f
        JOIN {meta}.ducklake_table t ON t.table_id = f.table_id AND t.end_snapshot IS NULL
        JOIN {meta}.ducklake_column c ON c.table_id = f.table_id AND c.column_name = 'k'
             AND c.end_snapshot IS NULL
        JOIN {meta}.ducklake_file_column_stats s ON s.data_file_id = f.data_file_id
             AND s.column_id = c.column_id
        WHERE t.table_name = '{table}' AND f.end_snapshot IS NULL""").fetchall()
    return total, kept


if __name__ == "__main__":
    main()
