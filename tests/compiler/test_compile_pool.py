"""``CompilePool`` on its own: results and model errors come back as the thread would see them,
an edited model is reloaded in the compile process, a model built in code stays in the thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsm.compiler.isolation import CompilePool, PoolStopped
from lsm.errors import ModelError
from lsm.model import Model, load_model, refine
from lsm.store.environments.settings import EnvironmentSettings
from tests.waiting import wait_until

MODEL = """
import lsm


class Box(lsm.ServiceEntity):
    name: str


box = lsm.Binding(Box, lifecycle="simple", identity="name")


class Crate(lsm.Resource, type="test::Crate", id_attribute="name"):
    name: str
    label: str


@lsm.implementation(box)
def crates(b):
    if b.name == "broken":
        raise ValueError("no crate for a broken box")
    yield Crate(agent="a", name=b.name, label="LABEL")
"""


def _instances(*names: str) -> dict[str, list[dict[str, object]]]:
    return {
        "box": [
            {"id": f"i-{n}", "entity": "box", "version": 1, "state": "up", "attributes": {"name": n}}
            for n in names
        ]
    }


@pytest.fixture
def pool() -> Iterator[CompilePool]:
    compile_pool = CompilePool(1)
    try:
        yield compile_pool
    finally:
        compile_pool.stop()
    assert compile_pool.pids() == []


def _model(tmp_path: Path, label: str = "one") -> Model:
    path = tmp_path / "boxes.py"
    path.write_text(MODEL.replace("LABEL", label))
    return load_model(str(path), reload=True)


def test_the_result_of_a_compile_process_is_the_result_of_the_thread(
    pool: CompilePool, tmp_path: Path
) -> None:
    model = _model(tmp_path)
    isolated = pool.refine(model, _instances("a", "b"), EnvironmentSettings())
    local = refine(model, _instances("a", "b"))
    assert pool.pids()
    assert isolated.tree_of == local.tree_of and isolated.owner_of == local.owner_of
    assert {k: [r.to_data() for r in v] for k, v in isolated.sets.items()} == {
        k: [r.to_data() for r in v] for k, v in local.sets.items()
    }
    assert [r.id for r in isolated.owned["i-a"]] == ["test::Crate[a,name=a]"]


def test_a_model_error_comes_back_with_its_details_and_location(pool: CompilePool, tmp_path: Path) -> None:
    model = _model(tmp_path)
    with pytest.raises(ModelError) as caught:
        pool.refine(model, _instances("broken"), EnvironmentSettings())
    error = caught.value
    assert "no crate for a broken box" in error.message
    assert error.details["instance"] == "i-broken"
    assert error.details["errors"][0]["kind"] == "implementation_failed"
    assert error.details["location"]["file"].endswith("boxes.py")


def test_an_edited_model_is_reloaded_in_the_compile_process(pool: CompilePool, tmp_path: Path) -> None:
    first = pool.refine(_model(tmp_path, "one"), _instances("a"), EnvironmentSettings())
    [pid] = pool.pids()
    second = pool.refine(_model(tmp_path, "two"), _instances("a"), EnvironmentSettings())
    assert first.owned["i-a"][0].to_data().attributes["label"] == "one"
    assert second.owned["i-a"][0].to_data().attributes["label"] == "two"
    assert pool.pids() == [pid]  # the same process, the model loaded anew


def test_a_model_built_in_code_is_refined_in_the_thread(pool: CompilePool, tmp_path: Path) -> None:
    loaded = _model(tmp_path)
    built = Model(bindings=loaded.bindings, implementations=loaded.implementations, source="in-code")
    result = pool.refine(built, _instances("a"), EnvironmentSettings())
    assert result.resource_count == 1
    assert pool.pids() == []


def test_stopping_the_pool_under_a_waiting_compile_gives_it_pool_stopped(tmp_path: Path) -> None:
    """The pool's ``stop`` and the thread that holds a compile process both end that process:
    the thread gets ``PoolStopped`` (its work goes back to the queue), never an error of the
    pipe that the other side closed, and every process is gone."""
    path = tmp_path / "slow.py"
    path.write_text(MODEL.replace('raise ValueError("no crate for a broken box")', "time.sleep(60)"))
    path.write_text("import time\n" + path.read_text())
    model = load_model(str(path), reload=True)
    pool = CompilePool(1)
    raised: list[BaseException] = []

    def compile_broken() -> None:
        try:
            pool.refine(model, _instances("broken"), EnvironmentSettings())
        except BaseException as exc:  # the assertion below names what came
            raised.append(exc)

    worker = threading.Thread(target=compile_broken)
    worker.start()
    wait_until(lambda: pool.busy_pids(), "the compile process is busy")
    pool.stop()
    worker.join(30)
    assert not worker.is_alive()
    assert [type(exc) for exc in raised] == [PoolStopped]
    assert pool.pids() == []
