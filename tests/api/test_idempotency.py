"""Idempotent creates (docs/api.md §4): a create retried after a lost answer answers the first answer.

Through the real app on both backends; the client test loses the first answer on the wire (the
server acted, the client saw the connection break) and checks the retry's key and answer.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlmodel import select

from lsm.client import Client, RetryPolicy
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from lsm.store.idempotency import IdempotencyKeyRow
from lsm.store.tables import utcnow
from tests.api.input_fixtures import BOX_MODEL, all_instances, served_box

BOX = "/lsm/v1/service_inventory/box"


@pytest.fixture
def served(db: Database) -> Iterator[tuple[ApiRuntime, httpx.Client]]:
    with served_box(db) as pair:
        yield pair


def create(
    http: httpx.Client, body: dict[str, Any], key: str | None = None, env: str | None = None
) -> httpx.Response:
    headers = {} if key is None else {"Idempotency-Key": key}
    if env is not None:
        headers["X-LSM-Environment"] = env
    return http.post(BOX, json=body, headers=headers)


def test_a_create_retried_with_its_key_answers_the_first_answer(
    served: tuple[ApiRuntime, httpx.Client],
) -> None:
    engine, http = served
    key = uuid.uuid4().hex
    first = create(http, {"attributes": {"name": "a"}}, key)
    assert first.status_code == 200, first.text
    again = create(http, {"attributes": {"name": "a"}}, key)
    assert (again.status_code, again.json()) == (first.status_code, first.json())
    assert len(all_instances(engine)) == 1
    # without a key the same body is a new request: the identity is taken
    assert create(http, {"attributes": {"name": "a"}}).status_code == 409


def test_the_same_key_with_another_body_is_422_and_creates_nothing(
    served: tuple[ApiRuntime, httpx.Client],
) -> None:
    engine, http = served
    key = uuid.uuid4().hex
    assert create(http, {"attributes": {"name": "a"}}, key).status_code == 200
    other = create(http, {"attributes": {"name": "b"}}, key)
    assert other.status_code == 422, other.text
    assert other.json()["error"] == "idempotency_key_reused" and other.json()["field"] == "Idempotency-Key"
    assert [i["active_attributes"]["name"] for i in all_instances(engine)] == ["a"]


def test_a_create_with_a_chosen_id_retried_answers_the_first_answer(
    served: tuple[ApiRuntime, httpx.Client],
) -> None:
    engine, http = served
    chosen = str(uuid.uuid4())
    body = {"attributes": {"name": "a"}, "service_instance_id": chosen}
    first = create(http, body)
    assert first.status_code == 200 and first.json()["id"] == chosen
    again = create(http, body)
    assert (again.status_code, again.json()) == (200, first.json())
    taken = create(http, {"attributes": {"name": "b"}, "service_instance_id": chosen})
    assert taken.status_code == 409, taken.text
    assert len(all_instances(engine)) == 1


def test_keys_are_scoped_per_environment(served: tuple[ApiRuntime, httpx.Client]) -> None:
    engine, http = served
    engine.facades.environments.create_environment(RequestContext.local(), "other", str(BOX_MODEL))
    key = uuid.uuid4().hex
    here = create(http, {"attributes": {"name": "a"}}, key)
    there = create(http, {"attributes": {"name": "a"}}, key, env="other")
    assert here.status_code == there.status_code == 200
    assert here.json()["id"] != there.json()["id"]


def test_a_refused_create_leaves_its_key_unused(served: tuple[ApiRuntime, httpx.Client]) -> None:
    """The key is written in the create's transaction: a create that is refused stores nothing,
    and the key then serves the next request as a first use."""
    engine, http = served
    assert create(http, {"attributes": {"name": "a"}}).status_code == 200
    key = uuid.uuid4().hex
    clash = create(http, {"attributes": {"name": "a"}}, key)
    assert clash.status_code == 409 and clash.json()["error"] == "identity_conflict", clash.text
    with engine.db.read() as session:
        assert session.get(IdempotencyKeyRow, (engine.context(None).env_id, key)) is None
    made = create(http, {"attributes": {"name": "b"}}, key)
    assert made.status_code == 200, made.text
    assert create(http, {"attributes": {"name": "b"}}, key).json() == made.json()
    assert len(all_instances(engine)) == 2


def test_keys_expire_after_a_day(served: tuple[ApiRuntime, httpx.Client]) -> None:
    engine, http = served
    env_id = engine.context(None).env_id
    old = IdempotencyKeyRow(
        env_id=env_id,
        key="old",
        fingerprint="0" * 64,
        instance_id=str(uuid.uuid4()),
        created_at=utcnow() - timedelta(days=2),
    )
    with engine.db.write() as session:
        session.add(old)
    # an expired key is forgotten: another body may use it
    assert create(http, {"attributes": {"name": "x"}}, "old").status_code == 200
    with engine.db.read() as session:
        rows = session.exec(select(IdempotencyKeyRow)).all()
    assert [(r.key, r.fingerprint != "0" * 64) for r in rows] == [("old", True)]
    stale = IdempotencyKeyRow(
        env_id=env_id,
        key="stale",
        fingerprint="1" * 64,
        instance_id="i",
        created_at=utcnow() - timedelta(days=3),
    )
    with engine.db.write() as session:
        session.add(stale)
    assert create(http, {"attributes": {"name": "y"}}, "new").status_code == 200
    with engine.db.read() as session:
        assert sorted(r.key for r in session.exec(select(IdempotencyKeyRow)).all()) == ["new", "old"]


def test_a_key_longer_than_the_column_is_422(served: tuple[ApiRuntime, httpx.Client]) -> None:
    engine, http = served
    answer = create(http, {"attributes": {"name": "a"}}, "k" * 201)
    assert answer.status_code == 422 and answer.json()["errors"][0]["path"] == "Idempotency-Key"
    assert all_instances(engine) == []


class LosesFirstAnswer(httpx.BaseTransport):
    """Forwards every request to the server; the first create's answer is lost on the way back."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST":
            self.keys.append(request.headers.get("Idempotency-Key"))
            if len(self.keys) == 1:
                response.read()
                raise httpx.RemoteProtocolError("connection closed mid-answer", request=request)
        return response

    def close(self) -> None:
        """The client closes its transport: the forwarding one closes its connections too."""
        self.inner.close()


