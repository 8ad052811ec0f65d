"""The deploy routes through the sync client (a served app) and the async client (in-process)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsm.client import Client
from lsm.desired_state import ExportRequest, ResourceRecord
from lsm.errors import InvalidInput, NotFound
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import async_client, serve
from tests.deploy import filemodel
from tests.deploy.seed import rid, seed_actions, seed_desired, seed_states, state

ODD = "std::File[h1:x,path=/etc/lsm,a=b:c/motd]"


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    engine = engine_factory("tests.deploy.filemodel")
    env_id = engine.context(None).env_id
    seed_states(
        engine.db,
        env_id,
        [state(ODD), state(rid("net::Host", "a1", "h1"), status="failed", last_error="down")],
    )
    with engine.db.write() as session:
        seed_desired(session, env_id, ODD, {"agent": "h1:x", "path": "/etc/lsm,a=b:c/motd", "content": "x"})
    seed_actions(engine.db, env_id, ODD, ["create", "update", "none"])
    return engine


def test_sync_client_reads_resources_and_schedules_a_deploy(engine: ApiRuntime) -> None:
    with serve(engine) as client:
        listed = client.resources(status="failed")
        one = client.resource(ODD)
        actions = client.resource_actions(ODD, limit=2)
        scheduled = client.deploy()
        status = client.deploy_status()
        with pytest.raises(NotFound) as missing:
            client.resource("net::Host[a1,name=ghost]")
        with pytest.raises(InvalidInput):
            client.resources(status="nonsense")

    assert [r["id"] for r in listed] == [rid("net::Host", "a1", "h1")]
    assert one["id"] == ODD and one["attributes"]["content"] == "x"
    assert [a["action"] for a in actions] == ["none", "update"]
    assert scheduled["scheduled"] == 1
    assert status["counts"] == {"deployed": 1, "pending": 1}
    assert missing.value.details["resource_id"] == "net::Host[a1,name=ghost]"


@pytest.mark.anyio
async def test_async_client_has_the_same_routes(engine: ApiRuntime, tmp_path: Path) -> None:
    target = tmp_path / "motd"
    record = ResourceRecord(*filemodel.TFile(agent="local", path=str(target), content="hello").to_data())
    engine.store.export(engine.context(None).env_id, ExportRequest(kind="full", shared=[record]))
    async with async_client(engine) as client:
        resources = await client.resources(agent="h1:x")
        one = await client.resource(ODD)
        dry = await client.deploy(dry_run=True, agents=["local"])
        actions = await client.resource_actions(record.id)

    assert [r["id"] for r in resources] == [ODD] and one["status"] == "deployed"
    assert [(i["id"], i["action"]) for i in dry["resources"]] == [(record.id, "create")]
    assert not target.exists()
    assert [(a["action"], a["dry_run"]) for a in actions] == [("create", True)]


def test_routes_encode_every_character_of_an_id() -> None:
    """The path is built once for both clients: the id travels as one segment."""
    import httpx

    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(200, json={})

    with Client("http://lsm.test", transport=httpx.MockTransport(answer)) as client:
        client.resource(ODD)
        client.resource_actions(ODD)
    assert seen == [
        "/api/v1/resources/std::File%5Bh1:x%2Cpath=%2Fetc%2Flsm%2Ca=b:c%2Fmotd%5D",
        "/api/v1/resources/std::File%5Bh1:x%2Cpath=%2Fetc%2Flsm%2Ca=b:c%2Fmotd%5D/actions?limit=50&offset=0",
    ]
