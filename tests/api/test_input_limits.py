"""Issue 10's reproductions: input that used to break the server is now a 4xx naming the field,
and the store is unchanged afterwards (every entity still lists, a full compile still succeeds),
on SQLite and on PostgreSQL (the ``db`` fixture)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lsm.api.screening import body_problems
from lsm.schemas.limits import MAX_IDENTITY_LENGTH, MAX_INT
from lsm.store.database import Database
from tests.api.input_fixtures import all_instances, box_engine, full_compile, served_box

BOX = "/lsm/v1/service_inventory/box"


def raw_json(text: str) -> dict[str, Any]:
    """Arguments for httpx that send ``text`` as the body verbatim (JSON escapes kept)."""
    return {"content": text.encode(), "headers": {"content-type": "application/json"}}


def assert_names(response: httpx.Response, path: str, where: str | None = None) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] in ("invalid_input", "invalid_attributes", "invalid_setting"), body
    paths = [(e["path"], e.get("in")) for e in body.get("errors", [])]
    assert any(p == path and (where is None or w == where) for p, w in paths), (path, paths)


@pytest.fixture
def served(db: Database) -> Iterator[tuple[Any, httpx.Client]]:
    with served_box(db) as pair:
        _engine, http = pair
        first = http.post(BOX, json={"attributes": {"name": "first", "text": "hello"}})
        assert first.status_code == 200, first.text
        yield pair


@pytest.mark.parametrize("attribute", ["text", "name"])
def test_a_lone_surrogate_is_422_and_the_entity_still_lists_after_a_restart(
    db: Database, attribute: str
) -> None:
    with served_box(db) as (engine, http):
        assert http.post(BOX, json={"attributes": {"name": "keep"}}).status_code == 200
        before = all_instances(engine)
        attributes = {"name": "x", attribute: "a\\ud800b"}
        body = '{"attributes": {' + ", ".join(f'"{k}": "{v}"' for k, v in attributes.items()) + "}}"
        assert_names(http.post(BOX, **raw_json(body)), f"attributes.{attribute}", "body")
        listed = http.get(BOX)
        assert listed.status_code == 200 and [i["id"] for i in listed.json()] == [before[0]["id"]]
    with served_box(db) as (engine, http):  # a restart: the store is as it was
        assert all_instances(engine) == before
        assert http.get(BOX).status_code == 200
        deleted = http.delete(f"{BOX}/{before[0]['id']}", params={"current_version": before[0]["version"]})
        assert deleted.status_code == 200, deleted.text


def test_a_nul_byte_in_any_string_is_422_naming_it(served: tuple[Any, httpx.Client]) -> None:
    engine, http = served
    before = all_instances(engine)
    first = before[0]["id"]
    assert_names(http.post(BOX, json={"attributes": {"name": "n\x00"}}), "attributes.name", "body")
    assert_names(
        http.post(BOX, **raw_json('{"attributes": {"name": "n", "te\\u0000xt": "a"}}')),
        "attributes.te\\x00xt",
    )
    assert_names(
        http.post(
            f"{BOX}/{first}/state",
            json={"current_version": 1, "target_state": "published", "message": "\x00"},
        ),
        "message",
        "body",
    )
    assert_names(http.post("/api/v1/environments", json={"name": "e\x00"}), "name", "body")
    assert_names(http.get(f"{BOX}/%00"), "ref", "path")
    assert_names(http.get(BOX, params={"sort": "\x00"}), "sort", "query")
    assert_names(
        http.patch(f"{BOX}/{first}", json={"current_version": 1, "attributes": {"text": ["\x00"]}}),
        "attributes.text.0",
    )
    assert all_instances(engine) == before
    assert full_compile(engine, http)["status"] == "success"


def test_an_identity_too_long_for_an_index_is_422_and_a_full_compile_still_succeeds(
    served: tuple[Any, httpx.Client],
) -> None:
    engine, http = served
    before = all_instances(engine)
    assert_names(http.post(BOX, json={"attributes": {"name": "x" * 2700}}), "name")
    assert_names(http.post(BOX, json={"attributes": {"name": "é" * (MAX_IDENTITY_LENGTH + 1)}}), "name")
    assert all_instances(engine) == before
    assert http.post(BOX, json={"attributes": {"name": "é" * MAX_IDENTITY_LENGTH}}).status_code == 200
    assert full_compile(engine, http)["status"] == "success"
    assert http.get(BOX).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "params", "name", "where"),
    [
        ("GET", BOX, {"offset": 2**70}, "offset", "query"),
        ("GET", BOX, {"limit": 2**70}, "limit", "query"),
        ("GET", "/api/v1/compiles", {"offset": 2**64}, "offset", "query"),
        ("GET", "/api/v1/desired_state", {"offset": MAX_INT + 1}, "offset", "query"),
        ("GET", f"/api/v1/desired_state/{2**70}", None, "version", "path"),
        ("GET", f"/api/v1/desired_state/{2**63}/resources", None, "version", "path"),
        ("GET", "/api/v1/desired_state/-1", None, "version", "path"),
        ("DELETE", f"{BOX}/first", {"current_version": 2**70}, "current_version", "query"),
    ],
)
def test_integers_beyond_the_columns_are_422(
    served: tuple[Any, httpx.Client], method: str, path: str, params: Any, name: str, where: str
) -> None:
    engine, http = served
    before = all_instances(engine)
    assert_names(http.request(method, path, params=params), name, where)
    assert all_instances(engine) == before


def test_versions_in_bodies_are_bounded(served: tuple[Any, httpx.Client]) -> None:
    engine, http = served
    first = all_instances(engine)[0]["id"]
    assert_names(
        http.patch(f"{BOX}/{first}", json={"current_version": 2**70, "attributes": {}}), "current_version"
    )
    assert_names(
        http.post(f"{BOX}/{first}/state", json={"current_version": 2**64, "target_state": "published"}),
        "current_version",
    )
    assert_names(
        http.post(
            f"{BOX}/bulk", json={"update": [{"id": first, "current_version": 2**64, "attributes": {}}]}
        ),
        "update.0.current_version",
    )


def test_names_and_ids_longer_than_their_columns_are_422(served: tuple[Any, httpx.Client]) -> None:
    _engine, http = served
    assert_names(http.get(f"/lsm/v1/service_inventory/{'e' * 201}"), "entity", "path")
    assert_names(http.get(f"/api/v1/compiles/{'c' * 37}"), "compile_id", "path")
    assert_names(http.get(f"/api/v1/environments/{'e' * 201}"), "env", "path")
    assert_names(http.post("/api/v1/environments", json={"name": "e" * 201}), "name", "body")
    assert_names(
        http.post(BOX, json={"attributes": {"name": "a"}, "service_instance_id": "i" * 37}),
        "service_instance_id",
    )
    assert http.get(f"/lsm/v1/service_inventory/{'e' * 200}").status_code == 404


def test_booleans_are_booleans(served: tuple[Any, httpx.Client]) -> None:
    engine, http = served
    before = all_instances(engine)
    first = before[0]["id"]
    assert_names(http.post(BOX, json={"attributes": {"name": "b", "size": True}}), "size")
    assert_names(http.post(BOX, json={"attributes": {"name": "b", "enabled": 0}}), "enabled")
    assert_names(
        http.patch(
            f"{BOX}/{first}", json={"current_version": before[0]["version"], "attributes": {"enabled": "yes"}}
        ),
        "enabled",
    )
    assert_names(http.post("/api/v1/compiles", json={"wait": 0}), "wait", "body")
    assert_names(http.post("/api/v1/compiles", json={"incremental": "false"}), "incremental", "body")
    settings = "/api/v1/environments/default/settings"
    assert http.put(f"{settings}/partial_compiles", json={"value": 0}).status_code == 422
    assert http.put(f"{settings}/partial_compiles", json={"value": False}).status_code == 200
    assert all_instances(engine) == before


def test_settings_name_only_what_exists(served: tuple[Any, httpx.Client]) -> None:
    _engine, http = served
    settings = "/api/v1/environments/default/settings"
    answer = http.put(f"{settings}/selector", json={"value": "no_such_selector"})
    assert answer.status_code == 422, answer.text
    assert "no_such_selector" in answer.json()["message"]
    answer = http.put(f"{settings}/no_such_key", json={"value": 1})
    assert answer.status_code == 422 and answer.json()["key"] == "no_such_key"
    assert http.get(settings).json()["selector"]["value"] == "owner_tree"


def test_a_body_over_the_limit_is_413_before_it_is_read(db: Database) -> None:
    with served_box(db, max_body_bytes=4096) as (engine, http):
        small = http.post(BOX, json={"attributes": {"name": "s", "text": "x" * 3000}})
        assert small.status_code == 200
        big = http.post(BOX, json={"attributes": {"name": "b", "text": "x" * 5000}})
        assert big.status_code == 413 and big.json()["error"] == "payload_too_large"
        # a 50 MB order announced by Content-Length: answered without reading a byte of it
        host, port = http.base_url.host, http.base_url.port
        assert port is not None
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(
                f"POST {BOX} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {50 * 1024 * 1024}\r\nConnection: close\r\n\r\n".encode()
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"payload_too_large" in answer
        assert {i["active_attributes"]["name"] for i in all_instances(engine)} == {"s"}


def test_a_chunked_body_is_cut_off_at_the_limit(db: Database) -> None:
    """No Content-Length: the bytes are counted as they arrive, and reading stops at the limit."""
    import asyncio

    engine = box_engine(db)
    sent = 0

    async def chunks() -> Any:
        nonlocal sent
        yield b'{"attributes": {"name": "big", "text": "'
        for _ in range(50):  # 50 MB if it were all read
            sent += 1
            yield b"x" * (1024 * 1024)
        yield b'"}}'

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=engine.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.post(BOX, content=chunks(), headers={"content-type": "application/json"})

    try:
        answer = asyncio.run(post())
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"] == "payload_too_large"
        assert sent <= 2
        assert all_instances(engine) == []
    finally:
        engine.stop()


def test_error_answers_carry_no_traceback_and_no_server_path(served: tuple[Any, httpx.Client]) -> None:
    engine, http = served
    first, version = all_instances(engine)[0]["id"], all_instances(engine)[0]["version"]
    boom = http.patch(f"{BOX}/{first}", json={"current_version": version, "attributes": {"text": "boom"}})
    assert boom.status_code == 200, boom.text
    report = full_compile(engine, http)
    assert report["status"] == "failed"
    for headers in ({}, {"X-LSM-Debug": "1"}):  # authentication is off: nobody may see details
        text = http.get(f"/api/v1/compiles/{report['id']}", headers=headers).text
        assert "exploded" in text  # the model's own message stays
        assert "traceback" not in text.lower()
        assert "/tests/api/" not in text and str(engine.config.model) not in text
    answer = http.post("/api/v1/environments", json={"name": "elsewhere", "model": "/no/such/dir/model.py"})
    assert answer.status_code >= 400
    assert "/no/such/dir" not in answer.text


def test_a_wrong_method_answers_405_with_every_allowed_method_and_options_answers_204(
    served: tuple[Any, httpx.Client],
) -> None:
    _engine, http = served
    answer = http.put(BOX, json={})
    assert answer.status_code == 405 and answer.json()["error"] == "method_not_allowed"
    allowed = {m.strip() for m in answer.headers["allow"].split(",")}
    assert {"GET", "POST", "OPTIONS"} <= allowed and "PUT" not in allowed
    options = http.options(f"{BOX}/first")
    assert options.status_code == 204
    assert {"GET", "PATCH", "DELETE", "OPTIONS"} <= {m.strip() for m in options.headers["allow"].split(",")}
    assert http.options("/no/such/path").status_code == 404


def test_docs_load_offline_from_the_package(served: tuple[Any, httpx.Client]) -> None:
    _engine, http = served
    page = http.get("/docs")
    assert page.status_code == 200
    assert "http://" not in page.text and "https://" not in page.text and "//cdn" not in page.text
    import re

    assets = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.text)
    assert assets and all(a.startswith("/docs/assets/") for a in assets), assets
    for asset in assets:
        loaded = http.get(asset)
        assert loaded.status_code == 200 and len(loaded.content) > 100, asset
    assert "/docs" not in http.get("/openapi.json").json()["paths"]


def test_surrogates_spelled_as_bytes_or_in_utf16_are_422(served: tuple[Any, httpx.Client]) -> None:
    engine, http = served
    before = all_instances(engine)
    as_bytes = b'{"attributes": {"name": "b", "text": "\xed\xa0\x80"}}'
    answer = http.post(BOX, content=as_bytes, headers={"content-type": "application/json"})
    assert answer.status_code in (400, 422), answer.text
    if answer.status_code == 422:
        assert_names(answer, "attributes.text", "body")
    utf16 = '{"attributes": {"name": "u", "text": "\\ud800"}}'.encode("utf-16")
    assert_names(
        http.post(BOX, content=utf16, headers={"content-type": "application/json"}), "attributes.text"
    )
    assert all_instances(engine) == before
    assert http.get(BOX).status_code == 200


def test_nan_and_infinity_are_422(served: tuple[Any, httpx.Client]) -> None:
    engine, http = served
    before = all_instances(engine)
    assert_names(
        http.post(BOX, **raw_json('{"attributes": {"name": "n", "size": NaN}}')), "attributes.size", "body"
    )
    assert_names(http.post("/api/v1/compiles", **raw_json('{"timeout": Infinity}')), "timeout", "body")
    assert all_instances(engine) == before


def test_the_body_screen_walks_deep_bodies_and_keys() -> None:
    deep: Any = "\x00"
    for _ in range(5000):
        deep = [deep]
    assert body_problems(deep) == [
        {"path": ".".join(["0"] * 5000), "in": "body", "reason": "contains a NUL character"}
    ]
    assert body_problems(json.loads('{"a": {"\\udc00": 1}}'))[0]["path"] == "a.\\udc00"


@pytest.mark.parametrize("position", [f"{2**70}//", "-1//", f"1//{'c' * 37}", "x"])
def test_a_last_event_id_beyond_any_row_is_422(served: tuple[Any, httpx.Client], position: str) -> None:
    _engine, http = served
    answer = http.get("/api/v1/events", headers={"Last-Event-ID": position})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == "Last-Event-ID"
