"""The Inmanta LSM-compatible selector API (``lsm.selection.lsm_compat``) over a real inventory."""

from __future__ import annotations

from typing import Any, cast

import pytest

from lsm.errors import SelectorError
from lsm.selection import select, selector_for
from lsm.selection.factories import REGISTERED
from lsm.selection.lsm_compat import global_cache, partial
from lsm.store.database import Database
from tests.selection import CATALOG, Inventory, tree_selection


class Probe(partial.AbstractSelector):
    """Records what the cache answers while it runs; selects the requested sites."""

    seen: dict[str, Any]

    def reload_bindings(self) -> None:
        self.seen = {"phases": ["reload_bindings"]}

    def register_instances(self, requested_instances: Any) -> None:
        super().register_instances(requested_instances)
        self.seen["phases"].append("register_instances")

    def select_all(self) -> dict[str, list[dict[str, Any]]]:
        cache = global_cache
        first = self.requested_instances[0]
        self.seen.update(
            any_entity=cache.get_instance(self.env, None, first),
            wrong_entity=cache.get_instance(self.env, "router", first),
            routers=[i["id"] for i in cache.get_all_instances(self.env, "router")],
            binding=cache.get_binding(self.env, "port").name,
            lifecycle=cache.get_lifecycle(self.env, "port"),
        )
        return {
            "site": [
                cast(dict[str, Any], cache.get_instance(self.env, "site", i))
                for i in self.requested_instances
            ]
        }


class WholeGroups(partial.TreeSelector):
    """A TreeSelector subclass extending ``super().select_all()`` (the LSM GroupSelector pattern)."""

    def select_all(self) -> dict[str, list[dict[str, Any]]]:
        selection = super().select_all()
        selection["site"] = global_cache.get_all_instances(self.env, "site")
        return selection


def test_the_cache_answers_with_lsm_field_names_while_the_selector_runs(db: Database) -> None:
    inv = Inventory(db)
    site = inv.add("site", name="s")
    gone = inv.add("site", name="g", deleted=True)
    router = inv.add("router", name="r")
    inv.flush()
    probe = Probe(inv.view(), CATALOG)
    selection = select(probe, [site, gone])
    assert probe.seen["phases"] == ["reload_bindings", "register_instances"]
    assert probe.requested_instances == [site, gone]
    instance = probe.seen["any_entity"]
    assert {k: instance[k] for k in ("id", "service_entity", "state", "deleted")} == {
        "id": site,
        "service_entity": "site",
        "state": "up",
        "deleted": False,
    }
    assert instance["active_attributes"] == {"name": "s"} and instance["candidate_attributes"] is None
    assert probe.seen["wrong_entity"] is None
    assert probe.seen["routers"] == [router]
    assert (probe.seen["binding"], probe.seen["lifecycle"]) == ("port", CATALOG.get("port").lifecycle)
    # None for the terminated site: dropped, and its tree still counts (its set is deleted)
    assert selection.instances["site"] == [site]
    assert selection.roots == sorted([site, gone])


def test_the_cache_is_only_there_while_a_selector_runs() -> None:
    with pytest.raises(SelectorError, match="only available while a selector runs"):
        global_cache.get_instance(None, None, "x")


def test_tree_selector_and_registration(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    site = inv.add("site", name="s")
    inv.flush()
    global_cache.set_selector_factory(WholeGroups)
    try:
        assert selector_for("WholeGroups") is WholeGroups
        selection = select(WholeGroups(inv.view(), CATALOG), [tree["subs"][0]])
    finally:
        REGISTERED.pop("WholeGroups")
    assert selection.instances == {**tree_selection(tree), "site": [site]}
    with pytest.raises(TypeError):
        global_cache.set_selector_factory(dict)  # type: ignore[arg-type]  # the wrong type is the point
