"""Reading service instances, as the API and the console serve them: lists and searches, one
instance, its log, resources, owned instances and diagnosis, and the console's instance page.

Why apart from the changes (``lsm.facade.inventory``): reads and changes are two roles, and one
module holding both grew past what a reader takes in at once. ``InventoryFacade`` inherits these.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session

from lsm.errors import InvalidInput
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.diagnosis import Diagnosis, Situation, display_name, summary
from lsm.facade.inventory_search import attribute_matches, identity_search
from lsm.facade.set_names import set_names
from lsm.facade.views import compile_out, event_out, instance_out
from lsm.orchestration import EnvironmentContext
from lsm.schemas.deploy import BLOCKING_STATUSES, DeploymentProgress, ResourceStatus
from lsm.schemas.inventory import AllowedTransfer, DiagnosisOut, EventOut, InstanceOut, InstanceResourceOut
from lsm.store.deploy import queries as deploy_queries
from lsm.store.deploy.queries import DeployState
from lsm.store.instances import repository as repo
from lsm.store.instances.search import search_instances
from lsm.store.tables import EventRow


@dataclass(frozen=True)
class InstancePage:
    """One instance and everything about it, from one snapshot (``InventoryFacade.instance_page``)."""

    instance: InstanceOut
    diagnosis: DiagnosisOut
    log: list[EventOut]
    resources: list[InstanceResourceOut]
    owned: list[InstanceOut]


class InventoryReads:
    """The read half of ``InventoryFacade``."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def _env(self, ctx: RequestContext) -> EnvironmentContext:
        return self.core.environments.context(ctx.environment)

    def list_instances(
        self,
        ctx: RequestContext,
        entity: str,
        *,
        states: list[str] | None = None,
        include_deleted: bool = False,
        limit: int = 100,
        offset: int = 0,
        sort: str = "created_at",
        identity: str | None = None,
        attributes: list[str] | None = None,
    ) -> list[InstanceOut]:
        """A page of the entity's instances in ``sort`` order; ``identity``: only those whose
        identity contains that text (any case); ``attributes``: only those matching every
        ``name=value`` (``lsm.facade.inventory_search``)."""
        env = self._env(ctx)
        binding = env.binding(entity)
        if limit < 1 or limit > 10_000 or offset < 0:
            raise InvalidInput("limit must be 1..10000 and offset >= 0", limit=limit, offset=offset)
        contains = identity_search(binding, identity)
        matches = attribute_matches(binding, attributes)
        with self.core.db.read() as session:
            rows = search_instances(
                session,
                env.env_id,
                binding.name,
                identity=contains,
                attributes=matches,
                states=states,
                include_deleted=include_deleted,
                limit=limit,
                offset=offset,
                sort=sort,
            )
        return [instance_out(r) for r in rows]

    def get_instance(self, ctx: RequestContext, entity: str, ref: str) -> InstanceOut:
        """One instance with its ``deployment_progress`` (lists and change answers leave it out)."""
        env, instance = self._find(ctx, entity, ref)
        with self.core.db.read() as session:
            progress = deploy_queries.deployment_progress(session, env.env_id, instance.id)
        return instance.model_copy(update={"deployment_progress": progress})

    def _find(self, ctx: RequestContext, entity: str, ref: str) -> tuple[EnvironmentContext, InstanceOut]:
        env = self._env(ctx)
        with self.core.db.read() as session:
            return env, self._found(session, env, entity, ref)

    @staticmethod
    def _found(session: Session, env: EnvironmentContext, entity: str, ref: str) -> InstanceOut:
        """The instance ``ref`` of ``entity``, read in ``session``."""
        binding = env.binding(entity)
        row = repo.find_instance(session, env.env_id, binding.name, ref, identity_attr=binding.identity)
        return instance_out(row)

    def owned_instances(
        self, ctx: RequestContext, entity: str, ref: str, *, limit: int = 100
    ) -> list[InstanceOut]:
        """The live instances this one owns directly (at most ``limit``; an owner tree step down)."""
        env, instance = self._find(ctx, entity, ref)
        with self.core.db.read() as session:
            return [instance_out(r) for r in repo.list_owned(session, env.env_id, instance.id, limit=limit)]

    def instance_log(self, ctx: RequestContext, entity: str, ref: str) -> list[EventOut]:
        _, instance = self._find(ctx, entity, ref)
        with self.core.db.read() as session:
            return [event_out(e) for e in repo.list_events(session, instance.id)]

    def instance_resources(self, ctx: RequestContext, entity: str, ref: str) -> list[InstanceResourceOut]:
        env, instance = self._find(ctx, entity, ref)
        return self._resources_of(env, instance)[0]

    def _resources_of(
        self, env: EnvironmentContext, instance: InstanceOut
    ) -> tuple[list[InstanceResourceOut], DeploymentProgress]:
        """The resources the instance produced in the latest desired state, with their deploy
        status, and their count by status.

        A resource the deploy engine has not planned for that version yet is ``pending``. A
        skipped resource names in ``blocked_by`` the resources it requires that failed or were
        skipped (one read of their rows, whichever instance they belong to).
        """
        with self.core.db.read() as session:
            deploy = deploy_queries.instance_deploy_state(session, env.env_id, instance.id)
            return self._resources_from(session, env, deploy)

    def _resources_from(
        self, session: Session, env: EnvironmentContext, deploy: DeployState
    ) -> tuple[list[InstanceResourceOut], DeploymentProgress]:
        """``_resources_of`` from an instance's deploy state already read (``session``: for the
        rows of what blocks a skipped resource)."""
        record, states, planned = deploy
        if record is None:
            return [], DeploymentProgress()
        required = {
            rid
            for row in states.values()
            if row["status"] == ResourceStatus.SKIPPED
            for rid in row["requires"] or []
        }
        blockers = deploy_queries.states_of(session, env.env_id, required) if planned else {}
        set_name = set_names(session, env.env_id, [record.set_name]).get(record.set_name or "")
        progress = deploy_queries.progress_of(states, record.resource_ids, planned=planned)
        blocking = BLOCKING_STATUSES
        out: list[InstanceResourceOut] = []
        for rid in record.resource_ids:
            row = states.get(rid) if planned else None
            if row is None:
                out.append(
                    InstanceResourceOut(
                        id=rid,
                        set=record.set_name,
                        set_name=set_name,
                        desired_state_version=record.desired_state_version,
                        status=ResourceStatus.PENDING.value,
                    )
                )
                continue
            blocked_by = []
            if row["status"] == ResourceStatus.SKIPPED:
                blocked_by = sorted(
                    r for r in row["requires"] or [] if r in blockers and blockers[r]["status"] in blocking
                )
            out.append(
                InstanceResourceOut(
                    id=rid,
                    set=record.set_name,
                    set_name=set_name,
                    desired_state_version=record.desired_state_version,
                    status=row["status"],
                    last_error=row["last_error"],
                    attempts=row["attempts"],
                    blocked_by=blocked_by,
                )
            )
        return out, progress

    def diagnose(self, ctx: RequestContext, entity: str, ref: str) -> DiagnosisOut:
        """Why the instance is where it is: the causal chain (``lsm.facade.diagnosis``) and its
        summary, then the facts: allowed transfers, last error, compiles, failed resources."""
        env = self._env(ctx)
        with self.core.db.read() as session:
            instance = self._found(session, env, entity, ref)
            return self._about(session, env, entity, instance)[0]

    def instance_page(
        self, ctx: RequestContext, entity: str, ref: str, *, owned_limit: int = 100
    ) -> InstancePage:
        """What the console's instance page shows, read in ONE snapshot: the instance, its
        diagnosis, its whole event log, its resources and the instances it owns.

        Why one call: read section by section (``get_instance``, ``diagnose``, ``instance_log``,
        ``instance_resources``, ``owned_instances``), the page found the instance five times, read
        its deploy state three times and its whole event log twice, each in a transaction of its
        own, so a change between two of them showed a diagnosis that disagreed with the log.
        """
        env = self._env(ctx)
        with self.core.db.read() as session:
            instance = self._found(session, env, entity, ref)
            diagnosis, events, resources = self._about(session, env, entity, instance)
            owned = repo.list_owned(session, env.env_id, instance.id, limit=owned_limit)
            return InstancePage(
                instance=diagnosis.instance,
                diagnosis=diagnosis,
                log=[event_out(e) for e in events],
                resources=resources,
                owned=[instance_out(r) for r in owned],
            )

    def _about(
        self, session: Session, env: EnvironmentContext, entity: str, instance: InstanceOut
    ) -> tuple[DiagnosisOut, list[EventRow], list[InstanceResourceOut]]:
        """The diagnosis of ``instance`` in ``session``'s snapshot, with the event log and the
        resources it was made from (the instance page shows them too)."""
        deploy = deploy_queries.instance_deploy_state(session, env.env_id, instance.id)
        resources, progress = self._resources_from(session, env, deploy)
        events = repo.list_events(session, instance.id)
        binding = env.binding(entity)
        instance = instance.model_copy(update={"deployment_progress": progress})
        allowed = self.core.lifecycles.machine(binding.lifecycle).allowed(instance.state)
        validation = repo.last_validation_compile(session, env.env_id, instance.id)
        pending = repo.pending_compile_for(session, env.env_id, instance.id)
        situation = Situation(
            env_id=env.env_id,
            instance=instance,
            transfers=[(a["trigger"], a["target"]) for a in allowed],
            events=events,
            validation=validation,
            pending=pending,
            deploy=deploy,
        )
        chain = Diagnosis(session, situation).chain()
        last_error = next((event_out(e) for e in reversed(events) if e.is_error), None)
        symptom = f"{display_name(instance, binding.identity)} is in `{instance.state}`"
        diagnosis = DiagnosisOut(
            cause=chain,
            summary=summary(symptom, chain),
            instance=instance,
            state=instance.state,
            allowed=[AllowedTransfer(**a) for a in allowed],
            last_error=last_error,
            validation_compile=None if validation is None else compile_out(validation),
            pending_compile=None if pending is None else compile_out(pending),
            resources=[r for r in resources if r.status in BLOCKING_STATUSES],
            deployment_progress=progress,
        )
        return diagnosis, events, resources
