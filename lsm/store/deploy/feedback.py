"""The lifecycle feedback's queries: the instances of some resource sets and where their resources stand.

Why apart from the agents' statements (``lsm.store.deploy.claiming``, ``lsm.store.deploy.results``):
these read the compile's per-instance resource records (``lsm_instance_resources``) and the
instances, not the claims;
``lsm.deploy.feedback`` decides from them which resource-based transfers to fire. Every read is
keyed (set names through ``ix_lsm_instance_resources_set``, resource ids through the primary
key), so it costs the sets asked about, never the environment.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, delete, insert, select

from lsm.schemas.deploy import ResourceStatus
from lsm.store.batches import aware, chunks
from lsm.store.deploy.tables import lsm_deploy_feedback, lsm_resource_state
from lsm.store.tables import InstanceResourcesRow, InstanceRow

_state = lsm_resource_state
_records = InstanceResourcesRow.metadata.tables["lsm_instance_resources"]
_instances = InstanceRow.metadata.tables["lsm_instance"]


def statuses_of(conn: Connection, env_id: str, resource_ids: Sequence[str]) -> dict[str, str]:
    """``{resource_id: status}`` of these resources (keyed reads; unknown ids left out)."""
    out: dict[str, str] = {}
    for part in chunks(list(resource_ids)):
        query = select(_state.c.resource_id, _state.c.status).where(
            _state.c.resource_id.in_(part), _state.c.env_id == env_id
        )
        out.update((r[0], r[1]) for r in conn.execute(query))
    return out


@dataclass(frozen=True)
class InstanceDeploy:
    """One instance of an affected set: its record and where its resources' deploys stand."""

    instance_id: str
    entity: str
    state: str
    desired_state_version: int
    resource_ids: tuple[str, ...]
    statuses: tuple[str, ...]


def instances_of_sets(conn: Connection, env_id: str, set_names: Iterable[str]) -> list[InstanceDeploy]:
    """The live instances recorded in these sets whose record matches their desired state, with
    the statuses of their resources (a resource with no state row counts as ``pending``)."""
    names = sorted({n for n in set_names if n})
    out: list[InstanceDeploy] = []
    for part in chunks(names):
        query = (
            select(
                _records.c.instance_id,
                _records.c.resource_ids,
                _instances.c.entity,
                _instances.c.state,
                _instances.c.desired_state_version,
            )
            .select_from(
                _records.join(
                    _instances,
                    and_(_instances.c.id == _records.c.instance_id, _instances.c.env_id == _records.c.env_id),
                )
            )
            .where(
                _records.c.env_id == env_id,
                _records.c.set_name.in_(part),
                _records.c.instance_desired_state_version == _instances.c.desired_state_version,
                _instances.c.deleted.is_(False),
            )
        )
        records = list(conn.execute(query))
        statuses = statuses_of(conn, env_id, [rid for record in records for rid in record.resource_ids or ()])
        for record in records:
            out.append(
                InstanceDeploy(
                    instance_id=record.instance_id,
                    entity=record.entity,
                    state=record.state,
                    desired_state_version=record.desired_state_version,
                    resource_ids=tuple(record.resource_ids or ()),
                    statuses=tuple(
                        statuses.get(rid, ResourceStatus.PENDING) for rid in record.resource_ids or ()
                    ),
                )
            )
    return out


@dataclass(frozen=True)
class PendingFeedback:
    """Outcomes whose lifecycle feedback has not run yet (a row of ``lsm_deploy_feedback``)."""

    id: int
    env_id: str
    owner: str
    set_names: tuple[str, ...]
    #: the resources whose outcome is new; ``None``: every instance of the sets (a plan)
    resource_ids: tuple[str, ...] | None
    created_at: datetime


def record_pending(
    conn: Connection,
    env_id: str,
    owner: str,
    set_names: Iterable[str],
    resource_ids: Collection[str] | None,
    now: datetime,
) -> int | None:
    """Note, in the caller's transaction (the one that writes the outcomes), that their feedback
    is due; ``None`` when there is nothing to feed back. ``finish`` deletes it once it ran."""
    names = sorted({n for n in set_names if n})
    if not names:
        return None
    row = {
        "env_id": env_id,
        "owner": owner,
        "set_names": names,
        "resource_ids": sorted(resource_ids) if resource_ids is not None else None,
        "created_at": now,
    }
    statement = insert(lsm_deploy_feedback).returning(lsm_deploy_feedback.c.id)
    return int(conn.execute(statement, row).scalar_one())


def finish(conn: Connection, pending_id: int) -> None:
    """The feedback of ``pending_id`` ran (by whichever process): forget it."""
    conn.execute(delete(lsm_deploy_feedback).where(lsm_deploy_feedback.c.id == pending_id))


def pending(conn: Connection) -> list[PendingFeedback]:
    """Every feedback not run yet, oldest first: the table holds only unfinished work, so this
    costs what a crash interrupted, never the inventory."""
    t = lsm_deploy_feedback
    query = select(t.c.id, t.c.env_id, t.c.owner, t.c.set_names, t.c.resource_ids, t.c.created_at).order_by(
        t.c.id
    )
    return [
        PendingFeedback(
            id=int(r.id),
            env_id=r.env_id,
            owner=r.owner,
            set_names=tuple(r.set_names or ()),
            resource_ids=tuple(r.resource_ids) if r.resource_ids is not None else None,
            created_at=aware(r.created_at),
        )
        for r in conn.execute(query)
    ]


__all__ = [
    "InstanceDeploy",
    "PendingFeedback",
    "finish",
    "instances_of_sets",
    "pending",
    "record_pending",
    "statuses_of",
]
