"""AutoGroup (docs/semantics.md §5, ``autogroup``): resources of a batch that one handler call deploys.

Why: a handler call costs the agent a thread hand-off, a semaphore round and the handler's own
set-up (a directory walked, a connection opened) per resource; N files in one directory need
one. A handler says what may go together (``Handler.group_key``); this module cuts a claimed
batch into groups and runs one group as one ``deploy_group`` call, with every member's
metaparameters kept:

* a group holds resources of one type on one agent, with one key and one effective ``noop``
  (so a member's ``noop`` holds: a no-op member is only read, as alone), at most ``MAX_GROUP``;
* ``limit`` / ``burst``: each member takes its own token first; one without a token stays
  ``pending`` and is not in the call;
* ``sema``: the group holds the de-duplicated union of its members' semaphores;
* ``retry`` and the result: each member's outcome is its own (``Executor.outcome``), so a
  failed member counts one try against its own ``retry``, the others are deployed;
* ``meta.autogroup = False``, a bad ``meta``, a handler that does not group, a resource that
  left the desired state (a removal): deployed alone.

Must not: write anything; the batch writes every result in its one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lsm.deploy.executor import Executor, RunSettings
from lsm.deploy.handler import HandlerContext
from lsm.deploy.materialize import group_key, run_group
from lsm.deploy.registry import HandlerRegistry
from lsm.model.meta import MetaError, meta_of
from lsm.store.deploy.claiming import Claimed
from lsm.store.deploy.results import Result
from lsm.store.deploy.tables import resource_type_of

#: the most resources one group call gets (a bigger group waits longer for its slowest member).
#: A group is not spread over the handler threads: for files of one directory that was measured
#: slower (their creations take the directory's lock in turn, and eight threads convoy on it)
MAX_GROUP = 1000


def plan_groups(
    registry: HandlerRegistry,
    claimed: list[Claimed],
    records: Mapping[str, tuple[str, str]],
    settings: RunSettings,
) -> list[list[Claimed]]:
    """``claimed`` cut into groups (a resource deployed alone is a group of one), in claim order."""
    groups: dict[object, list[Claimed]] = {}
    out: list[list[Claimed]] = []
    for item in claimed:
        key = _key(registry, item, records.get(item.resource_id), settings)
        if key is None:
            out.append([item])
            continue
        group = groups.get(key)
        if group is None or len(group) >= MAX_GROUP:
            group = groups[key] = []
            out.append(group)
        group.append(item)
    return out


def _key(
    registry: HandlerRegistry, item: Claimed, record: tuple[str, str] | None, settings: RunSettings
) -> object | None:
    if record is None or item.removal is not None:
        return None  # a removal runs alone: its semaphores follow the newer version's sizes
    attributes: dict[str, Any] = json.loads(record[0])
    try:
        meta = meta_of(attributes)
    except MetaError:
        return None  # deployed alone, where the executor fails it naming the field
    if not meta.autogroup:
        return None
    key = group_key(registry, item.resource_id, attributes, tuple(json.loads(record[1])))
    if key is None:
        return None
    return (resource_type_of(item.resource_id), item.agent, settings.noop or meta.noop, key)


def run_group_of(
    executor: Executor,
    registry: HandlerRegistry,
    items: list[Claimed],
    records: Mapping[str, tuple[str, str]],
    settings: RunSettings,
) -> list[Result]:
    """Run one group (``plan_groups``): one handler call, one result per member."""
    if len(items) == 1:
        return [executor.run(registry, items[0], records.get(items[0].resource_id), settings)]
    now = executor.clock()
    results: list[Result] = []
    members = []
    for item in items:
        ready = executor.admit(item, records.get(item.resource_id), now)
        if isinstance(ready, Result):
            results.append(ready)
            continue
        meta, ran_hash, attributes, requires, bucket, started = ready
        ctx = HandlerContext(
            item.resource_id,
            state_dir=settings.state_dir,
            dry_run=settings.noop or meta.noop,
            jail=settings.jail,
        )
        members.append((item, meta, ran_hash, attributes, requires, bucket, started, ctx))
    if not members:
        return results
    noop = members[0][7].dry_run  # one effective noop per group (plan_groups)
    union = tuple(dict.fromkeys(spec for member in members for spec in member[1].sema))
    calls = [(m[7], m[0].resource_id, m[3], m[4]) for m in members]
    try:
        with executor.semaphores.hold(union):
            errors = run_group(registry, resource_type_of(items[0].resource_id), calls, dry_run=noop)
    except Exception as exc:  # the semaphores could not be held: every member fails alike
        errors = [exc] * len(members)
    for (item, meta, ran_hash, _, _, bucket, started, ctx), error in zip(members, errors, strict=True):
        results.append(executor.outcome(item, meta, ran_hash, now, started, ctx, bucket, noop, None, error))
    return results


__all__ = ["MAX_GROUP", "plan_groups", "run_group_of"]
