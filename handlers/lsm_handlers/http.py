"""``std::HttpDocument``: a JSON document at a URL, kept as desired with GET, PUT and DELETE.

Why this shape: most controllers a service is deployed to speak HTTP + JSON; this handler is the
plain REST contract (GET reads, 404 means missing, PUT writes the whole document, DELETE removes
it), so a model can drive such a target without writing a handler.

Why a sync ``httpx.Client``, one per handler, made on first use: the agent calls a handler from
several threads, and a sync client is safe to share between threads and keeps its connection
pool; an async client would be bound to one thread's event loop. Every request has a timeout
(``timeout`` seconds, connect and read). Every error names the resource, the method, the URL
and the status (or the transport error), never a bare exception. Only URLs under the agent's
``handler_url_roots`` are reached (``ctx.jail.url``), and redirects are not followed, so an
order can not point the agent at its own network.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx
from pydantic import field_validator

import lsm
from lsm.deploy.handler import Change, HandlerError


class HttpDocument(lsm.Resource, type="std::HttpDocument", id_attribute="url"):
    """The JSON ``document`` that must be served at ``url`` (http or https)."""

    url: str
    document: Any = None

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parsed = httpx.URL(value)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"std::HttpDocument url {value!r} is not an absolute http(s) URL")
        return value


class HttpDocumentHandler(lsm.CRUDHandler[HttpDocument]):
    """GET to read, PUT to create or update, DELETE on purge."""

    #: seconds for connecting and for each read/write of one request
    timeout: ClassVar[float] = 10.0

    def __init__(self) -> None:
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> httpx.Client:
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    self._client = httpx.Client(timeout=httpx.Timeout(self.timeout), follow_redirects=False)
                client = self._client
        return client

    def close(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _request(
        self, ctx: lsm.HandlerContext, resource: HttpDocument, method: str, **kwargs: Any
    ) -> httpx.Response:
        url = ctx.jail.url(resource.url, who=resource.id)  # only URLs the agent's operator allowed
        try:
            return self.client.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise HandlerError(
                f"{resource.id}: {method} {resource.url} failed: {type(exc).__name__}: {exc}"
            ) from None

    @staticmethod
    def _fail(resource: HttpDocument, method: str, response: httpx.Response) -> HandlerError:
        body = response.text[:200].strip()
        return HandlerError(
            f"{resource.id}: {method} {resource.url} answered {response.status_code}"
            + (f": {body}" if body else "")
        )

    def read(self, ctx: lsm.HandlerContext, resource: HttpDocument) -> Mapping[str, Any] | None:
        response = self._request(ctx, resource, "GET", headers={"Accept": "application/json"})
        if response.status_code in (404, 410):
            return None
        if response.status_code != 200:
            raise self._fail(resource, "GET", response)
        try:
            document = response.json()
        except ValueError:
            raise HandlerError(
                f"{resource.id}: GET {resource.url} answered 200 with a body that is not JSON"
            ) from None
        return {"url": resource.url, "document": document}

    def _put(self, ctx: lsm.HandlerContext, resource: HttpDocument) -> None:
        # serialized here: httpx sends no body at all for ``json=None``, and ``null`` is a document
        body = json.dumps(resource.document, separators=(",", ":"), ensure_ascii=False).encode()
        headers = {"Content-Type": "application/json"}
        response = self._request(ctx, resource, "PUT", content=body, headers=headers)
        if not response.is_success:
            raise self._fail(resource, "PUT", response)
        ctx.info("document written", url=resource.url, status=response.status_code)

    def create(self, ctx: lsm.HandlerContext, resource: HttpDocument) -> None:
        self._put(ctx, resource)

    def update(self, ctx: lsm.HandlerContext, resource: HttpDocument, changes: Mapping[str, Change]) -> None:
        self._put(ctx, resource)

    def delete(self, ctx: lsm.HandlerContext, resource: HttpDocument) -> None:
        response = self._request(ctx, resource, "DELETE")
        if not response.is_success and response.status_code not in (404, 410):
            raise self._fail(resource, "DELETE", response)
        ctx.info("document removed", url=resource.url, status=response.status_code)
