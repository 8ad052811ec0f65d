"""Discovered resources and adoption: the bodies of ``/api/v1/discovered`` and ``.../adopt``.

docs/api.md §12. ``managed`` is computed when the resource is read (is its id in the newest
desired-state version?); ``adopted_by`` is the instance that adopted it, if any.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: the most ids one adopt request may name (one transaction)
MAX_ADOPT = 1000


class DiscoveredResourceOut(BaseModel):
    """One discovered resource: what was found, by which discovery resource, when."""

    id: str
    type: str
    agent: str
    attributes: Any
    discovered_by: str
    discovery_agent: str
    first_seen: datetime
    last_seen: datetime
    managed: bool
    adopted_by: str | None = None
    adopted_entity: str | None = None
    adopted_at: datetime | None = None


class AdoptRequest(BaseModel):
    """Adopt discovered resources as instances of an entity: all of them, or none."""

    model_config = ConfigDict(extra="forbid", strict=True)

    discovered_ids: list[str] = Field(min_length=1, max_length=MAX_ADOPT)
    #: one of the lifecycle's ``alternative_initial_states``; the first one when absent
    initial_state: str | None = None


__all__ = ["MAX_ADOPT", "AdoptRequest", "DiscoveredResourceOut"]
