"""Desired-state versions and their resources, as the API serves them, and the export a client
stores itself (``PUT /api/v1/desired_state``, ``lsm export``).

Why an export route next to the compiles: the seeds' partial compiles are driven from outside
(a model trimmed by hand or written by a generator, ``inmanta export --partial``). Such an
export goes through the same store and rules as a compile's (``DesiredStateStore.export``), so a
rejected one writes nothing and names the rule, and its version is planned and deployed like
any other: the agents are woken as after a compile.
"""

from __future__ import annotations

from collections.abc import Callable

from lsm.desired_state import ExportRequest, ResourceRecord, VersionDiff, VersionInfo
from lsm.desired_state.autoedge import auto_requires_of
from lsm.errors import InvalidInput
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.halts import no_wake
from lsm.facade.set_names import set_names
from lsm.model.resource_id import parse_resource_id
from lsm.schemas.desired_state import (
    DesiredStateDiffOut,
    DesiredStateExportIn,
    DesiredStateOut,
    DesiredStateResourceOut,
    DesiredStateVersionOut,
    ResourceChangeOut,
    ResourceIn,
    ResourceSideOut,
    SetChangeOut,
)
from lsm.store import audit
from lsm.store.compiles.requests import notify_work


class DesiredStateFacade:
    """Versions newest first, one version's sets, one version's resources; and ``export``."""

    def __init__(self, core: Core, *, wake: Callable[[str], None] = no_wake) -> None:
        """``wake(env_id)``: the agents of this process look for the new version now."""
        self.core = core
        self.wake = wake

    def export(self, ctx: RequestContext, body: DesiredStateExportIn) -> DesiredStateVersionOut:
        """Store ``body`` as the next version of the environment of ``ctx``; its header.

        ``InvalidInput`` (422) for a malformed resource id or a deletion in a full export;
        ``ExportRuleViolation`` (400, ``rule``, ``resources``, ``sets``) for a broken rule. Either
        way nothing is written. The version is audited (``desired_state.export``) in its own
        transaction, and the deploy agents are told at the commit.
        """
        request = export_request(body)
        env_id = self._env_id(ctx)
        check = self.core.store.prepare(request)  # encoding and request-only rules: no lock held
        with self.core.db.write() as session:
            info = self.core.store.export(env_id, check, session=session)
            audit.record(
                session,
                actor=ctx.actor,
                request_id=ctx.request_id,
                action="desired_state.export",
                target=str(info.number),
                env_id=env_id,
                kind=info.kind,
                sets_replaced=len(info.sets_replaced),
                sets_deleted=len(info.sets_deleted),
            )
            notify_work(session, env_id)  # agents of other processes (PostgreSQL) plan it now
        self.wake(env_id)
        self.core.changes.notify(env_id)
        return _version_out(info, self._set_names(env_id, [*info.sets_replaced, *info.sets_deleted]))

    def _env_id(self, ctx: RequestContext) -> str:
        return self.core.environments.context(ctx.environment).env_id

    def list_desired_states(
        self, ctx: RequestContext, *, limit: int = 50, offset: int = 0
    ) -> list[DesiredStateVersionOut]:
        env_id = self._env_id(ctx)
        versions = self.core.store.list_versions(env_id, limit=limit, offset=offset)
        names = self._set_names(env_id, [s for v in versions for s in (*v.sets_replaced, *v.sets_deleted)])
        return [_version_out(v, names) for v in versions]

    def set_names(self, ctx: RequestContext, set_ids: list[str]) -> dict[str, str]:
        """Each set's name for a person: its root instance's entity and identity (or short id)."""
        return self._set_names(self._env_id(ctx), set_ids)

    def _set_names(self, env_id: str, set_ids: list[str]) -> dict[str, str]:
        if not set_ids:
            return {}
        with self.core.db.read() as session:
            return set_names(session, env_id, set_ids)

    def desired_state(self, ctx: RequestContext, version: int) -> DesiredStateOut:
        env_id = self._env_id(ctx)
        info = self.core.store.get_version(env_id, version)
        content = self.core.store.content(env_id, version)
        names = self._set_names(env_id, [*content.sets, *info.sets_replaced, *info.sets_deleted])
        header = _version_out(info, names).model_dump() | {"set_names": names}
        return DesiredStateOut(**header, sets=content.sets, shared=content.shared)

    def desired_state_resources(
        self, ctx: RequestContext, version: int, *, set_name: str | None = None
    ) -> list[DesiredStateResourceOut]:
        """The version's resources (``set_name``: only that named set's, through its index)."""
        env_id = self._env_id(ctx)
        found = list(self.core.store.resources(env_id, version, set_name))
        names = self._set_names(env_id, sorted({name for name, _ in found if name is not None}))
        return [
            DesiredStateResourceOut(
                id=r.id,
                set=name,
                attributes=r.attributes,
                requires=list(r.requires),
                set_name=names.get(name) if name is not None else None,
                auto_requires=list(auto_requires_of(r.attributes)),
            )
            for name, r in found
        ]

    def desired_state_diff(self, ctx: RequestContext, version: int, other: int) -> DesiredStateDiffOut:
        """What turns ``version`` into ``other``; ``UnknownVersion`` names a missing one."""
        env_id = self._env_id(ctx)
        diff = self.core.store.diff(env_id, version, other)
        named = {s.name for s in diff.sets} | {r.set_before for r in diff.resources if r.set_before}
        named |= {r.set_after for r in diff.resources if r.set_after}
        return diff_out(diff, self._set_names(env_id, sorted(named)))