def test_the_client_keeps_its_key_across_retries_and_gets_one_instance(
    served: tuple[ApiRuntime, httpx.Client],
) -> None:
    engine, http = served
    transport = LosesFirstAnswer()
    with Client(
        str(http.base_url), transport=transport, retry=RetryPolicy(attempts=3, initial_wait=0, jitter=0)
    ) as client:
        made = client.create_instance("box", {"name": "a"})
    assert len(transport.keys) == 2 and transport.keys[0] and transport.keys[0] == transport.keys[1]
    assert [i["id"] for i in all_instances(engine)] == [made["id"]]
    # a create through the facade, for in-process callers, takes a key too
    again = engine.facades.inventory.create_instance(
        RequestContext.local(), "box", {"name": "a"}, idempotency_key=transport.keys[0]
    )
    assert again.id == made["id"]


def test_a_new_key_does_not_hide_an_identity_conflict(served: tuple[ApiRuntime, httpx.Client]) -> None:
    engine, http = served
    assert create(http, {"attributes": {"name": "a"}}, uuid.uuid4().hex).status_code == 200
    clash = create(http, {"attributes": {"name": "a"}}, uuid.uuid4().hex)
    assert clash.status_code == 409 and clash.json()["error"] == "identity_conflict", clash.text
    assert len(all_instances(engine)) == 1


RACERS = 20


def race(http: httpx.Client, bodies: list[dict[str, Any]], key: str) -> list[httpx.Response]:
    """Send every body with ``key`` at once, each on a connection of its own (a barrier lines the
    threads up; no timing is asserted); the answers in the order of ``bodies``."""
    barrier = threading.Barrier(len(bodies))
    answers: list[httpx.Response | None] = [None] * len(bodies)

    def send(i: int) -> None:
        with httpx.Client(base_url=http.base_url, timeout=60) as own:
            barrier.wait(timeout=60)
            answers[i] = create(own, bodies[i], key)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(a is not None for a in answers), "a request never got its answer"
    return [a for a in answers if a is not None]


def test_concurrent_first_uses_of_one_key_with_one_body_create_once_and_answer_alike(
    served: tuple[ApiRuntime, httpx.Client],
) -> None:
    """A client that retried too eagerly: one instance, and every answer is the first answer."""
    engine, http = served
    answers = race(http, [{"attributes": {"name": "race"}}] * RACERS, uuid.uuid4().hex)
    assert {a.status_code for a in answers} == {200}, [a.text for a in answers if a.status_code != 200]
    assert all(a.json() == answers[0].json() for a in answers)
    assert [i["id"] for i in all_instances(engine)] == [answers[0].json()["id"]]


def test_concurrent_first_uses_of_one_key_with_other_bodies_create_one_and_refuse_the_rest(
    served: tuple[ApiRuntime, httpx.Client],
) -> None:
    """Callers sharing a key by mistake: exactly one order is made, every other caller gets a
    422 naming the key, never another caller's instance."""
    engine, http = served
    key = uuid.uuid4().hex
    answers = race(http, [{"attributes": {"name": f"n{i}"}} for i in range(RACERS)], key)
    made = [a for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code == 422]
    assert len(made) == 1 and len(refused) == RACERS - 1, [(a.status_code, a.text) for a in answers]
    winner = answers.index(made[0])
    instance = made[0].json()
    assert (instance["candidate_attributes"] or instance["active_attributes"])["name"] == f"n{winner}"
    for answer in refused:
        body = answer.json()
        assert body["error"] == "idempotency_key_reused" and body["key"] == key, body
        assert body["instance"] == instance["id"]
    assert [i["id"] for i in all_instances(engine)] == [instance["id"]]
