"""The expert routes of the client (``/lsm/v1/service_inventory/{entity}/{ref}/expert/...``).

Admins only, while the environment's ``expert_mode`` is on (an ``ExpertModeOff`` naming the
setting otherwise); every call needs a reason, kept on the event log and in the audit trail.
"""

from __future__ import annotations

from typing import Any

from lsm.client.routes import ListT, ObjT, Request, Routes, _instance_path


class ExpertRoutes(Routes[ObjT, ListT]):
    """Force a state, write attribute sets, destroy: the way out of a stuck instance."""

    def expert_state(self, entity: str, ref: str, *, current_version: int, state: str, reason: str) -> ObjT:
        """Move the instance to any state of its lifecycle (no transfer needed)."""
        body = {"current_version": current_version, "state": state, "reason": reason}
        return self._one(Request("POST", _instance_path(entity, ref) + "/expert/state", json=body))

    def expert_attributes(
        self, entity: str, ref: str, *, current_version: int, reason: str, **sets: dict[str, Any] | None
    ) -> ObjT:
        """Replace the sets given by name (``candidate=``, ``active=``, ``rollback=``; ``None``
        empties one); the others stay."""
        body: dict[str, Any] = {"current_version": current_version, "reason": reason, **sets}
        return self._one(Request("POST", _instance_path(entity, ref) + "/expert/attributes", json=body))

    def expert_destroy(
        self, entity: str, ref: str, *, current_version: int, reason: str, purge_resources: bool
    ) -> ObjT:
        """Terminate the instance without running a handler; its resources purged from the
        desired state now (``purge_resources``) or left there until an export covers its tree."""
        body = {"current_version": current_version, "reason": reason, "purge_resources": purge_resources}
        return self._one(Request("POST", _instance_path(entity, ref) + "/expert/destroy", json=body))
