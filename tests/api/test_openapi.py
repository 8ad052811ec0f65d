"""``/openapi.json`` tells the truth (docs/api.md §2), checked by reading it and by schemathesis.

schemathesis generates requests from the document, sends them through the real app (ASGI) on
SQLite and PostgreSQL, and checks that no answer is a 5xx, that every status is documented and
that every body matches its documented schema. Bounded and deterministic: few examples per
operation, derandomized, no example database, so that the suite stays fast and repeatable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from tests.api.input_fixtures import box_engine

#: the routes schemathesis leaves alone: the event stream never ends by itself
SKIPPED_PATHS = ("/api/v1/events",)


@pytest.fixture
def fuzzed_engine(db: Database) -> Iterator[ApiRuntime]:
    """The box model, two instances, and a worker so that ``wait`` compiles finish."""
    engine = box_engine(db, embedded_worker=True, allowed_hosts=["testserver"])  # schemathesis' host
    try:
        for name in ("a", "b"):
            engine.facades.inventory.create_instance(RequestContext.local(), "box", {"name": name})
        yield engine
    finally:
        engine.stop()


def grounded(engine: ApiRuntime) -> Callable[[Any], Any]:
    """Cases whose path names what exists (the box entity, an instance, the default
    environment), so that generated bodies and queries reach the engine instead of a 404."""
    first = engine.facades.inventory.list_instances(RequestContext.local(), "box")[0].id
    known: dict[str, Any] = {
        "entity": "box",
        "ref": first,
        "env": "default",
        "version": 1,
        "name": "shelf",
        "key": "selector",
    }

    def ground(case: Any) -> Any:
        for name in list(case.path_parameters or {}):
            if name in known:
                case.path_parameters[name] = known[name]
        if case.headers:
            case.headers.pop("X-LSM-Environment", None)
        return case

    return ground


@pytest.fixture
def api_schema(fuzzed_engine: ApiRuntime) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", fuzzed_engine.app)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
#: examples per operation: a few, derandomized (fixed seed), no example database
BOUNDED = settings(
    max_examples=5,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


def test_every_answer_is_documented_and_never_a_server_error(
    api_schema: Any, fuzzed_engine: ApiRuntime
) -> None:
    """schemathesis over every operation, as generated and grounded in what exists; every
    failure is collected, then reported together."""
    failures: list[str] = []
    tested = 0
    ground = grounded(fuzzed_engine)
    for result in api_schema.get_all_operations():
        operation = result.ok()
        if operation.path in SKIPPED_PATHS:
            continue
        tested += 1
        for strategy in (operation.as_strategy(), operation.as_strategy().map(ground)):

            @BOUNDED
            @given(case=strategy)
            def run(case: Any) -> None:
                case.call_and_validate(checks=CHECKS)

            try:
                run()
            except Exception as exc:  # one entry per failing operation; the message names the case
                failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:2000])
    assert tested >= 20
    assert not failures, "\n\n".join(failures)


def _operations(app_schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in app_schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_every_route_documents_its_error_answers_with_the_error_body(fuzzed_engine: ApiRuntime) -> None:
    document = fuzzed_engine.app.openapi()
    for path, method, operation in _operations(document):
        responses = operation["responses"]
        expected = {"422", "503"} | ({"404"} if path != "/health" else set())
        if "requestBody" in operation:
            expected |= {"413"}
        if method in ("post", "patch", "delete") and path != "/api/v1/compiles":
            expected |= {"400", "409"}
        assert expected <= set(responses), (method, path, sorted(responses))
        for status in expected:
            ref = responses[status]["content"]["application/json"]["schema"]["$ref"]
            assert ref.rsplit("/", 1)[-1] in ("ErrorOut", "InvalidInputOut"), (method, path, status)
    create = document["paths"]["/lsm/v1/service_inventory/{entity}"]["post"]
    assert any(p["name"] == "Idempotency-Key" and p["in"] == "header" for p in create["parameters"])
    versions = document["paths"]["/api/v1/desired_state/{version}"]["get"]["parameters"]
    assert [p["schema"].get("maximum") for p in versions if p["name"] == "version"] == [2**31 - 1]


def test_the_documented_error_body_is_what_an_error_answers(fuzzed_engine: ApiRuntime) -> None:
    import asyncio

    async def answers() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=fuzzed_engine.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            return [
                await http.get("/lsm/v1/service_inventory/nope"),
                await http.get("/api/v1/compiles", params={"limit": 0}),
                await http.post("/lsm/v1/service_inventory/box", json={"attributes": {"name": "a"}}),
            ]

    from lsm.schemas.errors import ErrorOut, InvalidInputOut

    missing, invalid, conflict = asyncio.run(answers())
    assert (missing.status_code, invalid.status_code, conflict.status_code) == (404, 422, 409)
    ErrorOut.model_validate(missing.json())
    assert InvalidInputOut.model_validate(invalid.json()).errors[0].path == "limit"
    ErrorOut.model_validate(conflict.json())
