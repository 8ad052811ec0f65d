"""lsm.deploy: the deploy engine. Handlers (``handler``), their registry, and the agent that runs them.

The engine (docs/architecture.md §9): ``Planner`` (new versions -> resource-state rows),
``AgentService`` (a process's agent, assembled from pieces named for their jobs: ``names``,
``claiming``, ``batches``, ``recovery``, ``repairs``), ``Executor`` (one resource under its
metaparameters), ``Feedback`` (resource-based lifecycle transfers).

Public for handler authors (re-exported as ``lsm.CRUDHandler`` etc.): ``Handler``, ``CRUDHandler``,
``DiscoveryHandler``, ``HandlerContext``, ``WatchContext``, ``Change``, ``HandlerError``, ``GroupMember``,
``handler``.
"""

from lsm.deploy.handler import (
    Change,
    CRUDHandler,
    DiscoveryHandler,
    GroupMember,
    Handler,
    HandlerContext,
    HandlerError,
    WatchContext,
    handler,
)

#: the engine's parts, loaded on first use (they pull in the store; handler authors need none)
_LAZY = {
    "AgentService": "lsm.deploy.agent",
    "Executor": "lsm.deploy.executor",
    "Feedback": "lsm.deploy.feedback",
    "Planner": "lsm.deploy.planner",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lsm.deploy' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AgentService",
    "CRUDHandler",
    "Change",
    "DiscoveryHandler",
    "Executor",
    "Feedback",
    "GroupMember",
    "Handler",
    "HandlerContext",
    "HandlerError",
    "Planner",
    "WatchContext",
    "handler",
]
