"""What importing a module pulls in, asked of a fresh interpreter (this one has imported
everything the tests use)."""

from __future__ import annotations

import ast
import subprocess
import sys


def imported_by(module: str, condition: str) -> list[str]:
    """The modules a fresh interpreter holds after ``import module`` for which the Python
    expression ``condition`` (over the module name ``m``) is true."""
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if {condition}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return ast.literal_eval(out)
