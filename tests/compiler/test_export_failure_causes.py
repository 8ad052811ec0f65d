"""Every cause of a failed exporting compile reaches the instances that waited on it: a time
limit, a worker that died on it too often, and a failed full compile over many instances; a
state without an ``export_failed`` transfer logs the failure and stays. Both backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlmodel import col

from lsm.errors import ConfigurationError
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime, WorkerProcessing
from lsm.store.instances import repository as repo
from lsm.store.metric_counters import lsm_metric_failed_export
from lsm.store.tables import CompileRow, EventRow, InstanceRow
from tests.models import claims
from tests.owners import dead_owner
from tests.waiting import wait_until

HUNG = RequestContext.local("hung")
LOCAL = RequestContext.local()


def failure_lines(engine: ApiRuntime, ctx: RequestContext, entity: str, ref: str) -> list[str]:
    return [
        e.message
        for e in engine.facades.inventory.instance_log(ctx, entity, ref)
        if e.trigger == "export_failed"
    ]


def test_an_exporting_compile_past_its_time_limit_fails_the_instances_it_was_to_export(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.things", embedded_worker=True)
    engine.facades.environments.create_environment(LOCAL, "hung", model="tests.models.hang")
    engine.facades.environments.set_setting(HUNG, "compile_timeout", 2.0)
    (sleeper,) = engine.facades.inventory.import_instances(
        HUNG, "sleeper", "creating", [{"name": "s", "hang": True}]
    )
    stuck = engine.facades.compiles.request_compile(HUNG, kind="full")
    wait_until(
        lambda: engine.facades.inventory.get_instance(HUNG, "sleeper", sleeper).state == "failed",
        "the sleeper's export times out and it moves to failed",
    )
    (line,) = failure_lines(engine, HUNG, "sleeper", sleeper)
    assert f"exporting compile {stuck.id} failed: compile_timeout" in line
    assert "compile_timeout" in line and "retry" in line
    cause = engine.facades.inventory.diagnose(HUNG, "sleeper", sleeper).cause[0]
    assert (cause.kind, cause.details["error"]) == ("failed_export", "compile_timeout")


def test_an_export_whose_worker_died_too_often_fails_the_instances_it_was_to_export(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.things")  # compiles run when the test drains
    (thing,) = engine.facades.inventory.import_instances(LOCAL, "thing", "creating", [{"name": "t"}])
    processing = engine.processing
    assert isinstance(processing, WorkerProcessing)
    queue = processing.compiles.queue
    export = engine.facades.compiles.request_compile(LOCAL, kind="full")
    env = engine.facades.environments.get_environment(LOCAL).id
    for n in range(queue.max_attempts):  # claimed, and its worker killed, every time
        claimed = queue.claim_exporting(env, queue.new_owner(dead_owner(f"dead-{n}")), batched=True)
        assert claimed is not None and claimed.leader.id == export.id
    processing.drain()  # the next claim takes it over: failed, written on the instance
    assert engine.facades.compiles.get_compile(LOCAL, export.id).report["error"]["error"] == "worker_died"
    assert engine.facades.inventory.get_instance(LOCAL, "thing", thing).state == "failed"
    (line,) = failure_lines(engine, LOCAL, "thing", thing)
    assert f"exporting compile {export.id} failed: worker_died" in line
    with engine.core.db.read() as session:
        counted = dict(
            session.execute(select(lsm_metric_failed_export.c.error, lsm_metric_failed_export.c.count)).all()
        )
    assert counted == {"worker_died": 1}


def test_a_failed_full_compile_moves_every_waiting_instance_and_logs_the_rest(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """Instances in creating, update_inprogress, rollback and deleting move to their failure
    state; one in failed (no export_failed transfer) gets the line and stays; one whose desired
    state was exported already is not touched."""
    engine = engine_factory("tests.models.claims")  # compiles run when the test drains
    inventory = engine.facades.inventory
    (exported,) = inventory.import_instances(LOCAL, "claim", "creating", [{"name": "exported", "path": "/e"}])
    engine.facades.compiles.request_compile(LOCAL, kind="full")
    engine.processing.drain()  # its desired state has a record now (no agent: it stays creating)
    waiting = {
        state: inventory.import_instances(LOCAL, "claim", state, [{"name": state, "path": f"/{state}"}])[0]
        for state in ("creating", "update_inprogress", "rollback", "deleting", "failed")
    }
    claims.BROKEN.add("rollback")
    try:
        failed = engine.facades.compiles.request_compile(LOCAL, kind="full")
        engine.processing.drain()
    finally:
        claims.BROKEN.clear()
    assert engine.facades.compiles.get_compile(LOCAL, failed.id).status == "failed"
    moved = {state: inventory.get_instance(LOCAL, "claim", ref).state for state, ref in waiting.items()}
    assert moved == {
        "creating": "failed",
        "update_inprogress": "update_failed",
        "rollback": "failed",
        "deleting": "delete_failed",
        "failed": "failed",
    }
    for ref in waiting.values():
        (line,) = failure_lines(engine, LOCAL, "claim", ref)
        assert f"exporting compile {failed.id} failed: model_error" in line
    assert failure_lines(engine, LOCAL, "claim", exported) == []
    assert inventory.get_instance(LOCAL, "claim", exported).state == "creating"


FAILING_OVER_MODEL = """
from collections.abc import Iterator

