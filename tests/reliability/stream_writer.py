"""A streaming query for the reliability tests: a file source (one file per batch) into
``format("ducklake")`` until the source is drained (``availableNow``).

Run as ``python stream_writer.py '<json>'`` (the lake, ``src`` and ``checkpoint``); prints
one JSON line when done. It never calls ``register`` nor ``SparkLake.open``: a new session
knows the format because PySpark registers ``pyspark_ducklake``'s ``DefaultSource`` itself, and
the batches' tasks import the package in the executors' Python workers (each writer run here
proves both). The tests kill it at a phase of a batch's commit
(``DUCKLAKE_FAULT_PAUSE_AT``) and run it again from its checkpoint.
"""

from __future__ import annotations

import json
import sys

from writer import session


def main() -> None:
    args = json.loads(sys.argv[1])
    spark = session("local[2]")
    writer = (spark.readStream.schema("id long, label string").option("maxFilesPerTrigger", 1)
              .parquet(args["src"]).writeStream.format("ducklake")
              .option("catalog", args["catalog"]).option("table", "main.t")
              .option("checkpointLocation", args["checkpoint"]))
    if args.get("metadata_schema"):
        writer = writer.option("metadata_schema", args["metadata_schema"])
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    print(json.dumps({"batches": [p["batchId"] for p in query.recentProgress]}))


if __name__ == "__main__":
    main()
