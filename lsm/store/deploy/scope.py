"""The resources a selection names, in SQL: the scope of a deploy, a repair or a compliance report.

Why one module: ``POST /api/v1/deploy`` (schedule and repair) and the compliance report both
narrow the deploy engine's rows (``lsm_resource_state``: one per resource of the newest planned
version, with its agent, type and set) by the same selection (``ResourceSelection``), and must
narrow them the same way. Agents, types and sets are columns (indexed by environment); an
instance selects the resources its implementations produced (``lsm_instance_resources``), read
first and then matched by id in slices.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.engine import Connection

from lsm.schemas.deploy import SHARED_SET, ResourceSelection
from lsm.store.batches import chunks
from lsm.store.deploy.tables import lsm_resource_state
from lsm.store.tables import InstanceResourcesRow

_state = lsm_resource_state
_records = InstanceResourcesRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy


def set_name_of(name: str) -> str:
    """A selection's set name as stored (``shared`` is the empty name of the shared set)."""
    return "" if name == SHARED_SET else name


def instance_resource_ids(conn: Connection, env_id: str, instance_ids: Sequence[str]) -> list[str]:
    """The resources these instances produced in the desired state, sorted, once each."""
    found: set[str] = set()
    for part in chunks(list(instance_ids)):
        query = select(_records.c.resource_ids).where(
            _records.c.env_id == env_id, _records.c.instance_id.in_(part)
        )
        for (ids,) in conn.execute(query):
            found.update(ids or [])
    return sorted(found)


def conditions(env_id: str, selection: ResourceSelection) -> list[ColumnElement[bool]]:
    """The column conditions of ``selection`` on ``lsm_resource_state`` (instances aside)."""
    where: list[ColumnElement[bool]] = [_state.c.env_id == env_id]
    if selection.agents is not None:
        where.append(_state.c.agent.in_(list(selection.agents)))
    if selection.types is not None:
        where.append(_state.c.resource_type.in_(list(selection.types)))
    if selection.sets is not None:
        where.append(_state.c.set_name.in_([set_name_of(s) for s in selection.sets]))
    return where


def id_slices(
    conn: Connection, env_id: str, selection: ResourceSelection
) -> Iterator[list[ColumnElement[bool]]]:
    """The conditions of ``selection``, one list per slice of instance resource ids (one list
    without an id condition when it names no instance; none when its instances produced nothing)."""
    where = conditions(env_id, selection)
    if selection.instances is None:
        yield where
        return
    for part in chunks(instance_resource_ids(conn, env_id, selection.instances)):
        yield [*where, _state.c.resource_id.in_(list(part))]


def count_by_agent(conn: Connection, env_id: str, selection: ResourceSelection) -> dict[str, int]:
    """How many selected resources each agent has (agents with none left out)."""
    counts: dict[str, int] = {}
    for where in id_slices(conn, env_id, selection):
        query = select(_state.c.agent, func.count()).where(*where).group_by(_state.c.agent)
        for agent, count in conn.execute(query):
            counts[agent] = counts.get(agent, 0) + int(count)
    return counts


def selected_of_agent(
    conn: Connection, env_id: str, selection: ResourceSelection, agent: str
) -> list[tuple[str, str, str]]:
    """``(resource_id, resource_type, set_name)`` of the selected resources of ``agent``, in id order."""
    rows: list[Any] = []
    for where in id_slices(conn, env_id, selection):
        query = select(_state.c.resource_id, _state.c.resource_type, _state.c.set_name).where(
            *where, _state.c.agent == agent
        )
        rows.extend(conn.execute(query))
    return sorted((r[0], r[1], r[2]) for r in rows)


__all__ = [
    "conditions",
    "count_by_agent",
    "id_slices",
    "instance_resource_ids",
    "selected_of_agent",
    "set_name_of",
]
