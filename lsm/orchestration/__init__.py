"""Orchestration: the one place that changes an instance's state, by deciding then committing."""

from lsm.orchestration.chain import auto_enabled
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
from lsm.orchestration.deploy_outcomes import apply_resource_outcomes
from lsm.orchestration.orchestrator import Orchestrator

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
    "apply_resource_outcomes",
    "auto_enabled",
]
