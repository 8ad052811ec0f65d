"""The benchmark harness still runs and still measures the right thing, at a tiny size.

Why: the harness drives the engine through its stage methods and its queue; when those move,
the harness must break here, in the test suite, and not in the middle of a 100k-network run.
These tests assert behaviour only (document shape, resource counts, sets written), never a
time: performance is measured by ``python -m benchmarks``, never asserted (docs/architecture.md §8).
Each runs on every configured backend (SQLite, and PostgreSQL with ``LSM_TEST_POSTGRES_URL``).
"""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.cli import main, parse_sizes
from benchmarks.isolate import SizeJob, run_in_subprocess
from benchmarks.stats import percentile

NETWORKS = 20
HOSTS = 5
RESOURCES = NETWORKS * HOSTS + 1
REPO = Path(__file__).resolve().parent.parent


def _database_url(backend: str) -> str | None:
    return None if backend == "sqlite" else os.environ["LSM_TEST_POSTGRES_URL"]


def _run(tmp_path: Path, backend: str, *argv: str) -> dict[str, Any]:
    out = tmp_path / "result.json"
    url = _database_url(backend)
    options = ["--sizes", str(NETWORKS), "--hosts", str(HOSTS), "--in-process", "--json", str(out)]
    options += ["--workdir", str(tmp_path / "db")] + (["--database-url", url] if url else [])
    assert main([*argv, *options]) == 0
    doc: dict[str, Any] = json.loads(out.read_text())
    assert doc["backend"] == ("sqlite" if backend == "sqlite" else "postgresql")
    assert doc["command"][-len(argv) - len(options) :] == [*argv, *options]
    assert {"cpu_count", "python"} <= doc["machine"].keys()
    assert doc["parameters"]["sizes"] == [NETWORKS]
    assert isinstance(doc["checks"], list)
    assert len(doc["results"]) == 1
    result: dict[str, Any] = doc["results"][0]
    assert result["size"] == NETWORKS
    assert result["expected_resources"] == RESOURCES
    assert result["peak_rss_mb"] > 0
    assert "commit" in result["code"]
    return result


def test_full_scenario_refines_every_network_and_the_second_compile_rewrites_one_set(
    tmp_path: Path, backend: str
) -> None:
    result = _run(tmp_path, backend, "full")
    stages = result["stages"]
    assert stages["resources"] == RESOURCES
    assert stages["instances"] == NETWORKS
    assert stages["sets"] == stages["sets_replaced"] == NETWORKS
    for key in ("load_s", "refine_s", "request_s", "export_s", "total_s"):
        assert stages[key] >= 0
    end_to_end = result["end_to_end"]
    first, second, complete = end_to_end["first"], end_to_end["second"], end_to_end["complete"]
    assert first["ran_as"] == second["ran_as"] == complete["ran_as"] == "full"
    assert first["resources"] == first["version_resources"] == RESOURCES
    assert first["sets_replaced"] == NETWORKS
    assert first["complete"] == "first compile of the environment"
    # the second refines only the changed network (its hosts + the shared agent config) ...
    assert second["complete"] is None
    assert second["incremental"]["trees_refined"] == 1
    assert second["incremental"]["sets_kept"] == NETWORKS - 1
    assert second["version_resources"] == RESOURCES + 1  # the changed network got one more host
    assert second["sets_replaced"] == 1
    # ... the complete one refines every network and still writes only the changed set
    assert complete["complete"] == "requested (incremental: false)"
    assert complete["resources"] == complete["version_resources"]
    assert complete["sets_replaced"] == 1
    assert {"select", "refine_total", "export", "total", "request", "overhead"} <= first["timings"].keys()


