"""Environments (tenants) and their settings, as the API serves them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsm.errors import InvalidInput, InvalidSetting
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.halts import brake_fields, no_wake
from lsm.facade.views import environment_out
from lsm.schemas.environments import EnvironmentOut, SettingOut
from lsm.selection.specs import validate_spec
from lsm.store import audit
from lsm.store.deploy import queries as deploy_queries
from lsm.store.environments import halts
from lsm.store.environments.settings import describe_settings, validate_setting
from lsm.store.instances import repository as repo


class EnvironmentsFacade:
    """List, create and read environments; read and change their settings."""

    def __init__(self, core: Core, *, wake: Callable[[str], None] = no_wake) -> None:
        """``wake(env_id)``: the agents of this process look now (lifting the global noop)."""
        self.core = core
        self.wake = wake

    def list_environments(self, ctx: RequestContext) -> list[EnvironmentOut]:
        """The environments the caller may see (every one, for a caller with a ``*`` role)."""
        with self.core.db.read() as session:
            rows = [r for r in repo.list_environments(session) if ctx.sees(r.id, r.name)]
            brakes = [halts.state(session.connection(), r.id) for r in rows]
        effective = self.core.environments.effective_settings
        return [
            environment_out(r, effective(r.settings).model_dump()).model_copy(update=brake_fields(b))
            for r, b in zip(rows, brakes, strict=True)
        ]

    @property
    def default(self) -> str:
        """The name of the default environment (requests that name none)."""
        return self.core.environments.default

    def identify(self, env: str | None) -> tuple[str, str] | None:
        """``(id, name)`` of an environment (name or id; ``None`` = the default), or ``None``."""
        with self.core.db.read() as session:
            row = repo.find_environment(session, env or self.core.environments.default)
        return (row.id, row.name) if row is not None else None

    def create_environment(self, ctx: RequestContext, name: str, model: str | None = None) -> EnvironmentOut:
        """Create ``name`` with a model the server offers (docs/api.md, models); idempotent for the
        same model, a 409 for another one. A model that fails to load creates nothing."""
        if not name.strip():
            raise InvalidInput("an environment needs a name", field="name")
        self.core.environments.create(name, model, actor=ctx.actor, request_id=ctx.request_id)
        return self.get_environment(ctx.in_environment(name))

    def set_model(self, ctx: RequestContext, model: str) -> EnvironmentOut:
        """Give the environment of ``ctx`` another model the server offers; one that fails to load
        changes nothing."""
        env = ctx.environment or self.core.environments.default
        row = self.core.environments.change_model(env, model, actor=ctx.actor, request_id=ctx.request_id)
        return self.get_environment(ctx.in_environment(row.id))

    def get_environment(self, ctx: RequestContext) -> EnvironmentOut:
        """The environment of ``ctx`` (the default one when it names none)."""
        with self.core.db.read() as session:
            row = repo.get_environment(session, ctx.environment or self.core.environments.default)
            brake = halts.state(session.connection(), row.id)
        settings = self.core.environments.effective_settings(row.settings).model_dump()
        return environment_out(row, settings).model_copy(update=brake_fields(brake))

    def get_settings(self, ctx: RequestContext) -> dict[str, SettingOut]:
        """Every setting with its description and current value (defaults filled in)."""
        current = self.get_environment(ctx).settings
        return {key: SettingOut(**meta, value=current[key]) for key, meta in describe_settings().items()}

    def set_setting(self, ctx: RequestContext, key: str, value: Any) -> dict[str, SettingOut]:
        """Set one setting (422 for an unknown key or an ill-typed value); every setting after it."""
        typed = validate_setting(key, value)
        if key == "selector":  # a selector this environment can not build would refuse every order
            env = self.core.environments.context(ctx.environment)
            validate_spec(self.core.db, env.env_id, env.catalog, typed, model=env.model, error=InvalidSetting)
        with self.core.db.write() as session:
            row = repo.get_environment(session, ctx.environment or self.core.environments.default)
            previous = row.settings.get(key)
            was = self.core.environments.effective_settings(row.settings)
            noop_lifted = key == "deploy_noop" and not typed and was.deploy_noop
            row.settings = {**row.settings, key: typed}
            session.add(row)
            env_id = row.id
            # what the global noop held back is deployed now, not at the next repair run
            requeued = deploy_queries.schedule_noop_pending(session, env_id) if noop_lifted else 0
            audit.record(
                session,
                actor=ctx.actor,
                request_id=ctx.request_id,
                action="setting.set",
                target=key,
                env_id=env_id,
                value=typed,
                previous=previous,
            )
        self.core.environments.invalidate(env_id)
        if requeued:
            self.wake(env_id)
        return self.get_settings(ctx.in_environment(env_id))
