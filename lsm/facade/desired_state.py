"""Desired-state versions and their resources, as the API serves them."""

from __future__ import annotations

from lsm.desired_state import VersionInfo
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.schemas.desired_state import DesiredStateOut, DesiredStateResourceOut, DesiredStateVersionOut


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

    def desired_state_resources(self, ctx: RequestContext, version: int) -> list[DesiredStateResourceOut]:
        return [
            DesiredStateResourceOut(id=r.id, set=set_name, attributes=r.attributes, requires=list(r.requires))
            for set_name, r in self.core.store.resources(self._env_id(ctx), version)
        ]


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
