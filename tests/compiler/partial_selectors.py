"""Selectors that return part of what a partial compile needs, as a careless plugin might.

Used by ``test_selector_completeness`` through a model built around ``examples/router_port``
(``router_port_model``): the engine, not the selector, must keep every resource set whole.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lsm.model.loader import Model, model_from_module
from lsm.selection import Selector

ROUTER_PORT = Path(__file__).resolve().parent.parent.parent / "examples" / "router_port"


class RouterOnly(Selector):
    """Returns the routers among the requested ids and nothing else (not their live ports)."""

    name = "router_only"

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        records = self.view.get_many(instance_ids)
        return {"router": [i for i, r in records.items() if r.entity == "router"]}


class Nothing(Selector):
    """Returns nothing at all, whatever was requested."""

    name = "nothing"

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        return {}


class RandomSubset(Selector):
    """Returns an arbitrary subset of the live instances: of the requested trees, and of others.

    Each instance is in or out by a hash of ``seed`` (set by the property test, drawn by
    Hypothesis), the number of the call, and what the instance is (entity, identity, name,
    version, state), never its random id: so an example replays exactly, as Hypothesis needs.
    """

    name = "random_subset"
    seed = 0
    calls = 0

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        cls = type(self)
        cls.calls += 1
        picked: dict[str, list[str]] = {}
        for binding in self.catalog:
            for record in self.view.instances_of(binding.name):
                attributes = record.active_attributes or record.candidate_attributes or {}
                key = f"{cls.seed}:{cls.calls}:{record.entity}:{record.identity}:{attributes.get('name')}:"
                if random.Random(f"{key}{record.version}:{record.state}").random() < 0.4:
                    picked.setdefault(binding.name, []).append(record.id)
        return picked


def router_port_model() -> Model:
    """``examples/router_port`` with the selectors above in its ``SELECTORS``."""
    name = "tests_compiler_router_port_example"
    module = sys.modules.get(name)
    if module is None:  # imported by hand: load_model holds its lock while this model loads
        spec = importlib.util.spec_from_file_location(name, ROUTER_PORT / "__init__.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    base = model_from_module(module)
    return Model(
        bindings=base.bindings,
        implementations=base.implementations,
        selectors={"router_only": RouterOnly, "nothing": Nothing, "random_subset": RandomSubset},
        source="router_port+partial_selectors",
    )
