"""Environments (tenants) and their settings: the bodies of ``/api/v1/environments``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lsm.schemas.limits import MAX_NAME_LENGTH


class PausedAgentOut(BaseModel):
    """An agent name whose resources are not deployed until it is unpaused."""

    agent: str
    paused_at: datetime
    paused_by: str | None = None
    stay_paused: bool = Field(
        description="Whether it stays paused when the environment resumes (false: the resume lifts it)."
    )


class EnvironmentOut(BaseModel):
    id: str
    name: str
    model: str | None
    settings: dict[str, Any]
    created_at: datetime
    halted: bool = Field(False, description="No compile runs and no agent deploys until it is resumed.")
    halted_at: datetime | None = None
    halted_by: str | None = None
    paused_agents: list[PausedAgentOut] = Field(default_factory=list)


class SettingOut(BaseModel):
    """One setting of an environment: its default, what it does, and its current value."""

    default: Any = None
    description: str = ""
    value: Any = None


class CreateEnvironment(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH)
    model: str | None = Field(
        None,
        description="A model the server offers: its name, or a path under the server's model_dirs; "
        "none (an empty catalog) when absent.",
    )


class ModelChoice(BaseModel):
    """``PUT /api/v1/environments/{env}/model``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: str = Field(
        min_length=1, description="A model the server offers (name, or path under model_dirs)."
    )


class SettingValue(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    value: Any = Field(description="The new value; its type is checked against the setting.")


class PauseAgent(BaseModel):
    """``POST /api/v1/environments/{env}/agents/{name}/pause`` (the body may be left out)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    stay_paused: bool = Field(
        False,
        description="Stay paused when the environment resumes. A pause made while the environment "
        "runs always stays; this matters for a pause made during a halt.",
    )
