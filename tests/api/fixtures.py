"""Fixtures shared by tests/api, tests/client and tests/test_cli.py: a real engine, served.

The engine runs the test model ``netmodel`` with the ``notebook`` lifecycle next to the bundled
ones, on a SQLite file per test, without the embedded compile worker (so that instances stay
where requests put them; compile behaviour has its own tests).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lsm.runtime.wiring import ApiRuntime
from lsm.testing import engine_for, served_url
from tests.template_db import sqlite_at_head

HERE = Path(__file__).parent
MODEL = HERE / "netmodel.py"
LIFECYCLES = HERE / "lifecycles"


def make_engine(tmp_path: Path, *, embedded_worker: bool = False) -> ApiRuntime:
    database_url = sqlite_at_head(tmp_path / "lsm.db")
    return engine_for(MODEL, database_url, lifecycle_dirs=[LIFECYCLES], embedded_worker=embedded_worker)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ApiRuntime]:
    engine = make_engine(tmp_path)
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture
def url(engine: ApiRuntime) -> Iterator[str]:
    """The base URL of the engine's API, served by uvicorn on 127.0.0.1."""
    with served_url(engine) as base:
        yield base


@pytest.fixture
def http(url: str) -> Iterator[httpx.Client]:
    """A raw HTTP client: API tests look at status codes and bodies, not at our client."""
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client
