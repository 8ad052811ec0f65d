"""Webhooks never reach internal addresses unless the server allows it (docs/api.md §16).

Registration goes through the real app served by uvicorn, with the default policy (no
``allow_internal``); delivery goes through the real sender on every backend, with a resolver
that plays a rebinding DNS and an ``httpx.MockTransport`` that plays the receivers (their
addresses are public, which no test may reach).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsm.errors import WebhookTargetRefused
from lsm.runtime.wiring import ApiRuntime
from lsm.services.webhook_send import WebhookSender
from lsm.store.database import Database
from lsm.store.webhooks import statements as store
from lsm.testing import served_url
from lsm.webhooks.targets import check_registration, pinned, rule_of
from tests.webhooks.conftest import FILE_MODEL, fast_config, fast_policy, queue_pings

PUBLIC = "93.184.216.34"

#: internal targets and the rule each must be refused by
INTERNAL = [
    ("http://127.0.0.1:5432/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://localhost:8888/api/v1/tokens", "loopback"),
    ("http://api.localhost/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f.0.0.1/", "loopback"),
    ("http://[::1]:8888/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:a9fe:a9fe]/", "metadata"),
    ("http://[64:ff9b::a00:1]/", "private"),
    ("http://[2002:c0a8:0101::1]/", "private"),
    ("http://0.0.0.0:8888/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://169.254.1.1/", "link_local"),
    ("http://[fe80::1]/", "link_local"),
    ("http://10.1.2.3/", "private"),
    ("http://172.16.0.1/", "private"),
    ("https://192.168.1.1/", "private"),
    ("http://100.64.0.1/", "shared"),
    ("http://[fd12:3456::1]/", "unique_local"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://255.255.255.255/", "reserved"),
    ("http://192.0.2.10/", "reserved"),
]


@pytest.fixture
def http(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> Iterator[httpx.Client]:
    config = {**fast_config(tmp_path), "webhooks": fast_policy(allow_internal=False)}
    engine = engine_factory(FILE_MODEL, config=config)
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


@pytest.mark.parametrize(("url", "rule"), INTERNAL)
def test_an_internal_target_is_refused_with_a_422_naming_the_rule(
    http: httpx.Client, url: str, rule: str
) -> None:
    response = http.post("/api/v1/webhooks", json={"url": url})

    assert response.status_code == 422, response.text
    body = response.json()
    assert (body["error"], body["field"], body["rule"]) == ("webhook_target_refused", "url", rule)
    assert "allow_internal" in body["message"]
    assert http.get("/api/v1/webhooks").json() == []  # nothing stored


def test_a_public_target_and_a_name_that_does_not_resolve_yet_are_accepted(http: httpx.Client) -> None:
    for url in (f"https://{PUBLIC}/hook", "https://receiver.invalid/in"):
        assert http.post("/api/v1/webhooks", json={"url": url}).status_code == 200
    assert len(http.get("/api/v1/webhooks").json()) == 2


def test_a_name_resolving_to_an_internal_address_is_refused_at_registration() -> None:
    with pytest.raises(WebhookTargetRefused) as refused:
        check_registration("https://hooks.example/in", resolve=lambda host, port: [PUBLIC, "10.0.0.7"])
    assert (refused.value.details["rule"], refused.value.details["address"]) == ("private", "10.0.0.7")
    check_registration("https://hooks.example/in", resolve=lambda host, port: [PUBLIC])


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_an_ipv6_form_carrying_an_ipv4_address_is_judged_by_it(number: int) -> None:
    v4 = ipaddress.IPv4Address(number)
    for form in (f"::ffff:{v4}", f"64:ff9b::{v4}"):
        assert rule_of(ipaddress.IPv6Address(form)) == rule_of(v4)


def test_a_delivery_goes_to_the_checked_address_with_its_name_kept() -> None:
    target = pinned(
        "https://hooks.example:8443/in?x=1", allow_internal=False, resolve=lambda host, port: [PUBLIC]
    )
    assert target.url == f"https://{PUBLIC}:8443/in?x=1"
    assert target.headers == {"Host": "hooks.example:8443"}
    assert target.extensions == {"sni_hostname": "hooks.example"}
    assert pinned("http://127.0.0.1:9/", allow_internal=True).url == "http://127.0.0.1:9/"


class Receivers:
    """Plays the receivers behind public addresses: answers by host, records every request."""

    def __init__(self, answers: dict[str, httpx.Response]) -> None:
        self.answers = answers
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answers[request.headers["host"]]


def deliver(
    db: Database, url: str, receivers: Receivers, dns: dict[str, list[str]]
) -> list[dict[str, object]]:
    """Queue one delivery to ``url`` (as if registered when its name was public), send it with
    the default policy, and return its attempts."""
    _, (delivery_id,) = queue_pings(db, url, 1)
    sender = WebhookSender(
        db,
        fast_policy(allow_internal=False, max_attempts=1),  # no retry to claim again
        "sender",
        transport=httpx.MockTransport(receivers),
        resolve=lambda host, port: dns[host],
    )
    try:
        claimed = sender.claim()
        assert claimed is not None
        claimed.run()
    finally:
        sender.close()
    with db.read() as session:
        return list(store.attempts_of(session.connection(), [delivery_id])[delivery_id])


def test_a_name_rebound_to_an_internal_address_is_refused_at_delivery(db: Database) -> None:
    receivers = Receivers({})
    (attempt,) = deliver(db, "http://rebind.example/hook", receivers, {"rebind.example": ["127.0.0.1"]})

    assert receivers.requests == []  # no request left the sender
    assert attempt["status_code"] is None
    error = str(attempt["error"])
    assert error.startswith("refused: webhook target rebind.example (127.0.0.1) is a loopback")


def test_a_redirect_is_followed_only_to_a_checked_target(db: Database) -> None:
    inward = httpx.Response(307, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    onward = httpx.Response(308, headers={"Location": "https://other.example/in"})
    answers = {"hooks.example": inward, "moved.example": onward, "other.example": httpx.Response(204)}
    receivers = Receivers(answers)
    dns = {"hooks.example": [PUBLIC], "moved.example": [PUBLIC], "other.example": ["93.184.216.35"]}

    (refused,) = deliver(db, "http://hooks.example/in", receivers, dns)
    (followed,) = deliver(db, "http://moved.example/in", receivers, dns)

    assert "metadata" in str(refused["error"]) and refused["status_code"] is None
    assert (followed["status_code"], followed["error"]) == (204, None)
    hosts = [(str(r.url), r.headers["host"]) for r in receivers.requests]
    assert hosts == [
        (f"http://{PUBLIC}/in", "hooks.example"),
        (f"http://{PUBLIC}/in", "moved.example"),
        ("https://93.184.216.35/in", "other.example"),
    ]
    assert receivers.requests[1].content == receivers.requests[2].content  # the same signed body


def test_the_delivery_log_keeps_the_status_and_timing_never_the_answer(db: Database) -> None:
    secret_answer = httpx.Response(500, text="password=hunter2 " * 100)
    found = httpx.Response(302, headers={"Location": "http://hooks.example/elsewhere"})
    receivers = Receivers({"hooks.example": secret_answer, "found.example": found})
    dns = {"hooks.example": [PUBLIC], "found.example": [PUBLIC]}

    (failed,) = deliver(db, "http://hooks.example/in", receivers, dns)
    (redirected,) = deliver(db, "http://found.example/in", receivers, dns)

    assert (failed["status_code"], failed["error"]) == (500, "HTTP 500")
    assert float(str(failed["duration_ms"])) >= 0
    assert redirected["status_code"] == 302 and "not followed" in str(redirected["error"])
    assert len(receivers.requests) == 2  # the 302 was not followed
