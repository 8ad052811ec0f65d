"""The sync client over a real server and the async client in-process, against the real engine."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from lsm.client import NO_RETRY, AsyncClient, Client, RetryPolicy
from lsm.errors import (
    IdentityConflict,
    InvalidAttributes,
    LsmError,
    NotFound,
    TransferNotAllowed,
    VersionConflict,
)
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import async_client
from tests.api.fixtures import MODEL


@pytest.fixture
def client(url: str) -> Iterator[Client]:
    with Client(url) as c:
        yield c


def test_an_instance_is_ordered_changed_and_deleted(client: Client) -> None:
    note = client.create_instance("note", {"title": "c1"})
    updated = client.update_instance("note", "title=c1", current_version=1, attributes={"text": "v2"})
    published = client.set_state(
        "note", note["id"], current_version=2, target_state="published", message="ok"
    )
    deleted = client.delete_instance("note", note["id"], current_version=3)

    assert (note["version"], updated["version"], published["state"], deleted["deleted"]) == (
        1,
        2,
        "published",
        True,
    )
    assert [e["target"] for e in client.instance_log("note", note["id"])] == [
        "draft",
        "draft",
        "published",
        "archived",
    ]
    assert client.list_instances("note") == []
    assert [i["id"] for i in client.list_instances("note", include_deleted=True)] == [note["id"]]


def test_server_errors_are_raised_as_the_same_classes_with_their_details(client: Client) -> None:
    note = client.create_instance("note", {"title": "c2"})

    with pytest.raises(VersionConflict):
        client.update_instance("note", note["id"], current_version=9, attributes={"text": "x"})
    with pytest.raises(InvalidAttributes) as invalid:
        client.update_instance("note", note["id"], current_version=1, attributes={"title": "other"})
    with pytest.raises(IdentityConflict):
        client.create_instance("note", {"title": "c2"})
    with pytest.raises(NotFound):
        client.get_instance("note", "title=none")
    published = client.set_state("note", note["id"], current_version=1, target_state="published")
    with pytest.raises(TransferNotAllowed) as not_allowed:
        client.update_instance(
            "note", note["id"], current_version=published["version"], attributes={"text": "x"}
        )

    assert [e["path"] for e in invalid.value.errors] == ["title"]
    assert not_allowed.value.details["allowed"]
    assert client.get_instance("note", note["id"])["version"] == published["version"]


def test_catalog_lifecycles_compiles_and_settings(client: Client) -> None:
    assert {e["name"] for e in client.catalog()} == {"router", "port", "note"}
    assert client.entity("router")["identity"] == "mgmt_ip"
    assert client.schema("router")["x-lsm-entity"] == "router"
    assert client.lifecycle("simple")["initial_state"] == "start"
    report = client.request_compile(kind="full")
    assert client.get_compile(report["id"])["status"] == "queued"
    assert report["id"] in [c["id"] for c in client.list_compiles()]
    assert [c["id"] for c in client.list_compiles(kind="full", status="queued")] == [report["id"]]
    assert client.list_compiles(status="running") == []
    assert client.set_setting("partial_compiles", False)["partial_compiles"]["value"] is False
    assert client.settings()["partial_compiles"]["value"] is False
    assert client.health() == {"status": "ok"}


def test_a_client_works_in_the_environment_it_was_given(client: Client, url: str) -> None:
    client.create_environment("lab", str(MODEL))

    with Client(url, environment="lab") as lab:
        lab.create_instance("note", {"title": "only in lab"})
        assert lab.get_environment()["name"] == "lab"
        assert [n["candidate_attributes"]["title"] for n in lab.list_instances("note")] == ["only in lab"]
    assert client.list_instances("note") == []
    assert {e["name"] for e in client.environments()} == {"default", "lab"}


@pytest.mark.anyio
async def test_the_async_client_talks_to_the_app_in_process(engine: ApiRuntime) -> None:
    async with async_client(engine) as c:
        assert isinstance(c, AsyncClient)
        note = await c.create_instance("note", {"title": "a1"})
        with pytest.raises(VersionConflict):
            await c.update_instance("note", note["id"], current_version=5, attributes={"text": "x"})
        assert (await c.get_instance("note", "title=a1"))["version"] == 1
        assert [e["target"] for e in await c.instance_log("note", note["id"])] == ["draft"]


def test_the_client_waits_out_an_engine_that_is_not_ready_yet(engine: ApiRuntime, url: str) -> None:
    engine.ready = False
    timer = threading.Timer(0.3, lambda: setattr(engine, "ready", True))
    patient = RetryPolicy(attempts=30, initial_wait=0.02, max_wait=0.1, jitter=0)
    with Client(url, retry=NO_RETRY) as impatient, Client(url, retry=patient) as client:
        with pytest.raises(LsmError) as refused:
            impatient.catalog()
        timer.start()
        try:
            catalog = client.catalog()
        finally:
            timer.join()

    assert refused.value.details == {} and "not ready" in refused.value.message
    assert {e["name"] for e in catalog} == {"router", "port", "note"}


@pytest.mark.anyio
async def test_an_unexpected_error_in_process_is_a_500_answer_not_an_exception(
    engine: ApiRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(engine.facades.catalog, "list_entities", broken)

    async with async_client(engine, retry=NO_RETRY) as c:
        with pytest.raises(LsmError) as caught:
            await c.catalog()

    assert type(caught.value) is LsmError
    assert caught.value.kind == "internal" and "a bug" not in caught.value.message


def test_bulk_raises_the_worst_items_error_with_every_refused_item(client: Client) -> None:
    done = client.bulk("note", create=[{"attributes": {"title": "k1"}}])
    note = done["created"][0]

    with pytest.raises(VersionConflict) as refused:
        client.bulk(
            "note",
            create=[{"attributes": {"title": "k2"}}],
            update=[{"id": "title=k1", "current_version": 9, "attributes": {"text": "x"}}],
        )

    assert refused.value.details["index"] == 0 and refused.value.details["id"] == "title=k1"
    assert [i["op"] for i in refused.value.details["items"]] == ["update"]
    assert [n["id"] for n in client.list_instances("note")] == [note["id"]]
