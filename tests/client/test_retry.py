"""The retry policy: connection failures and 503 are retried with a bounded back-off; 4xx never.

The network is replaced by ``httpx.MockTransport`` (a scripted sequence of answers or
transport errors): what is tested is the client's reaction to them, not the API.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from tenacity import RetryCallState

from lsm.client import NO_RETRY, AsyncClient, Client, RetryPolicy
from lsm.errors import InvalidAttributes, LsmError, NotFound, RuleViolation, VersionConflict

FAST = RetryPolicy(attempts=4, initial_wait=0, max_wait=0, jitter=0)

Step = httpx.Response | Exception


class Script:
    """Answers requests with the next step; counts them and keeps the requests."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, Exception):
            raise step
        return step

    @property
    def calls(self) -> int:
        return len(self.requests)


def client(script: Script, retry: RetryPolicy = FAST, environment: str | None = None) -> Client:
    return Client("http://lsm.test", environment, transport=httpx.MockTransport(script), retry=retry)


def ok(body: object = None) -> httpx.Response:
    return httpx.Response(200, json={"status": "ok"} if body is None else body)


def unavailable() -> httpx.Response:
    return httpx.Response(503, json={"error": "unavailable", "message": "the engine is not ready yet"})


def error(status: int, kind: str, **details: object) -> httpx.Response:
    return httpx.Response(status, json={"error": kind, "message": f"{kind} happened", **details})


def test_a_503_is_retried_until_the_server_answers() -> None:
    script = Script(unavailable(), unavailable(), ok())

    assert client(script).health() == {"status": "ok"}
    assert script.calls == 3


def test_503_retries_are_bounded_and_end_in_the_error() -> None:
    script = Script(unavailable())

    with pytest.raises(LsmError, match="not ready"):
        client(script).health()
    assert script.calls == FAST.attempts


@pytest.mark.parametrize("method", ["get", "post"])
def test_connection_errors_are_retried_for_every_method(method: str) -> None:
    script = Script(httpx.ConnectError("refused"), httpx.ConnectTimeout("slow"), ok({"id": "x"}))
    c = client(script)

    result = c.get_instance("note", "x") if method == "get" else c.create_instance("note", {"title": "t"})

    assert result == {"id": "x"}
    assert script.calls == 3


def test_connection_errors_propagate_when_attempts_are_spent() -> None:
    script = Script(httpx.ConnectError("refused"))

    with pytest.raises(httpx.ConnectError):
        client(script).health()
    assert script.calls == FAST.attempts


def test_a_broken_answer_is_retried_for_idempotent_methods_only() -> None:
    get = Script(httpx.RemoteProtocolError("dropped"), ok({"id": "x"}))
    patch = Script(httpx.RemoteProtocolError("dropped"), ok({"id": "x"}))

    assert client(get).get_instance("note", "x") == {"id": "x"}
    with pytest.raises(httpx.RemoteProtocolError):
        client(patch).update_instance("note", "x", current_version=1, attributes={"text": "a"})
    assert (get.calls, patch.calls) == (2, 1)


def test_a_read_timeout_is_not_retried() -> None:
    script = Script(httpx.ReadTimeout("the server may be working on it"))

    with pytest.raises(httpx.ReadTimeout):
        client(script).request_compile(kind="full")
    assert script.calls == 1


@pytest.mark.parametrize(
    ("response", "raised"),
    [
        (error(409, "version_conflict", current_version=3), VersionConflict),
        (
            error(422, "invalid_attributes", errors=[{"path": "mtu", "reason": "not an int"}]),
            InvalidAttributes,
        ),
        (error(404, "not_found"), NotFound),
        (error(400, "export_rule_violation", rule=1), RuleViolation),
        (error(500, "internal"), LsmError),
    ],
)
def test_other_errors_are_raised_at_once_as_lsm_errors(
    response: httpx.Response, raised: type[LsmError]
) -> None:
    script = Script(response)

    with pytest.raises(raised) as caught:
        client(script).update_instance("note", "x", current_version=1, attributes={})
    assert script.calls == 1
    assert caught.value.message == f"{response.json()['error']} happened"


