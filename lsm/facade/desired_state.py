"""Desired-state versions and their resources, as the API serves them."""

from __future__ import annotations

from lsm.desired_state import ResourceRecord, VersionDiff, VersionInfo
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.schemas.desired_state import (
    DesiredStateDiffOut,
    DesiredStateOut,
    DesiredStateResourceOut,
    DesiredStateVersionOut,
    ResourceChangeOut,
    ResourceSideOut,
    SetChangeOut,
)


class DesiredStateFacade:
    """Read-only: versions newest first, one version's sets, one version's resources."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def _env_id(self, ctx: RequestContext) -> str:
        return self.core.environments.context(ctx.environment).env_id

    def list_desired_states(
        self, ctx: RequestContext, *, limit: int = 50, offset: int = 0
    ) -> list[DesiredStateVersionOut]:
        versions = self.core.store.list_versions(self._env_id(ctx), limit=limit, offset=offset)
        return [_version_out(v) for v in versions]

    def desired_state(self, ctx: RequestContext, version: int) -> DesiredStateOut:
        env_id = self._env_id(ctx)
        info = self.core.store.get_version(env_id, version)
        content = self.core.store.content(env_id, version)
        header = _version_out(info).model_dump()
        return DesiredStateOut(**header, sets=content.sets, shared=content.shared)

    def desired_state_resources(
        self, ctx: RequestContext, version: int, *, set_name: str | None = None
    ) -> list[DesiredStateResourceOut]:
        """The version's resources (``set_name``: only that named set's, through its index)."""
        return [
            DesiredStateResourceOut(id=r.id, set=name, attributes=r.attributes, requires=list(r.requires))
            for name, r in self.core.store.resources(self._env_id(ctx), version, set_name)
        ]

    def desired_state_diff(self, ctx: RequestContext, version: int, other: int) -> DesiredStateDiffOut:
        """What turns ``version`` into ``other``; ``UnknownVersion`` names a missing one."""
        return diff_out(self.core.store.diff(self._env_id(ctx), version, other))


def diff_out(diff: VersionDiff) -> DesiredStateDiffOut:
    return DesiredStateDiffOut(
        from_version=diff.from_version,
        to_version=diff.to_version,
        sets=[
            SetChangeOut(name=s.name, change=s.change, before_count=s.before_count, after_count=s.after_count)
            for s in diff.sets
        ],
        resources=[
            ResourceChangeOut(
                id=r.id,
                change=r.change,
                fields=list(r.fields),
                before=_side(r.set_before, r.before),
                after=_side(r.set_after, r.after),
            )
            for r in diff.resources
        ],
    )


def _side(set_name: str | None, record: ResourceRecord | None) -> ResourceSideOut | None:
    if record is None:
        return None
    return ResourceSideOut(set=set_name, attributes=record.attributes, requires=list(record.requires))


def _version_out(info: VersionInfo) -> DesiredStateVersionOut:
    return DesiredStateVersionOut(
        version=info.number,
        kind=info.kind,
        base=info.base,
        compile_id=info.compile_id,
        created_at=info.created_at,
        sets_replaced=info.sets_replaced,
        sets_deleted=info.sets_deleted,
        resource_count=info.resource_count,
    )
