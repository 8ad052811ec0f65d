"""Every silenced check says why: each ``# noqa`` and ``# type: ignore`` in the tree, and each
code that pyproject.toml tells ruff to ignore.

Why a test: a bare suppression outlives its reason, and the next reader cannot tell whether it
still holds. Unneeded ones are found by the tools themselves (ruff's RUF100, mypy's
``warn_unused_ignores`` under ``strict``); this checks that the needed ones are explained.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["lsm", "tests", "benchmarks", "examples", "handlers", "selectors", "lifecycles"]
#: a suppression, its codes, and what follows it on the line
SUPPRESSION = re.compile(
    r"#\s*(?:noqa(?::\s*[A-Z0-9]+(?:[,\s]+[A-Z0-9]+)*)?|type:\s*ignore(?:\[[\w\-, ]+\])?)(.*)$"
)


def _bare(line: str) -> bool:
    found = SUPPRESSION.search(line)
    return found is not None and len(found.group(1).strip(" #()")) < 3


def test_every_noqa_and_type_ignore_gives_a_reason() -> None:
    bare = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for source in SOURCES
        for path in sorted((ROOT / source).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if _bare(line)
    ]
    assert bare == [], "suppressions without a reason (add `  # why` after it):\n" + "\n".join(bare)


def test_the_pattern_tells_a_reason_from_none() -> None:
    ignore, noqa = "# type" + ": ignore", "# no" + "qa"  # split: not suppressions of this file
    assert _bare(f"x = 1  {ignore}[attr-defined]")
    assert _bare(f"x = 1  {noqa}: E402, F401")
    assert not _bare(f"x = 1  {ignore}[attr-defined]  # SQLModel declares no __table__")
    assert not _bare(f"x = 1  {noqa}: E402,F401  (registers lsm expert)")


def test_every_ruff_ignore_in_pyproject_has_a_comment_above_it() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    lint = tomllib.loads(text)["tool"]["ruff"]["lint"]
    lines = text.splitlines()
    codes = [*lint.get("ignore", []), *lint.get("per-file-ignores", {})]
    unexplained = []
    for code in codes:
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(f'"{code}"'))
        if not lines[at - 1].strip().startswith("#"):
            unexplained.append(code)
    assert unexplained == [], f"ruff ignores without a comment saying why: {unexplained}"
