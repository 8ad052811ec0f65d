"""A worker picks up an edited model without a restart; an edit that does not load changes nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.store.database import Database
from tests.conftest import TEST_LIFECYCLES

MODEL = """
from collections.abc import Iterator
import lsm


class Thing(lsm.ServiceEntity):
    name: str


thing = lsm.Binding(Thing, lifecycle="simple", identity="name")


class Item(lsm.Resource, type="test::Item", id_attribute="name"):
    name: str


@lsm.implementation(thing)
def items(t: lsm.Service[Thing]) -> Iterator[lsm.Resource]:
    yield Item(agent="a", name=t.name + SUFFIX)
"""


def write(path: Path, suffix: str, *, broken: bool = False) -> None:
    path.write_text(MODEL.replace("SUFFIX", repr(suffix)) + ("\ndef broken(:\n" if broken else ""))
    stamp = time.time_ns() + 1_000_000_000  # a later mtime, whatever the file system's resolution
    os.utime(path, ns=(stamp, stamp))


def resource_names(engine: ApiRuntime) -> list[str]:
    env_id = engine.context(None).env_id
    version = engine.store.latest_version(env_id)
    assert version is not None
    return sorted(
        r.id for r in engine.facades.desired_state.desired_state_resources(RequestContext.local(), version)
    )


def test_an_edited_model_is_reloaded_and_a_broken_edit_keeps_the_last_good_one(
    db: Database, tmp_path: Path
) -> None:
    model = tmp_path / "reloading_model.py"
    write(model, "-v1")
    config = ServerConfig(
        database_url=db.url, model=str(model), lifecycle_dirs=[TEST_LIFECYCLES], embedded_worker=False
    )
    engine = build_api(config, db=db)
    engine.start()
    engine.environments.refresh_after = 0.0  # look at the files on every use
    try:
        engine.facades.inventory.import_instances(RequestContext.local(), "thing", "up", [{"name": "a"}])
        engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
        engine.processing.drain()
        assert resource_names(engine) == ["test::Item[a,name=a-v1]"]
        write(model, "-v2")
        engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
        engine.processing.drain()
        assert resource_names(engine) == ["test::Item[a,name=a-v2]"]
        write(model, "-v3", broken=True)
        engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
        engine.processing.drain()
        latest = engine.facades.compiles.list_compiles(RequestContext.local(), limit=1)[0]
        assert latest.status == "success"  # compiled with the last model that loads
        assert resource_names(engine) == ["test::Item[a,name=a-v2]"]
    finally:
        engine.stop()
