"""The selector API: both forms through run_selector, union, checked answers, SelectorError."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pytest
import sqlalchemy as sa
from sqlmodel import col

from lsm.catalog import Binding, Catalog
from lsm.errors import SelectorError
from lsm.selection import (
    AttributeSetName,
    InstanceRecord,
    InventoryView,
    OwnerTreeSelector,
    PhasedSelector,
    Selector,
    UnionSelector,
    run_selector,
    select,
)
from lsm.store.database import Database
from lsm.store.tables import InstanceRow
from tests.selection import CATALOG, Inventory, count_statements, tree_selection


class FixedSelector(Selector):
    """Selects exactly what it is told to (a one-method selector)."""

    name = "fixed"
    answer: Mapping[str, Iterable[str]] = {}

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        return self.answer


class RecordingPhasedSelector(PhasedSelector):
    """Selects the requested ids, per their binding, and records the calls."""

    def __init__(self, view: InventoryView, catalog: Catalog) -> None:
        super().__init__(view, catalog)
        self.calls: list[str] = []
        self.records: dict[str, InstanceRecord] = {}

    def analyse(self, bindings: Sequence[Binding]) -> None:
        self.calls.append("analyse:" + ",".join(b.name for b in bindings))

    def register(self, instance_ids: Sequence[str]) -> None:
        self.calls.append("register")
        self.records = self.view.get_many(instance_ids)

    def select(self, binding: Binding) -> Iterable[str]:
        self.calls.append("select:" + binding.name)
        return [r.id for r in self.records.values() if r.entity == binding.name]


class ExplodingSelector(Selector):
    name = "exploding"

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        return self._helper_that_breaks()

    def _helper_that_breaks(self) -> Mapping[str, Iterable[str]]:
        raise ZeroDivisionError("boom")


def test_the_phased_form_is_driven_in_order_over_every_binding(db: Database) -> None:
    inv = Inventory(db)
    router = inv.add("router", name="r")
    site = inv.add("site", name="s")
    inv.flush()
    selector = RecordingPhasedSelector(inv.view(), CATALOG)
    result = run_selector(selector, [site, router, router])
    assert result == {
        "router": [router],
        "port": [],
        "loopback": [],
        "sub_interface": [],
        "tunnel": [],
        "site": [site],
    }
    bindings = [b.name for b in CATALOG]
    assert selector.calls == ["analyse:" + ",".join(bindings), "register", *(f"select:{b}" for b in bindings)]
    assert selector.roots() == sorted([router, site])  # the default: ownership roots


def test_the_one_method_form_is_normalised_and_gets_default_roots(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()
    selector = FixedSelector(inv.view(), CATALOG)
    selector.answer = {"port": [tree["ports"][1], tree["ports"][0], tree["ports"][1]]}
    result = select(selector, [])
    assert result.answer["port"] == sorted(tree["ports"])
    assert set(result.answer) == set(CATALOG.names())
    assert selector.roots() == [tree["router"]]
    # two ports answered: the engine compiles their tree whole, and says what it added
    assert result.instances == tree_selection(tree)
    assert result.completed == sorted([tree["router"], tree["loopback"], *tree["subs"]])


def test_roots_are_only_known_after_running(db: Database) -> None:
    selector = OwnerTreeSelector(Inventory(db).view(), CATALOG)
    with pytest.raises(RuntimeError):
        selector.roots()


def test_union_selects_what_either_selects(db: Database) -> None:
    inv = Inventory(db)
    t1, t2 = inv.router_tree("a"), inv.router_tree("b")
    site = inv.add("site", name="s")
    inv.flush()
    view = inv.view()
    fixed = FixedSelector(view, CATALOG)
    fixed.answer = {"site": [site], "port": [t1["ports"][0]]}
    union = OwnerTreeSelector(view, CATALOG) | fixed
    assert isinstance(union, UnionSelector)
    result = run_selector(union, [t2["subs"][0]])
    # t1's port brings its whole tree: a set is only ever replaced from its complete tree
    expected = {name: sorted([*ids, *tree_selection(t1)[name]]) for name, ids in tree_selection(t2).items()}
    expected["site"] = [site]
    assert result == expected
    assert union.roots() == sorted([t1["router"], t2["router"], site])


def test_unions_flatten(db: Database) -> None:
    view = Inventory(db).view()
    a, b, c = (OwnerTreeSelector(view, CATALOG) for _ in range(3))
    assert (a | b | c).selectors == (a, b, c)
    assert UnionSelector(a, b | c).selectors == (a, b, c)
    with pytest.raises(ValueError):
        UnionSelector()
    with pytest.raises(ValueError):  # two views are two compiles
        a | OwnerTreeSelector(Inventory(db, name="other").view(), CATALOG)


def test_a_raising_selector_is_a_selector_error_with_its_traceback(db: Database) -> None:
    inv = Inventory(db)
    router = inv.add("router", name="r")
    inv.flush()
    with pytest.raises(SelectorError) as info:
        run_selector(ExplodingSelector(inv.view(), CATALOG), [router])
    error = info.value
    assert error.details["selector"] == "exploding"
    assert "ZeroDivisionError: boom" in error.details["traceback"]
    assert "_helper_that_breaks" in error.details["traceback"]
    assert "boom" in error.message
    assert isinstance(error.__cause__, ZeroDivisionError)
    assert error.to_body()["error"] == "selector_error" and error.status == 400


def test_a_failing_part_of_a_union_is_named(db: Database) -> None:
    view = Inventory(db).view()
    with pytest.raises(SelectorError) as info:
        run_selector(OwnerTreeSelector(view, CATALOG) | ExplodingSelector(view, CATALOG), [])
    assert info.value.details["selector"] == "exploding"


@pytest.mark.parametrize("problem", ["unknown_entity", "unknown_id", "terminated", "wrong_binding"])
def test_answers_are_checked(db: Database, problem: str) -> None:
    inv = Inventory(db)
    router = inv.add("router", name="r")
    gone = inv.add("router", name="gone", deleted=True)
    inv.flush()
    selector = FixedSelector(inv.view(), CATALOG)
    selector.answer = {
        "unknown_entity": {"no_such_entity": [router]},
        "unknown_id": {"router": ["00000000-0000-0000-0000-000000000000"]},
        "terminated": {"router": [gone]},
        "wrong_binding": {"port": [router]},
    }[problem]
    with pytest.raises(SelectorError) as info:
        run_selector(selector, [])
    assert info.value.details["selector"] == "fixed"


def test_a_selector_only_reads(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()
    with count_statements(db) as statements:
        run_selector(OwnerTreeSelector(inv.view(), CATALOG), [tree["ports"][0]])
    assert statements
    assert all(s.lstrip().upper().startswith(("SELECT", "BEGIN")) for s in statements)


def test_instances_the_compile_leaves_out_are_dropped_but_their_roots_count(db: Database) -> None:
    inv = Inventory(db)
    quiet = inv.router_tree("quiet")  # every instance in a state that does not export
    busy = inv.router_tree("busy")
    inv.flush()
    with db.write() as session:
        session.execute(
            sa.update(InstanceRow)
            .where(
                col(InstanceRow.id).in_([quiet["router"], *quiet["ports"], *quiet["subs"], quiet["loopback"]])
            )
            .values(state="start")
        )

    def exporting(record: InstanceRecord) -> AttributeSetName | None:
        return None if record.state == "start" else "active"

    view = InventoryView(db, inv.env_id, CATALOG, attribute_set=exporting)
    selector = OwnerTreeSelector(view, CATALOG) | FixedSelector(view, CATALOG)
    result = run_selector(selector, [quiet["subs"][0], busy["ports"][0]])
    assert result == tree_selection(busy)
    assert selector.roots() == sorted([quiet["router"], busy["router"]])  # quiet's set gets deleted
