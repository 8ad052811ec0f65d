"""A model that never returns fails its own compile at the time limit; other environments go on."""

from __future__ import annotations

import time
from collections.abc import Callable

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_a_hung_model_fails_its_compiles_while_other_environments_keep_compiling(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.things", embedded_worker=True)
    engine.facades.environments.create_environment(RequestContext.local(), "hung", model="tests.models.hang")
    # long enough for the healthy environment's work even with the spinning threads taking their
    # share of the interpreter lock (threads share one: the cost of a busy loop until its limit)
    engine.facades.environments.set_setting(RequestContext.local("hung"), "compile_timeout", 15.0)
    engine.facades.inventory.import_instances(
        RequestContext.local("hung"), "sleeper", "up", [{"name": "s0", "hang": True}]
    )
    stuck_export = engine.facades.compiles.request_compile(RequestContext.local("hung"), kind="full")
    stuck_order = engine.facades.inventory.create_instance(
        RequestContext.local("hung"), "sleeper", {"name": "s1", "hang": True}
    )
    healthy = [
        engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": f"t{i}"})
        for i in range(3)
    ]

    def done(env: str | None, compile_id: str) -> bool:
        return engine.facades.compiles.get_compile(RequestContext.local(env), compile_id).status in (
            "success",
            "failed",
        )

    # the default environment finishes its work while the hung model spins in another thread
    assert wait_for(
        lambda: all(
            engine.facades.inventory.get_instance(RequestContext.local(), "thing", t.id).state == "creating"
            for t in healthy
        )
    )
    assert not done("hung", stuck_export.id), "the healthy environment waited for the hung one"
    assert wait_for(lambda: done("hung", stuck_export.id))
    failed = engine.facades.compiles.get_compile(RequestContext.local("hung"), stuck_export.id)
    assert failed.status == "failed"
    assert failed.report["error"]["error"] == "compile_timeout"
    assert "tests/models/hang.py" in failed.report["error"]["traceback"]  # where the model was stuck
    # the order whose validation hung is rejected, with the reason in its log
    assert wait_for(
        lambda: (
            engine.facades.inventory.get_instance(
                RequestContext.local("hung"), "sleeper", stuck_order.id
            ).state
            == "rejected"
        )
    )
    refusal = [
        e
        for e in engine.facades.inventory.instance_log(
            RequestContext.local("hung"), "sleeper", stuck_order.id
        )
        if e.is_error
    ]
    assert refusal and "did not finish within 15 s" in refusal[-1].message
