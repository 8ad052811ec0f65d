"""The dry run: what a deploy of the newest desired-state version would change, found by reading.

Why apart from the agent: a dry run is an operator's question answered in the API request
(``POST /api/v1/deploy {dry_run: true}``, ``lsm deploy --dry-run``), not scheduled work: it
takes no agent lease, changes no resource state, and must answer even when no agent runs. It
builds each resource exactly as the agent does (``materialize``) and calls the handler's own
``deploy(dry_run=True)``, which calls only ``read`` (between ``pre`` and ``post``), so the
changes it reports are the ones the handler would compute in a real deploy.

Every failure is the item's, never the request's: a missing handler, attributes that do not
fit the handler's resource class, an exception in ``pre``/``read``/``post`` each become that
resource's ``error`` (action ``error``). Each item is also a line of the resource's action log
with ``dry_run = true``; its ``status`` is what a deploy would leave: ``deployed`` when there
is nothing to do, ``failed`` on an error, ``pending`` when a deploy has to act.

Resources that left the desired state and are still to be removed (``lsm.store.deploy.removals``)
are dry-run too, with their last desired attributes and ``purged`` set: the answer says which a
deploy would delete.

It runs in the calling thread (the API runs it in its threadpool, off the event loop); an
``async`` handler runs on the thread's own loop (``lsm.deploy.handler.call``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lsm.deploy.handler import HandlerContext
from lsm.deploy.jail import Jail
from lsm.deploy.materialize import run_handler
from lsm.deploy.registry import HandlerRegistry
from lsm.desired_state import DesiredStateStore, ResourceRecord
from lsm.schemas.deploy import (
    ActionKind,
    ChangeOut,
    DeployResult,
    DryRunItem,
    ResourceSelection,
    ResourceStatus,
)
from lsm.store.database import Database
from lsm.store.deploy import queries as deploy_queries
from lsm.store.deploy import removals
from lsm.store.deploy.scope import set_name_of
from lsm.store.deploy.tables import resource_type_of

#: where handlers keep their files when the server names no state directory
DEFAULT_STATE_DIR = "lsm-state"


def default_state_dir() -> Path:
    """``<cwd>/lsm-state``: the state directory when the configuration names none."""
    return Path.cwd() / DEFAULT_STATE_DIR


def _json_safe(value: Any) -> Any:
    """``value`` as JSON data (handlers may report sets, paths, bytes: their ``str``)."""
    return json.loads(json.dumps(value, default=str))


def _item_status(item: DryRunItem) -> ResourceStatus:
    if item.error is not None:
        return ResourceStatus.FAILED
    if item.action in (ActionKind.NONE, ActionKind.READ):
        return ResourceStatus.DEPLOYED
    return ResourceStatus.PENDING


def dry_run_resource(
    registry: HandlerRegistry, record: ResourceRecord, state_dir: Path, jail: Jail | None = None
) -> tuple[DryRunItem, HandlerContext]:
    """Run one resource's handler read-only; the item and the context (its changes and logs)."""
    ctx = HandlerContext(record.id, state_dir=state_dir, dry_run=True, jail=jail)
    error: str | None = None
    try:
        run_handler(registry, ctx, record.id, record.attributes, record.requires, dry_run=True)
    except Exception as exc:  # a missing or failing handler is this resource's error, never the request's
        error = _message(exc)
        ctx.error(error)
    changes = {
        key: ChangeOut(current=_json_safe(change.current), desired=_json_safe(change.desired))
        for key, change in ctx.changes.items()
    }
    action = ActionKind.ERROR if error is not None else ActionKind(ctx.action)
    return DryRunItem(id=record.id, action=action, changes=changes, error=error), ctx


def _message(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def dry_run(
    db: Database,
    store: DesiredStateStore,
    env_id: str,
    model_handlers: dict[str, Any],
    *,
    agents: Sequence[str] | None = None,
    state_dir: Path | None = None,
    jail: Jail | None = None,
    selection: ResourceSelection | None = None,
    instance_resources: Collection[str] | None = None,
) -> DeployResult:
    """Dry-run the newest version's resources of ``agents`` (None: every agent) and of
    ``selection`` (types and sets; ``instance_resources``: the ids its instances produced), in
    id order, and log each in its action log; the findings per resource."""
    version = store.latest_version(env_id)
    if version is None:
        return DeployResult(version=None, dry_run=True)
    wanted = None if agents is None else set(agents)
    types = None if selection is None or selection.types is None else set(selection.types)
    sets = None if selection is None or selection.sets is None else {set_name_of(s) for s in selection.sets}
    ids = None if instance_resources is None else set(instance_resources)
    with db.read() as session:  # resources that left the desired state: a deploy deletes them
        leaving: list[tuple[str | None, ResourceRecord]] = [
            (None, ResourceRecord(rid, json.loads(text), tuple(requires)))
            for rid, text, requires in removals.pending(session.connection(), env_id)
        ]
    records = sorted(
        (
            record
            for set_name, record in [*store.resources(env_id, version), *leaving]
            if (wanted is None or str(record.attributes.get("agent")) in wanted)
            and (types is None or resource_type_of(record.id) in types)
            and (sets is None or (set_name or "") in sets)
            and (ids is None or record.id in ids)
        ),
        key=lambda r: r.id,
    )
    registry = HandlerRegistry(model_handlers)
    where = state_dir if state_dir is not None else default_state_dir()
    items: list[DryRunItem] = []
    actions: list[dict[str, Any]] = []
    for record in records:
        started = datetime.now(UTC)
        clock = time.perf_counter()
        item, ctx = dry_run_resource(registry, record, where, jail)
        items.append(item)
        actions.append(
            {
                "resource_id": record.id,
                "version": version,
                "action": item.action.value,
                "status": _item_status(item).value,
                "changes": {key: change.model_dump(mode="json") for key, change in item.changes.items()},
                "messages": [
                    {
                        "level": line.level,
                        "message": line.message,
                        "at": datetime.fromtimestamp(line.at, UTC).isoformat(),
                        "data": _json_safe(line.data),
                    }
                    for line in ctx.logs
                ],
                "started_at": started,
                "duration_ms": (time.perf_counter() - clock) * 1000.0,
                "agent": str(record.attributes.get("agent", "")),
                "dry_run": True,
            }
        )
    with db.write() as session:
        deploy_queries.insert_actions(session, env_id, actions)
    return DeployResult(version=version, dry_run=True, resources=items)


__all__ = ["DEFAULT_STATE_DIR", "default_state_dir", "dry_run", "dry_run_resource"]
