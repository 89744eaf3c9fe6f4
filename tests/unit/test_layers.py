"""Imports go one way: macros -> impl -> (merge, sql) -> spark -> lake. Enforced here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dbt" / "adapters" / "ducklake"

# layer -> modules it must not import (by top-level name or package-relative prefix)
FORBIDDEN = {
    "lake": ("pyspark", "dbt.adapters.base", "dbt.adapters.sql", "dbt_common", "dbt.",
             "..spark", "..sql", "..merge", "..impl", "..connections"),
    "spark": ("dbt.adapters.base", "dbt.adapters.sql", "dbt_common", "..sql", "..merge",
              "..impl", "..connections"),
    "sql": ("dbt.adapters.base", "dbt.adapters.sql", "dbt_common", "..impl", "..connections"),
}


def imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.append("." * node.level + (node.module or ""))
    return out


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer: str) -> None:
    bad = []
    for path in sorted((PACKAGE / layer).glob("*.py")):
        for name in imports(path):
            if any(name == f or name.startswith(f) for f in FORBIDDEN[layer]) and not \
                    name.startswith("dbt.adapters.ducklake.lake"):
                bad.append(f"{path.name} imports {name}")
    assert not bad, bad
