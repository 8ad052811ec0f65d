"""Who did it: the request context of every route (``X-Request-ID``, actor) and what it records."""

from __future__ import annotations

import os

import httpx

from lsm.api.deps import MAX_REQUEST_ID

INVENTORY = "/lsm/v1/service_inventory"


def test_a_given_request_id_is_echoed_and_recorded_on_the_event_line(http: httpx.Client) -> None:
    response = http.post(
        f"{INVENTORY}/router",
        json={"attributes": {"mgmt_ip": "10.0.0.1", "name": "edge-1"}},
        headers={"X-Request-ID": "ticket-42/create"},
    )
    assert response.status_code == 200, response.text
    assert response.headers["X-Request-ID"] == "ticket-42/create"

    log = http.get(f"{INVENTORY}/router/{response.json()['id']}/log").json()
    assert [(e["trigger"], e["actor"], e["request_id"]) for e in log] == [
        ("create", "local", "ticket-42/create")
    ]


def test_without_a_request_id_one_is_generated_and_echoed(http: httpx.Client) -> None:
    first = http.get("/lsm/v1/service_catalog")
    second = http.get("/lsm/v1/service_catalog")
    ids = [first.headers["X-Request-ID"], second.headers["X-Request-ID"]]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert ids[0] != ids[1]


def test_an_unusable_request_id_is_replaced_not_refused(http: httpx.Client) -> None:
    too_long = "x" * (MAX_REQUEST_ID + 1)
    response = http.get("/lsm/v1/service_catalog", headers={"X-Request-ID": too_long})
    assert response.status_code == 200
    assert response.headers["X-Request-ID"] not in ("", too_long)


def test_error_answers_carry_the_request_id_too(http: httpx.Client) -> None:
    response = http.get(f"{INVENTORY}/router/mgmt_ip=10.9.9.9", headers={"X-Request-ID": "lost-1"})
    assert response.status_code == 404
    assert response.headers["X-Request-ID"] == "lost-1"


def test_a_compile_request_records_its_actor_and_request_id(http: httpx.Client) -> None:
    response = http.post("/api/v1/compiles", json={"kind": "full"}, headers={"X-Request-ID": "ci-run-7"})
    assert response.status_code == 200, response.text
    report = response.json()
    assert (report["actor"], report["request_id"]) == ("local", "ci-run-7")
    assert http.get(f"/api/v1/compiles/{report['id']}").json()["request_id"] == "ci-run-7"


def test_fresh_request_ids_are_unique_hex_and_a_forked_child_draws_its_own() -> None:
    from lsm.facade.context import new_request_id

    ids = [new_request_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its first id and leave at once
        os.write(writer, new_request_id().encode())
        os._exit(0)
    os.close(writer)
    child = os.read(reader, 64).decode()
    os.close(reader)
    assert os.waitpid(pid, 0)[1] == 0
    assert len(child) == 32 and child[:16] != ids[0][:16] and child not in ids
