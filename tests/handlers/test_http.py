"""std::HttpDocument against a real HTTP server on 127.0.0.1 that counts the requests it gets."""

from __future__ import annotations

import json
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lsm_handlers.http import HttpDocument, HttpDocumentHandler
from pydantic import ValidationError

from lsm.deploy.handler import Change, HandlerError
from tests.handlers import run


class DocumentServer(ThreadingHTTPServer):
    """Keeps JSON documents by path; ``/broken/...`` answers 500 to writes, ``/text`` serves non-JSON."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Requests)
        self.documents: dict[str, bytes] = {}
        self.requests: Counter[str] = Counter()
        self.lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class _Requests(BaseHTTPRequestHandler):
    server: DocumentServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass

    def _answer(self, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.requests["GET"] += 1
            body = self.server.documents.get(self.path)
        if self.path == "/text":
            self._answer(200, b"<html>hi</html>", "text/html")
        elif body is None:
            self._answer(404, b'{"detail": "not found"}')
        else:
            self._answer(200, body)

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.requests["PUT"] += 1
            if self.path.startswith("/broken"):
                self._answer(500, b'{"detail": "disk full"}')
                return
            created = self.path not in self.server.documents
            self.server.documents[self.path] = body
        self._answer(201 if created else 200, body)

    def do_DELETE(self) -> None:
        with self.server.lock:
            self.server.requests["DELETE"] += 1
            found = self.server.documents.pop(self.path, None)
        self._answer(204 if found is not None else 404)


@pytest.fixture
def server() -> Iterator[DocumentServer]:
    srv = DocumentServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


@pytest.fixture
def handler() -> Iterator[HttpDocumentHandler]:
    h = HttpDocumentHandler()
    yield h
    h.close()


def doc(url: str, document: Any, *, purged: bool = False) -> HttpDocument:
    return HttpDocument(agent="api", url=url, document=document, purged=purged)


def test_a_missing_document_is_read_then_put(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    url = server.url("/vlans/10")
    ctx = run(handler, doc(url, {"id": 10, "name": "users"}), tmp_path)
    assert ctx.action == "create"
    assert ctx.changes["document"] == Change(None, {"id": 10, "name": "users"})
    assert server.requests == Counter({"GET": 1, "PUT": 1})
    assert json.loads(server.documents["/vlans/10"]) == {"id": 10, "name": "users"}


def test_a_document_in_its_desired_state_gets_no_put(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    url = server.url("/vlans/10")
    run(handler, doc(url, {"id": 10}), tmp_path)
    ctx = run(handler, doc(url, {"id": 10}), tmp_path)
    assert ctx.action == "none" and ctx.changes == {}
    assert server.requests == Counter({"GET": 2, "PUT": 1})


def test_a_changed_document_is_put_with_only_the_document_as_change(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    url = server.url("/vlans/10")
    run(handler, doc(url, {"id": 10, "name": "a"}), tmp_path)
    ctx = run(handler, doc(url, {"id": 10, "name": "b"}), tmp_path)
    assert ctx.action == "update"
    assert ctx.changes == {"document": Change({"id": 10, "name": "a"}, {"id": 10, "name": "b"})}
    assert json.loads(server.documents["/vlans/10"]) == {"id": 10, "name": "b"}
    assert server.requests["PUT"] == 2


def test_purge_deletes_and_purging_a_missing_document_sends_no_delete(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    url = server.url("/vlans/10")
    run(handler, doc(url, [1, 2]), tmp_path)
    ctx = run(handler, doc(url, [1, 2], purged=True), tmp_path)
    assert ctx.action == "delete"
    assert "/vlans/10" not in server.documents
    again = run(handler, doc(url, [1, 2], purged=True), tmp_path)
    assert again.action == "none"
    assert server.requests == Counter({"GET": 3, "PUT": 1, "DELETE": 1})


def test_dry_run_only_reads(server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path) -> None:
    url = server.url("/vlans/10")
    assert run(handler, doc(url, {"v": 1}), tmp_path, dry_run=True).action == "create"
    run(handler, doc(url, {"v": 1}), tmp_path)
    assert run(handler, doc(url, {"v": 2}), tmp_path, dry_run=True).action == "update"
    assert run(handler, doc(url, {"v": 2}, purged=True), tmp_path, dry_run=True).action == "delete"
    assert server.requests == Counter({"GET": 4, "PUT": 1})
    assert json.loads(server.documents["/vlans/10"]) == {"v": 1}


def test_a_failing_put_names_the_resource_url_and_status(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    url = server.url("/broken/1")
    with pytest.raises(HandlerError) as failed:
        run(handler, doc(url, {"v": 1}), tmp_path)
    message = str(failed.value)
    assert f"std::HttpDocument[api,url={url}]" in message
    assert f"PUT {url} answered 500" in message and "disk full" in message


def test_a_body_that_is_not_json_is_an_error_naming_the_url(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    url = server.url("/text")
    with pytest.raises(HandlerError, match=f"GET {url} answered 200 with a body that is not JSON"):
        run(handler, doc(url, {}), tmp_path)


def test_an_unreachable_server_is_an_error_naming_the_url(
    handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    with socket.socket() as s:  # a port nobody listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/x"
        with pytest.raises(HandlerError, match=rf"GET {url} failed: ConnectError"):
            run(handler, doc(url, {}), tmp_path)


def test_the_client_has_timeouts(handler: HttpDocumentHandler) -> None:
    timeout = handler.client.timeout
    assert None not in (timeout.connect, timeout.read, timeout.write, timeout.pool)


def test_only_absolute_http_urls_are_accepted() -> None:
    for bad in ("ftp://h/x", "/relative", "http:///nohost"):
        with pytest.raises(ValidationError, match="not an absolute http"):
            HttpDocument(agent="api", url=bad, document=None)


def test_one_handler_serves_many_threads_at_once(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path
) -> None:
    """The agent shares one handler between its threads: one kept client, every document written once."""
    from concurrent.futures import ThreadPoolExecutor

    docs = [doc(server.url(f"/d/{i}"), {"i": i}) for i in range(40)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        actions = list(pool.map(lambda d: run(handler, d, tmp_path).action, docs))
    assert actions == ["create"] * 40
    assert server.requests == Counter({"GET": 40, "PUT": 40})
    assert {json.loads(body)["i"] for body in server.documents.values()} == set(range(40))


@pytest.mark.parametrize("document", [None, 0, "text", [], {"nested": {"a": [1, None]}}])
def test_any_json_value_is_a_document_and_converges(
    server: DocumentServer, handler: HttpDocumentHandler, tmp_path: Path, document: Any
) -> None:
    url = server.url("/any")
    assert run(handler, doc(url, document), tmp_path).action == "create"
    assert json.loads(server.documents["/any"]) == document
    assert run(handler, doc(url, document), tmp_path).action == "none"
