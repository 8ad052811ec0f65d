"""Repository functions over the inventory tables: the queries every layer above shares.

Why: the SQL for "lock this instance", "find by identity", "the event log" must exist once,
with its index in mind, so that the orchestration, the selectors, the compiler and the API
ask the database the same way. Functions take an open ``Session``; the caller owns the
transaction (``Database.write()`` / ``Database.read()``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select

from lsm.errors import InvalidInput, UnknownCompile, UnknownEnvironment, UnknownInstance
from lsm.store.row_values import row_values
from lsm.store.tables import CompileRow, EnvironmentRow, EventRow, InstanceRefRow, InstanceRow

# -- environments --------------------------------------------------------------------------


def find_environment(session: Session, env: str) -> EnvironmentRow | None:
    row = session.get(EnvironmentRow, env) if _is_uuid(env) else None
    if row is None:
        row = session.exec(select(EnvironmentRow).where(EnvironmentRow.name == env)).first()
    return row


def get_environment(session: Session, env: str) -> EnvironmentRow:
    row = find_environment(session, env)
    if row is None:
        raise UnknownEnvironment(f"unknown environment {env!r}", environment=env)
    return row


def list_environments(session: Session) -> list[EnvironmentRow]:
    return list(session.exec(select(EnvironmentRow).order_by(EnvironmentRow.name)))


# -- instances ---------------------------------------------------------------------------------


def parse_ref(ref: str) -> tuple[str | None, str | None]:
    """``<uuid>`` -> (id, None); ``attr=value`` -> (None, value) after checking the form."""
    if "=" in ref:
        _attr, _, value = ref.partition("=")
        return None, value
    if not _is_uuid(ref):
        raise UnknownInstance(f"{ref!r} is neither an instance id nor <identity>=<value>", instance=ref)
    return str(uuid.UUID(ref)), None


_REFS = InstanceRefRow.metadata.tables["lsm_instance_ref"]
#: the event log table, for inserts of ``event_values`` rows (``insert_events``)
EVENT_TABLE = EventRow.metadata.tables["lsm_event"]


def _instance_query(*, by_identity: bool, for_update: bool) -> Any:
    """One of the four instance lookups, built once with bound parameters.

    Why prebuilt: every PATCH and every transfer looks its instance up; building the statement
    (column comparisons, coercions, its cache key) cost about as much as running it on SQLite.
    """
    query = select(InstanceRow).where(
        InstanceRow.env_id == bindparam("env_id"), InstanceRow.entity == bindparam("entity")
    )
    if by_identity:
        query = query.where(InstanceRow.identity == bindparam("key"), col(InstanceRow.deleted).is_(False))
    else:
        query = query.where(InstanceRow.id == bindparam("key"))
    return query.with_for_update() if for_update else query


_FIND = {
    (by_identity, for_update): _instance_query(by_identity=by_identity, for_update=for_update)
    for by_identity in (False, True)
    for for_update in (False, True)
}


def find_instance(
    session: Session,
    env_id: str,
    entity: str,
    ref: str,
    *,
    identity_attr: str | None,
    for_update: bool = False,
) -> InstanceRow:
    """The instance ``ref`` (id or ``<identity>=<value>``) of ``entity``, optionally row-locked."""
    instance_id, identity = parse_ref(ref)
    if instance_id is None:
        attr = ref.partition("=")[0]
        if identity_attr is None or attr != identity_attr:
            raise InvalidInput(
                f"{entity} instances can not be looked up by {attr!r}"
                + (
                    f"; its identity attribute is {identity_attr!r}"
                    if identity_attr
                    else "; it has no identity"
                ),
                entity=entity,
                attribute=attr,
            )
    query = _FIND[(instance_id is None, for_update)]
    params = {"env_id": env_id, "entity": entity, "key": instance_id if instance_id is not None else identity}
    row: InstanceRow | None = session.exec(query, params=params).first()
    if row is None:
        raise UnknownInstance(f"no {entity} instance {ref!r}", entity=entity, instance=ref)
    return row


def ids_in(ids: Sequence[str]) -> Any:
    """``lsm_instance.id IN (ids)``, to be used WITHOUT ``env_id = ?`` beside it (callers check
    the environment on the rows they get).

    Why: given ``env_id = ? AND id IN (...)`` with a long list, SQLite's planner (with or without
    ANALYZE) walks the ``(env_id, owner_id)`` index, i.e. reads every instance of the
    environment, a cost that grows with the inventory. By id alone it
    takes the primary key. Ids are UUIDs; the check on the rows keeps environments apart.
    """
    return col(InstanceRow.id).in_(list(ids))


def instance_versions(session: Session, ids: Collection[str]) -> dict[str, int]:
    """The current ``version`` of each instance in ``ids`` that exists (any environment: ids are
    UUIDs), locked on PostgreSQL (``FOR UPDATE``; SQLite's writer holds the whole database).

    The group commit checks its items' plans with it: a version that moved means the row changed
    since the plan read it (``lsm.orchestration.group``)."""
    out: dict[str, int] = {}
    for chunk in chunked(sorted(set(ids)), 500):
        query = (
            sa_select(_INSTANCE.c.id, _INSTANCE.c.version)
            .where(_INSTANCE.c.id.in_(chunk))
            .order_by(_INSTANCE.c.id)
            .with_for_update()
        )
        out.update({row.id: row.version for row in session.connection().execute(query)})
    return out


def unknown_instance_ids(session: Session, env_id: str, ids: Iterable[str]) -> list[str]:
    """Those of ``ids`` (in order, once each) that name no instance of ``env_id``, deleted ones
    counting as known; two columns read, by primary key (``ids_in``)."""
    wanted = list(dict.fromkeys(ids))
    known: set[str] = set()
    for chunk in chunked(wanted, 500):
        query = sa_select(_INSTANCE.c.id, _INSTANCE.c.env_id).where(_INSTANCE.c.id.in_(chunk))
        known.update(row.id for row in session.connection().execute(query) if row.env_id == env_id)
    return [i for i in wanted if i not in known]


def identity_taken(session: Session, env_id: str, entity: str, identity: str) -> InstanceRow | None:
    query = select(InstanceRow).where(
        InstanceRow.env_id == env_id,
        InstanceRow.entity == entity,
        InstanceRow.identity == identity,
        col(InstanceRow.deleted).is_(False),
    )
    return session.exec(query).first()


def get_instances(session: Session, env_id: str, ids: Iterable[str]) -> dict[str, InstanceRow]:
    """Instances by id (any entity, deleted included), in chunked ``IN`` queries."""
    out: dict[str, InstanceRow] = {}
    for chunk in chunked(list(dict.fromkeys(ids)), 500):
        query = select(InstanceRow).where(ids_in(chunk))
        for row in session.exec(query):
            if row.env_id == env_id:
                out[row.id] = row
    return out


SORTABLE = {"created_at", "last_updated", "state", "version", "id", "identity"}


def list_owned(session: Session, env_id: str, owner_id: str, *, limit: int = 100) -> list[InstanceRow]:
    """The live instances ``owner_id`` owns directly, oldest first (through ``ix_lsm_instance_owner``)."""
    query = (
        select(InstanceRow)
        .where(
            InstanceRow.env_id == env_id,
            InstanceRow.owner_id == owner_id,
            col(InstanceRow.deleted).is_(False),
        )
        .order_by(col(InstanceRow.created_at).asc(), col(InstanceRow.id).asc())
        .limit(limit)
    )
    return list(session.exec(query))


def parse_sort(sort: str) -> tuple[str, bool]:
    """``created_at``, ``-created_at``, ``created_at.desc`` / ``.asc``."""
    descending = sort.startswith("-") or sort.endswith(".desc")
    field = sort.lstrip("-").removesuffix(".desc").removesuffix(".asc")
    if field not in SORTABLE:
        raise InvalidInput(f"can not sort by {field!r}; use one of {', '.join(sorted(SORTABLE))}", sort=sort)
    return field, descending


def count_by_state(session: Session, env_id: str, entity: str) -> dict[str, int]:
    query = (
        select(InstanceRow.state, func.count())
        .where(
            InstanceRow.env_id == env_id, InstanceRow.entity == entity, col(InstanceRow.deleted).is_(False)
        )
        .group_by(InstanceRow.state)
    )
    return {state: int(n) for state, n in session.exec(query).all()}


def _references_of(session: Session, env_id: str, instance_id: str) -> set[tuple[str, str]]:
    """What the relation index holds for one instance: ``{(attribute, target_id)}``."""
    query = sa_select(_REFS.c.attribute, _REFS.c.target_id).where(
        _REFS.c.env_id == env_id, _REFS.c.source_id == instance_id
    )
    return {(attribute, target) for attribute, target in session.connection().execute(query)}


def replace_references(
    session: Session,
    env_id: str,
    instance_id: str,
    refs: set[tuple[str, str]],
    *,
    current: set[tuple[str, str]] | None = None,
) -> None:
    """Make the relation index of one instance equal ``{(attribute, target_id)}``.

    ``current``: what the index holds now, when the caller knows it (empty for a new instance):
    saves the read.
    """
    if current is None:
        current = _references_of(session, env_id, instance_id)
    if current == refs:
        return
    stale = current - refs
    if stale:
        session.execute(
            delete(InstanceRefRow).where(
                col(InstanceRefRow.env_id) == env_id,
                col(InstanceRefRow.source_id) == instance_id,
                or_(
                    *[
                        (col(InstanceRefRow.attribute) == a) & (col(InstanceRefRow.target_id) == t)
                        for a, t in stale
                    ]
                ),
            )
        )
    new = refs - current
    if new:
        session.execute(
            insert(InstanceRefRow),
            [
                {"env_id": env_id, "source_id": instance_id, "attribute": a, "target_id": t}
                for a, t in sorted(new)
            ],
        )


#: the columns a lifecycle step writes (``take_step``, ``write_steps``); the three attribute
#: sets only when the step changed them
STEP_COLUMNS = (
    "state",
    "candidate_attributes",
    "active_attributes",
    "rollback_attributes",
    "version",
    "desired_state_version",
    "deleted",
    "last_updated",
)
_INSTANCE = InstanceRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy


@functools.cache
def _step_statement(names: tuple[str, ...]) -> Any:
    """The prebuilt UPDATE of an instance's ``names`` columns (one per set of columns)."""
    return (
        update(_INSTANCE)
        .where(_INSTANCE.c.id == bindparam("b_id"))
        .values({name: bindparam(name) for name in names})
    )


def take_step(row: InstanceRow, values: dict[str, Any]) -> None:
    """Give the loaded ``row`` a lifecycle step's new ``values`` without marking it changed:
    the caller writes them with ``write_steps``.

    Why not the ORM's unit of work: a changed object costs its flush (change detection, the
    UPDATE built per object) and, under a savepoint, its snapshot; for a group-commit item that
    was most of a PATCH's time under the database's write lock. The step's columns
    are known, so one prebuilt UPDATE per step (an ``executemany`` per batch) writes the same
    row.
    """
    for name, value in values.items():
        set_committed_value(row, name, value)


def write_steps(session: Session, steps: dict[str, dict[str, Any]]) -> None:
    """Write lifecycle steps taken with ``take_step``: instance id -> its new column values,
    one ``executemany`` per set of columns (a step that moved no attribute set leaves the three
    JSON columns out: encoding them was a tenth of a validation round's write).

    Its one caller is the orchestration (``lsm.orchestration.commit``), which stays the one
    place that changes an instance's state."""
    shapes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for instance_id, values in steps.items():
        shapes.setdefault(tuple(sorted(values)), []).append({"b_id": instance_id, **values})
    for names, params in shapes.items():
        session.connection().execute(_step_statement(names), params)


# -- events --------------------------------------------------------------------------------------


def event_values(row: InstanceRow, **fields: Any) -> dict[str, Any]:
    """An event line of ``row`` as the values of its ``lsm_event`` row (for a batched insert)."""
    return row_values(EventRow, env_id=row.env_id, instance_id=row.id, version=row.version, **fields)


def insert_events(session: Session, values: list[dict[str, Any]]) -> None:
    """Insert event lines given as values (``event_values``), one ``executemany``."""
    if values:
        session.connection().execute(EVENT_TABLE.insert(), values)


def list_events(session: Session, instance_id: str) -> list[EventRow]:
    query = select(EventRow).where(EventRow.instance_id == instance_id).order_by(col(EventRow.id).asc())
    return list(session.exec(query))


# -- compiles ------------------------------------------------------------------------------------


def get_compile(session: Session, env_id: str, compile_id: str) -> CompileRow:
    row = session.get(CompileRow, compile_id) if _is_uuid(compile_id) else None
    if row is None or row.env_id != env_id:
        raise UnknownCompile(f"unknown compile {compile_id!r}", compile=compile_id)
    return row


def list_compiles(
    session: Session,
    env_id: str,
    *,
    limit: int = 50,
    offset: int = 0,
    kind: str | None = None,
    status: str | None = None,
) -> list[CompileRow]:
    """A page of the environment's compiles, newest first; ``status`` rides on ``ix_lsm_compile_queue``."""
    query = select(CompileRow).where(CompileRow.env_id == env_id)
    if kind is not None:
        query = query.where(CompileRow.kind == kind)
    if status is not None:
        query = query.where(CompileRow.status == status)
    query = (
        query.order_by(col(CompileRow.created_at).desc(), col(CompileRow.id).desc())
        .limit(limit)
        .offset(offset)
    )
    return list(session.exec(query))


def pending_compile_for(session: Session, env_id: str, instance_id: str) -> CompileRow | None:
    """The newest queued or running compile that concerns this instance (for ``diagnose``)."""
    query = (
        select(CompileRow)
        .where(CompileRow.env_id == env_id, col(CompileRow.status).in_(["queued", "running"]))
        .order_by(col(CompileRow.created_at).desc())
        .limit(200)
    )
    for row in session.exec(query):
        if row.instance_id == instance_id or instance_id in row.requested_ids or row.kind == "full":
            return row
    return None


def last_validation_compile(session: Session, env_id: str, instance_id: str) -> CompileRow | None:
    query = (
        select(CompileRow)
        .where(
            CompileRow.env_id == env_id,
            CompileRow.instance_id == instance_id,
            CompileRow.kind == "validation",
        )
        .order_by(col(CompileRow.created_at).desc())
        .limit(1)
    )
    return session.exec(query).first()


# -- helpers ---------------------------------------------------------------------------------------


def chunked(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return False
    return True
