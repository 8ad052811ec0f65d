"""tests/netlab.py itself: the fixture cleans up after a failing test, and says why it skips."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.netlab import namespaces, netns_refusal

REPO = Path(__file__).resolve().parents[2]


def test_a_failing_test_leaves_no_namespace_behind(tmp_path: Path) -> None:
    if netns_refusal():
        pytest.skip(str(netns_refusal()))
    record = tmp_path / "prefix"
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent(
            f"""
            import subprocess
            from tests.netlab import netns_prefix
            __all__ = ["netns_prefix"]

            def test_fails_after_making_namespaces(netns_prefix):
                open({str(record)!r}, "w").write(netns_prefix)
                for name in ("a", "b"):
                    subprocess.run(["ip", "netns", "add", netns_prefix + name], check=True)
                assert False, "the test fails with its namespaces in place"
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_inner.py")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    prefix = record.read_text()
    assert prefix.startswith("lsmt-")
    assert not [name for name in namespaces() if name.startswith(prefix)]


def test_without_the_capabilities_the_reason_to_skip_says_what_is_refused(tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed: can not drop capabilities")
    done = subprocess.run(
        [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--",
         sys.executable, "-c", "from tests.netlab import netns_refusal; print(netns_refusal())"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("`ip netns add` is refused here (needs root and kernel support)")
