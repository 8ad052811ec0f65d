"""Resources and their deploy: list and read them, their action log, and ``deploy`` (run or dry run).

The deploy engine's agents write the deploy tables; this facade reads them
(``lsm.store.deploy.queries``) and makes the one change an operator asks for: failed and
skipped resources (with ``repair``: every resource) back to ``pending``, then ``wake`` the
agents. ``wake(env_id)`` is a hook the composition root gives (``lsm.runtime.wiring``): agents in
this process look at once; agents of other processes are woken by ``NOTIFY`` on PostgreSQL.
Without one (no agent in this process) it does nothing and the agents find the work at their
next poll.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlmodel import Session

from lsm.deploy.dryrun import default_state_dir, dry_run
from lsm.deploy.jail import Jail
from lsm.errors import InvalidInput, UnknownResource
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.scope import check_selection
from lsm.facade.set_names import set_names
from lsm.schemas.deploy import (
    DeployRequest,
    DeployResult,
    DeployStatusOut,
    ResourceActionOut,
    ResourceOut,
    ResourceStatus,
)
from lsm.store.deploy import queries as queries
from lsm.store.deploy.scope import instance_resource_ids


def _named(session: Session, env_id: str, resources: list[ResourceOut]) -> list[ResourceOut]:
    """``resources`` with each one's ``set_name`` (``lsm.facade.set_names``), in one read."""
    names = set_names(session, env_id, (r.set for r in resources))
    return [r.model_copy(update={"set_name": names.get(r.set)}) if r.set in names else r for r in resources]


def _no_wake(_env_id: str) -> None:
    """No agent runs in this process: the agents poll (or hear ``NOTIFY`` on PostgreSQL)."""


class DeployFacade:
    """``/api/v1/resources`` and ``/api/v1/deploy``."""

    def __init__(
        self,
        core: Core,
        *,
        wake: Callable[[str], None] = _no_wake,
        state_dir: Path | None = None,
        jail: Jail | None = None,
    ) -> None:
        self.core = core
        self.wake = wake
        self.state_dir = state_dir if state_dir is not None else default_state_dir()
        #: where dry-run handlers may read (default: the state directory alone)
        self.jail = jail

    def _env_id(self, ctx: RequestContext) -> str:
        return self.core.environments.context(ctx.environment).env_id

    @staticmethod
    def _page(limit: int, offset: int) -> None:
        if not 1 <= limit <= queries.MAX_PAGE:
            raise InvalidInput(f"limit must be 1..{queries.MAX_PAGE}", field="limit", limit=limit)
        if offset < 0:
            raise InvalidInput("offset must be >= 0", field="offset", offset=offset)

    # -- reads -------------------------------------------------------------------------------------
    def list_resources(
        self,
        ctx: RequestContext,
        *,
        agent: str | None = None,
        status: ResourceStatus | None = None,
        resource_type: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[ResourceOut]:
        """A page of the newest version's resources in id order (without their attributes)."""
        self._page(limit, offset)
        env_id = self._env_id(ctx)
        with self.core.db.read() as session:
            found = queries.list_resources(
                session,
                env_id,
                agent=agent,
                status=status,
                resource_type=resource_type,
                limit=limit,
                offset=offset,
            )
            return _named(session, env_id, found)

    def get_resource(self, ctx: RequestContext, resource_id: str) -> ResourceOut:
        """One resource with its desired attributes; ``UnknownResource`` (404) naming the id."""
        env_id = self._env_id(ctx)
        with self.core.db.read() as session:
            found = queries.get_resource(session, env_id, resource_id)
            named = _named(session, env_id, [found]) if found is not None else []
        if not named:
            raise UnknownResource(f"no resource {resource_id!r} in this environment", resource_id=resource_id)
        return named[0]

    def resource_actions(
        self, ctx: RequestContext, resource_id: str, *, limit: int = 50, offset: int = 0
    ) -> list[ResourceActionOut]:
        """The resource's action log, newest first; 404 for an id with no state, desire or log."""
        self._page(limit, offset)
        env_id = self._env_id(ctx)
        with self.core.db.read() as session:
            actions = queries.list_actions(session, env_id, resource_id, limit=limit, offset=offset)
            unknown = (
                not actions
                and queries.get_resource(session, env_id, resource_id) is None
                and (offset == 0 or not queries.list_actions(session, env_id, resource_id, limit=1))
            )
        if unknown:
            raise UnknownResource(f"no resource {resource_id!r} in this environment", resource_id=resource_id)
        return actions

    def status(self, ctx: RequestContext, *, agents: list[str] | None = None) -> DeployStatusOut:
        """Where the environment's deploy stands: its resources counted by status."""
        env_id = self._env_id(ctx)
        with self.core.db.read() as session:
            counts = queries.status_counts(session, env_id, agents)
            planned = queries.planned_version(session, env_id)
        return DeployStatusOut(
            version=self.core.store.latest_version(env_id),
            planned_version=planned,
            total=sum(counts.values()),
            counts={ResourceStatus(k): v for k, v in sorted(counts.items())},
        )

    # -- deploy ------------------------------------------------------------------------------------
    def deploy(self, ctx: RequestContext, request: DeployRequest) -> DeployResult:
        """Dry-run the newest version, or schedule failed/skipped (``repair``: all) resources and wake
        the agents, over the request's selection (``lsm.facade.scope``: a bad one is a 422 naming
        the field, unknown instances a 404). Blocking (handlers run in a dry run): call it off
        the event loop."""
        env = self.core.environments.context(ctx.environment)
        selection = request.selection()
        with self.core.db.read() as session:
            check_selection(session, env.env_id, selection)
            instance_resources = (
                None
                if request.instances is None
                else instance_resource_ids(session.connection(), env.env_id, request.instances)
            )
        if request.dry_run:
            return dry_run(
                self.core.db,
                self.core.store,
                env.env_id,
                env.model.handlers,
                agents=request.agents,
                state_dir=self.state_dir,
                jail=self.jail,
                selection=selection,
                instance_resources=instance_resources,
            )
        with self.core.db.write() as session:
            scheduled = queries.schedule_redeploy(session, env.env_id, selection, request.repair)
        self.wake(env.env_id)
        return DeployResult(
            version=self.core.store.latest_version(env.env_id), dry_run=False, scheduled=scheduled
        )
