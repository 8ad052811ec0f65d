"""Rows of the deploy tables written directly, as the deploy engine would leave them.

The read side (queries, routes, client, CLI) is tested against these: what matters there is
what a given table state reads as, not how the engine got there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert
from sqlmodel import Session

from lsm.store.database import Database
from lsm.store.deploy.tables import lsm_deploy_head, lsm_resource_action, lsm_resource_state
from lsm.store.desired_state.tables import ds_resource
from lsm.store.tables import InstanceResourcesRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rid(rtype: str, agent: str, name: str, key: str = "name") -> str:
    return f"{rtype}[{agent},{key}={name}]"


def state(
    resource_id: str,
    *,
    status: str = "deployed",
    version: int = 1,
    requires: Sequence[str] = (),
    last_error: str | None = None,
    attempts: int = 0,
    set_name: str = "",
    next_attempt_at: datetime | None = None,
) -> dict[str, Any]:
    """A ``lsm_resource_state`` row (agent and type taken from the id)."""
    rtype, rest = resource_id.split("[", 1)
    agent = rest.split(",", 1)[0]
    return {
        "resource_id": resource_id,
        "agent": agent,
        "resource_type": rtype,
        "set_name": set_name,
        "version": version,
        "desired_hash": "d" * 64,
        "deployed_hash": "d" * 64 if status == "deployed" else None,
        "last_deployed_version": version if status == "deployed" else None,
        "status": status,
        "purged": False,
        "requires": list(requires),
        "attempts": attempts,
        "last_error": last_error,
        "last_action": "create" if status == "deployed" else ("error" if status == "failed" else None),
        "last_action_at": T0,
        "next_attempt_at": next_attempt_at,
    }


def seed_states(db: Database, env_id: str, rows: Iterable[dict[str, Any]]) -> None:
    with db.write() as session:
        session.connection().execute(insert(lsm_resource_state), [{**r, "env_id": env_id} for r in rows])


def seed_actions(db: Database, env_id: str, resource_id: str, actions: Sequence[str]) -> None:
    """One action line per name, oldest first (ids ascending, a second apart)."""
    rows = [
        {
            "env_id": env_id,
            "resource_id": resource_id,
            "version": 1,
            "action": action,
            "status": "failed" if action == "error" else "deployed",
            "changes": {"content": {"current": None, "desired": f"v{i}"}} if action != "none" else {},
            "messages": [{"level": "info", "message": f"line {i}", "at": T0.isoformat(), "data": {}}],
            "started_at": T0 + timedelta(seconds=i),
            "duration_ms": 1.5,
            "agent": resource_id.split("[", 1)[1].split(",", 1)[0],
            "dry_run": False,
        }
        for i, action in enumerate(actions)
    ]
    with db.write() as session:
        session.connection().execute(insert(lsm_resource_action), rows)


def seed_desired(
    session: Session,
    env_id: str,
    resource_id: str,
    attributes: dict[str, Any],
    *,
    first_version: int = 1,
    superseded_in: int | None = None,
    requires: Sequence[str] = (),
) -> None:
    session.connection().execute(
        insert(ds_resource),
        [
            {
                "env_id": env_id,
                "resource_id": resource_id,
                "set_name": "",
                "first_version": first_version,
                "superseded_in": superseded_in,
                "attributes": json.dumps(attributes, sort_keys=True),
                "requires": json.dumps(sorted(requires)),
            }
        ],
    )


def seed_instance(
    db: Database,
    env_id: str,
    instance_id: str,
    resource_ids: Sequence[str],
    *,
    version: int = 1,
    planned: int | None = 1,
) -> None:
    """The instance's resources at desired-state ``version``, and the planner at ``planned``."""
    with db.write() as session:
        session.add(
            InstanceResourcesRow(
                env_id=env_id,
                instance_id=instance_id,
                set_name=instance_id,
                desired_state_version=version,
                resource_ids=list(resource_ids),
            )
        )
        if planned is not None:
            session.connection().execute(delete(lsm_deploy_head).where(lsm_deploy_head.c.env_id == env_id))
            session.connection().execute(
                insert(lsm_deploy_head), [{"env_id": env_id, "planned_version": planned}]
            )
