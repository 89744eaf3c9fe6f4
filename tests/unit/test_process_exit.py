"""dbt's command line exits without Python's last garbage collections (process_exit.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dbt.adapters.ducklake.process_exit import is_dbt_command_line

# Cyclic garbage that only the interpreter's final collections would reclaim (the automatic
# collector is off), whose finalizer leaves a mark in a file.
PROGRAM = """\
import gc, sys
from dbt.adapters.ducklake import process_exit

class Node:
    def __del__(self, _open=open, _path=sys.argv[1]):
        with _open(_path, "a") as f:
            f.write("collected")

gc.disable()
node = Node()
node.me = node
del node
process_exit.install()
"""


@pytest.mark.parametrize(("name", "collected"), [("dbt", False), ("my_program.py", True)])
def test_only_dbts_command_line_skips_the_final_collections(tmp_path: Path, name: str,
                                                           collected: bool) -> None:
    program, mark = tmp_path / name, tmp_path / "mark"
    program.write_text(PROGRAM)
    subprocess.run([sys.executable, str(program), str(mark)], check=True)
    assert (mark.exists() and mark.read_text() == "collected") is collected


@pytest.mark.parametrize(("argv0", "expected"), [
    ("/venv/bin/dbt", True),
    ("dbt", True),
    (r"C:\venv\Scripts\dbt.exe", os.name == "nt"),
    ("/venv/lib/python3.11/site-packages/dbt/cli/main.py", True),
    ("/venv/bin/pytest", False),
    ("-c", False),
    ("", False),
    ("/home/me/dbt_project/run.py", False),
])
def test_dbt_command_line_is_recognised(argv0: str, expected: bool) -> None:
    assert is_dbt_command_line([argv0, "run"]) is expected
