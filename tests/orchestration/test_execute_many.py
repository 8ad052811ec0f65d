"""Many commands in one transaction (``Orchestrator.execute_many``, the bulk route's core).

All or nothing: one refused item refuses the batch, nothing is written, and the error lists
every refused item with its index. Runs on every configured backend.
"""

from __future__ import annotations

import uuid

import pytest

from lsm.errors import IdentityConflict, InvalidInput, TransferNotAllowed, UnknownInstance, VersionConflict
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.bulk import BulkCreate, BulkUpdate
from tests.orchestration.helpers import Driver

CTX = RequestContext(actor="alice", request_id="bulk-1")


def names(engine: ApiRuntime) -> set[str]:
    things = engine.facades.inventory.list_instances(CTX, "thing")
    return {t.candidate_attributes["name"] for t in things if t.candidate_attributes}


def test_a_batch_creates_and_updates_in_one_go_and_records_who(engine: ApiRuntime) -> None:
    up = Driver(engine).reach("up")
    result = engine.facades.inventory.bulk(
        CTX,
        "thing",
        create=[BulkCreate(attributes={"name": f"b{i}"}) for i in range(3)],
        update=[BulkUpdate(id=up.id, current_version=up.version, attributes={"size": 5})],
    )

    assert [c.candidate_attributes["name"] for c in result.created if c.candidate_attributes] == [
        "b0",
        "b1",
        "b2",
    ]
    assert all(c.version == 1 and c.state == "start" for c in result.created)
    assert result.updated[0].version == up.version + 1
    assert result.updated[0].candidate_attributes is not None
    assert result.updated[0].candidate_attributes["size"] == 5
    log = engine.facades.inventory.instance_log(CTX, "thing", result.created[0].id)
    assert [(e.actor, e.request_id) for e in log] == [("alice", "bulk-1")]


def test_an_invalid_item_refuses_the_batch_and_every_bad_item_is_listed(engine: ApiRuntime) -> None:
    create = [
        BulkCreate(attributes={"name": "ok"}),
        BulkCreate(attributes={"name": "bad-size", "size": "large"}),
        BulkCreate(attributes={}),
    ]
    with pytest.raises(InvalidInput) as refused:
        engine.facades.inventory.bulk(CTX, "thing", create=create, update=[])

    items = refused.value.details["items"]
    assert [(i["op"], i["index"], i["error"]) for i in items] == [
        ("create", 1, "invalid_attributes"),
        ("create", 2, "invalid_attributes"),
    ]
    assert items[0]["errors"][0]["path"] == "size"
    assert names(engine) == set()  # nothing written, not even the good item


def test_an_identity_clash_within_the_batch_names_both_items(engine: ApiRuntime) -> None:
    create = [BulkCreate(attributes={"name": "same"}), BulkCreate(attributes={"name": "same"})]
    with pytest.raises(IdentityConflict) as refused:
        engine.facades.inventory.bulk(CTX, "thing", create=create, update=[])

    assert (refused.value.details["op"], refused.value.details["index"]) == ("create", 1)
    assert refused.value.details["clashes_with"] == {"op": "create", "index": 0}
    assert names(engine) == set()


def test_a_stale_version_is_a_409_naming_the_item_and_nothing_is_written(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    first, second = driver.reach("up"), driver.reach("up")
    update = [
        BulkUpdate(id=first.id, current_version=first.version, attributes={"size": 7}),
        BulkUpdate(id=second.id, current_version=second.version - 1, attributes={"size": 7}),
    ]
    with pytest.raises(VersionConflict) as refused:
        engine.facades.inventory.bulk(
            CTX, "thing", create=[BulkCreate(attributes={"name": "new"})], update=update
        )

    details = refused.value.details
    assert (details["op"], details["index"], details["instance"]) == ("update", 1, second.id)
    assert driver.get(first).version == first.version  # the valid update was not applied either
    assert "new" not in names(engine)


def test_an_unknown_id_is_a_404_naming_the_item(engine: ApiRuntime) -> None:
    unknown = str(uuid.uuid4())
    update = [BulkUpdate(id=unknown, current_version=1, attributes={"size": 2})]
    with pytest.raises(UnknownInstance) as refused:
        engine.facades.inventory.bulk(CTX, "thing", create=[], update=update)
    assert (refused.value.details["op"], refused.value.details["index"]) == ("update", 0)


def test_an_update_by_identity_in_a_state_without_on_update_is_refused(engine: ApiRuntime) -> None:
    start = Driver(engine).create(name="early")
    update = [BulkUpdate(id="name=early", current_version=start.version, attributes={"size": 2})]
    with pytest.raises(TransferNotAllowed) as refused:
        engine.facades.inventory.bulk(CTX, "thing", create=[], update=update)
    assert (refused.value.details["index"], refused.value.details["id"]) == (0, "name=early")
    assert refused.value.status == 409


def test_automatic_steps_after_a_batch_run_for_every_instance(engine: ApiRuntime) -> None:
    result = engine.facades.inventory.bulk(
        CTX, "thing", create=[BulkCreate(attributes={"name": f"v{i}"}) for i in range(4)], update=[]
    )
    engine.processing.drain()  # the validations, their outcomes, the auto steps and exports

    states = {engine.facades.inventory.get_instance(CTX, "thing", c.id).state for c in result.created}
    assert states == {"creating"}


def test_more_items_than_the_limit_are_refused_before_anything_runs(engine: ApiRuntime) -> None:
    from lsm.orchestration import Create
    from lsm.orchestration.batch import MAX_BATCH

    commands = [Create("thing", {"name": "x"})] * (MAX_BATCH + 1)
    with pytest.raises(InvalidInput):
        engine.orchestrator.execute_many(engine.context(None), list(commands))
