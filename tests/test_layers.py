"""The layer contracts of docs/architecture.md §2 catch what they are written for.

The contracts themselves are ``[tool.importlinter]`` in pyproject.toml, checked by ``lint-imports``
in .ci/run. A contract that is always kept proves nothing, so these tests copy the source tree
to a temporary directory, plant one forbidden import in the copy and run ``lint-imports`` on it:
the untouched copy passes, every planted import fails, named by its contract.

What import-linter does not check here is checked below: that every package of ``lsm`` is in a
layer (its ``exhaustive`` option needs layers named relative to a container, and the contract
names them in full so that a rename of a package rewrites them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the packages the contracts name, each under its source root (docs/architecture.md §3)
SOURCES = {
    "lsm": ".",
    "lsm_selectors": "selectors",
    "lsm_lifecycles": "lifecycles",
    "lsm_handlers": "handlers",
}
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packages and of pyproject.toml, to plant imports in."""
    root = tmp_path_factory.mktemp("tree")
    for package, source in SOURCES.items():
        shutil.copytree(
            ROOT / source / package, root / source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def lint(root: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the tree at ``root`` (its copy first on the path, not the checkout)."""
    path = os.pathsep.join(str(root / source) for source in dict.fromkeys(SOURCES.values()))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", *(f"--contract={c}" for c in contracts)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_tree_keeps_every_contract(tree: Path) -> None:
    result = lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


#: (module planted in the copy, its import, the id of the contract it breaks)
PLANTS = [
    ("lsm/store/planted.py", "import lsm.api", "layers"),  # up the layers
    ("lsm/compiler/planted.py", "import lsm.deploy.agent", "layers"),  # between independent siblings
    ("lsm/facade/planted.py", "import lsm.services.loop", "layers"),  # the cycle this layering broke
    ("lsm/graph/planted.py", "import lsm.lifecycle.machine", "no-package-cycles"),  # within a layer
    ("lsm/catalog/planted.py", "from lsm import ServiceEntity", "no-root-import"),
    ("lsm/client/planted.py", "import lsm.store", "client"),
    ("lsm/selection/planted.py", "import lsm_selectors", "core-without-plugins"),
    ("handlers/lsm_handlers/planted.py", "import lsm.store", "plugins-use-public-api"),
    ("handlers/lsm_handlers/planted.py", "import lsm.deploy.agent", "plugins-use-public-api"),
    ("selectors/lsm_selectors/planted.py", "import lsm_handlers", "plugins-apart"),
]


@pytest.mark.parametrize(("where", "statement", "contract"), PLANTS, ids=[f"{w}:{s}" for w, s, _ in PLANTS])
def test_a_planted_import_breaks_its_contract(tree: Path, where: str, statement: str, contract: str) -> None:
    planted = tree / where
    planted.write_text(f'"""Planted by tests/test_layers.py."""\n\n{statement}\n')
    try:
        result = lint(tree, contract)
    finally:
        planted.unlink()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 broken" in result.stdout
    # the report names the planted module (a cycle: the packages it runs through)
    named = "- .graph -> .lifecycle" if contract == "no-package-cycles" else "planted"
    assert named in result.stdout, result.stdout


def unlayered(root: Path) -> list[str]:
    """The packages and modules directly under ``root/lsm`` that no layer of the contract names."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    named = {name for layer in contract["layers"] for name in re.split(r"[|:]", layer.replace(" ", ""))}
    children = {
        f"lsm.{path.stem}"
        for path in (root / "lsm").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    return sorted(children - named)


def test_every_package_of_lsm_is_in_a_layer() -> None:
    assert unlayered(ROOT) == [], "add it to the layers contract and to docs/architecture.md §2"


def test_a_planted_package_is_in_no_layer(tree: Path) -> None:
    planted = tree / "lsm" / "planted.py"
    planted.write_text('"""Planted by tests/test_layers.py."""\n')
    try:
        assert unlayered(tree) == ["lsm.planted"]
    finally:
        planted.unlink()
