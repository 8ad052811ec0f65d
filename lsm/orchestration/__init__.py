"""Orchestration: the one place that changes an instance's state (see ``transfer``)."""

from lsm.orchestration.commands import (
    SYSTEM,
    Auto,
    Command,
    Create,
    Delete,
    ExportFailed,
    ForceAttributes,
    ForceDestroy,
    ForceState,
    Origin,
    ResourceOutcome,
    SetState,
    Update,
    ValidationOutcome,
)
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.transfer import Orchestrator, auto_enabled

__all__ = [
    "SYSTEM",
    "Auto",
    "Command",
    "Create",
    "Delete",
    "EnvironmentContext",
    "ExportFailed",
    "ForceAttributes",
    "ForceDestroy",
    "ForceState",
    "Orchestrator",
    "Origin",
    "ResourceOutcome",
    "SetState",
    "Update",
    "ValidationOutcome",
    "auto_enabled",
]
