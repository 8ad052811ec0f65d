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
from lsm.inventory.database import Database
from lsm.selection import OwnerTreeSelector, run_selector
from tests.selection import CATALOG, Inventory


def _failing_reads(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def lost(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(selector_module, "ownership_roots", lost)


def test_a_lost_connection_passes_through_the_selector(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()
    _failing_reads(monkeypatch, DisconnectionError("the server closed this pooled connection"))
    with pytest.raises(DisconnectionError):
        run_selector(OwnerTreeSelector(inv.view(), CATALOG), [tree["router"]])


def test_any_other_failure_is_still_the_selectors(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()
    _failing_reads(monkeypatch, KeyError("a bug"))
    with pytest.raises(SelectorError):
        run_selector(OwnerTreeSelector(inv.view(), CATALOG), [tree["router"]])
