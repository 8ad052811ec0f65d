"""The write lane's door (``lsm.api.write_lane.ChangeAdmission``): change requests enter a few at
a time, in arrival order, before anything is done for them; reads and other paths never wait.

The app behind the door is a stand-in that records who entered and holds every request until
the test lets go, so the counts are read while nothing moves; every step waits for a count,
never for time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from lsm.api.write_lane import ChangeAdmission

PREFIX = "/lsm/v1/service_inventory"
WAIT_S = 30.0
MAX_BODY = 1024


class HeldApp:
    """Answers 200 to each request once released; records the order requests came in."""

    def __init__(self) -> None:
        self.entered: list[str] = []
        self.inside = 0
        self.most_inside = 0
        self.release = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.entered.append(f"{scope['method']} {scope['path']}")
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        try:
            if scope["method"] != "GET" and scope["path"].startswith(PREFIX):
                await self.release.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})
        finally:
            self.inside -= 1


def _arrived(door: ChangeAdmission, count: int) -> Callable[[], bool]:
    return lambda: sum(door.counts()) == count


async def until(check: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT_S):
        while not check():
            await asyncio.sleep(0.001)
    assert check(), what


@pytest.mark.anyio
@pytest.mark.parametrize("limit", [1, 3])
async def test_changes_enter_a_few_at_a_time_in_arrival_order(limit: int) -> None:
    inner = HeldApp()
    door = ChangeAdmission(inner, prefix=PREFIX, limit=limit, max_body_bytes=MAX_BODY)
    sent = [f"PATCH {PREFIX}/port/{i}" for i in range(limit + 4)]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=door), base_url="http://t") as http:
        calls: list[asyncio.Task[httpx.Response]] = []
        for number, line in enumerate(sent, start=1):
            method, path = line.split(" ")
            calls.append(asyncio.create_task(http.request(method, path, json={})))
            # the next one is sent only once this one is inside or waiting: the order is known
            await until(_arrived(door, number), f"request {number} arrived")
        assert door.counts() == (limit, 4)
        assert inner.entered == sent[:limit]  # the others have not reached the app at all

        # reads, and changes outside the inventory, pass a full door
        read = await http.get(f"{PREFIX}/port/0")
        other = await http.post("/lsm/v1/compiles", json={})
        assert (read.status_code, other.status_code) == (200, 200)
        assert door.counts() == (limit, 4)

        inner.release.set()
        answers = await asyncio.gather(*calls)

    assert [a.status_code for a in answers] == [200] * len(sent)
    changes = [line for line in inner.entered if line.startswith("PATCH")]
    assert changes == sent  # first come, first in
    assert inner.most_inside <= limit + 2  # the changes, plus the read and the other request
    assert door.counts() == (0, 0)


@pytest.mark.anyio
async def test_a_change_that_fails_gives_its_place_to_the_next() -> None:
    failures = 0

    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal failures
        failures += 1
        raise RuntimeError("the app failed")

    door = ChangeAdmission(failing, prefix=PREFIX, limit=1, max_body_bytes=MAX_BODY)
    transport = httpx.ASGITransport(app=door, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        answers = await asyncio.gather(*(http.delete(f"{PREFIX}/port/{i}") for i in range(3)))
    assert [a.status_code for a in answers] == [500, 500, 500]
    assert failures == 3
    assert door.counts() == (0, 0)


def test_a_door_that_admits_nobody_is_refused() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:  # pragma: no cover
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="at least one"):
        ChangeAdmission(app, prefix=PREFIX, limit=0, max_body_bytes=MAX_BODY)


@pytest.mark.anyio
async def test_a_change_whose_body_is_still_arriving_holds_no_place() -> None:
    """A slow sender waits outside; a complete change behind it goes in; the app gets the whole
    body either way."""
    bodies: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    door = ChangeAdmission(app, prefix=PREFIX, limit=1, max_body_bytes=MAX_BODY)
    rest = asyncio.Event()

    async def slowly() -> AsyncIterator[bytes]:
        yield b'{"a": '
        await rest.wait()
        yield b"1}"

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=door), base_url="http://t") as http:
        slow = asyncio.create_task(http.patch(f"{PREFIX}/port/1", content=slowly()))
        await until(lambda: door.reading == 1, "the slow one's body is being read")
        assert door.counts() == (0, 0)  # it holds no place meanwhile
        fast = await http.patch(f"{PREFIX}/port/2", content=b'{"b": 2}')
        assert fast.status_code == 200 and bodies == [b'{"b": 2}']  # it did not wait for the slow one
        rest.set()
        assert (await slow).status_code == 200
    assert bodies == [b'{"b": 2}', b'{"a": 1}']