def test_partial_scenario_updates_one_network_per_sample(tmp_path: Path, backend: str) -> None:
    result = _run(tmp_path, backend, "partial", "--repeat", "2")
    assert result["base"]["resources"] == RESOURCES
    assert len(result["samples"]) == 2
    for sample in result["samples"]:
        assert sample["ran_as"] == "partial"
        assert sample["sets_replaced"] == 1
        assert sample["resources"] == sample["hosts"] + 1  # its hosts plus the shared agent config
    assert {"median", "p95"} <= result["summary"]["wall_s"].keys()
    assert "export" in result["summary"]


def test_a_size_runs_in_its_own_process_and_can_be_profiled(tmp_path: Path) -> None:
    job = SizeJob("partial", 5, repeat=1, workdir=tmp_path, profile_dir=tmp_path / "profiles")
    result = run_in_subprocess(job)
    assert "error" not in result, result.get("traceback")
    assert result["samples"][0]["sets_replaced"] == 1
    assert result["samples"][0]["profiled"] is True
    stats = pstats.Stats(result["profile"])
    assert any(name == "run_batch" for (_file, _line, name) in stats.stats)  # type: ignore[attr-defined]  # pstats.Stats.stats is not in the stubs


def test_a_failed_size_is_an_error_entry_not_an_exception(tmp_path: Path) -> None:
    result = run_in_subprocess(SizeJob("partial", 5, repeat=0, workdir=tmp_path))
    assert "repeat must be at least 1" in result["error"]


def test_help_names_every_scenario() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert all(name in completed.stdout for name in ("full", "partial", "e2e", "deploy", "orders", "faults"))


def test_sizes_accept_thousands_shorthand_and_refuse_nonsense() -> None:
    assert parse_sizes("1000,5k,100_000") == [1000, 5000, 100_000]
    with pytest.raises(Exception, match="positive"):
        parse_sizes("0")


def test_p95_is_a_sample_that_happened() -> None:
    assert percentile([3.0, 1.0, 2.0], 95) == 3.0
    assert percentile(list(map(float, range(1, 31))), 95) == 29.0


def test_e2e_scenario_settles_and_verifies_every_update_over_http(tmp_path: Path, backend: str) -> None:
    """Seed, a real ``lsm server``, concurrent PATCHes, completion read from the compile reports."""
    out = tmp_path / "e2e.json"
    url = _database_url(backend)
    argv = ["e2e", "--routers", "3", "--updates", "6", "--timeout", "120", "--poll", "0.1"]
    argv += ["--json", str(out), "--workdir", str(tmp_path / "work")] + (
        ["--database-url", url] if url else []
    )
    assert main(argv) == 0
    doc: dict[str, Any] = json.loads(out.read_text())
    assert doc["scenario"] == "e2e"
    assert "commit" in doc["code"]
    result: dict[str, Any] = doc["results"][0]
    assert "error" not in result, result.get("traceback")
    assert "commit" in result["code"]
    assert result["ports"] == 12
    assert result["accepted"] == 6 and result["errors"] == {}
    assert result["verified"]["verified"] == 6
    assert result["settled"]["states"] == {"update_inprogress": 6}
    assert result["compiles"]["validation"]["success"] == 6
    assert result["compiles"]["partial"]["success"] == 6  # one exporting request per update, merged or not
    assert 1 <= result["exporting_runs"] <= 6
    assert len(result["export_per_update"]) == 6
    assert {"p50", "p95", "p99", "max"} <= result["patch_latency_s"].keys()
    assert {"p50", "p95"} <= result["completion_s"].keys()
    assert set(result["exit_codes"]) == {"server"}
    # the same burst against a do-nothing endpoint: every PATCH answered, its latency beside
    assert result["floor"]["errors"] == {}
    assert 0 < result["floor"]["patch_latency_s"]["p50"] <= result["floor"]["patch_latency_s"]["max"]
    assert not list((tmp_path / "work").iterdir())  # the database and the logs are gone


