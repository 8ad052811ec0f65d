"""Resource ids that fit every backend (issue 31, M4): an id of ``MAX_RESOURCE_ID_BYTES`` is
stored, also twice in one row of a requires index, on SQLite and PostgreSQL; a model that makes
a longer one fails its compile with a report naming the resource, the field and the limit (it
used to fail in PostgreSQL's btree, from a 2.7 kB attribute on, and leave the instance in
``creating``), and the environment compiles again once the attribute is short."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.schemas.limits import MAX_RESOURCE_ID_BYTES
from lsm.store.database import Database
from lsm.testing import served_url
from tests.api.input_fixtures import LIFECYCLES, full_compile

MODEL = Path(__file__).parent / "longid_model.py"
TAG = "/lsm/v1/service_inventory/tag"
#: ``test::Label[internal,label=`` and ``]``: what the label shares its id's bytes with
FRAME = len("test::Label[internal,label=]")


def incompressible(size: int, seed: int) -> str:
    """``size`` bytes of two-byte characters in no order that compresses (PostgreSQL compresses
    long index values; a limit must hold for values it can not)."""
    rng = random.Random(seed)
    return "".join(chr(rng.randrange(0x100, 0x7FF)) for _ in range(size // 2))


@pytest.fixture
def served(db: Database) -> Iterator[tuple[ApiRuntime, httpx.Client]]:
    config = ServerConfig(
        database_url=db.url, model=str(MODEL), lifecycle_dirs=[str(LIFECYCLES)], embedded_worker=False
    )
    engine = build_api(config, db=db)
    engine.start()
    try:
        with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as http:
            yield engine, http
    finally:
        engine.stop()


def problems(report: dict[str, Any]) -> list[dict[str, Any]]:
    return list(report["report"]["error"]["errors"])


def test_an_id_at_the_limit_is_stored_and_a_2_7_kb_attribute_fails_the_compile_naming_it(
    served: tuple[ApiRuntime, httpx.Client],
) -> None:
    engine, http = served
    at_limit = incompressible(MAX_RESOURCE_ID_BYTES - FRAME, seed=1)
    assert len(f"test::Label[internal,label={at_limit}]".encode()) == MAX_RESOURCE_ID_BYTES
    created = http.post(TAG, json={"attributes": {"name": "t", "label": at_limit}})
    assert created.status_code == 200, created.text
    compiled = full_compile(engine, http)
    assert compiled["status"] == "success", compiled
    assert compiled["report"]["resources"] == 2  # both exported: the requirer and the required

    # M4: a 2.7 kB label; the compile fails with the resource, the field and the limit named
    instance = http.get(f"{TAG}/name=t").json()
    long_label = incompressible(2700, seed=2)
    changed = http.patch(
        f"{TAG}/{instance['id']}",
        json={"current_version": instance["version"], "attributes": {"label": long_label}},
    )
    assert changed.status_code == 200, changed.text
    failed = full_compile(engine, http)
    assert failed["status"] == "failed", failed
    found = [p for p in problems(failed) if p["kind"] == "resource_id_too_long"]
    assert {p["resource"][:12] for p in found} == {"test::Label[", "test::Pin[in"}
    for problem in found:
        assert (problem["field"], problem["limit"]) == ("label", MAX_RESOURCE_ID_BYTES)
        assert f"over the limit of {MAX_RESOURCE_ID_BYTES} bytes" in problem["message"]
        assert "tag " in problem["message"]  # the instance that produced it
    assert http.get(TAG).status_code == 200

    # a short label again: the environment compiles
    instance = http.get(f"{TAG}/name=t").json()
    fixed = http.patch(
        f"{TAG}/{instance['id']}",
        json={"current_version": instance["version"], "attributes": {"label": "ok"}},
    )
    assert fixed.status_code == 200, fixed.text
    assert full_compile(engine, http)["status"] == "success"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "discovery"
FILES = "/lsm/v1/service_inventory/managed_file"


def test_the_example_refuses_a_long_host_with_a_422_and_its_validation_refuses_a_long_id(
    db: Database, tmp_path: Path
) -> None:
    """An order with attributes that fit the entity but make an id over the limit is refused by
    its validation compile (naming the limit), and never blocks the other orders' compiles."""
    config = ServerConfig(
        database_url=db.url,
        model=str(EXAMPLE),
        lifecycle_dirs=[str(EXAMPLE)],
        embedded_worker=False,
        state_dir=str(tmp_path),
    )
    engine = build_api(config, db=db)
    engine.start()
    try:
        with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as http:
            long_host = http.post(FILES, json={"attributes": {"host": "h" * 2700, "path": "/srv/a"}})
            assert long_host.status_code == 422, long_host.text
            assert [e["path"] for e in long_host.json()["errors"]] == ["host"]
            assert "253" in long_host.text

            # 4-byte characters: a host and a path within the entity's limits, an id of ~2 kB
            wide = "\U0001d54f"
            path = "/" + "/".join([wide * 60] * 4)
            too_long = http.post(FILES, json={"attributes": {"host": wide * 253, "path": path}})
            assert too_long.status_code == 200, too_long.text
            fine = http.post(FILES, json={"attributes": {"host": "h1", "path": str(tmp_path / "f")}})
            assert fine.status_code == 200, fine.text
            engine.processing.drain()
            refused = http.get(f"{FILES}/{too_long.json()['id']}").json()
            assert refused["state"] == "rejected", refused
            events = http.get(f"{FILES}/{too_long.json()['id']}/log").json()
            assert any("over the limit of 1280 bytes" in str(e) for e in events), events
            assert http.get(f"{FILES}/{fine.json()['id']}").json()["state"] in ("creating", "up")
            assert full_compile(engine, http)["status"] == "success"
    finally:
        engine.stop()


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_an_lsm_name_too_long_for_a_target_is_refused_at_the_order_naming_the_field_and_limit(
    engine_factory: Any,
) -> None:
    """``lsm.Name`` (the examples' router and port names): counted in bytes of UTF-8, so 128
    two-byte characters (256 bytes) are refused and 255 bytes are taken; nothing of a refused
    order is stored."""
    engine = engine_factory(str(EXAMPLES / "router_port"))
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as http:
        routers = "/lsm/v1/service_inventory/router"
        refused = http.post(routers, json={"attributes": {"mgmt_ip": "10.0.0.1", "name": "é" * 128}})
        assert refused.status_code == 422, refused.text
        (error,) = refused.json()["errors"]
        assert error["path"] == "name" and "256 bytes" in error["reason"] and "255" in error["reason"]
        assert http.get(routers).json() == []
        taken = http.post(routers, json={"attributes": {"mgmt_ip": "10.0.0.1", "name": "é" * 127 + "a"}})
        assert taken.status_code == 200, taken.text
        port = {"name": "x" * 256, "router": taken.json()["id"]}
        refused_port = http.post("/lsm/v1/service_inventory/port", json={"attributes": port})
        assert refused_port.status_code == 422 and "name" in refused_port.text


def test_a_host_count_beyond_the_networks_address_plan_is_refused_at_the_order(engine_factory: Any) -> None:
    """M8's order (``hosts = 10**8`` on examples/networks) is a 422 naming ``hosts`` and its
    bound, not a compile that eats memory until its limit."""
    engine = engine_factory(str(EXAMPLES / "networks"))
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as http:
        networks = "/lsm/v1/service_inventory/network"
        refused = http.post(networks, json={"attributes": {"name": "n0", "hosts": 10**8}})
        assert refused.status_code == 422, refused.text
        (error,) = refused.json()["errors"]
        assert error["path"] == "hosts" and "62500" in error["reason"]
        assert http.post(networks, json={"attributes": {"name": "n0", "hosts": 62_500}}).status_code == 200
