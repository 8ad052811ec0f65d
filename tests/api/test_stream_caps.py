"""Event streams are capped per caller and in total, a 429 with ``Retry-After`` past a cap
(docs/api.md §8). Real engines served by uvicorn on 127.0.0.1; every configured backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import cast

import httpx

from lsm.api.streams import StreamLimits
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.auth import AuthConfig
from lsm.testing import served_url
from tests.waiting import wait_until


class Streams:
    """Opens event streams on one server and keeps them open until the test ends."""

    def __init__(self, url: str, stack: ExitStack) -> None:
        self.url = url
        self.stack = stack
        #: each open stream's line iterator: one dropped is closed, and its stream with it
        self.lines: list[Iterator[str]] = []

    def open(self, token: str | None = None, path: str = "/api/v1/events") -> httpx.Response:
        """A stream's response: on 200, its first line has been read (the server counts it)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = self.stack.enter_context(httpx.Client(base_url=self.url, timeout=30, headers=headers))
        response = self.stack.enter_context(client.stream("GET", path))
        if response.status_code == 200:
            self.lines.append(response.iter_lines())
            assert next(self.lines[-1]) == ": connected"
        else:
            response.read()
        return response


@contextmanager
def streams_on(engine: ApiRuntime) -> Iterator[Streams]:
    with served_url(engine) as url, ExitStack() as stack:
        yield Streams(url, stack)


def limits_of(engine: ApiRuntime) -> StreamLimits:
    return cast(StreamLimits, engine.app.state.stream_limits)


def refused(response: httpx.Response, scope: str, limit: int) -> bool:
    body = response.json()
    return (
        response.status_code == 429
        and response.headers["Retry-After"] == "10"
        and (body["error"], body["scope"], body["limit"]) == ("too_many_streams", scope, limit)
    )


def test_one_client_gets_its_share_and_a_429_past_it(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(config={"max_streams_per_caller": 2, "max_streams": 10})
    with streams_on(engine) as streams:
        first = streams.open()
        streams.open(path="/console/events")  # the console's stream counts the same
        assert refused(streams.open(), "caller", 2)
        assert refused(streams.open(path="/console/events"), "caller", 2)
        assert list(limits_of(engine).open_streams().values()) == [2]

        first.close()  # the client goes: its slot comes back
        wait_until(lambda: sum(limits_of(engine).open_streams().values()) == 1, "the slot given back")
        assert streams.open().status_code == 200
    wait_until(lambda: limits_of(engine).open_streams() == {}, "every slot given back")


def test_with_authentication_on_each_token_is_a_caller_within_the_total(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    config = {"auth": AuthConfig(enabled=True), "max_streams_per_caller": 2, "max_streams": 3}
    engine = engine_factory(config=config)
    token = {
        name: engine.facades.tokens.create(RequestContext.local(), name, {"*": "viewer"}).token
        for name in ("a", "b", "c")
    }
    with streams_on(engine) as streams:
        assert [streams.open(token["a"]).status_code for _ in range(2)] == [200, 200]
        assert refused(streams.open(token["a"]), "caller", 2)
        assert streams.open(token["b"]).status_code == 200
        assert refused(streams.open(token["c"]), "server", 3)  # the total is reached
        assert streams.open(None).status_code == 401  # no token: refused before any slot
        assert sorted(limits_of(engine).open_streams().values()) == [1, 2]
