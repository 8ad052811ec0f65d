"""benchmarks/handlers.py still runs at a tiny size and deploys what it says (no time asserted)."""

from __future__ import annotations

import json

import pytest

from benchmarks.handlers import main


def test_the_handler_benchmark_runs_both_handlers_twice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--null", "20", "--files", "5"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["handler"], r["resources"], r["deploy"]) for r in rows] == [
        ("std::Null", 20, "first"),
        ("std::Null", 20, "in_state"),
        ("std::File", 5, "first"),
        ("std::File", 5, "in_state"),
    ]
