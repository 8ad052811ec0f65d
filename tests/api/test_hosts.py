"""The ``Host`` check (docs/api.md §1): a DNS-rebinding page is refused, the server's own names
are answered. Real engines served by uvicorn on 127.0.0.1; every configured backend."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import httpx
import pytest

from lsm.api.hosts import allowed_names, host_name
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.auth import AuthConfig
from lsm.testing import async_client, served_url


def ask(url: str, host: str | None, path: str = "/lsm/v1/service_catalog") -> httpx.Response:
    headers = {"Host": host} if host is not None else {}
    with httpx.Client(base_url=url, timeout=30) as http:
        return http.get(path, headers=headers)


def test_with_authentication_off_only_the_loopback_and_configured_names_are_answered(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(config={"allowed_hosts": ["lsm.example.com", "::1"]})
    with served_url(engine) as url:
        port = url.rsplit(":", 1)[1]
        for good in (None, f"localhost:{port}", "127.0.0.1", "[::1]:8888", "LSM.example.com.", "localhost"):
            assert ask(url, good).status_code == 200, good
        for bad in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
            refused = ask(url, bad)
            assert refused.status_code == 400, bad
            body = refused.json()
            assert body["error"] == "host_not_allowed" and "allowed_hosts" in body["message"]
        assert ask(url, "evil.example", "/health").status_code == 400  # no route is exempt
        assert ask(url, "evil.example", "/").status_code == 400  # nor the console


def test_a_request_without_a_host_is_refused(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    with served_url(engine) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            raw.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            answer = b""
            while chunk := raw.recv(4096):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 400") and b"host_not_allowed" in answer


@pytest.mark.parametrize(
    ("configured", "answered", "refused"),
    [
        ([], ["evil.example", "lsm.example.com"], []),  # a rebinding page has no token
        (["lsm.example.com"], ["lsm.example.com", "localhost"], ["evil.example"]),
        (["*"], ["evil.example"], []),
    ],
)
def test_with_authentication_on_the_configured_names_decide(
    engine_factory: Callable[..., ApiRuntime], configured: list[str], answered: list[str], refused: list[str]
) -> None:
    config = {"auth": AuthConfig(enabled=True), "allowed_hosts": configured}
    engine = engine_factory(config=config)
    with served_url(engine) as url:
        for host in answered:
            assert ask(url, host).status_code == 401, host  # past the check: asked for a token
        for host in refused:
            assert ask(url, host).status_code == 400, host


def test_the_listen_address_is_a_name_unless_it_is_a_wildcard() -> None:
    assert allowed_names([], auth_enabled=False, listen="10.0.0.5") == frozenset(
        {
            "10.0.0.5",
            "localhost",
            "127.0.0.1",
            "[::1]",
        }
    )
    assert allowed_names([], auth_enabled=False, listen="0.0.0.0") == frozenset(
        {"localhost", "127.0.0.1", "[::1]"}
    )
    assert "[fd00::5]" in (allowed_names([], auth_enabled=False, listen="fd00::5") or ())


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("Example.COM:8888", "example.com"),
        ("[::1]:80", "[::1]"),
        ("[::1]", "[::1]"),
        ("host.", "host"),
        ("", ""),
    ],
)
def test_a_host_value_is_its_name_without_the_port(value: str, name: str) -> None:
    assert host_name(value) == name


def test_in_process_clients_of_lsm_testing_pass_the_check(engine: ApiRuntime) -> None:
    async def health() -> dict[str, object]:
        async with async_client(engine) as client:
            return dict(await client.health())

    assert asyncio.run(health())["status"] == "ok"
