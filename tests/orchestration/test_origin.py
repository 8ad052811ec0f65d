"""The orchestration records who caused each change, down the chain of steps it takes itself."""

from __future__ import annotations

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime


def test_follow_up_steps_are_system_steps_with_the_request_id_that_caused_them(engine: ApiRuntime) -> None:
    ctx = RequestContext(actor="alice", request_id="req-1")
    created = engine.facades.inventory.create_instance(ctx, "thing", {"name": "t1"})

    engine.processing.drain()  # the validation compile runs; its outcome and the auto steps follow

    log = engine.facades.inventory.instance_log(ctx, "thing", created.id)
    assert (log[0].trigger, log[0].actor) == ("create", "alice")
    assert len(log) > 1 and all(e.actor == "system" for e in log[1:])
    assert {e.request_id for e in log} == {"req-1"}
    compiles = engine.facades.compiles.list_compiles(ctx)
    assert compiles and {c.request_id for c in compiles} == {"req-1"}
    validation = next(c for c in compiles if c.kind == "validation")
    assert validation.actor == "alice"  # asked for by the create itself, in its transaction


def test_changes_without_a_caller_are_system_changes(engine: ApiRuntime) -> None:
    from lsm.orchestration import Create

    row = engine.orchestrator.execute(engine.context(None), Create("thing", {"name": "t2"}))

    log = engine.facades.inventory.instance_log(RequestContext.local(), "thing", row.id)
    assert [(e.actor, e.request_id) for e in log] == [("system", None)]
