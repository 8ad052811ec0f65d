"""The SQL of discovery: replace a run's results, list and read them, record adoptions.

Why one module: the discovery layer (``lsm.discovery``) validates a handler's output and the
facade pages through results, but only the store layer writes SQL (docs/architecture.md §2).

* ``replace_found``: one run of one discovery resource, in the caller's write transaction:
  an upsert of everything it found (``first_seen`` kept, ``last_seen`` moved; ON CONFLICT on
  both backends, so two runs reporting the same new id never collide) and a delete of what it
  found before and not now. It costs what the run reports plus what it reported last time.
* ``list_discovered`` / ``get_discovered``: ``managed`` is a correlated lookup of the current
  ``ds_resource`` row of the id (the ``ix_ds_resource_id`` index: a keyed lookup per row
  looked at, never a scan of a version: see ``_managed``); the adoption is an outer join.
* ``claim_adoption``: inside the transaction that creates the adopted instance; refuses an id
  that is not discovered, already adopted (by an instance that is not deleted: a deleted
  instance's resource may be adopted again), or managed. The adoption row is inserted with ON
  CONFLICT DO NOTHING, so two concurrent adoptions of one id end in one row and one 409.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, exists, false, func, literal, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session

from lsm.errors import Conflict, NotFound
from lsm.store.batches import chunks, utc
from lsm.store.desired_state.tables import ds_resource
from lsm.store.discovery.tables import lsm_discovered_adoption, lsm_discovered_resource
from lsm.store.tables import InstanceRow

#: ids per IN list (well under SQLite's and PostgreSQL's parameter limits)

_d = lsm_discovered_resource.c
_a = lsm_discovered_adoption.c
_instance = InstanceRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
_i = _instance.c


@dataclass(frozen=True)
class FoundRow:
    """One resource a run found, validated (``lsm.discovery.results``): JSON-ready attributes."""

    resource_id: str
    resource_type: str
    agent: str
    attributes: Any


@dataclass(frozen=True)
class DiscoveredRow:
    """One discovered resource as read back, with ``managed`` and its adoption."""

    resource_id: str
    resource_type: str
    agent: str
    attributes: Any
    discovered_by: str
    discovery_agent: str
    first_seen: datetime
    last_seen: datetime
    managed: bool
    adopted_by: str | None
    adopted_entity: str | None
    adopted_at: datetime | None


@dataclass(frozen=True)
class Replaced:
    """What one run changed: ids new to the inventory, kept, and removed."""

    added: int
    kept: int
    removed: list[str]


def _insert(session: Session) -> Any:
    dialect = session.get_bind().dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    return module.insert


def replace_found(
    session: Session,
    env_id: str,
    discovered_by: str,
    discovery_agent: str,
    found: Sequence[FoundRow],
    *,
    now: datetime,
) -> Replaced:
    """Make ``found`` what ``discovered_by`` found in ``env_id`` (see the module docstring)."""
    conn = session.connection()
    ids = [row.resource_id for row in found]
    before = set(
        conn.execute(
            select(_d.resource_id).where(_d.discovered_by == discovered_by, _d.env_id == env_id)
        ).scalars()
    )
    present: set[str] = set()
    for chunk in chunks(ids):
        present.update(
            conn.execute(
                select(_d.resource_id).where(_d.env_id == env_id, _d.resource_id.in_(chunk))
            ).scalars()
        )
    gone = sorted(before - set(ids))
    for chunk in chunks(gone):
        conn.execute(
            delete(lsm_discovered_resource).where(
                _d.env_id == env_id, _d.discovered_by == discovered_by, _d.resource_id.in_(chunk)
            )
        )
    if found:
        statement = _insert(session)(lsm_discovered_resource)
        statement = statement.on_conflict_do_update(
            index_elements=[_d.env_id, _d.resource_id],
            set_={
                "resource_type": statement.excluded.resource_type,
                "agent": statement.excluded.agent,
                "attributes": statement.excluded.attributes,
                "discovered_by": statement.excluded.discovered_by,
                "discovery_agent": statement.excluded.discovery_agent,
                "last_seen": statement.excluded.last_seen,
            },
        )
        conn.execute(
            statement,
            [
                {
                    "env_id": env_id,
                    "resource_id": row.resource_id,
                    "resource_type": row.resource_type,
                    "agent": row.agent,
                    "attributes": row.attributes,
                    "discovered_by": discovered_by,
                    "discovery_agent": discovery_agent,
                    "first_seen": now,
                    "last_seen": now,
                }
                for row in found
            ],
        )
    return Replaced(added=len(set(ids) - present), kept=len(present), removed=gone)


def _managed(env_id: str) -> ColumnElement[bool]:
    """Whether the row's id is in the environment's newest desired-state version.

    A scalar subquery with ``LIMIT 1``, not ``EXISTS``: PostgreSQL turns ``[NOT] EXISTS`` in a
    WHERE clause into a (anti) join, and on tables without statistics yet (a new environment)
    it then picks a nested loop over the environment's whole current version for every page.
    A LIMIT subquery stays what it says: one keyed lookup in ``ix_ds_resource_id`` per row
    looked at.
    """
    r = ds_resource.c
    found = (
        select(literal(True))
        .where(r.resource_id == _d.resource_id, r.env_id == env_id, r.superseded_in.is_(None))
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(found, false())


def _select(env_id: str) -> Any:
    managed = _managed(env_id).label("managed")
    # an adoption counts while its instance lives: a deleted instance's resource may be adopted again
    live = lsm_discovered_adoption.join(_instance, and_(_i.id == _a.instance_id, _i.deleted == false()))
    joined = lsm_discovered_resource.outerjoin(
        live, and_(_a.env_id == _d.env_id, _a.resource_id == _d.resource_id)
    )
    return (
        select(
            _d.resource_id,
            _d.resource_type,
            _d.agent,
            _d.attributes,
            _d.discovered_by,
            _d.discovery_agent,
            _d.first_seen,
            _d.last_seen,
            managed,
            _a.instance_id,
            _a.entity,
            _a.adopted_at,
        )
        .select_from(joined)
        .where(_d.env_id == env_id)
    )


def _row(values: Any) -> DiscoveredRow:
    first, last = utc(values[6]), utc(values[7])
    assert first is not None and last is not None
    return DiscoveredRow(
        resource_id=values[0],
        resource_type=values[1],
        agent=values[2],
        attributes=values[3],
        discovered_by=values[4],
        discovery_agent=values[5],
        first_seen=first,
        last_seen=last,
        managed=bool(values[8]),
        adopted_by=values[9],
        adopted_entity=values[10],
        adopted_at=utc(values[11]),
    )


def list_discovered(
    session: Session,
    env_id: str,
    *,
    resource_type: str | None = None,
    agent: str | None = None,
    managed: bool | None = None,
    discovered_by: str | None = None,
    adopted: bool | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[DiscoveredRow]:
    """One page of an environment's discovered resources, in id order, filtered."""
    query = _select(env_id)
    if resource_type is not None:
        query = query.where(_d.resource_type == resource_type)
    if agent is not None:
        query = query.where(_d.agent == agent)
    if discovered_by is not None:
        query = query.where(_d.discovered_by == discovered_by)
    if managed is not None:
        query = query.where(_managed(env_id) == managed)
    if adopted is not None:
        query = query.where(_a.instance_id.is_not(None) if adopted else _a.instance_id.is_(None))
    query = query.order_by(_d.resource_id).limit(limit).offset(offset)
    return [_row(values) for values in session.connection().execute(query)]


