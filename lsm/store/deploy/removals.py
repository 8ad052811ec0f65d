"""Resources that left the desired state: removed from their targets by their handlers, or orphaned.

Why a state row and not a list in memory: a removal must survive a restart and move with its
agent name on take-over, be retried under ``retry``/``delay``, and wait for the resources that
required it, exactly as a deploy does. So when the planner finds a resource gone
(``lsm.store.deploy.plan``), its ``lsm_resource_state`` row stays, turned into a *removal*:
``removal`` holds its last desired attributes with ``purged`` set, ``purged`` is true, and its
requires edges stay the old version's. The claim then treats it as any purged resource (it
waits for the purged resources that require it: the reverse of the old requires), its handler
reads and deletes it if present (``CRUDHandler.deploy`` on a purged resource), and the result
write drops the row once that succeeded (``finish``).

Which gone resources are removed (``schedule``):

* its row is a removal already: left as it is (a full plan sees it gone again);
* nothing was ever tried on its target (no deployed hash, no action): dropped, nothing to undo;
* it is purged and was deployed so (its handler deleted it already): dropped;
* its last attributes say ``meta.deletion = "orphan"`` (``lsm.model.meta.Meta``; a resource
  type's default is stored there by the model), or they are no longer stored (collected by
  retention before any plan saw the version that dropped it): dropped, with an ``orphan`` line
  in its action log that says it was left on its target;
* otherwise: a removal, ``pending`` (a row an agent runs now stays ``deploying``: its result
  is written for the old hash and turns the row ``pending`` for the removal).

A resource that comes back into the desired state before its removal ran takes the row back
(the plan's upsert clears ``removal``): the removal is cancelled, and when the target still
holds what was last deployed the row is ``deployed`` again with no handler call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, case, delete, insert, select, update

from lsm.schemas.deploy import ActionKind, ResourceStatus
from lsm.store import metric_counters
from lsm.store.batches import chunks
from lsm.store.deploy.tables import lsm_resource_action, lsm_resource_require, lsm_resource_state
from lsm.store.desired_state.tables import ds_resource

_state = lsm_resource_state
_req = lsm_resource_require

#: the stored value of ``Meta.deletion`` that forgets a resource (``lsm.model.meta``; the store
#: reads the stored JSON, it does not import the model layer)
ORPHAN = "orphan"


def removal_text(attributes_text: str) -> str:
    """The stored attributes of a removal: the last desired ones with ``purged`` set."""
    attributes = json.loads(attributes_text)
    attributes["purged"] = True
    return json.dumps(attributes, sort_keys=True, separators=(",", ":"))


def removal_record(removal: str, requires: Sequence[str]) -> tuple[str, str]:
    """The ``(attributes, requires)`` text a removal runs with, and whose hash its row holds."""
    return removal, json.dumps(list(requires), separators=(",", ":"))


def policy_of(attributes_text: str) -> str:
    """``delete`` or ``orphan``: what leaving the desired state does to this stored resource."""
    meta = json.loads(attributes_text).get("meta") or {}
    return str(meta.get("deletion", "delete")) if isinstance(meta, dict) else "delete"


@dataclass
class Scheduled:
    """What ``schedule`` did with the resources that left the desired state."""

    removals: list[str]
    orphaned: list[str]
    dropped: list[str]


def closed_since(
    conn: Connection, env_id: str, set_names: Sequence[str], base: int, written: set[str]
) -> tuple[dict[str, tuple[str, str]], int]:
    """The resources of these sets closed by the versions after ``base`` that no current row
    of ``written`` holds (they left the desired state), each with its newest closed
    ``(attributes, requires)`` text; and how many rows were read. Through ``ix_ds_resource_set``:
    it costs the sets, never the environment."""
    last: dict[str, tuple[str, str]] = {}
    newest: dict[str, int] = {}
    read = 0
    for part in chunks(list(set_names)):
        closed = select(
            ds_resource.c.resource_id,
            ds_resource.c.first_version,
            ds_resource.c.attributes,
            ds_resource.c.requires,
        ).where(
            ds_resource.c.set_name.in_(part),
            ds_resource.c.env_id == env_id,
            ds_resource.c.superseded_in > base,
        )
        for rid, first, attributes_text, requires_text in conn.execute(closed):
            read += 1
            if rid not in written and first > newest.get(rid, -1):
                newest[rid] = first
                last[rid] = (attributes_text, requires_text)
    return last, read


def last_records(conn: Connection, env_id: str, resource_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
    """The newest closed ``ds_resource`` row of each id (``(attributes, requires)`` text); for a
    plan that could not read only the versions since its last one (a first plan, retention)."""
    found: dict[str, tuple[int, str, str]] = {}
    for part in chunks(sorted(set(resource_ids))):
        query = select(
            ds_resource.c.resource_id,
            ds_resource.c.first_version,
            ds_resource.c.attributes,
            ds_resource.c.requires,
        ).where(
            ds_resource.c.resource_id.in_(part),
            ds_resource.c.env_id == env_id,
            ds_resource.c.superseded_in.is_not(None),
        )
        for rid, first, attributes, requires in conn.execute(query):
            if rid not in found or first > found[rid][0]:
                found[rid] = (first, attributes, requires)
    return {rid: (attributes, requires) for rid, (_first, attributes, requires) in found.items()}


def schedule(
    conn: Connection,
    env_id: str,
    version: int,
    gone: Mapping[str, tuple[str, str] | None],
    now: datetime,
    hash_of: Any,
) -> Scheduled:
    """Turn the state rows of ``gone`` (id -> its last ``(attributes, requires)`` text, None when
    no longer stored) into removals, or drop them (module docstring). The rows are locked by the
    caller (the plan). ``hash_of``: the plan's ``desired_hash``."""
    s = _state
    out = Scheduled([], [], [])
    rows: list[Any] = []
    for part in chunks(sorted(gone)):
        rows.extend(
            conn.execute(
                select(
                    s.c.resource_id,
                    s.c.agent,
                    s.c.status,
                    s.c.purged,
                    s.c.desired_hash,
                    s.c.deployed_hash,
                    s.c.last_action,
                    s.c.removal,
                    s.c.requires,
                ).where(s.c.env_id == env_id, s.c.resource_id.in_(part))
            )
        )
    updates: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    for row in rows:
        if row.removal is not None:
            continue
        tried = row.deployed_hash is not None or row.last_action is not None
        deployed = row.status == ResourceStatus.DEPLOYED and row.deployed_hash == row.desired_hash
        purged_done = row.purged and deployed
        last = gone[row.resource_id]
        if (not tried and row.status != ResourceStatus.DEPLOYING) or purged_done:
            out.dropped.append(row.resource_id)
            continue
        if last is None or policy_of(last[0]) == ORPHAN:
            out.orphaned.append(row.resource_id)
            why = (
                "its deletion policy is 'orphan'"
                if last is not None
                else "its last desired attributes are no longer stored"
            )
            lines.append(_orphan_line(env_id, row, version, now, why))
            continue
        requires = list(json.loads(last[1]))
        text = removal_text(last[0])
        updates.append(
            {
                "rid": row.resource_id,
                "new_removal": text,
                "new_requires": requires,
                "new_hash": hash_of(*removal_record(text, requires)),
                "new_version": version,
            }
        )
        out.removals.append(row.resource_id)
    if updates:
        deploying = s.c.status == ResourceStatus.DEPLOYING
        conn.execute(
            update(s)
            .where(s.c.env_id == env_id, s.c.resource_id == bindparam("rid"))
            .values(
                removal=bindparam("new_removal"),
                purged=True,
                requires=bindparam("new_requires", type_=s.c.requires.type),
                desired_hash=bindparam("new_hash"),
                version=bindparam("new_version"),
                status=case((deploying, ResourceStatus.DEPLOYING), else_=ResourceStatus.PENDING),
                attempts=case((deploying, s.c.attempts), else_=0),
                next_attempt_at=case((deploying, s.c.next_attempt_at), else_=None),
                poll_at=None,
            ),
            updates,
        )
    forget(conn, env_id, [*out.dropped, *out.orphaned])
    if lines:
        conn.execute(insert(lsm_resource_action), lines)
        metric_counters.count_actions(conn, env_id, lines)
    return out


