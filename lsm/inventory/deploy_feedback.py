"""The lifecycle feedback's queries: the instances of some resource sets and where their resources stand.

Why apart from the agents' statements (``lsm.inventory.deploy_state``): these read the compile's
per-instance resource records (``lsm_instance_resources``) and the instances, not the claims;
``lsm.deploy.feedback`` decides from them which resource-based transfers to fire. Every read is
keyed (set names through ``ix_lsm_instance_resources_set``, resource ids through the primary
key), so it costs the sets asked about, never the environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, and_, select

from lsm.inventory.batches import chunks
from lsm.inventory.deploy_tables import lsm_resource_state
from lsm.inventory.tables import InstanceResourcesRow, InstanceRow

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
                    statuses=tuple(statuses.get(rid, "pending") for rid in record.resource_ids or ()),
                )
            )
    return out


__all__ = ["InstanceDeploy", "instances_of_sets", "statuses_of"]
