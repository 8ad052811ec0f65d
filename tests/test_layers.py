"""The layer contract of docs/architecture.md §2, checked over the import statements of every module.

Imports point down only: a module may import from its own layer or any layer below it. The
client imports nothing of the server side; the core never imports the bundled plugin packages
(``lsm_selectors``, ``lsm_lifecycles``, ``lsm_handlers``): it finds them by entry point.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LSM = Path(__file__).resolve().parent.parent / "lsm"

RANK = {
    "errors": 0,
    "schemas": 0,
    "gc_pause": 0,
    "interrupt": 0,
    "inventory": 1,
    "catalog": 2,
    "lifecycle": 2,
    "graph": 2,
    "model": 2,
    "selection": 3,
    "desired_state": 3,
    "orchestration": 4,
    "compiler": 5,
    "deploy": 5,
    "discovery": 5,
    "services": 6,
    "facade": 6,
    "api": 7,
    #: the composition root builds the app: above the api, below the commands that run it
    "runtime": 8,
    "cli": 9,
    "quickstart": 9,
    "testing": 9,
    "client": 9,
}


def _layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


MODULES = sorted(p for p in LSM.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(LSM)))
def test_imports_point_down(path: Path) -> None:
    relative = path.relative_to(LSM)
    own = relative.parts[0].removesuffix(".py")
    if own == "__init__":
        return  # lsm/__init__.py is the public facade: it re-exports every layer
    assert own in RANK, f"lsm/{relative} is in no layer: add it to RANK and to docs/architecture.md §2"
    problems = []
    for line, name in _imports(path):
        if name.startswith(("lsm_selectors", "lsm_lifecycles", "lsm_handlers")):
            problems.append(f"line {line}: the core imports plugin package {name}")
            continue
        if not name.startswith("lsm."):
            continue
        target = _layer(name)
        if target in ("", "__init__") or target not in RANK:
            problems.append(f"line {line}: imports {name} (import from the layer's own package)")
            continue
        if own == "client" and target not in ("client", "errors", "schemas"):
            problems.append(f"line {line}: the client imports server-side {name}")
        elif RANK[target] > RANK[own]:
            problems.append(f"line {line}: {own} (layer {RANK[own]}) imports {name} (layer {RANK[target]})")
    assert problems == [], f"lsm/{relative}:\n" + "\n".join(problems)
