"""``GET /metrics`` with authentication on: a Prometheus token (viewer of every environment)
scrapes both environments; a role in one environment is not enough, no token is 401."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.auth.conftest import Secured


def test_a_global_viewer_token_scrapes_every_environment(secured: Secured) -> None:
    _, token = secured.token("prometheus", {"*": "viewer"})
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token}"}) as client:
        response = client.get("/metrics")
    assert response.status_code == 200, response.text
    environments = {
        sample.labels["environment"]
        for family in text_string_to_metric_families(response.text)
        if family.name == "lsm_compile_queue_depth"
        for sample in family.samples
    }
    assert environments == {"default", "other"}


def test_an_environment_role_or_no_token_can_not_scrape(secured: Secured) -> None:
    with secured.client("env_admin") as admin_of_a, secured.client(None) as nobody:
        forbidden = admin_of_a.get("/metrics")
        anonymous = nobody.get("/metrics")
    assert (forbidden.status_code, forbidden.json()["error"]) == (403, "forbidden")
    assert anonymous.status_code == 401
