"""The expert methods of the sync and async clients, against the real engine."""

from __future__ import annotations

import asyncio

import pytest

from lsm.client import Client
from lsm.errors import ExpertModeOff, InvalidAttributes
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import async_client


def test_the_client_raises_the_typed_refusal_then_forces(url: str, engine: ApiRuntime) -> None:
    with Client(url) as client:
        note = client.create_instance("note", {"title": "a/b"})
        with pytest.raises(ExpertModeOff) as refused:
            client.expert_state("note", "title=a/b", current_version=1, state="published", reason="why")
        assert refused.value.details["setting"] == "expert_mode"
        engine.facades.environments.set_setting(RequestContext.local(), "expert_mode", True)
        forced = client.expert_state("note", "title=a/b", current_version=1, state="published", reason="why")
        assert forced["state"] == "published"
        with pytest.raises(InvalidAttributes):
            client.expert_attributes("note", note["id"], current_version=2, reason="x", active={"text": 1})
        written = client.expert_attributes("note", note["id"], current_version=2, reason="x", candidate=None)
        assert written["candidate_attributes"] is None and written["version"] == 3

    async def destroy() -> dict[str, object]:
        async with async_client(engine) as aclient:
            return await aclient.expert_destroy(
                "note", note["id"], current_version=3, reason="gone", purge_resources=True
            )

    assert asyncio.run(destroy())["deleted"] is True
