"""A worker or an agent process does not load the HTTP API: building one imports no FastAPI.

Why: FastAPI with the API's routers was a third of a second of every ``lsm worker`` start
(``python -X importtime``), paid by each worker a scale-out adds or a crash restarts, for an
application the process never serves. Why a subprocess: the test process imported the API
already; only a fresh interpreter shows what building a worker pulls in.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.client.test_light import imported_after

HTTP_SIDE = ("fastapi", "starlette", "uvicorn", "lsm.api")


def test_building_a_worker_and_an_agent_imports_no_http_api(tmp_path: Path) -> None:
    modules = imported_after(
        "from lsm.runtime.config import ServerConfig; "
        "from lsm.runtime.wiring import build_agent, build_worker; "
        f"build_worker(ServerConfig(database_url={json.dumps(f'sqlite:///{tmp_path}/w.db')})).stop(); "
        f"build_agent(ServerConfig(database_url={json.dumps(f'sqlite:///{tmp_path}/a.db')})).stop()"
    )
    assert "lsm.runtime.wiring" in modules
    assert not any(m.startswith(HTTP_SIDE) for m in modules), sorted(
        m for m in modules if m.startswith(HTTP_SIDE)
    )
