"""Compliance reports: ask for one over a selection, read where it stands and what it found.

Why the facade only stores the request: the agents run a report (``lsm.deploy.compliance``),
never the API process, so ``request`` checks the selection, stores the report with its parts
(``lsm.store.compliance.reports``) and wakes the agents of this process; ``report`` reads its
status, its counts and a page of its rows.
"""

from __future__ import annotations

from collections.abc import Callable

from lsm.errors import InvalidInput, NotFound
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.scope import check_selection
from lsm.schemas.compliance import (
    ComplianceItemOut,
    ComplianceOutcome,
    ComplianceReportOut,
    ComplianceRequest,
    ReportStatus,
)
from lsm.schemas.deploy import ChangeOut, ResourceSelection
from lsm.schemas.limits import MAX_PAGE
from lsm.store.batches import aware, utc
from lsm.store.compliance import reports
from lsm.store.tables import utcnow


def _no_wake(_env_id: str) -> None:
    """No agent runs in this process: the agents poll (or hear ``NOTIFY`` on PostgreSQL)."""


class ComplianceFacade:
    """``/api/v1/compliance``."""

    def __init__(self, core: Core, *, wake: Callable[[str], None] = _no_wake) -> None:
        self.core = core
        self.wake = wake

    def _env_id(self, ctx: RequestContext) -> str:
        return self.core.environments.context(ctx.environment).env_id

    def request(self, ctx: RequestContext, body: ComplianceRequest) -> ComplianceReportOut:
        """Store a report over the body's selection and wake the agents; the new report (queued,
        or done at once when the selection matches nothing)."""
        env_id = self._env_id(ctx)
        selection = body.selection()
        with self.core.db.read() as session:
            check_selection(session, env_id, selection)
        with self.core.db.write() as session:
            report_id = reports.create_report(session.connection(), env_id, selection, utcnow())
        self.wake(env_id)
        return self.report(ctx, report_id, limit=1)

    def report(
        self,
        ctx: RequestContext,
        report_id: str,
        *,
        outcome: ComplianceOutcome | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> ComplianceReportOut:
        """The report: status, counts, and a page of its rows in id order (``outcome``: only those);
        ``NotFound`` (404) naming the id."""
        if not 0 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be 0..{MAX_PAGE}", field="limit", limit=limit)
        if offset < 0:
            raise InvalidInput("offset must be >= 0", field="offset", offset=offset)
        env_id = self._env_id(ctx)
        with self.core.db.read() as session:
            conn = session.connection()
            row = reports.get_report(conn, env_id, report_id)
            if row is None:
                raise NotFound(f"no compliance report {report_id!r} in this environment", report=report_id)
            counts = reports.outcome_counts(conn, report_id)
            items = (
                reports.items_page(conn, report_id, outcome=outcome, limit=limit, offset=offset)
                if limit
                else []
            )
        return ComplianceReportOut(
            id=row["id"],
            status=ReportStatus(row["status"]),
            selection=ResourceSelection.model_validate(row["selection"]),
            version=row["version"],
            created_at=aware(row["created_at"]),
            finished_at=utc(row["finished_at"]),
            total=row["total"],
            checked=sum(counts.values()),
            counts=dict(sorted(counts.items())),
            error=row["error"],
            resources=[
                ComplianceItemOut(
                    id=item["resource_id"],
                    type=item["resource_type"],
                    agent=item["agent"],
                    set=item["set_name"] or None,
                    outcome=ComplianceOutcome(item["outcome"]),
                    changes={k: ChangeOut.model_validate(v) for k, v in (item["changes"] or {}).items()},
                    error=item["error"],
                )
                for item in items
            ],
        )

    def recent(self, ctx: RequestContext, *, limit: int = 20) -> list[ComplianceReportOut]:
        """The environment's newest reports (without rows), newest first: the console's list."""
        env_id = self._env_id(ctx)
        with self.core.db.read() as session:
            rows = reports.list_reports(session.connection(), env_id, limit=limit)
        return [self.report(ctx, row["id"], limit=0) for row in rows]


__all__ = ["ComplianceFacade"]
