"""The compliance routes of the client (``/api/v1/compliance``).

A report is asked for (``compliance``: the answer holds its id and ``status`` ``queued``) and
run by the agents; ``compliance_report`` reads where it stands and a page of its rows, which is
what ``lsm compliance`` polls until the status is ``done`` or ``failed``.
"""

from __future__ import annotations

from typing import Any

from lsm.client.routes import ListT, ObjT, Request, Routes, _drop_none, _seg


class ComplianceRoutes(Routes[ObjT, ListT]):
    """Is the target still as desired? Ask the agents, read their answer."""

    def compliance(
        self,
        *,
        agents: list[str] | None = None,
        types: list[str] | None = None,
        sets: list[str] | None = None,
        instances: list[str] | None = None,
    ) -> ObjT:
        """Ask for a compliance report over the selection (none: the whole environment)."""
        body = _drop_none({"agents": agents, "types": types, "sets": sets, "instances": instances})
        return self._one(Request("POST", "/api/v1/compliance", json=body))

    def compliance_report(
        self, report_id: str, *, outcome: str | None = None, limit: int = 100, offset: int = 0
    ) -> ObjT:
        """A report: status, counts per outcome and a page of its rows (``limit=0``: counts only)."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if outcome is not None:
            params["outcome"] = outcome
        return self._one(Request("GET", f"/api/v1/compliance/{_seg(report_id)}", params=params))

    def compliance_reports(self, *, limit: int = 20) -> ListT:
        """The environment's newest reports, without their rows."""
        return self._many(Request("GET", "/api/v1/compliance", params={"limit": limit}))


__all__ = ["ComplianceRoutes"]
