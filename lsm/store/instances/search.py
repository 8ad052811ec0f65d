"""Searching an entity's instances by identity and by attribute value: the one query behind the
inventory's search (``GET /lsm/v1/service_inventory/{entity}?identity=...&attribute=...``).

Why its own module: the attribute match reads inside the JSON attribute sets, which each backend
spells differently. SQLite's ``->`` and PostgreSQL's ``jsonb -> text`` both give the attribute
as JSON, so the match compares JSON with JSON: ``1500`` with ``1500``, ``true`` with ``true``,
``"eth0"`` with ``"eth0"``, whatever the attribute's type, and never casts a stored value (a cast
of a value of another shape would be an error, not a miss). The caller (the inventory facade)
turns the operator's text into the attribute's JSON value first, from the entity's schema.

The identity search is a case-insensitive substring of the identity column (``LIKE`` with the
operator's ``%`` and ``_`` escaped). Neither match uses an index: they filter the rows of one
entity of one environment (``ix_lsm_instance_entity_state``), and the page is bounded by
``limit``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, and_, cast, literal, or_
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from lsm.store.instances.repository import parse_sort
from lsm.store.tables import InstanceRow


@dataclass(frozen=True, slots=True)
class AttributeMatch:
    """``name`` equals ``value`` (a JSON scalar) in the candidate or the active attribute set."""

    name: str
    value: Any


def _json_path(name: str) -> str:
    """SQLite's JSON path of a top-level key (quoted: a key may hold dots)."""
    return '$."' + name.replace('"', '\\"') + '"'


def _attribute_equals(dialect: str, match: AttributeMatch) -> ColumnElement[bool]:
    sets = (col(InstanceRow.candidate_attributes), col(InstanceRow.active_attributes))
    wanted = json.dumps(match.value, ensure_ascii=False, separators=(",", ":"))
    if dialect == "postgresql":
        # jsonb -> key is a jsonb value; jsonb equality compares values (1500 = 1500.0)
        value = cast(literal(wanted, String), JSONB)
        tests = [s.op("->")(literal(match.name, String)) == value for s in sets]
    else:
        # SQLite's -> gives the value's JSON text, minified: compare it with the value's JSON text
        tests = [s.op("->")(literal(_json_path(match.name), String)) == literal(wanted, String) for s in sets]
    return or_(*tests)


def search_instances(
    session: Session,
    env_id: str,
    entity: str,
    *,
    identity: str | None = None,
    attributes: Sequence[AttributeMatch] = (),
    states: Sequence[str] | None = None,
    include_deleted: bool = False,
    limit: int = 100,
    offset: int = 0,
    sort: str = "created_at",
) -> list[InstanceRow]:
    """The instances of ``entity`` whose identity contains ``identity`` (any case) and that match
    every one of ``attributes``, in ``sort`` order (``repository.parse_sort``), then by id."""
    field, descending = parse_sort(sort)
    query = select(InstanceRow).where(InstanceRow.env_id == env_id, InstanceRow.entity == entity)
    if states:
        query = query.where(col(InstanceRow.state).in_(list(states)))
    if not include_deleted:
        query = query.where(col(InstanceRow.deleted).is_(False))
    if identity:
        query = query.where(col(InstanceRow.identity).icontains(identity, autoescape=True))
    if attributes:
        dialect = session.get_bind().dialect.name
        query = query.where(and_(*(_attribute_equals(dialect, m) for m in attributes)))
    column = getattr(InstanceRow, field)
    query = query.order_by(column.desc() if descending else column.asc(), col(InstanceRow.id).asc())
    return list(session.exec(query.limit(limit).offset(offset)))
