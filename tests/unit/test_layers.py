"""The package's layering, as an allow-list, and no import circles.

Layers, from the ground up: ``lake/`` (the DuckLake catalog and files, no Spark), ``spark/``
(reads, writes and commits with Spark; the only layer that opens transactions for users'
statements), ``sql/`` (statements parsed and dispatched to ``spark/``), and the dbt layer (the
package's top-level modules and the macros). Each layer imports only the layers below it and
itself; ``lake/`` imports neither Spark nor dbt, and ``spark/`` and ``sql/`` never import dbt.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dbt" / "adapters" / "ducklake"
ROOT = "dbt.adapters.ducklake"

# layer -> the package's layers it may import
ALLOWED = {
    "lake": {"lake"},
    "spark": {"lake", "spark"},
    "sql": {"lake", "spark", "sql"},
}
# layer -> third-party packages it must not import
FOREIGN = {
    "lake": ("pyspark", "dbt.", "dbt_common"),
    "spark": ("dbt.", "dbt_common"),
    "sql": ("dbt.", "dbt_common"),
}


def modules() -> dict[str, Path]:
    """Dotted module name (below the package) -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path) -> list[str]:
    """Every import of a module (``TYPE_CHECKING`` ones too), as absolute dotted names."""
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                anchor = package[:len(package) - (node.level - 1)] if node.level > 1 \
                    else package
                base = ".".join([ROOT, *anchor, *([node.module] if node.module else [])])
            out.append(base)
            # ``from . import x`` imports the module x
            out.extend(f"{base}.{alias.name}" for alias in node.names)
    return out


def internal(target: str, known: dict[str, Path]) -> str | None:
    """The package module an import refers to, if it is one of ours."""
    if not target.startswith(ROOT + "."):
        return None
    rest = target[len(ROOT) + 1:]
    while rest and rest not in known:
        rest = rest.rpartition(".")[0]
    return rest or None


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below(layer: str) -> None:
    known = modules()
    bad = []
    for name, path in known.items():
        if name.split(".")[0] != layer:
            continue
        for target in imports(name, path):
            module = internal(target, known)
            if module is not None:
                if module.split(".")[0] not in ALLOWED[layer]:
                    bad.append(f"{name} imports {module}")
            elif any(target == f.rstrip(".") or target.startswith(f) for f in FOREIGN[layer]):
                bad.append(f"{name} imports {target}")
    assert not bad, bad


def test_no_import_circles() -> None:
    known = modules()
    graph = {name: {m for t in imports(name, path) if (m := internal(t, known)) is not None
                    and m != name and not m == name.rpartition(".")[0]}
             for name, path in known.items()}
    # a package's __init__ only hands names on: its edges are its modules'
    faces = {name for name, path in known.items() if path.name == "__init__.py"}
    for name in graph:
        graph[name] = {m for m in graph[name] if m not in faces}
    circles = [sorted(c) for c in _components(graph) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            out.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return out
