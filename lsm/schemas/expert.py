"""The bodies of the expert routes (``/lsm/v1/service_inventory/{entity}/{ref}/expert/...``).

Strict like every request body: unknown fields refused, ``"3"`` is not a version. A reason is
required by the schema (a 422 naming ``reason`` when it is missing); a blank one is refused
by the orchestration, which checks every expert call (``lsm.orchestration.expert``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lsm.schemas.limits import MAX_INT, MAX_NAME_LENGTH

#: the longest reason accepted (the event message and the audit details hold it)
MAX_REASON_LENGTH = 2000

_VERSION = "The version the call is based on; 409 if it is not current."
_REASON = "Why: written on the event-log line and the audit record."


class _ExpertBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    current_version: int = Field(ge=0, le=MAX_INT, description=_VERSION)
    reason: str = Field(min_length=1, max_length=MAX_REASON_LENGTH, description=_REASON)


class ExpertStateRequest(_ExpertBody):
    state: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, description="Any state of the lifecycle.")


class ExpertAttributesRequest(_ExpertBody):
    """The sets given replace the instance's (``null`` empties one); the sets left out stay."""

    candidate: dict[str, Any] | None = None
    active: dict[str, Any] | None = None
    rollback: dict[str, Any] | None = None

    def sets(self) -> dict[str, dict[str, Any] | None]:
        """The sets the body gave, by name (``null`` ones included)."""
        return {
            name: getattr(self, name)
            for name in ("candidate", "active", "rollback")
            if name in self.model_fields_set
        }


class ExpertDestroyRequest(_ExpertBody):
    purge_resources: bool = Field(
        description="true: its resources leave the desired state now (an export of its tree is queued); "
        "false: the desired state is left as it is until an export covers its tree. "
        "No handler runs either way."
    )