import lsm


class Gizmo(lsm.ServiceEntity):
    name: str


gizmo = lsm.Binding(Gizmo, lifecycle="failing_over", identity="name")


class Cog(lsm.Resource, type="test::Cog", id_attribute="name"):
    name: str


@lsm.implementation(gizmo)
def cogs(g: lsm.Service[Gizmo]) -> Iterator[lsm.Resource]:
    if g.name.startswith("bad"):
        raise ValueError(f"gizmo {g.name} is bad")
    yield Cog(agent="a", name=g.name)
"""


def test_a_failure_transfer_with_an_operation_and_an_auto_follow_up_takes_the_general_path(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    model = tmp_path / "gizmos.py"
    model.write_text(FAILING_OVER_MODEL)
    engine = engine_factory(str(model))
    (bad,) = engine.facades.inventory.import_instances(LOCAL, "gizmo", "start", [{"name": "bad1"}])
    failed = engine.facades.compiles.request_compile(LOCAL, kind="full")
    engine.processing.drain()
    instance = engine.facades.inventory.get_instance(LOCAL, "gizmo", bad)
    assert instance.state == "parked" and instance.active_attributes is None  # cleared on the way
    steps = [
        (e.source, e.target, e.trigger, e.compile_id)
        for e in engine.facades.inventory.instance_log(LOCAL, "gizmo", bad)
        if e.trigger != "import"
    ]
    assert steps == [("start", "broken", "export_failed", failed.id), ("broken", "parked", "auto", None)]


BAD_META_MODEL = """
from collections.abc import Iterator

import lsm


class Gizmo(lsm.ServiceEntity):
    name: str


gizmo = lsm.Binding(Gizmo, lifecycle="simple", identity="name")


class Cog(lsm.Resource, type="test::Cog", id_attribute="name"):
    name: str


@lsm.implementation(gizmo)
def cogs(g: lsm.Service[Gizmo]) -> Iterator[lsm.Resource]:
    meta = lsm.Meta(limit=5.0) if g.name.startswith("bad") else lsm.Meta()  # no burst: never acts
    yield Cog(agent="a", name=g.name, meta=meta)
