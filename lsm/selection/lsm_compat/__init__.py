"""An Inmanta LSM-compatible selector API, a thin adapter over ``lsm.selection``.

Why: most authors of custom selectors come from Inmanta LSM with selectors already written.
This package offers the names they use, so that such a selector runs with only its import
lines changed::

    # was: from inmanta_plugins import lsm
    #      from inmanta_plugins.lsm import partial
    from lsm.selection import lsm_compat as lsm
    from lsm.selection.lsm_compat import partial

    class TunnelSelector(partial.AbstractSelector):
        def select_all(self) -> dict[str, list[dict]]:
            ...  # self.requested_instances, self.env, lsm.global_cache.get_instance(...)

    lsm.global_cache.set_selector_factory(TunnelSelector)

and the environment setting ``selector = "TunnelSelector"`` (the class name, or its ``name``)
picks it. What maps to what:

* ``partial.AbstractSelector``: the four phases (``reload_bindings()``,
  ``register_instances(ids)``, ``select(requested_service_type) -> list[dict]`` per entity,
  by default from the one-method form ``select_all() -> dict[str, list[dict]]``), with
  ``self.requested_instances`` and ``self.env``; ``partial.TreeSelector``: owner trees;
* ``global_cache``: ``get_instance``, ``get_all_instances``, ``get_binding``,
  ``get_lifecycle``, ``set_selector_factory``, answered from the compile's ``InventoryView``
  (read-only, cached, batched), never from a process-wide cache;
* instance dicts carry LSM's field names (``id``, ``service_entity``, ``version``, ``state``,
  ``candidate_attributes``, ``active_attributes``, ``rollback_attributes``, ``deleted``, ...).

Differences that make ported selectors safer, not different: the engine completes every tree
a selector touches (``lsm.selection.selector``, "Completeness"), and terminated instances (or
``None``) in an answer are dropped instead of failing the compile: a terminated instance
produces nothing, and its tree's set is deleted because it was requested.
"""

from lsm.selection.lsm_compat import partial
from lsm.selection.lsm_compat._core import AbstractSelector, GlobalCache, TreeSelector, global_cache

__all__ = ["AbstractSelector", "GlobalCache", "TreeSelector", "global_cache", "partial"]
