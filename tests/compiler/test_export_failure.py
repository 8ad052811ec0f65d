"""A failed exporting compile reaches every instance that waited on it (docs/semantics.md §6).

Real engines (compile worker and deploy agent in one loop) on SQLite and PostgreSQL, with the
``tests.models.claims`` model: two claims of one path break export rule 1 in a partial export.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import EventOut
from tests.models import claims
from tests.waiting import wait_until

LOCAL = RequestContext.local()


@pytest.fixture(autouse=True)
def _empty_slots() -> Iterator[None]:
    claims.SLOTS.clear()
    yield
    claims.SLOTS.clear()


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    return engine_factory("tests.models.claims", embedded_worker=True, embedded_agent=True)


def state(engine: ApiRuntime, ref: str) -> str:
    return engine.facades.inventory.get_instance(LOCAL, "claim", ref).state


def reach(engine: ApiRuntime, ref: str, wanted: str) -> None:
    wait_until(lambda: state(engine, ref) == wanted, f"claim {ref} reaches {wanted}")


def log(engine: ApiRuntime, ref: str) -> list[EventOut]:
    return engine.facades.inventory.instance_log(LOCAL, "claim", ref)


def failure_line(engine: ApiRuntime, ref: str) -> EventOut:
    lines = [e for e in log(engine, ref) if e.trigger == "export_failed"]
    assert lines, f"no export_failed line in the log of {ref}: {log(engine, ref)}"
    return lines[-1]


def create(engine: ApiRuntime, name: str, path: str, **extra: Any) -> str:
    return engine.facades.inventory.create_instance(LOCAL, "claim", {"name": name, "path": path, **extra}).id


def version(engine: ApiRuntime, ref: str) -> int:
    return engine.facades.inventory.get_instance(LOCAL, "claim", ref).version


def delete(engine: ApiRuntime, ref: str) -> None:
    engine.facades.inventory.delete_instance(LOCAL, "claim", ref, current_version=version(engine, ref))


def update(engine: ApiRuntime, ref: str, **attributes: Any) -> None:
    engine.facades.inventory.update_instance(
        LOCAL, "claim", ref, current_version=version(engine, ref), attributes=attributes
    )


def test_a_partial_export_refused_by_rule_1_fails_the_instance_and_a_retry_brings_it_up(
    engine: ApiRuntime,
) -> None:
    holder = create(engine, "holder", "/srv/a")
    reach(engine, holder, "up")
    late = create(engine, "late", "/srv/a")
    reach(engine, late, "failed")

    line = failure_line(engine, late)
    assert (line.source, line.target, line.is_error) == ("creating", "failed", True)
    assert line.compile_id is not None
    assert f"exporting compile {line.compile_id} failed: export_rule_violation (rule 1)" in line.message
    assert "claims::Slot[slots,path=/srv/a]" in line.message  # the resource...
    assert holder in line.message and late in line.message  # ...and both sets
    failed = engine.facades.compiles.get_compile(LOCAL, line.compile_id)
    assert failed.status == "failed" and failed.report["error"]["rule"] == 1

    diagnosis = engine.facades.inventory.diagnose(LOCAL, "claim", late)
    cause = diagnosis.cause[0]
    assert cause.kind == "failed_export"
    assert cause.subject.id == line.compile_id
    assert cause.details["rule"] == 1 and cause.details["error"] == "export_rule_violation"
    assert "retry" in cause.message

    # the cause goes away; a retry (no full compile by hand) brings the instance up
    delete(engine, holder)
    reach(engine, holder, "terminated")
    retry = engine.facades.compiles.retry_compile(LOCAL, line.compile_id)
    assert retry.kind == "partial" and late in retry.requested_ids
    reach(engine, late, "up")
    assert claims.SLOTS == {"/srv/a": "late"}
    assert engine.facades.inventory.diagnose(LOCAL, "claim", late).cause[0].kind != "failed_export"


def test_a_failed_update_export_moves_to_update_failed_and_a_rollback_works_again(engine: ApiRuntime) -> None:
    holder = create(engine, "holder", "/srv/a")
    mover = create(engine, "mover", "/srv/b")
    reach(engine, holder, "up")
    reach(engine, mover, "up")
    update(engine, mover, path="/srv/a")
    reach(engine, mover, "update_failed")
    line = failure_line(engine, mover)
    assert (line.source, line.target) == ("update_inprogress", "update_failed")
    assert "(rule 1)" in line.message
    # the usual actions work again: roll back to the path it had
    engine.facades.inventory.set_state(
        LOCAL, "claim", mover, current_version=version(engine, mover), target_state="rollback"
    )
    reach(engine, mover, "up")
    assert claims.SLOTS == {"/srv/a": "holder", "/srv/b": "mover"}


@pytest.mark.parametrize("way_out", ["delete", "retry"])
def test_a_failed_delete_export_moves_to_delete_failed_and_a_delete_or_retry_finishes_it(
    engine: ApiRuntime, way_out: str
) -> None:
    doomed = create(engine, "doomed", "/srv/d")
    reach(engine, doomed, "up")
    claims.BROKEN.add("doomed")
    delete(engine, doomed)
    reach(engine, doomed, "delete_failed")
    line = failure_line(engine, doomed)
    assert (line.source, line.target) == ("deleting", "delete_failed")
    assert "failed: model_error" in line.message and "broken on purpose" in line.message
    assert claims.SLOTS == {"/srv/d": "doomed"}  # nothing was purged

    claims.BROKEN.clear()
    if way_out == "delete":
        delete(engine, doomed)  # delete_failed -> deleting asks for the purge to be exported anew
    else:
        assert line.compile_id is not None
        engine.facades.compiles.retry_compile(LOCAL, line.compile_id)
    reach(engine, doomed, "terminated")
    assert claims.SLOTS == {}


def test_a_model_error_in_an_exporting_compile_fails_a_new_instance(engine: ApiRuntime) -> None:
    claims.BROKEN.add("shaky")
    shaky = create(engine, "shaky", "/srv/s")
    reach(engine, shaky, "failed")
    line = failure_line(engine, shaky)
    assert "model_error" in line.message
    assert engine.facades.inventory.diagnose(LOCAL, "claim", shaky).cause[0].kind == "failed_export"
    # the usual actions work again: it can be deleted (nothing was exported for it)
    claims.BROKEN.clear()
    delete(engine, shaky)
    reach(engine, shaky, "terminated")


def test_a_failed_retry_writes_the_failure_again_without_moving(engine: ApiRuntime) -> None:
    claims.BROKEN.add("stubborn")
    stubborn = create(engine, "stubborn", "/srv/x")
    reach(engine, stubborn, "failed")
    first = failure_line(engine, stubborn)
    assert first.compile_id is not None
    retry = engine.facades.compiles.retry_compile(LOCAL, first.compile_id)
    wait_until(lambda: failure_line(engine, stubborn).compile_id == retry.id, "the retry's failure is logged")
    again = failure_line(engine, stubborn)
    assert (again.source, again.target, again.is_error) == ("failed", "failed", True)
    assert state(engine, stubborn) == "failed"


def test_retry_refuses_unknown_running_successful_and_validation_compiles(engine: ApiRuntime) -> None:
    from lsm.errors import Conflict, UnknownCompile

    ok = create(engine, "ok", "/srv/ok")
    reach(engine, ok, "up")
    with pytest.raises(UnknownCompile):
        engine.facades.compiles.retry_compile(LOCAL, "00000000-0000-0000-0000-000000000000")
    compiles = engine.facades.compiles.list_compiles(LOCAL)
    success = next(c for c in compiles if c.kind != "validation" and c.status == "success")
    with pytest.raises(Conflict) as refused:
        engine.facades.compiles.retry_compile(LOCAL, success.id)
    assert refused.value.details == {"compile": success.id, "status": "success"}
    validation = next(c for c in compiles if c.kind == "validation")
    with pytest.raises(Conflict) as refused:
        engine.facades.compiles.retry_compile(LOCAL, validation.id)
    assert refused.value.details["kind"] == "validation"


def test_a_failed_update_export_goes_up_with_the_update_once_a_retry_exports_it(engine: ApiRuntime) -> None:
    mover = create(engine, "mover", "/srv/m")
    reach(engine, mover, "up")
    claims.BROKEN.add("mover")
    update(engine, mover, path="/srv/n")
    reach(engine, mover, "update_failed")
    line = failure_line(engine, mover)
    assert (line.source, line.target) == ("update_inprogress", "update_failed")
    assert claims.SLOTS == {"/srv/m": "mover"}  # the update was never exported
    claims.BROKEN.clear()
    assert line.compile_id is not None
    engine.facades.compiles.retry_compile(LOCAL, line.compile_id)
    reach(engine, mover, "up")  # update_failed -> up by its resource-based transfer
    assert claims.SLOTS["/srv/n"] == "mover"  # the update's slot is deployed


def test_any_later_export_of_the_tree_moves_a_failed_instance_on_without_a_retry(engine: ApiRuntime) -> None:
    holder = create(engine, "holder", "/srv/a")
    reach(engine, holder, "up")
    late = create(engine, "late", "/srv/a")
    reach(engine, late, "failed")
    delete(engine, holder)
    reach(engine, holder, "terminated")
    assert state(engine, late) == "failed"  # the holder's own export did not cover late's tree
    engine.facades.compiles.request_compile(LOCAL, kind="full")
    reach(engine, late, "up")
    assert claims.SLOTS == {"/srv/a": "late"}
