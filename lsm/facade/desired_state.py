"""Desired-state versions and their resources, as the API serves them."""

from __future__ import annotations

from typing import Any

from lsm.desired_state import VersionInfo
from lsm.facade.context import RequestContext
from lsm.facade.core import Core


class DesiredStateFacade:
    """Read-only: versions newest first, one version's sets, one version's resources."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def _env_id(self, ctx: RequestContext) -> str:
        return self.core.environments.context(ctx.environment).env_id

    def list_desired_states(
        self, ctx: RequestContext, *, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        versions = self.core.store.list_versions(self._env_id(ctx), limit=limit, offset=offset)
        return [_version_dict(v) for v in versions]

    def desired_state(self, ctx: RequestContext, version: int) -> dict[str, Any]:
        env_id = self._env_id(ctx)
        info = self.core.store.get_version(env_id, version)
        content = self.core.store.content(env_id, version)
        return {**_version_dict(info), "sets": content.sets, "shared": content.shared}

    def desired_state_resources(self, ctx: RequestContext, version: int) -> list[dict[str, Any]]:
        return [
            {"id": r.id, "set": set_name, "attributes": r.attributes, "requires": list(r.requires)}
            for set_name, r in self.core.store.resources(self._env_id(ctx), version)
        ]


def _version_dict(info: VersionInfo) -> dict[str, Any]:
    return {
        "version": info.number,
        "kind": info.kind,
        "base": info.base,
        "compile_id": info.compile_id,
        "created_at": info.created_at.isoformat(),
        "sets_replaced": info.sets_replaced,
        "sets_deleted": info.sets_deleted,
        "resource_count": info.resource_count,
    }
