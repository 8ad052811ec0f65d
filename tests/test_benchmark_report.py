"""The benchmark document's verdicts and machine figures (``benchmarks.report``).

Why: a run of issue 7's burst must say, in its own document, which targets it met; a check that
read the wrong field, or compared the wrong way round, would report a miss as a pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import report


def burst(**overrides: Any) -> dict[str, Any]:
    """The result fields of one ``e2e`` run that the checks read: issue 7's scenario."""
    result: dict[str, Any] = {
        "routers": 10_000,
        "updates": 1_000,
        "concurrency": 1_000,
        "updates_per_s": 520.0,
        "patch_latency_s": {"p50": 0.040, "p95": 0.2, "p99": 0.300, "max": 0.4},
    }
    return {**result, **overrides}


def verdicts(checks: list[dict[str, Any]]) -> dict[str, bool]:
    return {c["name"].split(" during")[0].split(",")[0]: c["ok"] for c in checks}


def test_the_burst_on_sqlite_is_checked_for_its_rate_and_its_latencies() -> None:
    checks = report.checks("e2e", "sqlite", [burst()])
    assert verdicts(checks) == {
        "e2e updates/s": True,
        "e2e PATCH latency p50": True,
        "e2e PATCH latency p99": False,
    }
    rate = next(c for c in checks if c["name"].startswith("e2e updates/s"))
    assert (rate["value"], rate["limit"], rate["unit"]) == (520.0, 500.0, "/s")


@pytest.mark.parametrize(
    ("rate", "p50", "p99", "expected"),
    [
        (499.9, 0.050, 0.250, (False, True, True)),
        (500.0, 0.0501, 0.2501, (True, False, False)),
        (250.0, 1.7, 2.9, (False, False, False)),
    ],
)
def test_a_rate_must_reach_its_target_and_a_latency_must_stay_under_its_own(
    rate: float, p50: float, p99: float, expected: tuple[bool, bool, bool]
) -> None:
    result = burst(updates_per_s=rate, patch_latency_s={"p50": p50, "p95": p50, "p99": p99, "max": p99})
    checks = report.checks("e2e", "sqlite", [result])
    assert tuple(c["ok"] for c in checks) == expected


def test_on_postgresql_only_the_latencies_are_checked() -> None:
    checks = report.checks("e2e", "postgresql", [burst(updates_per_s=10.0)])
    assert sorted(verdicts(checks)) == ["e2e PATCH latency p50", "e2e PATCH latency p99"]


@pytest.mark.parametrize(
    "result",
    [
        burst(routers=3, updates=6, concurrency=6),  # a smoke run is not the target's scenario
        burst(concurrency=20),  # nor is a gentler load
        burst(mode="drain"),  # the drain times the workers alone
        {"error": "BenchmarkError: the server did not start"},
    ],
)
def test_other_runs_get_no_verdict(result: dict[str, Any]) -> None:
    assert report.checks("e2e", "sqlite", [result]) == []


def test_the_machine_figures_carry_a_reference_loop() -> None:
    reference = report.machine_info(None)["reference_loop_ms"]
    assert 0 < reference["best"] <= reference["median"]
    quick = report.reference_loop(rounds=3)
    assert 0 < quick["best"] <= quick["median"]
