"""The SQL of a failed exporting compile: which instances waited on it, and its retry.

Why here: deciding what a failed export does is the lifecycle's (``lsm.orchestration``), and
when it is recorded the compiler's (``lsm.compiler.export_failure``); finding the instances
and copying a request are reads and writes of rows, the store's.

An instance waits on an export when its desired state was not exported yet: the per-instance
resource index (``lsm_instance_resources``, written with every export) holds no record of it
at the instance's ``desired_state_version``. That is exact for every cause: a resource-based
transfer fires only on such a record (``lsm.deploy.feedback``), so the instances found here
are the ones nothing else would ever move on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, false, or_, update
from sqlalchemy import select as sa_select
from sqlmodel import Session

from lsm.schemas.compiles import CompileKind
from lsm.store.compiles.requests import CompileOrder
from lsm.store.tables import CompileRow, EntityRow, InstanceResourcesRow, InstanceRow

_i = InstanceRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
_r = InstanceResourcesRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
_c = CompileRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
_e = EntityRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy

#: ids per ``IN`` list (the bound parameters of one statement stay far below every limit)
CHUNK = 500


@dataclass(frozen=True)
class Waiting:
    """An instance whose desired state ``desired_state_version`` was not exported."""

    id: str
    entity: str
    state: str
    desired_state_version: int
    version: int


def _waiting_query(*, among: bool) -> Any:
    """Live instances with a desired state and no record of it exported: of an environment, or
    among given ids (by id alone, the environment checked on the rows: see ``repository.ids_in``,
    a planner walks another index for ``env_id = ? AND id IN (...)``)."""
    joined = _i.outerjoin(_r, and_(_r.c.env_id == _i.c.env_id, _r.c.instance_id == _i.c.id))
    scope = _i.c.id.in_(bindparam("b_ids", expanding=True)) if among else _i.c.env_id == bindparam("b_env")
    return (
        sa_select(_i.c.env_id, _i.c.id, _i.c.entity, _i.c.state, _i.c.desired_state_version, _i.c.version)
        .select_from(joined)
        .where(
            scope,
            _i.c.deleted == false(),
            _i.c.desired_state_version > 0,
            or_(
                _r.c.instance_id.is_(None),
                _r.c.instance_desired_state_version != _i.c.desired_state_version,
            ),
        )
    )


_WAITING = _waiting_query(among=False)
_WAITING_AMONG = _waiting_query(among=True)


def waiting_on_export(session: Session, env_id: str, instance_ids: Sequence[str] | None) -> list[Waiting]:
    """The instances of ``env_id`` that waited on an export: among ``instance_ids`` (a partial
    compile's requested ids; chunked ``IN`` reads), or all of them (``None``: a full compile)."""
    conn = session.connection()
    if instance_ids is None:
        return [Waiting(*row[1:]) for row in conn.execute(_WAITING, {"b_env": env_id})]
    ids = sorted(set(instance_ids))
    found: list[Waiting] = []
    for start in range(0, len(ids), CHUNK):
        rows = conn.execute(_WAITING_AMONG, {"b_ids": ids[start : start + CHUNK]})
        found.extend(Waiting(*row[1:]) for row in rows if row[0] == env_id)
    return found


def entity_lifecycles(session: Session, env_id: str) -> dict[str, str]:
    """Entity -> lifecycle name of ``env_id`` as its catalog was last persisted: what decides a
    failed export when the model does not load (its bindings are unknown then)."""
    rows = session.connection().execute(sa_select(_e.c.name, _e.c.lifecycle).where(_e.c.env_id == env_id))
    return {str(name): str(lifecycle) for name, lifecycle in rows}


def lock_versions(session: Session, env_id: str, ids: Sequence[str]) -> dict[str, tuple[str, int, bool]]:
    """Lock ``ids`` (``FOR UPDATE`` on PostgreSQL, in id order so that two writers of the same
    rows queue instead of deadlocking; SQLite's write transaction holds them already) and read
    ``(state, version, deleted)`` of each, a statement per chunk; unknown ids are left out."""
    found: dict[str, tuple[str, int, bool]] = {}
    ordered = sorted(set(ids))
    conn = session.connection()
    for start in range(0, len(ordered), CHUNK):
        rows = conn.execute(_LOCK_VERSIONS, {"b_ids": ordered[start : start + CHUNK]})
        for row_env, row_id, state, version, deleted in rows:
            if row_env == env_id:
                found[row_id] = (state, version, bool(deleted))
    return found


#: by id alone, the environment checked on the rows (``repository.ids_in`` says why)
_LOCK_VERSIONS = (
    sa_select(_i.c.env_id, _i.c.id, _i.c.state, _i.c.version, _i.c.deleted)
    .where(_i.c.id.in_(bindparam("b_ids", expanding=True)))
    .order_by(_i.c.id)
    .with_for_update()
)

#: a lifecycle step that moves only the state (no attribute set, no desired state), of many
#: instances at once: their versions were checked under the row lock
_MOVE = (
    update(_i)
    .where(_i.c.id.in_(bindparam("b_ids", expanding=True)))
    .values(state=bindparam("b_state"), version=_i.c.version + 1, last_updated=bindparam("b_now"))
)


def move_states(session: Session, moves: Mapping[str, Sequence[str]], now: datetime) -> None:
    """Move instances to a new state, ``{state: [instance ids]}`` (locked, at the versions the
    caller checked), their versions bumped by one: one statement per chunk of ids.

    Its one caller is the orchestration (``lsm.orchestration.export_failed``), which stays the
    one place that changes an instance's state."""
    conn = session.connection()
    for state, ids in sorted(moves.items()):
        ordered = sorted(ids)
        for start in range(0, len(ordered), CHUNK):
            params = {"b_ids": ordered[start : start + CHUNK], "b_state": state, "b_now": now}
            conn.execute(_MOVE, params)


def followers(session: Session, leader_id: str) -> list[CompileRow]:
    """The requests that were merged into ``leader_id`` (a keyed read on ``merged_into``)."""
    query = sa_select(CompileRow).where(CompileRow.merged_into == leader_id)  # type: ignore[arg-type]  # a SQLModel field reads as its Python type
    return list(session.exec(query).scalars())  # type: ignore[call-overload]  # a SQLAlchemy select, which SQLModel types only for its own


def retry_order(rows: Sequence[CompileRow], *, actor: str | None, request_id: str | None) -> CompileOrder:
    """The request equivalent to ``rows`` (a failed leader and the requests merged into it): a
    full compile if any of them was one, else a partial one over the union of their ids and
    entities; the leader's selector, and what every one of them excluded."""
    leader = rows[0]
    full = any(row.kind == CompileKind.FULL.value for row in rows)
    excluded = set.intersection(*(set(row.exclude) for row in rows))
    params = leader.params or {}
    return CompileOrder(
        env_id=leader.env_id,
        kind=CompileKind.FULL if full else CompileKind.PARTIAL,
        requested_ids=[] if full else list(dict.fromkeys(i for row in rows for i in row.requested_ids)),
        service_entities=[] if full else list(dict.fromkeys(e for row in rows for e in row.service_entities)),
        exclude=sorted(excluded) if not full else [],
        reason=f"retry of the failed compile {leader.id}",
        selector=None if full else params.get("selector"),
        incremental=params.get("incremental") if full else None,
        actor=actor,
        request_id=request_id,
    )
