"""The read side of the deploy tables, and the one write an operator asks for (``schedule_redeploy``).

Why apart from the engine: the deploy engine (planner and agents) WRITES ``lsm_resource_state``
and the action log; the API, the CLI and the instance views only READ them, and they must read
them the same way whoever asks: which statuses exist, what counts as "waiting", where the
desired attributes of a resource come from. One module, Core SQL, each query served by an index
of ``lsm.store.deploy.tables`` (named on each function), so that listing a page or counting
an instance's resources costs the page or the instance, never the size of the environment.

``schedule_redeploy`` is here rather than in the engine because it is the operator's request
(``POST /api/v1/deploy``): it only marks rows ``pending`` and wakes the agents; the engine does
the work.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from sqlalchemy import and_, func, insert, select, update
from sqlalchemy.engine import Connection, RowMapping
from sqlmodel import Session

from lsm.schemas.deploy import (
    DeploymentProgress,
    ResourceActionOut,
    ResourceOut,
    ResourceSelection,
    ResourceStatus,
)
from lsm.schemas.limits import MAX_PAGE
from lsm.store.batches import chunks, utc
from lsm.store.compiles.requests import notify_work
from lsm.store.deploy.scope import id_slices
from lsm.store.deploy.tables import (
    lsm_deploy_head,
    lsm_resource_action,
    lsm_resource_state,
    resource_type_of,
)
from lsm.store.desired_state.tables import ds_resource
from lsm.store.tables import EnvironmentRow, InstanceResourcesRow

#: the largest page of resources or actions one request may ask for
#: ids per ``IN (...)`` list: well below SQLite's bound on variables

T = TypeVar("T")

#: statuses that ``schedule_redeploy`` sets back to pending without ``repair`` (``noop_pending``:
#: tried again once noop is lifted)
RETRY_STATUSES = (
    ResourceStatus.FAILED.value,
    ResourceStatus.SKIPPED.value,
    ResourceStatus.NOOP_PENDING.value,
)


def _resource_out(row: RowMapping, attributes: dict[str, Any] | None = None) -> ResourceOut:
    return ResourceOut(
        id=row["resource_id"],
        type=row["resource_type"],
        agent=row["agent"],
        set=row["set_name"] or None,
        status=ResourceStatus(row["status"]),
        version=row["version"],
        last_deployed_version=row["last_deployed_version"],
        attempts=row["attempts"],
        last_error=row["last_error"],
        last_action=row["last_action"],
        last_action_at=utc(row["last_action_at"]),
        next_attempt_at=utc(row["next_attempt_at"]),
        purged=row["purged"],
        removal=row["removal"] is not None,
        requires=list(row["requires"] or []),
        attributes=attributes,
        auto_requires=_auto_requires(attributes),
    )


def _auto_requires(attributes: dict[str, Any] | None) -> list[str]:
    """The requires the engine added, as the store recorded them (attribute ``auto_requires``)."""
    found = (attributes or {}).get("auto_requires")
    return [str(rid) for rid in found] if isinstance(found, list) else []


# -- resources ----------------------------------------------------------------------------------------
def list_resources(
    session: Session,
    env_id: str,
    *,
    agent: str | None = None,
    status: ResourceStatus | None = None,
    resource_type: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[ResourceOut]:
    """A page of the environment's resources in id order (stable under paging).

    Served by ``ix_lsm_resource_state_agent`` / ``_status`` / ``_type`` (each ends with the id,
    so the page is read in order), unfiltered by the primary key.
    """
    if not 1 <= limit <= MAX_PAGE or offset < 0:
        raise ValueError(f"limit must be 1..{MAX_PAGE} and offset >= 0")
    t = lsm_resource_state
    query = select(t).where(t.c.env_id == env_id)
    if agent is not None:
        query = query.where(t.c.agent == agent)
    if status is not None:
        query = query.where(t.c.status == status.value)
    if resource_type is not None:
        query = query.where(t.c.resource_type == resource_type)
    query = query.order_by(t.c.resource_id).limit(limit).offset(offset)
    return [_resource_out(row) for row in session.connection().execute(query).mappings()]


def desired_resource(session: Session, env_id: str, resource_id: str) -> tuple[int, dict[str, Any]] | None:
    """The resource's current desired row (newest version that holds it): ``(first_version, attributes)``.

    Served by ``ix_ds_resource_id`` (resource id, env, ``superseded_in IS NULL``). The
    attributes carry ``requires`` too, as the desired-state routes show them.
    """
    t = ds_resource
    query = (
        select(t.c.first_version, t.c.attributes, t.c.requires, t.c.set_name)
        .where(t.c.resource_id == resource_id, t.c.env_id == env_id, t.c.superseded_in.is_(None))
        .limit(1)
    )
    row = session.connection().execute(query).first()
    if row is None:
        return None
    attributes: dict[str, Any] = json.loads(row.attributes)
    return row.first_version, {**attributes, "requires": json.loads(row.requires)}


def get_resource(session: Session, env_id: str, resource_id: str) -> ResourceOut | None:
    """One resource with its desired attributes; ``None`` when neither deployed nor desired.

    A resource of the newest desired state that the planner has not turned into a state row
    yet is ``pending`` at the version that introduced it.
    """
    t = lsm_resource_state
    row = (
        session.connection()
        .execute(select(t).where(t.c.resource_id == resource_id, t.c.env_id == env_id))
        .mappings()
        .first()
    )
    desired = desired_resource(session, env_id, resource_id)
    attributes = None if desired is None else desired[1]
    if row is not None:
        if attributes is None and row["removal"] is not None:  # left: the attributes it is removed with
            attributes = json.loads(row["removal"])
        return _resource_out(row, attributes)
    if desired is None:
        return None
    first_version, attributes = desired
    return ResourceOut(
        id=resource_id,
        type=resource_type_of(resource_id),
        agent=str(attributes.get("agent", "")),
        status=ResourceStatus.PENDING,
        version=first_version,
        purged=bool(attributes.get("purged", False)),
        requires=list(attributes.get("requires") or []),
        attributes=attributes,
        auto_requires=_auto_requires(attributes),
    )


def states_of(session: Session, env_id: str, resource_ids: Iterable[str]) -> dict[str, RowMapping]:
    """The state rows of these ids (primary-key lookups); ids without a row are left out."""
    t = lsm_resource_state
    found: dict[str, RowMapping] = {}
    conn = session.connection()
    for chunk in chunks(sorted(set(resource_ids))):
        query = select(t).where(t.c.env_id == env_id, t.c.resource_id.in_(chunk))
        for row in conn.execute(query).mappings():
            found[row["resource_id"]] = row
    return found


def status_counts(session: Session, env_id: str, agents: Sequence[str] | None = None) -> dict[str, int]:
    """``{status: count}`` of the environment's resources (an index-only scan of ``_status``)."""
    t = lsm_resource_state
    query = select(t.c.status, func.count()).where(t.c.env_id == env_id)
    if agents is not None:
        query = query.where(t.c.agent.in_(list(agents)))
    query = query.group_by(t.c.status)
    return {status: count for status, count in session.connection().execute(query)}


