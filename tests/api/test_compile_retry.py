"""A failed export through the real app and server: the event stream and ``/metrics`` carry it,
``POST /api/v1/compiles/{id}/retry`` queues it again (typed 404 and 409), on both backends."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from lsm.client import Client
from lsm.errors import Conflict, NotFound
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.api.test_events import READ_TIMEOUT, next_matching

LOCAL = RequestContext.local()


@pytest.fixture
def served(engine_factory: Callable[..., ApiRuntime]) -> Iterator[tuple[ApiRuntime, str]]:
    engine = engine_factory("tests.models.fragile", embedded_worker=True)
    with served_url(engine) as base:
        yield engine, base


def failed_exports(base: str) -> dict[tuple[str, str], float]:
    text = httpx.get(f"{base}/metrics", timeout=30).text
    return {
        (s.labels["environment"], s.labels["error"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "lsm_failed_exports_total"
    }


def test_a_failed_export_is_streamed_counted_and_retried(served: tuple[ApiRuntime, str]) -> None:
    engine, url = served
    with Client(url) as client, client.events(read_timeout=READ_TIMEOUT) as stream:
        healthy = client.request_compile(kind="full", wait=True)
        assert healthy["status"] == "success"
        (widget,) = engine.facades.inventory.import_instances(
            LOCAL, "widget", "creating", [{"name": "w1", "explode": True}]
        )
        failed = client.request_compile(kind="full")
        event = next_matching(stream, "instance_state", instance_id=widget, trigger="export_failed")

    assert (event.data["source"], event.data["target"], event.data["is_error"]) == (
        "creating",
        "failed",
        True,
    )
    assert event.data["compile_id"] == failed["id"]
    assert f"exporting compile {failed['id']} failed: model_error" in event.data["message"]
    assert "widget w1 exploded" in event.data["message"]
    assert failed_exports(url) == {("default", "model_error"): 1.0}

    response = httpx.post(f"{url}/api/v1/compiles/{failed['id']}/retry", timeout=30)
    assert response.status_code == 200, response.text
    retry = response.json()
    assert (retry["kind"], retry["status"], retry["reason"]) == (
        "full",
        "queued",
        f"retry of the failed compile {failed['id']}",
    )

    unknown = httpx.post(f"{url}/api/v1/compiles/00000000-0000-0000-0000-000000000000/retry", timeout=30)
    assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"
    refused = httpx.post(f"{url}/api/v1/compiles/{healthy['id']}/retry", timeout=30)
    assert refused.status_code == 409
    assert refused.json() == {
        "error": "conflict",
        "message": f"compile {healthy['id']} is success, not failed: only a failed compile can be retried",
        "compile": healthy["id"],
        "status": "success",
    }
    with Client(url) as client:
        with pytest.raises(NotFound):
            client.retry_compile("00000000-0000-0000-0000-000000000000")
        with pytest.raises(Conflict):
            client.retry_compile(healthy["id"])
