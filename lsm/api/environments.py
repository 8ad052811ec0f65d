"""``/api/v1/environments``: tenants, each with its own model, settings and inventory.

Here the environment is named in the path, not by the ``X-LSM-Environment`` header. Roles
differ per route: anyone with a role somewhere lists (and sees only their environments),
viewers read, admins change settings, and only an admin over every environment creates one.
"""

from __future__ import annotations

from fastapi import APIRouter

from lsm.api.access import Scope, require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import EnvironmentRef, Name
from lsm.api.responses import BODY, CHANGE, READ, errors
from lsm.schemas.auth import Role
from lsm.schemas.environments import (
    CreateEnvironment,
    EnvironmentOut,
    ModelChoice,
    PauseAgent,
    SettingOut,
    SettingValue,
)

router = APIRouter(prefix="/api/v1/environments", tags=["environments"], responses=errors(*READ))


@router.get("", dependencies=[require(Role.VIEWER, scope=Scope.SOME)])
def list_environments(facades: FacadesDep, ctx: ContextDep) -> list[EnvironmentOut]:
    return facades.environments.list_environments(ctx)


@router.post("", dependencies=[require(Role.ADMIN, scope=Scope.GLOBAL)], responses=errors(*CHANGE))
def create_environment(body: CreateEnvironment, facades: FacadesDep, ctx: ContextDep) -> EnvironmentOut:
    return facades.environments.create_environment(ctx, body.name, body.model)


@router.get("/{env}", dependencies=[require(Role.VIEWER)])
def get_environment(env: EnvironmentRef, facades: FacadesDep, ctx: ContextDep) -> EnvironmentOut:
    return facades.environments.get_environment(ctx.in_environment(env))


@router.put("/{env}/model", dependencies=[require(Role.ADMIN)], responses=errors(*BODY))
def set_model(env: EnvironmentRef, body: ModelChoice, facades: FacadesDep, ctx: ContextDep) -> EnvironmentOut:
    """Run another model the server offers; one that does not load changes nothing."""
    return facades.environments.set_model(ctx.in_environment(env), body.model)


@router.get("/{env}/settings", dependencies=[require(Role.VIEWER)])
def get_settings(env: EnvironmentRef, facades: FacadesDep, ctx: ContextDep) -> dict[str, SettingOut]:
    """Every setting with its current value (defaults filled in)."""
    return facades.environments.get_settings(ctx.in_environment(env))


@router.put("/{env}/settings/{key}", dependencies=[require(Role.ADMIN)], responses=errors(*BODY))
def set_setting(
    env: EnvironmentRef, key: Name, body: SettingValue, facades: FacadesDep, ctx: ContextDep
) -> dict[str, SettingOut]:
    """Set one setting; unknown keys and ill-typed values are 422."""
    return facades.environments.set_setting(ctx.in_environment(env), key, body.value)


# -- halt and resume, pause and unpause (docs/semantics.md: nothing stranded) -------------------------
@router.post("/{env}/halt", dependencies=[require(Role.ADMIN)], responses=errors(*CHANGE))
def halt(env: EnvironmentRef, facades: FacadesDep, ctx: ContextDep) -> EnvironmentOut:
    """Halt the environment: orders are taken and compiles queue, but no compile runs and no agent
    deploys until it is resumed (handler calls under way finish and are recorded). Halting a halted
    environment changes nothing."""
    env_id = facades.halts.halt(ctx.in_environment(env))
    return facades.environments.get_environment(ctx.in_environment(env_id))


@router.post("/{env}/resume", dependencies=[require(Role.ADMIN)], responses=errors(*CHANGE))
def resume(env: EnvironmentRef, facades: FacadesDep, ctx: ContextDep) -> EnvironmentOut:
    """Resume: what queued runs, in order; agents paused during the halt are unpaused unless they
    were asked to stay paused. Resuming a running environment changes nothing."""
    env_id = facades.halts.resume(ctx.in_environment(env))
    return facades.environments.get_environment(ctx.in_environment(env_id))


@router.post("/{env}/agents/{name:path}/pause", dependencies=[require(Role.ADMIN)], responses=errors(*CHANGE))
def pause_agent(
    env: EnvironmentRef,
    name: Name,
    facades: FacadesDep,
    ctx: ContextDep,
    body: PauseAgent | None = None,
) -> EnvironmentOut:
    """Pause one agent name: its resources stay undeployed while the others deploy."""
    stay = body.stay_paused if body is not None else False
    env_id = facades.halts.pause(ctx.in_environment(env), name, stay_paused=stay)
    return facades.environments.get_environment(ctx.in_environment(env_id))


@router.post(
    "/{env}/agents/{name:path}/unpause", dependencies=[require(Role.ADMIN)], responses=errors(*CHANGE)
)
def unpause_agent(env: EnvironmentRef, name: Name, facades: FacadesDep, ctx: ContextDep) -> EnvironmentOut:
    """Lift an agent's pause (while the environment is halted, the halt still holds it)."""
    env_id = facades.halts.unpause(ctx.in_environment(env), name)
    return facades.environments.get_environment(ctx.in_environment(env_id))
