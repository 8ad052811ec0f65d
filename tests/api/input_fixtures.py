"""An engine on the ``box`` model over the ``db`` fixture (SQLite and PostgreSQL), served."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.store.database import Database
from lsm.testing import served_url

HERE = Path(__file__).parent
BOX_MODEL = HERE / "boxmodel.py"
LIFECYCLES = HERE / "box_lifecycles"


def box_engine(db: Database, **config: Any) -> ApiRuntime:
    """A started engine; its compiles run only when the test drains the queue, unless
    ``embedded_worker=True`` is among the ``config`` fields."""
    config = {"embedded_worker": False, **config}
    engine = build_api(
        ServerConfig(database_url=db.url, model=str(BOX_MODEL), lifecycle_dirs=[str(LIFECYCLES)], **config),
        db=db,
    )
    engine.start()
    return engine


@contextmanager
def served_box(db: Database, **config: Any) -> Iterator[tuple[ApiRuntime, httpx.Client]]:
    engine = box_engine(db, **config)
    try:
        with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as http:
            yield engine, http
    finally:
        engine.stop()


def full_compile(engine: ApiRuntime, http: httpx.Client) -> dict[str, Any]:
    """Request a full compile over the API, run it, and answer its report."""
    queued = http.post("/api/v1/compiles", json={"kind": "full"})
    assert queued.status_code == 200, queued.text
    engine.processing.drain()
    report = http.get(f"/api/v1/compiles/{queued.json()['id']}")
    assert report.status_code == 200, report.text
    return dict(report.json())


def all_instances(engine: ApiRuntime) -> list[dict[str, Any]]:
    rows = engine.facades.inventory.list_instances(RequestContext.local(), "box", include_deleted=True)
    return [r.model_dump(mode="json") for r in rows]
