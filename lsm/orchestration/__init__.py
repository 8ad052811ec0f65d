"""Orchestration: the one place that changes an instance's state (see ``transfer``)."""

from lsm.orchestration.commands import (
    Auto,
    Command,
    Create,
    Delete,
    ForceState,
    ResourceOutcome,
    SetState,
    Update,
    ValidationOutcome,
)
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.transfer import Orchestrator, auto_enabled

__all__ = [
    "Auto",
    "Command",
    "Create",
    "Delete",
    "EnvironmentContext",
    "ForceState",
    "Orchestrator",
    "ResourceOutcome",
    "SetState",
    "Update",
    "ValidationOutcome",
    "auto_enabled",
]
