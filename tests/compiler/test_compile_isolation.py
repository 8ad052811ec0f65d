"""Compiles run their model code in compile processes: limits that hold for code blocked in C
and for memory, other environments compiling meanwhile, and no process left behind.

The model is ``tests.models.blocking``; the time limits here are short and its blocks long
(``BLOCK_SECONDS``), so a limit that did not hold shows as a compile that never fails.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from lsm.compiler.isolation import CompilePool
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.models.blocking import BLOCK_SECONDS
from tests.waiting import wait_until

#: bounded waits, well below how long the model blocks: a limit that fails to hold fails the test
WAIT = BLOCK_SECONDS * 0.75


def _env(engine: ApiRuntime, name: str, **settings: object) -> RequestContext:
    engine.facades.environments.create_environment(
        RequestContext.local(), name, model="tests.models.blocking"
    )
    for key, value in settings.items():
        engine.facades.environments.set_setting(RequestContext.local(name), key, value)
    return RequestContext.local(name)


def _compile(engine: ApiRuntime, ctx: RequestContext, compile_id: str) -> tuple[str, dict[str, object]]:
    row = engine.facades.compiles.get_compile(ctx, compile_id)
    return row.status, row.report


def _state(engine: ApiRuntime, ctx: RequestContext, instance_id: str) -> str:
    return engine.facades.inventory.get_instance(ctx, "blocker", instance_id).state


def _refusal(engine: ApiRuntime, ctx: RequestContext, instance_id: str) -> str:
    errors = [e for e in engine.facades.inventory.instance_log(ctx, "blocker", instance_id) if e.is_error]
    assert errors, f"no error in the log of {instance_id}"
    return errors[-1].message


def _pool(engine: ApiRuntime) -> CompilePool:
    pool = engine.processing.runner.pool
    assert pool is not None
    return pool


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" in status.read_text()


def test_a_model_blocked_in_c_fails_at_the_time_limit_while_another_environment_compiles(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.things", embedded_worker=True)
    blocked = _env(engine, "blocked", compile_timeout=10.0)
    pool = _pool(engine)
    engine.facades.inventory.import_instances(blocked, "blocker", "up", [{"name": "b0", "mode": "sleep"}])
    stuck_export = engine.facades.compiles.request_compile(blocked, kind="full")
    stuck_order = engine.facades.inventory.create_instance(
        blocked, "blocker", {"name": "b1", "mode": "regex"}
    )
    wait_until(lambda: _compile(engine, blocked, stuck_export.id)[0] == "running", "the blocked export runs")
    started = set(pool.pids())

    # the default environment compiles while the blocked one's model sits in C
    healthy = [
        engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": f"t{i}"})
        for i in range(3)
    ]
    wait_until(
        lambda: all(
            engine.facades.inventory.get_instance(RequestContext.local(), "thing", t.id).state == "creating"
            for t in healthy
        ),
        "the healthy environment's orders are validated and exported",
        seconds=WAIT,
    )
    assert _compile(engine, blocked, stuck_export.id)[0] == "running", "the healthy environment waited"

    wait_until(
        lambda: _compile(engine, blocked, stuck_export.id)[0] == "failed", "the export fails", seconds=WAIT
    )
    report = _compile(engine, blocked, stuck_export.id)[1]
    error = report["error"]
    assert isinstance(error, dict)
    assert error["error"] == "compile_timeout"
    assert "did not finish within 10 s" in error["message"]
    assert "tests/models/blocking.py" in error["traceback"]  # where the process was when stopped
    # the order whose validation blocked in the regular expression engine is rejected
    wait_until(
        lambda: _state(engine, blocked, stuck_order.id) == "rejected", "the order is rejected", seconds=WAIT
    )
    assert "did not finish within 10 s" in _refusal(engine, blocked, stuck_order.id)

    # the killed processes were replaced: the environment keeps compiling
    fine = engine.facades.inventory.create_instance(blocked, "blocker", {"name": "b2"})
    wait_until(lambda: _state(engine, blocked, fine.id) == "creating", "a later order goes through")
    assert all(_gone(pid) for pid in started - set(pool.pids()))
    assert started - set(pool.pids()), "the processes stopped at the limit are still there"


def test_a_model_that_allocates_without_end_fails_at_the_memory_limit(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.things")
    hog = _env(engine, "hog", compile_memory_limit=512)
    engine.facades.inventory.import_instances(hog, "blocker", "up", [{"name": "h0", "mode": "allocate"}])
    export = engine.facades.compiles.request_compile(hog, kind="full")
    order = engine.facades.inventory.create_instance(hog, "blocker", {"name": "h1", "mode": "allocate"})
    healthy = engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": "t"})
    engine.processing.drain()

    status, report = _compile(engine, hog, export.id)
    error = report["error"]
    assert status == "failed" and isinstance(error, dict)
    assert error["error"] == "compile_memory_limit"
    assert "memory limit of 512 MiB" in error["message"]
    assert "MemoryError" in error["traceback"]
    assert _state(engine, hog, order.id) == "rejected"
    assert "memory limit of 512 MiB" in _refusal(engine, hog, order.id)
    assert (
        engine.facades.inventory.get_instance(RequestContext.local(), "thing", healthy.id).state == "creating"
    )


def test_a_compile_process_killed_mid_compile_is_replaced_and_the_compile_sent_again(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    engine = engine_factory("tests.models.things", embedded_worker=True)
    env = _env(engine, "killed", compile_timeout=float(BLOCK_SECONDS * 10))
    pool = _pool(engine)
    marker = tmp_path / "blocked-once"
    order = engine.facades.inventory.create_instance(env, "blocker", {"name": "k0", "mode": f"once:{marker}"})
    wait_until(lambda: marker.exists() and pool.busy_pids(), "the compile process blocks")
    [pid] = pool.busy_pids()
    os.kill(pid, signal.SIGKILL)

    # sent again to a fresh process, the model goes through: the order is validated, not lost
    wait_until(lambda: _state(engine, env, order.id) == "creating", "the order goes on", seconds=WAIT)
    assert pid not in pool.pids()


def test_a_compile_whose_process_dies_every_time_fails_cleanly(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.things", embedded_worker=True)
    env = _env(engine, "dying", compile_timeout=float(BLOCK_SECONDS * 10))
    pool = _pool(engine)
    engine.facades.inventory.import_instances(env, "blocker", "up", [{"name": "d0", "mode": "sleep"}])
    export = engine.facades.compiles.request_compile(env, kind="full")
    killed: list[int] = []

    def kill_busy() -> bool:
        for pid in pool.busy_pids():
            if pid not in killed:
                killed.append(pid)
                os.kill(pid, signal.SIGKILL)
        return _compile(engine, env, export.id)[0] == "failed"

    wait_until(kill_busy, "the compile fails after its processes died", seconds=WAIT)
    error = _compile(engine, env, export.id)[1]["error"]
    assert isinstance(error, dict)
    assert error["error"] == "compile_crashed"
    assert "exit code -9" in error["message"]
    assert len(killed) == 2  # sent once more after the first death, then failed


def test_stopping_the_engine_stops_every_compile_process(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory("tests.models.things", embedded_worker=True)
    env = _env(engine, "stopped", compile_timeout=float(BLOCK_SECONDS * 10))
    pool = _pool(engine)
    engine.facades.inventory.import_instances(env, "blocker", "up", [{"name": "s0", "mode": "sleep"}])
    engine.facades.compiles.request_compile(env, kind="full")
    wait_until(lambda: pool.busy_pids(), "a compile process is busy")
    pids = pool.pids()
    assert pids
    engine.processing.loop.stop(timeout=0.5)  # a running compile outlives the loop's wait: killed
    engine.stop()
    wait_until(lambda: all(_gone(pid) for pid in pids), "every compile process is gone")
    assert pool.pids() == []


def _tcp_inodes() -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        lines = Path(table).read_text().splitlines()[1:] if Path(table).exists() else []
        inodes.update(line.split()[9] for line in lines)
    return inodes


def test_a_compile_process_holds_no_database_connection(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory("tests.models.things")
    env = _env(engine, "clean")
    order = engine.facades.inventory.create_instance(env, "blocker", {"name": "c0"})
    engine.processing.drain()
    assert _state(engine, env, order.id) == "creating"
    pids = _pool(engine).pids()
    assert pids
    database = engine.db.url.rsplit("/", 1)[-1] if engine.db.is_sqlite else None
    tcp = _tcp_inodes()
    for pid in pids:
        targets = [os.readlink(link) for link in Path(f"/proc/{pid}/fd").iterdir()]
        assert not [t for t in targets if database and database in t], (
            "the SQLite file is open in a compile process"
        )
        sockets = {t.removeprefix("socket:[").rstrip("]") for t in targets if t.startswith("socket:")}
        assert not sockets & tcp, "a compile process holds a TCP connection"
