"""The package's directory in the user's cache: ``$XDG_CACHE_HOME/dbt-ducklake``, else
``~/.cache/dbt-ducklake``.

What Spark's start can reuse between processes lives there: the JVM's class archive
(:mod:`..jvm_archive`), the compiled helper classes (:mod:`.jvm_classes`) and the driver
daemons' directories (:mod:`..driver_daemon`). Everything in it can be deleted at any time;
it is rebuilt when next needed.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIRECTORY = "dbt-ducklake"


def cache_directory() -> Path:
    """This package's directory under the user's cache directory (not created here)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(root) / PACKAGE_DIRECTORY