def test_the_floor_endpoint_answers_every_patch_and_reads_each_body(tmp_path: Path) -> None:
    """The do-nothing endpoint answers 200 to a PATCH whose body comes in several parts."""
    import asyncio

    import httpx

    from benchmarks.floor import app, measure_floor

    async def parts() -> Any:
        yield b'{"a"'
        yield b": 1}"

    async def patch() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://floor") as client:
            return await client.patch("/lsm/v1/service_inventory/port/x", content=parts())

    answer = asyncio.run(patch())
    assert answer.status_code == 200 and answer.json() == {"ok": True}
    floor = measure_floor(25, 10, tmp_path, timeout=60)
    assert floor["errors"] == {}
    latency = floor["patch_latency_s"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]


def test_e2e_with_the_compiles_in_a_worker_process_beside_an_api_only_server(
    tmp_path: Path, backend: str
) -> None:
    """``lsm server --no-worker`` answers the PATCHes; the one ``lsm worker`` runs every compile."""
    out = tmp_path / "e2e.json"
    url = _database_url(backend)
    argv = ["e2e", "--routers", "2", "--updates", "5", "--timeout", "120", "--poll", "0.1"]
    argv += ["--no-server-worker", "--workers", "1", "--json", str(out), "--workdir", str(tmp_path / "w")]
    assert main(argv + (["--database-url", url] if url else [])) == 0
    result: dict[str, Any] = json.loads(out.read_text())["results"][0]
    assert "error" not in result, result.get("traceback")
    assert result["server_worker"] is False
    assert result["accepted"] == 5 and result["verified"]["verified"] == 5
    assert result["settled"]["states"] == {"update_inprogress": 5}
    assert result["compiles"]["partial"]["success"] == 5  # the server compiles nothing: the worker did
    assert set(result["exit_codes"]) == {"server", "worker-0"}


def test_e2e_drain_queues_every_update_then_the_workers_drain_it_each_request_once(
    tmp_path: Path, backend: str
) -> None:
    """``--drain``: the API alone takes every PATCH (validations stay queued), then the workers
    start; both workers of PostgreSQL show up in the per-worker counts of what they ran."""
    out = tmp_path / "e2e.json"
    url = _database_url(backend)
    workers = 1 if url is None else 2
    argv = ["e2e", "--drain", "--routers", "5", "--updates", "16", "--timeout", "120", "--poll", "0.1"]
    argv += ["--workers", str(workers), "--json", str(out), "--workdir", str(tmp_path / "w")]
    assert main(argv + (["--database-url", url] if url else [])) == 0
    result: dict[str, Any] = json.loads(out.read_text())["results"][0]
    assert "error" not in result, result.get("traceback")
    assert (result["mode"], result["server_worker"], result["workers"]) == ("drain", False, workers)
    assert result["queued_before_drain"] == {"queued_validations": 16}
    assert result["accepted"] == 16 and result["verified"]["verified"] == 16
    assert result["ran_once"]["validated_once"] == 16
    assert result["ran_once"]["new_versions"] == result["exporting_runs"] >= 1
    assert result["compiles"]["validation"]["success"] == 16
    assert result["compiles"]["partial"]["success"] == 16
    per_worker = result["per_worker"]
    assert set(per_worker) <= {f"worker-{i}" for i in range(workers)}
    assert sum(c.get("validation_requests", 0) for c in per_worker.values()) == 16
    assert sum(c.get("partial_requests", 0) for c in per_worker.values()) == 16
    assert 1 <= sum(c.get("validation_claims", 0) for c in per_worker.values()) <= 16
    assert result["updates_per_s"] > 0 and result["first_claim_s"] >= 0
    assert set(result["exit_codes"]) == {"server", *(f"worker-{i}" for i in range(workers))}


def test_e2e_stops_the_server_and_reports_an_error_when_the_run_can_not_be_measured(tmp_path: Path) -> None:
    out = tmp_path / "e2e.json"
    argv = ["e2e", "--routers", "1", "--updates", "5", "--json", str(out), "--workdir", str(tmp_path)]
    assert main(argv) == 1  # 5 updates but only 4 ports
    result = json.loads(out.read_text())["results"][0]
    assert "more than the 4 ports" in result["error"]
    assert all(code is not None for code in result["exit_codes"].values())