def export_request(body: DesiredStateExportIn) -> ExportRequest:
    """The store's request for ``body``; ``InvalidInput`` naming the field for what the store
    would take but the deploy engine could not use (an id that is no resource id)."""
    if not body.partial and (body.deleted_sets or body.soft_delete):
        field = "deleted_sets" if body.deleted_sets else "soft_delete"
        raise InvalidInput(
            f"{field}: only a partial export deletes sets by name (a full export deletes every set "
            "it does not hold)",
            field=field,
        )
    sets = {
        name: [_record(r, f"sets.{name}[{i}]") for i, r in enumerate(resources)]
        for name, resources in body.sets.items()
    }
    shared = [_record(r, f"shared[{i}]") for i, r in enumerate(body.shared)]
    return ExportRequest(
        "partial" if body.partial else "full",
        sets=sets,
        shared=shared,
        deleted_sets=list(body.deleted_sets),
        soft_delete=body.soft_delete,
    )


def _record(resource: ResourceIn, where: str) -> ResourceRecord:
    """The record of one resource of the body. The deploy engine reads a resource's agent from
    its ``agent`` attribute (as a compile writes it): one missing is taken from the id, one that
    names another agent than the id is refused (the resource would never be deployed)."""
    parts = parse_resource_id(resource.id, field=f"{where}.id")
    for i, required in enumerate(resource.requires):
        parse_resource_id(required, field=f"{where}.requires[{i}]")
    attributes = resource.attributes
    agent = attributes.get("agent")
    if agent is None:
        attributes = {**attributes, "agent": parts.agent}
    elif agent != parts.agent:
        raise InvalidInput(
            f"{where}.attributes.agent: {agent!r} is not the agent of the id {resource.id}",
            field=f"{where}.attributes.agent",
            resources=[resource.id],
        )
    return ResourceRecord(resource.id, attributes, tuple(resource.requires))


def diff_out(diff: VersionDiff, names: dict[str, str] | None = None) -> DesiredStateDiffOut:
    """The API's form of ``diff``; ``names``: each set's name for a person (set id -> name)."""
    names = names or {}
    return DesiredStateDiffOut(
        from_version=diff.from_version,
        to_version=diff.to_version,
        sets=[
            SetChangeOut(
                name=s.name,
                change=s.change,
                before_count=s.before_count,
                after_count=s.after_count,
                set_name=names.get(s.name),
            )
            for s in diff.sets
        ],
        resources=[
            ResourceChangeOut(
                id=r.id,
                change=r.change,
                fields=list(r.fields),
                before=_side(r.set_before, r.before, names),
                after=_side(r.set_after, r.after, names),
            )
            for r in diff.resources
        ],
    )


def _side(
    set_name: str | None, record: ResourceRecord | None, names: dict[str, str]
) -> ResourceSideOut | None:
    if record is None:
        return None
    return ResourceSideOut(
        set=set_name,
        attributes=record.attributes,
        requires=list(record.requires),
        set_name=names.get(set_name) if set_name is not None else None,
    )


def _version_out(info: VersionInfo, names: dict[str, str]) -> DesiredStateVersionOut:
    """The header of ``info``, its sets named from ``names`` (set id -> name)."""
    named = {*info.sets_replaced, *info.sets_deleted}
    return DesiredStateVersionOut(
        version=info.number,
        kind=info.kind,
        base=info.base,
        compile_id=info.compile_id,
        created_at=info.created_at,
        sets_replaced=info.sets_replaced,
        sets_deleted=info.sets_deleted,
        resource_count=info.resource_count,
        set_names={k: v for k, v in names.items() if k in named},
    )