def _orphan_line(env_id: str, row: Any, version: int, now: datetime, why: str) -> dict[str, Any]:
    """The action-log line of an orphaned resource: forgotten, left on its target, and why."""
    message = f"left the desired state in version {version}; {why}: forgotten, left on its target as it is"
    return {
        "env_id": env_id,
        "resource_id": row.resource_id,
        "version": version,
        "action": ActionKind.ORPHAN,
        "status": row.status,
        "changes": {},
        "messages": [{"level": "info", "message": message, "at": now.isoformat(), "data": {}}],
        "started_at": now,
        "duration_ms": 0.0,
        "agent": row.agent,
        "dry_run": False,
    }


def forget(conn: Connection, env_id: str, resource_ids: Sequence[str]) -> None:
    """Drop these state rows and the requires edges they hold (the caller locked them)."""
    for part in chunks(sorted(resource_ids)):
        conn.execute(delete(_state).where(_state.c.env_id == env_id, _state.c.resource_id.in_(part)))
        conn.execute(delete(_req).where(_req.c.env_id == env_id, _req.c.resource_id.in_(part)))


def pending(conn: Connection, env_id: str) -> list[tuple[str, str, list[str]]]:
    """The removals not done yet: ``(resource_id, attributes text, requires)`` in id order (for
    the dry run, which reads a whole version anyway; a scan of the environment's state rows)."""
    s = _state
    query = (
        select(s.c.resource_id, s.c.removal, s.c.requires)
        .where(s.c.env_id == env_id, s.c.removal.is_not(None))
        .order_by(s.c.resource_id)
    )
    return [(r[0], r[1], list(r[2] or [])) for r in conn.execute(query)]


def finish(conn: Connection, env_id: str, done: Sequence[tuple[str, str]]) -> list[str]:
    """Drop the removals that ran with success (``(resource_id, ran hash)`` pairs, rows locked by
    the result write): only a row that is still a removal of that hash. One that came back into
    the desired state meanwhile keeps its row (pending for its new hash). Returns the ids dropped."""
    dropped: list[str] = []
    for rid, ran_hash in done:
        gone = conn.execute(
            delete(_state).where(
                _state.c.env_id == env_id,
                _state.c.resource_id == rid,
                _state.c.desired_hash == ran_hash,
                _state.c.removal.is_not(None),
            )
        )
        if gone.rowcount:
            dropped.append(rid)
    for part in chunks(dropped):
        conn.execute(delete(_req).where(_req.c.env_id == env_id, _req.c.resource_id.in_(part)))
    return dropped


__all__ = [
    "ORPHAN",
    "Scheduled",
    "closed_since",
    "finish",
    "forget",
    "last_records",
    "pending",
    "policy_of",
    "removal_record",
    "removal_text",
    "schedule",
]
