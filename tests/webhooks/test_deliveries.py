"""Webhook deliveries end to end: real engines on every backend, a real receiver over HTTP.

The engines run the webhook dispatcher and sender in their service loop (``embedded_worker``),
over ``tests.deploy.file_model`` (routers whose resources are files; ``FAULTS`` makes a deploy
fail). Each test waits on what the receiver got, never on time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.webhooks import CreateWebhook, DeliveryOut
from tests.deploy import file_model
from tests.waiting import wait_until
from tests.webhooks.conftest import FILE_MODEL, fast_config
from tests.webhooks.receiver import Receiver, event_of

LOCAL = RequestContext.local()
SECRET = "s3cret-for-the-tests-0123456789"


@pytest.fixture
def faults() -> Iterator[dict[str, int]]:
    file_model.FAULTS.clear()
    yield file_model.FAULTS
    file_model.FAULTS.clear()


def serving(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, *, agent: bool = False, **policy: object
) -> ApiRuntime:
    """An engine that runs compiles, webhooks (and with ``agent`` deploys) in its service loop."""
    return engine_factory(
        FILE_MODEL, embedded_worker=True, embedded_agent=agent, config=fast_config(tmp_path, **policy)
    )


def register(engine: ApiRuntime, receiver: Receiver, *events: str) -> str:
    body = CreateWebhook(url=receiver.url, secret=SECRET, **({"events": list(events)} if events else {}))
    return engine.facades.webhooks.create(LOCAL, body).id


def test_an_order_reaching_up_and_its_compile_are_delivered_signed(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    engine = serving(engine_factory, tmp_path, agent=True)
    register(engine, receiver)
    router = engine.facades.inventory.create_instance(LOCAL, "router", {"name": "edge"})

    receiver.wait_for(event_of("instance_state", instance_id=router.id, target="up"), "the order reaching up")
    accepted = receiver.wait_for(event_of("compile_finished", status="success"), "a compile outcome")

    assert receiver.all_signed_with(SECRET)
    assert not receiver.all_signed_with("another-secret-0123456789")
    for request in accepted:
        payload = request.payload
        assert request.headers["X-LSM-Event"] == payload["event"]
        assert request.headers["X-LSM-Delivery"] == payload["delivery"]
        assert request.headers["X-LSM-Timestamp"]
        assert payload["environment"] == engine.context(None).env_id
    states = sorted(
        (r.payload["data"]["version"], r.payload["data"]["target"])
        for r in accepted
        if r.payload["event"] == "instance_state"
    )
    assert states[0] == (1, "start") and states[-1][1] == "up"  # every step, no gap in versions
    assert [v for v, _ in states] == list(range(1, len(states) + 1))


def test_a_deploy_failure_reaches_a_webhook_that_asked_for_failures_only(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver, faults: dict[str, int]
) -> None:
    faults["routers/bad.conf"] = -1
    engine = serving(engine_factory, tmp_path, agent=True)
    register(engine, receiver, "deploy_failed")
    engine.facades.inventory.create_instance(LOCAL, "router", {"name": "bad"})

    accepted = receiver.wait_for(event_of("deploy_outcome", status="failed"), "a deploy failure")

    failure = accepted[0].payload["data"]
    assert "routers/bad.conf" in failure["resource_id"]
    assert "injected failure" in (failure["error"] or "")
    assert {(r.payload["event"], r.payload["data"]["status"]) for r in accepted} == {
        ("deploy_outcome", "failed")
    }


def test_a_refusing_receiver_is_retried_until_it_answers_2xx(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    engine = serving(engine_factory, tmp_path)
    hook = register(engine, receiver)
    receiver.fail_first = 3
    ping = engine.facades.webhooks.ping(LOCAL, hook)

    receiver.wait_for(lambda accepted: any(r.payload["delivery"] == ping.id for r in accepted), "the ping")
    wait_until(lambda: _delivery(engine, hook, ping.id).status == "delivered", "the delivery recorded")

    delivery = _delivery(engine, hook, ping.id)
    assert [a.status_code for a in delivery.attempt_log] == [500, 500, 500, 200]
    assert (delivery.attempts, delivery.last_status_code, delivery.last_error) == (4, 200, None)
    assert delivery.delivered_at is not None
    assert [r.headers["X-LSM-Delivery"] for r in receiver.requests] == [ping.id] * 4
    assert len({r.body for r in receiver.requests}) == 1  # the same signed bytes at every retry


def test_a_delivery_is_given_up_after_its_attempts(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    engine = serving(engine_factory, tmp_path, max_attempts=3)
    hook = register(engine, receiver)
    receiver.fail_first = 1_000
    ping = engine.facades.webhooks.ping(LOCAL, hook)

    wait_until(lambda: _delivery(engine, hook, ping.id).status == "failed", "the delivery given up")

    delivery = _delivery(engine, hook, ping.id)
    assert delivery.attempts == 3 and [a.status_code for a in delivery.attempt_log] == [500, 500, 500]
    assert delivery.last_error is not None and delivery.last_error.startswith("HTTP 500")
    assert len(receiver.requests) == 3


def test_deliveries_survive_a_restart_and_arrive_once_each(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    """Events queued while the receiver is down, and events made while no server runs the
    webhooks, are all delivered by the next server on the same database, once each."""
    first = serving(engine_factory, tmp_path)
    hook = register(first, receiver, "instance_state")
    receiver.down = True
    early = first.facades.inventory.create_instance(LOCAL, "router", {"name": "early"})
    # the failed attempt recorded, not only answered: stopping between the answer and its record
    # would leave no 503 in the attempt log (the delivery is then simply sent again, once)
    wait_until(
        lambda: any(a.status_code == 503 for d in _deliveries(first, hook) for a in d.attempt_log),
        "an attempt while down, recorded",
    )
    first.stop()

    idle = engine_factory(FILE_MODEL, embedded_worker=False, config=fast_config(tmp_path))
    late = idle.facades.inventory.create_instance(LOCAL, "router", {"name": "late"})
    receiver.down = False
    serving(engine_factory, tmp_path)

    for instance in (early, late):
        receiver.wait_for(event_of("instance_state", instance_id=instance.id, target="start"), "a create")

    def quiet() -> bool:
        """Nothing left to compile (so no new event line can come: there is no agent), and every
        event line of both routers delivered. Waiting only for "every delivery so far delivered"
        could pass before the late router's validation added its lines and their deliveries."""
        compiles = idle.facades.compiles.list_compiles(LOCAL, limit=1000)
        if any(c.status in ("queued", "running") for c in compiles):
            return False
        lines = sum(len(idle.facades.inventory.instance_log(LOCAL, "router", i.id)) for i in (early, late))
        deliveries = _deliveries(idle, hook)
        return len(deliveries) == lines and all(d.status == "delivered" for d in deliveries)

    wait_until(quiet, "every event line delivered, nothing left to compile")

    ok = Counter(r.headers["X-LSM-Delivery"] for r in receiver.requests if r.answered == 200)
    assert ok and set(ok.values()) == {1}
    deliveries = _deliveries(idle, hook)
    assert len({d.event_key for d in deliveries}) == len(deliveries) == len(ok)
    retried = [d for d in deliveries if d.attempt_log[0].status_code == 503]
    assert retried and all(d.attempt_log[-1].status_code == 200 for d in retried)


