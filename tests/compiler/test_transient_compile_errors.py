"""A compile whose error was caused by a lost connection goes back to the queue, never fails (H1).

Why: an engine error raised *from* a lost connection (a ``ModelError`` or ``SelectorError``
around an ``OperationalError``, as code that wraps every exception builds) used to be recorded
as the compile's own failure: an exporting compile failed (and, since a failed export fails its
waiting instances, stranded them for an operator), a validation rejected its instance. The
compile service decides with ``caused_by_transient``: the compile is given back and run again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from lsm.errors import ModelError, SelectorError
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.selection import OwnerTreeSelector
from lsm.selection.plugins import build_selector
from lsm.store.database import Database
from lsm.store.transient import caused_by_transient
from tests.compiler.test_lock_release_failure import _lost_connection
from tests.selection import CATALOG, Inventory


def _wrapped(error: BaseException) -> ModelError:
    """A ``ModelError`` raised while handling ``error`` (the chain a wrapping handler leaves)."""
    try:
        raise error
    except BaseException as exc:
        try:
            raise ModelError(f"the model failed: {exc}") from exc
        except ModelError as wrapped:
            return wrapped


def test_caused_by_transient_follows_the_chain() -> None:
    assert caused_by_transient(_lost_connection())
    assert caused_by_transient(_wrapped(_lost_connection()))
    assert caused_by_transient(_wrapped(_wrapped(_lost_connection())))
    assert not caused_by_transient(_wrapped(KeyError("a bug")))
    assert not caused_by_transient(ModelError("a model error"))
    try:  # raised while handling (``__context__``), not ``from``
        try:
            raise _lost_connection()
        except OperationalError:
            raise SelectorError("failed") from None
    except SelectorError as exc:
        assert caused_by_transient(exc)


@pytest.mark.parametrize(
    ("error", "raised"), [(_lost_connection(), OperationalError), (KeyError("a bug"), SelectorError)]
)
def test_a_selector_constructor_that_meets_a_lost_connection_is_not_a_selector_error(
    db: Database, monkeypatch: pytest.MonkeyPatch, error: Exception, raised: type[Exception]
) -> None:
    inv = Inventory(db)
    inv.router_tree()
    inv.flush()

    def constructor(self: object, *args: object) -> None:
        raise error

    monkeypatch.setattr(OwnerTreeSelector, "__init__", constructor)
    with pytest.raises(raised):
        build_selector("owner_tree", inv.view(), CATALOG)


@pytest.mark.parametrize("validation", [True, False], ids=["validation", "exporting"])
def test_a_compile_error_caused_by_a_lost_connection_gives_the_compile_back(
    engine_factory: Callable[..., ApiRuntime],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    validation: bool,
) -> None:
    engine = engine_factory()
    ctx = RequestContext.local()
    runner = engine.processing.runner
    original = runner.refine
    met: list[bool] = []

    def refine(env: Any, instances: Mapping[str, Sequence[Any]], *, validation: bool = False) -> Any:
        if validation is wanted and not met:  # the first of its kind meets a lost connection
            met.append(validation)
            raise _wrapped(_lost_connection())
        return original(env, instances, validation=validation)

    wanted = validation
    monkeypatch.setattr(runner, "refine", refine)  # exporting compiles
    monkeypatch.setattr(runner.validations, "refiner", refine)  # validations
    thing = engine.facades.inventory.create_instance(ctx, "thing", {"name": "t"})
    with caplog.at_level(logging.WARNING):
        engine.processing.drain()
    assert met == [validation]  # it did meet the lost connection
    # validated (not rejected) and exported (not failed): every compile a success
    assert engine.facades.inventory.get_instance(ctx, "thing", thing.id).state == "creating"
    compiles = engine.facades.compiles.list_compiles(ctx, limit=100)
    assert [c.status for c in compiles if c.status != "success"] == []
    assert "validation" in {c.kind for c in compiles} and len({c.kind for c in compiles}) > 1
    # an operational event, told in one line: no traceback in the log
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
