"""The tests' JVMs map Spark's classes from the class data sharing archive the adapter uses
(:mod:`dbt.adapters.ducklake.jvm_archive`, one implementation and one file for both).

Every JVM the tests start (the test processes' own, the writer processes the reliability
tests kill, the ``dbt`` subprocesses, the standalone cluster's daemons and executors) loads
and verifies the same few thousand Spark classes from 280 jars before it does any work: about
half of a writer process's life. Measured on the four SIGKILL fault tests, 88 s -> 55 s; on
``test_merge.py`` in one process, 68 s -> 60 s.

    python tests/jvm_archive.py     build the archive (if missing) and print its path

``DUCKLAKE_TEST_JVM_ARCHIVE`` names the file (``off``: no archive); by default it is the
adapter's, under ``~/.cache/dbt-ducklake/``, keyed by the pyspark installation and the JDK.
The tests start their JVMs with the archive named explicitly, so the adapter's own start
(which would build one in the background) never applies to them.
"""

from __future__ import annotations

import sys

from dbt.adapters.ducklake import jvm_archive

ENV = "DUCKLAKE_TEST_JVM_ARCHIVE"
java_options = jvm_archive.java_options


def archive_path() -> str | None:
    """Where the archive is (or is to be built); ``None`` when switched off."""
    return jvm_archive.archive_path(ENV)


def build(path: str) -> bool:
    """Build the archive at ``path`` unless it exists; ``False`` if the JVM could not."""
    return jvm_archive.build(path, ENV)


if __name__ == "__main__":
    target = archive_path()
    if target is None:
        print(f"{ENV} is off")
    elif build(target):
        print(target)
    else:
        sys.exit(1)
