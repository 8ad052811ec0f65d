"""``/api/v1/environments``: tenants, each with its own model, settings and inventory.

Here the environment is named in the path, not by the ``X-LSM-Environment`` header.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from lsm.api.deps import EngineDep
from lsm.inventory.views import EnvironmentOut

router = APIRouter(prefix="/api/v1/environments", tags=["environments"])


class CreateEnvironment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    model: str | None = Field(None, description="Model path or module; the server's model when absent.")


class SettingValue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: Any = Field(description="The new value; its type is checked against the setting.")


@router.get("")
def list_environments(engine: EngineDep) -> list[EnvironmentOut]:
    return engine.list_environments()


@router.post("")
def create_environment(body: CreateEnvironment, engine: EngineDep) -> EnvironmentOut:
    return engine.create_environment(body.name, body.model)


@router.get("/{env}")
def get_environment(env: str, engine: EngineDep) -> EnvironmentOut:
    return engine.get_environment(env)


@router.get("/{env}/settings")
def get_settings(env: str, engine: EngineDep) -> dict[str, Any]:
    """Every setting with its current value (defaults filled in)."""
    return engine.get_settings(env)


@router.put("/{env}/settings/{key}")
def set_setting(env: str, key: str, body: SettingValue, engine: EngineDep) -> dict[str, Any]:
    """Set one setting; unknown keys and ill-typed values are 422."""
    return engine.set_setting(env, key, body.value)
