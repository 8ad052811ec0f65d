"""Engines that deploy: the file model of ``tests.deploy.file_model`` with an embedded agent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from tests.deploy import agents, file_model

LOCAL = RequestContext.local()


@pytest.fixture(autouse=True)
def _clean_faults() -> Iterator[None]:
    file_model.FAULTS.clear()
    file_model.SLOW.clear()
    file_model.CALLS.clear()
    file_model.ACTIVE.clear()
    file_model.PEAK.clear()
    yield
    file_model.FAULTS.clear()
    file_model.SLOW.clear()
    # the handler threads only: the names and leases of an agent are the test's business (and
    # its database may be gone by now)
    for agent in agents.MADE:
        agent.runner.shutdown()
    agents.MADE.clear()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def deploying(engine_factory: Callable[..., ApiRuntime], state_dir: Path) -> Callable[..., ApiRuntime]:
    """Engines over the file model whose loop compiles AND deploys when a test drains it."""

    def make(**settings: Any) -> ApiRuntime:
        return engine_factory(
            "tests.deploy.file_model", embedded_agent=True, config={"state_dir": str(state_dir)}, **settings
        )

    return make


def get(engine: ApiRuntime, entity: str, ref: str) -> InstanceOut:
    return engine.facades.inventory.get_instance(LOCAL, entity, ref)


def order(engine: ApiRuntime, entity: str, attributes: dict[str, Any]) -> InstanceOut:
    return engine.facades.inventory.create_instance(LOCAL, entity, attributes)
