"""Models come from the operator: a planted file is never imported, a failing model changes nothing.

The planted model writes a marker file when imported; every route that takes a model is tried
with every way of naming it (absolute path, ``..`` out of the allowed directory, a symbolic
link inside it pointing out, a package directory, a module on ``sys.path``), as an admin over
everything: the marker never appears and nothing is stored.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsm.errors import ConfigurationError
from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from tests.api.fixtures import LIFECYCLES, MODEL
from tests.auth.conftest import Secured

PLANT = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")
"""
BROKEN = MODEL.read_text() + "\nraise RuntimeError('this model does not load')\n"


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[dict[str, object]]:
    marker = tmp_path / "MARKER"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "planted.py").write_text(PLANT.format(marker=str(marker)))
    package = outside / "plantedpkg"
    package.mkdir()
    (package / "__init__.py").write_text(PLANT.format(marker=str(marker)))
    module_dir = tmp_path / "on_path"
    module_dir.mkdir()
    (module_dir / "lsm_planted_module.py").write_text(PLANT.format(marker=str(marker)))
    allowed = tmp_path / "allowed"
    (allowed / "link.py").symlink_to(outside / "planted.py")
    sys.path.insert(0, str(module_dir))
    try:
        yield {
            "marker": marker,
            "choices": [
                str(outside / "planted.py"),
                "../outside/planted.py",
                str(allowed / ".." / "outside" / "planted.py"),
                "link.py",
                str(allowed / "link.py"),
                str(package),
                "lsm_planted_module",
                "os",
            ],
        }
    finally:
        sys.path.remove(str(module_dir))


def test_a_planted_model_is_never_imported_through_any_route(
    secured: Secured, planted: dict[str, Any]
) -> None:
    marker: Path = planted["marker"]
    with secured.client("admin") as admin:
        before = admin.get("/api/v1/environments").json()
        for n, choice in enumerate(planted["choices"]):
            created = admin.post("/api/v1/environments", json={"name": f"evil-{n}", "model": choice})
            changed = admin.put("/api/v1/environments/default/model", json={"model": choice})
            for response in (created, changed):
                assert response.status_code == 422, (choice, response.text)
                assert response.json()["field"] == "model"
            assert not marker.exists(), f"{choice!r} was imported"
        after = admin.get("/api/v1/environments").json()
    assert "lsm_planted_module" not in sys.modules
    assert after == before  # nothing created, the default environment's model unchanged


def test_the_facade_refuses_it_too(secured: Secured, planted: dict[str, Any]) -> None:
    """In-process callers go through the same check: it lives below the API."""
    with pytest.raises(Exception, match="not one this server offers"):
        secured.engine.facades.environments.create_environment(
            RequestContext.local(), "evil", str(planted["choices"][0])
        )
    assert not planted["marker"].exists()


def test_a_model_under_the_allowed_directory_and_a_named_one_are_accepted(
    secured: Secured, tmp_path: Path
) -> None:
    (tmp_path / "allowed" / "mine.py").write_text(MODEL.read_text())
    with secured.client("admin") as admin:
        by_path = admin.post("/api/v1/environments", json={"name": "mine", "model": "mine.py"})
        by_name = admin.post("/api/v1/environments", json={"name": "named", "model": "netmodel"})
        again = admin.post("/api/v1/environments", json={"name": "named", "model": "netmodel"})
        other_model = admin.post("/api/v1/environments", json={"name": "named", "model": "mine.py"})
    assert by_path.status_code == 200, by_path.text
    assert by_path.json()["model"] == str((tmp_path / "allowed" / "mine.py").resolve())
    assert by_name.status_code == 200 and by_name.json()["model"] == str(MODEL)
    assert again.status_code == 200 and again.json()["id"] == by_name.json()["id"]
    assert (other_model.status_code, other_model.json()["error"]) == (409, "conflict")


def test_a_model_that_fails_to_load_leaves_the_environment_as_it_was(
    secured: Secured, tmp_path: Path
) -> None:
    (tmp_path / "allowed" / "broken.py").write_text(BROKEN)
    with secured.client("admin") as admin:
        before = admin.get("/api/v1/environments").json()
        created = admin.post("/api/v1/environments", json={"name": "broken", "model": "broken.py"})
        changed = admin.put("/api/v1/environments/default/model", json={"model": "broken.py"})
        after = admin.get("/api/v1/environments").json()
        still = admin.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "ok"}})
    assert created.status_code == 400 and changed.status_code == 400
    assert after == before
    assert still.status_code == 200  # the default environment still runs its model


def test_lsm_server_with_a_failing_model_leaves_the_environment_as_it_was(
    backend: str, tmp_path: Path
) -> None:
    from tests.conftest import make_database

    database = make_database(backend, tmp_path)
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN)
    config = ServerConfig(
        database_url=database.url, model=str(MODEL), lifecycle_dirs=[str(LIFECYCLES)], embedded_worker=False
    )
    first = build_api(config, db=database)
    first.start()
    before = first.facades.environments.get_environment(RequestContext.local())
    first.stop()
    second = build_api(config.model_copy(update={"model": str(broken)}), db=database)
    try:
        with pytest.raises(ConfigurationError, match="does not load"):
            second.start()
        after = second.facades.environments.get_environment(RequestContext.local())
        assert after == before
    finally:
        second.stop()
        if not database.is_sqlite:
            database.drop_schema()
        database.dispose()