def planned_version(session: Session, env_id: str) -> int | None:
    """The newest desired-state version the planner has turned into state rows (None: none yet)."""
    t = lsm_deploy_head
    return session.connection().execute(select(t.c.planned_version).where(t.c.env_id == env_id)).scalar()


# -- the action log ---------------------------------------------------------------------------------
def list_actions(
    session: Session, env_id: str, resource_id: str, *, limit: int = 50, offset: int = 0
) -> list[ResourceActionOut]:
    """The resource's action log, newest first (``ix_lsm_resource_action_resource`` read backwards)."""
    if not 1 <= limit <= MAX_PAGE or offset < 0:
        raise ValueError(f"limit must be 1..{MAX_PAGE} and offset >= 0")
    t = lsm_resource_action
    query = (
        select(t)
        .where(t.c.resource_id == resource_id, t.c.env_id == env_id)
        .order_by(t.c.id.desc())
        .limit(limit)
        .offset(offset)
    )
    return [
        ResourceActionOut(
            id=row["id"],
            resource_id=row["resource_id"],
            version=row["version"],
            action=row["action"],
            status=row["status"],
            changes=row["changes"] or {},
            messages=row["messages"] or [],
            started_at=utc(row["started_at"]),
            duration_ms=row["duration_ms"],
            agent=row["agent"],
            dry_run=row["dry_run"],
        )
        for row in session.connection().execute(query).mappings()
    ]


def insert_actions(session: Session, env_id: str, actions: Sequence[dict[str, Any]]) -> None:
    """Append lines to the action log: each a dict of the ``lsm_resource_action`` columns but ``id``."""
    if actions:
        session.connection().execute(
            insert(lsm_resource_action), [{**action, "env_id": env_id} for action in actions]
        )