def count_discovered(session: Session, env_id: str, *, discovered_by: str | None = None) -> int:
    query = select(func.count()).select_from(lsm_discovered_resource).where(_d.env_id == env_id)
    if discovered_by is not None:
        query = query.where(_d.discovered_by == discovered_by)
    return int(session.connection().execute(query).scalar_one())


def get_discovered(session: Session, env_id: str, resource_id: str) -> DiscoveredRow | None:
    values = session.connection().execute(_select(env_id).where(_d.resource_id == resource_id)).first()
    return None if values is None else _row(values)


def find_discovered(session: Session, env_id: str, resource_ids: Sequence[str]) -> dict[str, DiscoveredRow]:
    """``{id: row}`` of those of ``resource_ids`` that are discovered."""
    found: dict[str, DiscoveredRow] = {}
    for chunk in chunks(list(resource_ids)):
        for values in session.connection().execute(_select(env_id).where(_d.resource_id.in_(chunk))):
            row = _row(values)
            found[row.resource_id] = row
    return found


def check_adoptable(session: Session, env_id: str, resource_id: str) -> None:
    """Refuse an id that is not discovered (404), is managed, or is adopted already (409 naming
    the id); nothing is written."""
    row = get_discovered(session, env_id, resource_id)
    if row is None:
        raise NotFound(f"no discovered resource {resource_id}", resource_id=resource_id)
    if row.adopted_by is not None:
        raise Conflict(
            f"discovered resource {resource_id} is already adopted by {row.adopted_entity} {row.adopted_by}",
            resource_id=resource_id,
            adopted_by=row.adopted_by,
        )
    if row.managed:
        raise Conflict(
            f"discovered resource {resource_id} is already managed (it is in the newest desired state)",
            resource_id=resource_id,
        )


def claim_adoption(
    session: Session, env_id: str, resource_id: str, *, instance_id: str, entity: str, now: datetime
) -> None:
    """Record that ``instance_id`` adopts ``resource_id``; refuse (nothing written) an id that is
    not discovered (404), is managed, or is adopted already (409 naming the id)."""
    check_adoptable(session, env_id, resource_id)
    # the record of an adoption by an instance deleted since then is history, not a claim
    session.connection().execute(
        delete(lsm_discovered_adoption).where(
            _a.env_id == env_id,
            _a.resource_id == resource_id,
            ~exists().where(_i.id == _a.instance_id, _i.deleted == false()),
        )
    )
    statement = _insert(session)(lsm_discovered_adoption).on_conflict_do_nothing(
        index_elements=[_a.env_id, _a.resource_id]
    )
    result = session.connection().execute(
        statement,
        {
            "env_id": env_id,
            "resource_id": resource_id,
            "instance_id": instance_id,
            "entity": entity,
            "adopted_at": now,
        },
    )
    if result.rowcount == 0:
        raise Conflict(
            f"discovered resource {resource_id} is already adopted (concurrently)", resource_id=resource_id
        )


__all__ = [
    "DiscoveredRow",
    "FoundRow",
    "Replaced",
    "check_adoptable",
    "claim_adoption",
    "count_discovered",
    "find_discovered",
    "get_discovered",
    "list_discovered",
    "replace_found",
]