def test_a_new_webhook_gets_what_happens_from_now_on_and_only_the_kinds_it_asked_for(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    engine = serving(engine_factory, tmp_path)
    before = engine.facades.inventory.create_instance(LOCAL, "router", {"name": "before"})
    register(engine, receiver, "instance_state")
    after = engine.facades.inventory.create_instance(LOCAL, "router", {"name": "after"})

    accepted = receiver.wait_for(event_of("instance_state", instance_id=after.id), "the new order")

    created = {r.payload["data"]["instance_id"] for r in accepted if r.payload["data"]["trigger"] == "create"}
    assert before.id not in created  # its later transfers (its compile) may come: they are new
    assert {r.payload["event"] for r in accepted} == {"instance_state"}


def test_removing_a_webhook_cancels_its_pending_deliveries(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    engine = serving(engine_factory, tmp_path, backoff=30.0, backoff_max=30.0)
    hook = register(engine, receiver)
    receiver.down = True
    ping = engine.facades.webhooks.ping(LOCAL, hook)
    wait_until(lambda: _delivery(engine, hook, ping.id).attempts == 1, "a first attempt")

    engine.facades.webhooks.delete(LOCAL, hook)

    delivery = _delivery(engine, hook, ping.id)
    assert (delivery.status, delivery.attempts) == ("cancelled", 1)
    assert engine.facades.webhooks.list_webhooks(LOCAL) == []


def _deliveries(engine: ApiRuntime, hook: str) -> list[DeliveryOut]:
    return engine.facades.webhooks.deliveries(LOCAL, hook, limit=100, offset=0)


def _delivery(engine: ApiRuntime, hook: str, delivery_id: str) -> DeliveryOut:
    found = [d for d in _deliveries(engine, hook) if d.id == delivery_id]
    assert len(found) == 1
    return found[0]
