"""Deploy outcomes on ``GET /api/v1/events``, and the cursor that now holds four positions.

A real engine with its compile worker and deploy agent in one service loop, served on
127.0.0.1; the stream is read with ``lsm.client``. Every configured backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from lsm.client import Client
from lsm.facade import Cursor, RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.events import ServerEvent
from lsm.testing import served_url
from tests.deploy import file_model
from tests.webhooks.conftest import FILE_MODEL, fast_config

LOCAL = RequestContext.local()
READ_TIMEOUT = 60.0


def next_matching(stream: Iterator[ServerEvent], kind: str, **data: object) -> ServerEvent:
    for event in stream:
        if event.event == kind and all(event.data.get(k) == v for k, v in data.items()):
            return event
    raise AssertionError(f"the stream ended before a {kind} event with {data}")


@pytest.fixture
def faults() -> Iterator[dict[str, int]]:
    file_model.FAULTS.clear()
    yield file_model.FAULTS
    file_model.FAULTS.clear()


def test_deploy_outcomes_are_on_the_stream_and_resume_after_their_id(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, faults: dict[str, int]
) -> None:
    faults["routers/broken.conf"] = -1
    engine = engine_factory(
        FILE_MODEL, embedded_worker=True, embedded_agent=True, config=fast_config(tmp_path)
    )
    with served_url(engine) as url, Client(url) as client:
        with client.events(read_timeout=READ_TIMEOUT) as stream:
            client.create_instance("router", {"name": "fine"})
            deployed = next_matching(stream, "deploy_outcome", status="deployed")
            client.create_instance("router", {"name": "broken"})
            failed = next_matching(stream, "deploy_outcome", status="failed")
        with client.events(last_event_id=deployed.id, read_timeout=READ_TIMEOUT) as resumed:
            again = next_matching(resumed, "deploy_outcome")

    assert "routers/fine.conf" in deployed.data["resource_id"] and deployed.data["error"] is None
    assert "routers/broken.conf" in failed.data["resource_id"]
    assert "injected failure" in failed.data["error"]
    assert failed.data["action_id"] > deployed.data["action_id"]
    assert again.data["action_id"] > deployed.data["action_id"]  # resumed right after it


def test_a_three_part_last_event_id_from_before_still_resumes(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    engine = engine_factory(FILE_MODEL, config=fast_config(tmp_path))
    present = engine.facades.events.start(LOCAL)
    old = present.encode().rsplit("/", 1)[0]  # what a stream sent before deploy outcomes

    resumed = engine.facades.events.start(LOCAL, old)

    assert old.count("/") == 2
    assert (resumed.event_id, resumed.compile_id, resumed.action_id) == (
        present.event_id,
        present.compile_id,
        present.action_id,
    )
    assert Cursor.decode(present.env_id, present.encode()) == present
    with served_url(engine) as url:
        for bad in ("1/x/y/z", "1//c/-5", "1//c/1/2", f"1//c/{2**63}"):
            response = httpx.get(f"{url}/api/v1/events", headers={"Last-Event-ID": bad}, timeout=10)
            assert response.status_code == 422, bad
            assert response.json()["field"] == "Last-Event-ID"
