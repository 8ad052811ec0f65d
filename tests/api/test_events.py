"""``GET /api/v1/events`` and ``POST /api/v1/compiles {wait}`` through the real app and server.

The API runtime serves (uvicorn on 127.0.0.1) without a compile worker; compiles are run by a
separate worker runtime over the same database, with its own database engine and its own
in-process signal, exactly as an ``lsm worker`` in another process: what the API learns of
them, it learns from the tables. Runs on every configured backend.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest

from lsm.client import AsyncClient, Client
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, WorkerRuntime, build_api, build_worker
from lsm.schemas.events import ServerEvent
from lsm.store.database import Database
from lsm.testing import served_url
from tests.api.fixtures import LIFECYCLES, MODEL

#: bounds every wait on the stream: a missing event fails the test instead of hanging it
READ_TIMEOUT = 30.0


@dataclass
class Setup:
    api: ApiRuntime
    url: str
    config: ServerConfig
    db: Database

    def worker(self, poll_interval: float = 0.05) -> WorkerRuntime:
        """A compile worker over the same database, as another process would have (own engine, own signal)."""
        other = Database(self.db.url, schema=self.db.schema)
        worker = build_worker(self.config.model_copy(update={"poll_interval": poll_interval}), db=other)
        worker.start()
        return worker


@pytest.fixture
def setup(db: Database) -> Iterator[Setup]:
    config = ServerConfig(
        database_url=db.url, model=str(MODEL), lifecycle_dirs=[str(LIFECYCLES)], embedded_worker=False
    )
    api = build_api(config, db=db)
    api.start()
    try:
        with served_url(api) as url:
            yield Setup(api, url, config, db)
    finally:
        api.stop()


def next_matching(stream: Iterator[ServerEvent], kind: str, **data: object) -> ServerEvent:
    for event in stream:
        if event.event == kind and all(event.data.get(k) == v for k, v in data.items()):
            return event
    raise AssertionError(f"the stream ended before a {kind} event with {data}")


def test_a_compile_finished_by_another_process_shows_up_on_the_stream(setup: Setup) -> None:
    with Client(setup.url) as client, client.events(read_timeout=READ_TIMEOUT) as stream:
        queued = client.request_compile(kind="full")
        worker = setup.worker()
        try:
            finished = next_matching(stream, "compile_finished", id=queued["id"])
        finally:
            worker.stop()
            worker.db.dispose()

    assert finished.data["status"] == "success"
    assert finished.data["kind"] == "full"
    assert finished.data["desired_state_version"] == 1
    assert finished.id


def test_a_worker_in_another_process_wakes_when_work_is_queued_not_at_its_next_poll(setup: Setup) -> None:
    """PostgreSQL: LISTEN/NOTIFY; SQLite: the worker watches ``PRAGMA data_version``. With a
    one-hour poll, only the wake-up can run the compile before the stream's read timeout."""
    worker = setup.worker(poll_interval=3600)
    try:
        assert worker.processing.listener.connected.wait(READ_TIMEOUT), "the worker never started listening"
        time.sleep(0.2)  # the loop has looked at the empty queue and is asleep for its poll
        with Client(setup.url) as client, client.events(read_timeout=READ_TIMEOUT) as stream:
            queued = client.request_compile(kind="full")
            finished = next_matching(stream, "compile_finished", id=queued["id"])
    finally:
        worker.stop()
        worker.db.dispose()
    assert finished.data["status"] == "success"


def test_instance_changes_are_streamed_with_who_made_them(setup: Setup) -> None:
    with Client(setup.url) as client, client.events(read_timeout=READ_TIMEOUT) as stream:
        note = client.create_instance("note", {"title": "n1"})
        client.set_state("note", note["id"], current_version=1, target_state="published")
        created = next_matching(stream, "instance_state", instance_id=note["id"])
        published = next_matching(stream, "instance_state", instance_id=note["id"])

    assert (created.data["source"], created.data["target"], created.data["trigger"]) == (
        None,
        "draft",
        "create",
    )
    assert (published.data["target"], published.data["version"]) == ("published", 2)
    assert created.data["service_entity"] == "note" and created.data["actor"] == "local"


def test_last_event_id_resumes_right_after_it_without_duplicates(setup: Setup) -> None:
    with Client(setup.url) as client:
        with client.events(read_timeout=READ_TIMEOUT) as stream:
            ids = [client.create_instance("note", {"title": f"r{i}"})["id"] for i in range(3)]
            first = [next(stream) for _ in range(2)]
        ids.append(client.create_instance("note", {"title": "r3"})["id"])
        with client.events(last_event_id=first[-1].id, read_timeout=READ_TIMEOUT) as resumed:
            rest = [next(resumed) for _ in range(2)]

    assert [e.data["instance_id"] for e in first + rest] == ids


def test_the_stream_ends_when_the_client_disconnects(setup: Setup) -> None:
    with Client(setup.url) as client, client.events(read_timeout=READ_TIMEOUT) as stream:
        client.create_instance("note", {"title": "d1"})
        next(stream)
        assert wait_until(lambda: setup.api.core.changes.listening >= 1)  # the open stream listens
    assert wait_until(lambda: setup.api.core.changes.listening == 0)  # and stops once the client left


def wait_until(condition: Callable[[], bool]) -> bool:
    """Poll ``condition`` until it holds or ``READ_TIMEOUT`` passed; whether it held."""
    deadline = time.monotonic() + READ_TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_an_unknown_last_event_id_is_a_422(setup: Setup) -> None:
    response = httpx.get(f"{setup.url}/api/v1/events", headers={"Last-Event-ID": "not-ours"}, timeout=10)
    assert response.status_code == 422
    assert response.json()["field"] == "Last-Event-ID"


def test_the_async_client_reads_the_stream_too(setup: Setup) -> None:
    async def scenario() -> ServerEvent:
        async with AsyncClient(setup.url) as client:
            async with client.events(read_timeout=READ_TIMEOUT) as stream:
                note = await client.create_instance("note", {"title": "a1"})
                async for event in stream:
                    if event.data.get("instance_id") == note["id"]:
                        return event
        raise AssertionError("no event for the note")

    event = asyncio.run(scenario())
    assert event.event == "instance_state" and event.data["target"] == "draft"


def test_a_waiting_compile_request_answers_when_another_process_finished_it(setup: Setup) -> None:
    answers: list[httpx.Response] = []

    def ask() -> None:
        body = {"kind": "full", "wait": True, "timeout": 60}
        answers.append(httpx.post(f"{setup.url}/api/v1/compiles", json=body, timeout=90))

    asking = threading.Thread(target=ask)
    asking.start()
    worker = setup.worker()
    try:
        asking.join(90)
    finally:
        worker.stop()
        worker.db.dispose()

    assert answers and answers[0].status_code == 200, answers
    assert answers[0].json()["status"] == "success"


def test_a_wait_that_times_out_answers_the_report_as_it_stands(setup: Setup) -> None:
    response = httpx.post(
        f"{setup.url}/api/v1/compiles", json={"kind": "full", "wait": True, "timeout": 0.2}, timeout=30
    )
    assert response.status_code == 200
    assert response.json()["status"] == "queued"


def test_a_wait_longer_than_the_limit_is_a_422(setup: Setup) -> None:
    response = httpx.post(f"{setup.url}/api/v1/compiles", json={"kind": "full", "wait": True, "timeout": 301})
    assert response.status_code == 422
