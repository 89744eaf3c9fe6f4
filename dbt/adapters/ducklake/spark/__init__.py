"""Spark I/O for DuckLake: read a table at any snapshot, write data files, commit snapshots."""

from .lake import CommitInfo, LakeTable, SparkLake

__all__ = ["CommitInfo", "LakeTable", "SparkLake"]
