"""A branch writer for the publish fault tests: open a branch, write, publish.

Run as ``python publish_writer.py '<json>'``; the JSON names the lake, a signal file and
where to stop: ``branch`` (after the branch's writes, before the publish) or ``publish``
(inside the publish's catalog transaction: every row written, only COMMIT left). There the
writer creates the signal file and waits for the test to SIGKILL it. With ``stop`` absent it
publishes and prints the snapshot id.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from writer import session

from dbt.adapters.ducklake.lake import faults
from dbt.adapters.ducklake.lake.branch import Branch
from dbt.adapters.ducklake.spark import SparkLake
from dbt.adapters.ducklake.sql import Engine
from dbt.adapters.ducklake.sql.temp_views import ViewRegistry

WRITES = (
    "CREATE TABLE `main.fresh` AS SELECT id, id * 2 AS v FROM range(300)",
    "INSERT INTO `main.t` SELECT id, concat('branch ', id) FROM range(1000, 1100)",
    "DELETE FROM `main.t` WHERE id < 20",
)


def pause(signal: str) -> None:
    with open(signal, "w") as handle:
        handle.write("paused")
    time.sleep(600)


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    spark = session("local[2]")
    lake = SparkLake.open(spark, args["catalog"], args["data_path"],
                          **({"metadata_schema": args["metadata_schema"]}
                             if args.get("metadata_schema") else {}))
    branch = Branch.open(lake.catalog)
    on_branch = SparkLake(spark, branch.catalog)
    engine = Engine(spark, on_branch, ViewRegistry(spark, on_branch))
    for statement in WRITES:
        engine.execute(statement)
    stop = args.get("stop")
    if stop == "branch":
        pause(args["signal"])
    if stop == "publish":
        with faults.inject("catalog_transaction", lambda **_: pause(args["signal"])):
            branch.publish()
    snapshot = branch.publish() if stop is None else None
    print(json.dumps({"snapshot_id": snapshot.snapshot_id if snapshot else None}))


if __name__ == "__main__":
    main()
