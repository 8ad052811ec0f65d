"""A selector whose inventory reads meet a lost connection does not fail as a selector.

Why: a ``SelectorError`` fails the compile (and a validation rejects its instance); a lost
connection is the database's moment, so it passes through and the compile service gives the
compile back to the queue (``lsm.compiler.service``).
"""

from __future__ import annotations

import pytest
from sqlalchemy.exc import DisconnectionError

import lsm.selection.selector as selector_module
from lsm.errors import SelectorError
from lsm.selection import OwnerTreeSelector, run_selector
from lsm.store.database import Database
from tests.selection import CATALOG, Inventory


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        (DisconnectionError("the server closed this pooled connection"), DisconnectionError),
        (KeyError("a bug"), SelectorError),
    ],
    ids=["lost-connection-passes-through", "anything-else-is-the-selectors"],
)
def test_what_a_failing_inventory_read_raises(
    db: Database, monkeypatch: pytest.MonkeyPatch, error: Exception, raised: type[Exception]
) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()

    def failing(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(selector_module, "ownership_roots", failing)
    with pytest.raises(raised):
        run_selector(OwnerTreeSelector(inv.view(), CATALOG), [tree["router"]])
