"""Desired-state versions and their resources, as the API serves them."""

from __future__ import annotations

from lsm.desired_state import ResourceRecord, VersionDiff, VersionInfo
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.set_names import set_names
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