def test_an_error_keeps_the_details_of_the_body() -> None:
    allowed = [{"trigger": "api_set_state", "target": "draft"}]
    script = Script(
        error(409, "version_conflict", current_version=3, expected=1),
        error(422, "invalid_attributes", errors=[{"path": "mtu", "reason": "not an int"}]),
        error(409, "transfer_not_allowed", allowed=allowed),
    )
    c = client(script)

    with pytest.raises(VersionConflict) as conflict:
        c.health()
    with pytest.raises(InvalidAttributes) as invalid:
        c.health()
    with pytest.raises(LsmError) as not_allowed:
        c.health()

    assert conflict.value.details == {"current_version": 3, "expected": 1}
    assert invalid.value.errors == [{"path": "mtu", "reason": "not an int"}]
    assert not_allowed.value.kind == "transfer_not_allowed"
    assert not_allowed.value.details["allowed"] == allowed


def test_an_unknown_kind_or_a_foreign_body_falls_back_on_the_status() -> None:
    script = Script(error(409, "a_newer_kind"), httpx.Response(502, text="<html>bad gateway</html>"))
    c = client(script)

    with pytest.raises(LsmError) as newer:
        c.health()
    with pytest.raises(LsmError) as foreign:
        c.health()

    assert newer.value.status == 409
    assert type(foreign.value) is LsmError
    assert "502" in foreign.value.message and "bad gateway" in foreign.value.message
    assert foreign.value.details == {"status_code": 502}


def test_no_retry_tries_once() -> None:
    script = Script(unavailable())

    with pytest.raises(LsmError):
        client(script, retry=NO_RETRY).health()
    assert script.calls == 1


def test_a_policy_that_would_retry_a_4xx_is_refused() -> None:
    with pytest.raises(ValueError, match="409"):
        RetryPolicy(retry_statuses=frozenset({503, 409}))
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


def _waits(policy: RetryPolicy, tries: int) -> list[float]:
    retrying = policy.retrying("GET")
    waits = []
    for attempt in range(1, tries + 1):
        state = RetryCallState(retrying, fn=None, args=(), kwargs={})
        state.attempt_number = attempt
        waits.append(retrying.wait(state))
    return waits


def test_the_back_off_is_exponential_and_capped() -> None:
    policy = RetryPolicy(initial_wait=0.5, max_wait=3.0, jitter=0)

    assert _waits(policy, 5) == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_stays_within_its_bound() -> None:
    policy = RetryPolicy(initial_wait=0.5, max_wait=3.0, jitter=0.25)

    assert all(0.5 <= w <= 0.75 for w in _waits(policy, 1) * 20)


def test_requests_carry_the_environment_header_and_repeated_states() -> None:
    script = Script(ok([]))

    client(script, environment="lab").list_instances("note", states=["draft", "published"], limit=5)

    request = script.requests[0]
    assert request.headers["X-LSM-Environment"] == "lab"
    assert request.url.params.get_list("state") == ["draft", "published"]
    assert request.url.params["limit"] == "5"
    assert request.url.path == "/lsm/v1/service_inventory/note"


def test_references_are_encoded_as_one_path_segment() -> None:
    script = Script(ok({}))

    client(script).get_instance("port", "name=eth0/1")

    assert script.requests[0].url.raw_path == b"/lsm/v1/service_inventory/port/name=eth0%2F1"


def test_delete_sends_the_current_version_as_a_query_parameter() -> None:
    script = Script(ok({}))

    client(script).delete_instance("note", "x", current_version=4)

    assert script.requests[0].method == "DELETE"
    assert script.requests[0].url.params["current_version"] == "4"


@pytest.mark.anyio
async def test_the_async_client_follows_the_same_policy() -> None:
    script = Script(unavailable(), httpx.ConnectError("refused"), ok())
    conflict = Script(error(409, "version_conflict"))

    def make(s: Callable[[httpx.Request], httpx.Response]) -> AsyncClient:
        return AsyncClient("http://lsm.test", transport=httpx.MockTransport(s), retry=FAST)

    spent = Script(unavailable())

    async with make(script) as c:
        assert await c.health() == {"status": "ok"}
    async with make(conflict) as c:
        with pytest.raises(VersionConflict):
            await c.set_state("note", "x", current_version=1, target_state="published")
    async with make(spent) as c:
        with pytest.raises(LsmError, match="not ready"):
            await c.health()
    assert (script.calls, conflict.calls, spent.calls) == (3, 1, FAST.attempts)