def test_the_deploy_scenario_deploys_everything_and_schedules_one_set(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "deploy.json"
    url = _database_url(backend)
    argv = [
        "deploy",
        "--resources",
        "60",
        "--agents",
        "3",
        "--bases",
        "30",
        "--shrink-bases",
        "40",
        "--repeat",
        "2",
        "--files",
        "12",
        "--json",
        str(out),
    ]
    argv += ["--workdir", str(tmp_path / "db")] + (["--database-url", url] if url else [])
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["first_deploy"]["resources"] == 60 and doc["first_deploy"]["resources_per_s"] > 0
    assert doc["first_deploy"]["type"] == "std::Null"
    assert doc["first_deploy_files"]["type"] == "std::File" and doc["first_deploy_files"]["resources"] == 12
    assert [(row["kind"], row["base_sets"]) for row in doc["scheduling"]] == [("change", 30), ("removal", 40)]


def test_the_deploy_model_uses_the_bundled_null_handler() -> None:
    from lsm_handlers.null import NullHandler

    from lsm.deploy.registry import HandlerRegistry
    from lsm.model.loader import load_model

    model = load_model(str(REPO / "benchmarks" / "deploy_model.py"))
    assert HandlerRegistry(model.handlers).handler_class("std::Null") is NullHandler


def test_the_orders_scenario_takes_every_order_up_over_http(backend: str, tmp_path: Path) -> None:
    """A real ``lsm server``, sequential then concurrent orders, ``up`` read from the event stream."""
    out = tmp_path / "orders.json"
    url = _database_url(backend)
    argv = ["orders", "--sequential", "3", "--concurrent", "8", "--timeout", "120", "--json", str(out)]
    argv += ["--workdir", str(tmp_path / "work")] + (["--database-url", url] if url else [])
    assert main(argv) == 0
    result = json.loads(out.read_text())["result"]
    assert "error" not in result, result.get("logs")
    assert result["sequential"]["orders"] == 3 and len(result["sequential"]["latencies_ms"]) == 3
    assert result["sequential"]["p50_ms"] > 0
    concurrent = result["concurrent"]
    assert concurrent["accepted"] == concurrent["up"] == 8 and concurrent["all_up"] is True
    assert concurrent["orders_per_s"] > 0 and concurrent["error"] is None
    assert concurrent["order_errors"] == {} and concurrent["retried"] >= 0
    assert result["events_read"] > 0
    assert set(result["exit_codes"]) == {"server"}
    assert not list((tmp_path / "work").iterdir())  # the database and the logs are gone


def test_an_order_is_retried_after_a_cut_read_and_a_503_under_one_idempotency_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The orders benchmark retries what a client must (a transport error, a 503) and never
    orders twice: every try carries the same ``Idempotency-Key``; other answers are not retried."""
    import asyncio

    import httpx

    from benchmarks import orders
    from benchmarks.harness import BenchmarkError

    monkeypatch.setattr(orders, "FIRST_PAUSE_S", 0.0)
    answers: list[Any] = [httpx.ReadError("cut"), httpx.Response(503, headers={"Retry-After": "0"})]
    keys: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["Idempotency-Key"])
        answer = answers.pop(0) if answers else httpx.Response(200, json={"id": "the-one"})
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def order(name: str, tries: list[int]) -> str:
        async with httpx.AsyncClient(base_url="http://bench", transport=httpx.MockTransport(serve)) as client:
            return await orders._order(client, name, tries)

    tries: list[int] = []
    assert asyncio.run(order("a", tries)) == "the-one"
    assert tries == [3] and keys == ["bench-a"] * 3
    answers[:] = [httpx.Response(400, json={"error": "invalid_input"})]
    with pytest.raises(BenchmarkError, match="HTTP 400"):
        asyncio.run(order("b", tries))
    assert keys[3:] == ["bench-b"]
