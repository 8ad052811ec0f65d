"""The facades the API (and in-process callers) call: one small service per resource family.

Why: routes and CLI commands stay thin (parse, call, format); the facades resolve the
environment of a ``RequestContext``, hand changes to the orchestration with the caller's
origin, and turn rows into the API's models. They hold no rule of the core: versions,
transfers, identity and compile batching live below. ``lsm.runtime.wiring`` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsm.facade.auth import AuditFacade, Principal, TokensFacade
from lsm.facade.catalog import CatalogFacade
from lsm.facade.compiles import CompilesFacade
from lsm.facade.context import LOCAL_ACTOR, RequestContext, new_request_id
from lsm.facade.core import Core, EnvironmentContexts
from lsm.facade.desired_state import DesiredStateFacade
from lsm.facade.environments import EnvironmentsFacade
from lsm.facade.events import Cursor, EventsFacade, FeedItem
from lsm.facade.inventory import InventoryFacade
from lsm.facade.signal import ChangeSignal


@dataclass(frozen=True)
class Facades:
    """Every facade over one ``Core``."""

    environments: EnvironmentsFacade
    catalog: CatalogFacade
    inventory: InventoryFacade
    compiles: CompilesFacade
    desired_state: DesiredStateFacade
    events: EventsFacade
    tokens: TokensFacade
    audit: AuditFacade

    @classmethod
    def over(cls, core: Core) -> Facades:
        return cls(
            environments=EnvironmentsFacade(core),
            catalog=CatalogFacade(core),
            inventory=InventoryFacade(core),
            compiles=CompilesFacade(core),
            desired_state=DesiredStateFacade(core),
            events=EventsFacade(core),
            tokens=TokensFacade(core),
            audit=AuditFacade(core),
        )


__all__ = [
    "LOCAL_ACTOR",
    "AuditFacade",
    "CatalogFacade",
    "ChangeSignal",
    "CompilesFacade",
    "Core",
    "Cursor",
    "DesiredStateFacade",
    "EnvironmentContexts",
    "EnvironmentsFacade",
    "EventsFacade",
    "Facades",
    "FeedItem",
    "InventoryFacade",
    "Principal",
    "RequestContext",
    "TokensFacade",
    "new_request_id",
]
