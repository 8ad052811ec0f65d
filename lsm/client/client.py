"""``Client`` and ``AsyncClient``: the API over httpx, with ``lsm.errors`` and a retry policy.

Both answer parsed JSON (dicts and lists) and raise the ``lsm.errors`` class the server
raised (``VersionConflict``, ``InvalidAttributes`` ...) with its details. Transport errors that
outlast the retry policy propagate as httpx exceptions (``httpx.ConnectError`` ...).

This package imports nothing of the server side: only ``lsm.errors``, the bottom layer.

Example::

    with Client("http://127.0.0.1:8888", environment="default") as client:
        router = client.create_instance("router", {"mgmt_ip": "10.0.0.1"})
        client.get_instance("router", "mgmt_ip=10.0.0.1")["state"]
"""

from __future__ import annotations

from collections.abc import Awaitable
from types import TracebackType
from typing import Any, cast

import httpx

from lsm.client.compliance import ComplianceRoutes
from lsm.client.credentials import resolve_token
from lsm.client.errors import error_from_response
from lsm.client.events import READ_TIMEOUT, AsyncEventStream, EventStream
from lsm.client.expert import ExpertRoutes
from lsm.client.orders import OrderRoutes
from lsm.client.retry import DEFAULT_RETRY, RetryPolicy
from lsm.client.routes import JsonList, JsonObject, Request
from lsm.client.webhooks import WebhookRoutes

DEFAULT_URL = "http://127.0.0.1:8888"
ENVIRONMENT_HEADER = "X-LSM-Environment"


def _headers(environment: str | None, token: str | None) -> dict[str, str]:
    headers = {ENVIRONMENT_HEADER: environment} if environment else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _arguments(request: Request) -> dict[str, Any]:
    arguments: dict[str, Any] = {"params": request.params, "json": request.json}
    if request.headers:
        arguments["headers"] = request.headers
    if request.timeout is not None:
        arguments["timeout"] = request.timeout
    return arguments


def _answer(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise error_from_response(response)
    if not response.content:
        return None
    return response.json()


class Client(
    WebhookRoutes[JsonObject, JsonList],
    ExpertRoutes[JsonObject, JsonList],
    ComplianceRoutes[JsonObject, JsonList],
    OrderRoutes[JsonObject, JsonList],
):
    """The synchronous client. ``transport`` replaces the network (``httpx.MockTransport``, a
    WSGI/test transport); ``retry`` is the ``RetryPolicy`` (``NO_RETRY`` to disable); ``token``
    is sent as ``Authorization: Bearer``, found by ``lsm.client.credentials.resolve_token``
    (``LSM_TOKEN``, the token file) when not given."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        environment: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        token: str | None = None,
    ) -> None:
        self.url = url
        self.environment = environment
        self.retry = retry
        self._http = httpx.Client(
            base_url=url,
            headers=_headers(environment, resolve_token(token)),
            transport=transport,
            timeout=timeout,
        )

    def _send(self, request: Request) -> Any:
        send = self.retry.retrying(request.method, idempotent=request.idempotent)
        response: httpx.Response = send(
            self._http.request, request.method, request.path, **_arguments(request)
        )
        return _answer(response)

    def _one(self, request: Request) -> JsonObject:
        return cast(JsonObject, self._send(request))

    def _many(self, request: Request) -> JsonList:
        return cast(JsonList, self._send(request))

    def events(
        self, *, last_event_id: str | None = None, read_timeout: float | None = READ_TIMEOUT
    ) -> EventStream:
        """The server-sent events of the environment, from now or after ``last_event_id``."""
        return EventStream(self._http, last_event_id=last_event_id, read_timeout=read_timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient(
    WebhookRoutes[Awaitable[JsonObject], Awaitable[JsonList]],
    ExpertRoutes[Awaitable[JsonObject], Awaitable[JsonList]],
    ComplianceRoutes[Awaitable[JsonObject], Awaitable[JsonList]],
    OrderRoutes[Awaitable[JsonObject], Awaitable[JsonList]],
):
    """The asynchronous client: every method returns an awaitable of what ``Client``'s returns."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        environment: str | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        token: str | None = None,
    ) -> None:
        self.url = url
        self.environment = environment
        self.retry = retry
        self._http = httpx.AsyncClient(
            base_url=url,
            headers=_headers(environment, resolve_token(token)),
            transport=transport,
            timeout=timeout,
        )

    async def _send(self, request: Request) -> Any:
        send = self.retry.async_retrying(request.method, idempotent=request.idempotent)
        response: httpx.Response = await send(
            self._http.request, request.method, request.path, **_arguments(request)
        )
        return _answer(response)

    def _one(self, request: Request) -> Awaitable[JsonObject]:
        return self._send(request)

    def _many(self, request: Request) -> Awaitable[JsonList]:
        return self._send(request)

    def events(
        self, *, last_event_id: str | None = None, read_timeout: float | None = READ_TIMEOUT
    ) -> AsyncEventStream:
        """The server-sent events of the environment, from now or after ``last_event_id``."""
        return AsyncEventStream(self._http, last_event_id=last_event_id, read_timeout=read_timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
