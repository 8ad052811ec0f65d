"""The facades the API (and in-process callers) call: one small service per resource family.

Why: routes and CLI commands stay thin (parse, call, format); the facades resolve the
environment of a ``RequestContext``, hand changes to the orchestration with the caller's
origin, and turn rows into the API's models. They hold no rule of the core: versions,
transfers, identity and compile batching live below. ``lsm.runtime.wiring`` builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lsm.deploy.jail import Jail
from lsm.facade.auth import AuditFacade, Principal, TokensFacade
from lsm.facade.catalog import CatalogFacade
from lsm.facade.compiles import CompilesFacade
from lsm.facade.compliance import ComplianceFacade
from lsm.facade.context import LOCAL_ACTOR, RequestContext, new_request_id
from lsm.facade.core import Core, EnvironmentContexts
from lsm.facade.deploy import DeployFacade
from lsm.facade.desired_state import DesiredStateFacade
from lsm.facade.discovery import DiscoveryFacade
from lsm.facade.environments import EnvironmentsFacade
from lsm.facade.events import Cursor, EventsFacade, FeedItem
from lsm.facade.graphs import GraphsFacade
from lsm.facade.halts import HaltsFacade, no_wake
from lsm.facade.inventory import InventoryFacade
from lsm.facade.metrics import MetricsFacade
from lsm.facade.orders import OrdersFacade
from lsm.facade.signal import ChangeSignal
from lsm.facade.webhooks import WebhooksFacade


@dataclass(frozen=True)
class Facades:
    """Every facade over one ``Core``."""

    environments: EnvironmentsFacade
    catalog: CatalogFacade
    inventory: InventoryFacade
    compiles: CompilesFacade
    desired_state: DesiredStateFacade
    events: EventsFacade
    deploy: DeployFacade
    compliance: ComplianceFacade
    discovery: DiscoveryFacade
    tokens: TokensFacade
    audit: AuditFacade
    metrics: MetricsFacade
    graphs: GraphsFacade
    webhooks: WebhooksFacade
    halts: HaltsFacade
    orders: OrdersFacade

    @classmethod
    def over(
        cls,
        core: Core,
        *,
        wake_agents: Callable[[str], None] | None = None,
        state_dir: Path | None = None,
        wake_webhooks: Callable[[], None] = lambda: None,
        jail: Jail | None = None,
        allow_internal_webhooks: bool = False,
    ) -> Facades:
        """``wake_agents(env_id)``: agents of this process look now (``POST /api/v1/deploy``, a
        resume or an unpause, the global noop lifted);
        ``state_dir``: where dry-run handlers find their files (default ``<cwd>/lsm-state``);
        ``wake_webhooks()``: the webhook dispatcher of this process looks now; ``jail``: where
        dry-run handlers may read (default: the state directory);
        ``allow_internal_webhooks``: webhooks may target internal addresses."""
        deploy = (
            DeployFacade(core, state_dir=state_dir, jail=jail)
            if wake_agents is None
            else DeployFacade(core, wake=wake_agents, state_dir=state_dir, jail=jail)
        )
        events = EventsFacade(core)
        inventory = InventoryFacade(core)
        return cls(
            environments=EnvironmentsFacade(core, wake=wake_agents or no_wake),
            catalog=CatalogFacade(core),
            inventory=inventory,
            compiles=CompilesFacade(core),
            desired_state=DesiredStateFacade(core, wake=wake_agents or no_wake),
            events=events,
            deploy=deploy,
            compliance=ComplianceFacade(core, wake=wake_agents or no_wake),
            discovery=DiscoveryFacade(core),
            tokens=TokensFacade(core),
            audit=AuditFacade(core),
            metrics=MetricsFacade(core),
            graphs=GraphsFacade(core),
            webhooks=WebhooksFacade(core, events, wake=wake_webhooks, allow_internal=allow_internal_webhooks),
            halts=HaltsFacade(core, wake=wake_agents or no_wake),
            orders=OrdersFacade(core, inventory),
        )


__all__ = [
    "LOCAL_ACTOR",
    "AuditFacade",
    "CatalogFacade",
    "ChangeSignal",
    "CompilesFacade",
    "ComplianceFacade",
    "Core",
    "Cursor",
    "DeployFacade",
    "DesiredStateFacade",
    "DiscoveryFacade",
    "EnvironmentContexts",
    "EnvironmentsFacade",
    "EventsFacade",
    "Facades",
    "FeedItem",
    "GraphsFacade",
    "HaltsFacade",
    "InventoryFacade",
    "MetricsFacade",
    "OrdersFacade",
    "Principal",
    "RequestContext",
    "TokensFacade",
    "WebhooksFacade",
    "new_request_id",
]
