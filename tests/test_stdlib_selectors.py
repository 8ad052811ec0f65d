"""The repository's ``selectors/`` source root must never shadow the standard library's ``selectors``.

asyncio (and so httpx, uvicorn) imports ``selectors``; with the repository root on ``sys.path``
(``python -m pytest``, ``python -c`` from the root) a ``selectors/__init__.py`` would win. The
bundled selectors live in ``selectors/lsm_selectors`` and are found by entry point instead.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_selectors_source_root_is_not_a_package() -> None:
    assert (ROOT / "selectors" / "lsm_selectors" / "__init__.py").is_file()
    assert not (ROOT / "selectors" / "__init__.py").exists()


def test_import_selectors_gives_the_stdlib_module_in_this_process() -> None:
    import selectors

    assert hasattr(selectors, "DefaultSelector")
    assert Path(selectors.__file__ or "").parent == Path(sysconfig.get_paths()["stdlib"])


def test_import_selectors_and_asyncio_from_the_repository_root() -> None:
    code = (
        "import sys, selectors, asyncio; selectors.DefaultSelector; "
        "assert sys.path[0] == '' ; "
        "import lsm_selectors.relation_closure; print(selectors.__file__)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).parent == Path(sysconfig.get_paths()["stdlib"])


def test_an_asyncio_event_loop_runs_with_the_repository_root_first_on_the_path() -> None:
    code = "import asyncio; print(asyncio.run(asyncio.sleep(0, result='ok')))"  # uses DefaultSelector
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