"""


def test_an_export_refused_for_an_invalid_metaparameter_fails_the_instance_it_was_to_export(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    """The metaparameters are checked when a version is stored, so the validation passes and
    the export is refused: the waiting instance moves to failed, its line names the compile,
    the kind and the resource."""
    model = tmp_path / "gizmos.py"
    model.write_text(BAD_META_MODEL)
    engine = engine_factory(str(model))
    bad = engine.facades.inventory.create_instance(LOCAL, "gizmo", {"name": "bad1"}).id
    engine.processing.drain()  # the validation, then the export it queues

    assert engine.facades.inventory.get_instance(LOCAL, "gizmo", bad).state == "failed"
    (line,) = failure_lines(engine, LOCAL, "gizmo", bad)
    compiles = engine.facades.compiles.list_compiles(LOCAL, limit=100)
    (failed,) = [c for c in compiles if c.status == "failed"]
    assert failed.report["error"]["error"] == "invalid_metaparameter"
    assert f"exporting compile {failed.id} failed: invalid_metaparameter" in line
    assert "resource test::Cog[a,name=bad1]" in line and "burst" in line
    cause = engine.facades.inventory.diagnose(LOCAL, "gizmo", bad).cause[0]
    assert (cause.kind, cause.details["error"]) == ("failed_export", "invalid_metaparameter")


def point_model(engine: ApiRuntime, model: Path) -> None:
    """Point the environment at ``model`` as another server would (no load check) and drop
    this engine's cached context of it."""
    with engine.core.db.write() as session:
        row = repo.get_environment(session, engine.environments.default)
        row.model = str(model)
        session.add(row)
        env_id = row.id
    engine.environments.invalidate(env_id)


def break_model(engine: ApiRuntime, tmp_path: Path) -> None:
    broken = tmp_path / "broken_gizmos.py"
    broken.write_text("raise RuntimeError('this model does not load')\n")
    point_model(engine, broken)
    with pytest.raises(ConfigurationError):
        engine.environments.context(None)


def export_failure_rows(
    engine: ApiRuntime, compile_id: str, refs: list[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """The states of ``refs`` and the ``export_failed`` lines, read without the model (the
    facades would need it to answer); the compile failed."""
    with engine.core.db.read() as session:
        compiled = session.get(CompileRow, compile_id)
        assert compiled is not None and compiled.status == "failed"
        states = [session.get(InstanceRow, ref).state for ref in refs]  # type: ignore[union-attr]  # every instance of refs exists
        lines = session.execute(
            select(col(EventRow.instance_id), col(EventRow.message)).where(
                col(EventRow.trigger) == "export_failed"
            )
        ).all()
    return states, [(str(i), str(m)) for i, m in lines]


def test_an_export_that_fails_while_the_model_does_not_load_still_moves_the_instances(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    """The failure is the model itself (the environment points at one that raises): the
    lifecycles come from the persisted catalog, so the waiting instances still move and get
    their line, and ``diagnose`` names the failed export."""
    model = tmp_path / "gizmos.py"
    model.write_text(BAD_META_MODEL)
    engine = engine_factory(str(model))  # compiles run when the test drains
    inventory = engine.facades.inventory
    refs = [
        inventory.import_instances(LOCAL, "gizmo", state, [{"name": state}])[0]
        for state in ("creating", "update_inprogress")
    ]
    failed = engine.facades.compiles.request_compile(LOCAL, kind="full")  # queued; then the model breaks
    break_model(engine, tmp_path)

    engine.processing.drain()

    states, lines = export_failure_rows(engine, failed.id, refs)
    assert states == ["failed", "update_failed"]
    assert sorted(i for i, _ in lines) == sorted(refs)
    assert all(f"exporting compile {failed.id} failed" in message for _, message in lines)
    point_model(engine, model)  # the model back: diagnose (which reads it) names the failed export
    cause = inventory.diagnose(LOCAL, "gizmo", refs[0]).cause[0]
    assert (cause.kind, cause.subject.id) == ("failed_export", failed.id)


def test_without_the_model_a_failure_transfer_that_needs_it_is_logged_and_the_instance_stays(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    """``failing_over``'s transfer clears an attribute set and has an auto follow-up: only the
    general path (with the model) takes it, so without the model the line is written and the
    instance waits in its state for the retry."""
    model = tmp_path / "gizmos.py"
    model.write_text(FAILING_OVER_MODEL)
    engine = engine_factory(str(model))
    (ref,) = engine.facades.inventory.import_instances(LOCAL, "gizmo", "start", [{"name": "g1"}])
    failed = engine.facades.compiles.request_compile(LOCAL, kind="full")
    break_model(engine, tmp_path)

    engine.processing.drain()

    states, lines = export_failure_rows(engine, failed.id, [ref])
    assert states == ["start"] and [i for i, _ in lines] == [ref]
    assert f"exporting compile {failed.id} failed" in lines[0][1]
