"""DuckDB in a process of its own, for tests where it works on a lake while this process
writes to the same SQLite catalog.

SQLite's locks are POSIX advisory locks, which belong to a process: two copies of SQLite in one
process (Python's ``sqlite3`` and the one inside DuckDB's sqlite extension) do not exclude each
other, and closing either one's file descriptor releases the other's locks, so concurrent
writes corrupt the catalog ("Multiple copies of SQLite linked into the same application",
https://www.sqlite.org/howtocorrupt.html section 2.2.1). A DuckDB user sharing a lake with the
adapter runs DuckDB in a process of its own; so do these tests.

The child process is this file run as a script: ``once`` runs statements (retrying, as
DuckDB does not wait for SQLite's "database is locked"), ``append`` inserts rows until stopped
and prints each commit's snapshot id, ``tables`` prints the names of a schema's tables until
stopped. A loop stops when its standard input closes.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from typing import Any

TESTS = os.path.dirname(os.path.abspath(__file__))


def execute(attach: str, *statements: str, timeout: float = 300) -> None:
    """Run ``statements`` in one DuckDB connection of a new process, attached as ``lake``."""
    result = subprocess.run([sys.executable, __file__, "once", attach, *statements],
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode:
        raise RuntimeError(f"DuckDB in a child process failed:\n{result.stderr[-3000:]}")


class Loop:
    """A child process repeating one action until :meth:`stop`, which returns what each
    round printed (one JSON value a line)."""

    def __init__(self, mode: str, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, mode, *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def stop(self) -> list[Any]:
        out, err = self.proc.communicate("", timeout=300)  # closes our end of its stdin
        if self.proc.returncode:
            raise RuntimeError(f"DuckDB's {self.proc.args[2]} loop failed:\n{err[-3000:]}")
        return [json.loads(line) for line in out.splitlines()]


def _stopped(wait: float) -> bool:
    """Whether the parent closed our standard input, waiting up to ``wait`` seconds."""
    return bool(select.select([sys.stdin], [], [], wait)[0])


def _retrying(attach: str, statement: str) -> Any:
    """``statement``'s first row, retried (SQLite locked by another writer, a commit racing
    another one) on a new connection per attempt: after a failed commit DuckDB may keep its
    SQLite transaction, and so the lock."""
    from oracle import duckdb_connect

    for attempt in range(200):
        con = duckdb_connect()
        try:
            con.execute(attach)
            return con.execute(statement).fetchone()
        except Exception:
            if attempt == 199:
                raise
        finally:
            con.close()
        time.sleep(0.1)
    return None


def _main(mode: str, attach: str, *args: str) -> None:
    if mode == "once":
        for statement in args:
            _retrying(attach, statement)
        return
    n = 1000
    while not _stopped(0.5 if mode == "append" else 0.2):
        if mode == "append":
            table, = args
            _retrying(attach, f"INSERT INTO {table} VALUES ({n})")
            n += 1
            row = _retrying(attach, "SELECT max(snapshot_id) FROM lake.snapshots()")
        else:
            schema, = args
            row = _retrying(attach, "SELECT list(table_name ORDER BY table_name) FROM "
                            "duckdb_tables() WHERE database_name = 'lake' AND schema_name = "
                            f"'{schema}'")
        print(json.dumps(row[0]), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, TESTS)
    _main(*sys.argv[1:])
