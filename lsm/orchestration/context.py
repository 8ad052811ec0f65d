"""``EnvironmentContext``: what the orchestration needs to know about one environment.

Built by the runtime from the environment row, its loaded model and the lifecycle registry,
and handed to every orchestration call so that this layer never loads models or reads
configuration itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsm.catalog import Binding, Catalog
from lsm.lifecycle import LifecycleMachine, LifecycleRegistry, LifecycleSpec
from lsm.model.loader import Model
from lsm.store.environments.settings import EnvironmentSettings


@dataclass
class EnvironmentContext:
    env_id: str
    name: str
    model: Model
    lifecycles: LifecycleRegistry
    settings: EnvironmentSettings

    @property
    def catalog(self) -> Catalog:
        return self.model.catalog

    def binding(self, entity: str) -> Binding:
        return self.catalog.get(entity)

    def machine(self, binding: Binding) -> LifecycleMachine:
        return self.lifecycles.machine(binding.lifecycle)

    def lifecycle(self, binding: Binding) -> LifecycleSpec:
        return self.lifecycles.get(binding.lifecycle)
