"""lsm.deploy: the deploy engine. Handlers (``handler``), their registry, and the agent that runs them.

Public for handler authors (re-exported as ``lsm.CRUDHandler`` etc.): ``Handler``, ``CRUDHandler``,
``DiscoveryHandler``, ``HandlerContext``, ``Change``, ``HandlerError``, ``handler``.
"""

from lsm.deploy.handler import (
    Change,
    CRUDHandler,
    DiscoveryHandler,
    Handler,
    HandlerContext,
    HandlerError,
    handler,
)

__all__ = [
    "CRUDHandler",
    "Change",
    "DiscoveryHandler",
    "Handler",
    "HandlerContext",
    "HandlerError",
    "handler",
]