# -- instances ------------------------------------------------------------------------------------------
def progress_of(
    states: dict[str, RowMapping], resource_ids: Iterable[str], *, planned: bool = True
) -> DeploymentProgress:
    """Count ``resource_ids`` by where their deploy stands. Ids without a state row are waiting,
    and so is everything when the planner has not ``planned`` the instance's version yet."""
    progress = DeploymentProgress()
    for rid in resource_ids:
        progress.total += 1
        row = states.get(rid) if planned else None
        status = None if row is None else row["status"]
        if status == ResourceStatus.DEPLOYED:
            progress.deployed += 1
        elif status == ResourceStatus.FAILED:
            progress.failed += 1
        elif status == ResourceStatus.SKIPPED:
            progress.skipped += 1
        else:
            progress.waiting += 1
    return progress


#: an instance's resource record, its resources' state rows, and whether they are planned
DeployState = tuple[InstanceResourcesRow | None, dict[str, RowMapping], bool]


def instance_deploy_state(session: Session, env_id: str, instance_id: str) -> DeployState:
    """An instance's resource record, the state rows of its resources, and whether the planner
    has planned the desired-state version the record is at (else the rows describe an older one)."""
    record = session.get(InstanceResourcesRow, (env_id, instance_id))
    if record is None:
        return None, {}, True
    planned = (planned_version(session, env_id) or 0) >= record.desired_state_version
    return record, states_of(session, env_id, record.resource_ids), planned


def deployment_progress(session: Session, env_id: str, instance_id: str) -> DeploymentProgress:
    """The instance's resources in its desired-state version, counted (all zero: none)."""
    record, states, planned = instance_deploy_state(session, env_id, instance_id)
    if record is None:
        return DeploymentProgress()
    return progress_of(states, record.resource_ids, planned=planned)


# -- the operator's write -----------------------------------------------------------------------------------
def schedule_redeploy(
    session: Session, env_id: str, scope: ResourceSelection | list[str] | None, repair: bool
) -> int:
    """Set failed and skipped resources (with ``repair``: every resource) of ``scope`` back to
    ``pending`` with no try spent and no wait; how many rows changed. ``scope`` is a selection
    (``lsm.store.deploy.scope``), a list of agent names, or None for the whole environment.

    Rows being ``deploying`` are left alone: an agent runs them now, and its result must not be
    overwritten by a request that only asked for them to run. On PostgreSQL the agents of other
    processes are woken (``NOTIFY lsm_work``) when the caller commits.
    """
    t = lsm_resource_state
    chosen = t.c.status != ResourceStatus.DEPLOYING.value if repair else t.c.status.in_(RETRY_STATUSES)
    if scope is None or isinstance(scope, list):
        scope = ResourceSelection(agents=scope)
    changed = 0
    for where in id_slices(session.connection(), env_id, scope):
        changed += _back_to_pending(session, env_id, and_(chosen, *where[1:]), notify=False)
    if changed:
        notify_work(session, env_id)
    return changed


def schedule_noop_pending(session: Session, env_id: str) -> int:
    """Set the ``noop_pending`` resources of ``env_id`` back to ``pending``: the global noop
    (setting ``deploy_noop``) was lifted, so what it held back is deployed now, not at the next
    repair run. How many rows changed; the agents of other processes are woken at the commit."""
    return _back_to_pending(session, env_id, lsm_resource_state.c.status == ResourceStatus.NOOP_PENDING.value)


def committed_noop(conn: Connection, env_id: str) -> bool | None:
    """The ``deploy_noop`` setting of ``env_id`` as stored in the transaction of ``conn`` (None:
    never set, the configured default applies). An agent's claim reads it beside the rows it
    claims: a cached value may be from before the setting went off, and would run the resources
    that ``schedule_noop_pending`` just requeued as noop again (the requeue and the setting
    commit together, so a claim that sees the requeued rows sees the setting too)."""
    t = EnvironmentRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    stored = conn.execute(select(t.c.settings).where(t.c.id == env_id)).scalar_one_or_none()
    value = (stored or {}).get("deploy_noop")
    return None if value is None else bool(value)


def _back_to_pending(session: Session, env_id: str, chosen: Any, *, notify: bool = True) -> int:
    t = lsm_resource_state
    statement = (
        update(t)
        .where(t.c.env_id == env_id, chosen)
        .values(status=ResourceStatus.PENDING.value, attempts=0, next_attempt_at=None)
    )
    changed = session.connection().execute(statement).rowcount or 0
    if changed and notify:
        notify_work(session, env_id)
    return int(changed)


__all__ = [
    "MAX_PAGE",
    "committed_noop",
    "deployment_progress",
    "desired_resource",
    "get_resource",
    "insert_actions",
    "instance_deploy_state",
    "list_actions",
    "list_resources",
    "planned_version",
    "progress_of",
    "schedule_noop_pending",
    "schedule_redeploy",
    "states_of",
    "status_counts",
]
