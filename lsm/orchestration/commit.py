"""The one commit: check the versions a ``Decision`` relied on, then write what it decided.

Why one place: every state change, whoever decided it (an API request alone or in a group
commit, a validation round, a deploy's outcomes, a failed export, an expert call), is written
by ``commit``, inside the caller's open write transaction. It locks the instance rows the
decision read (``repository.instance_versions``: ``FOR UPDATE`` on PostgreSQL, SQLite's writer
holds the whole database) and writes only if each is still at the version it was read at. Every
change to an instance row bumps its version, so an unchanged version means the decision read
what the lock shows now; a moved one means it must be decided again (the caller does that, in
the same transaction, with the rows now locked: a command that names a ``current_version`` is
then refused with a 409, an outcome that no longer applies takes no step).

Nothing else writes ``InstanceRow.state`` (but ``lsm.orchestration.export_failed``, the bulk
form of a failed export, with the same checks).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from lsm.errors import Conflict, IdentityConflict
from lsm.orchestration.commands import Origin
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.decide import Decider
from lsm.orchestration.decision import Decision
from lsm.orchestration.group import defer_insert
from lsm.store import audit
from lsm.store.compiles.requests import COMPILE_TABLE, insert_requests, notify_work
from lsm.store.discovery.statements import claim_adoption
from lsm.store.instances import repository as repo

T = TypeVar("T")

#: how often a decision is taken again when its rows keep moving before its commit
MAX_DECISIONS = 10


def decide_and_commit(
    session: Session, ctx: EnvironmentContext, origin: Origin, decide: Callable[[Decider], T]
) -> tuple[Decider, T]:
    """Decide in the write transaction ``session`` and commit; decided again while the commit
    finds a row it read moved on (the check locked them: the next decision reads them as they
    stay). The decider (its decision) and what ``decide`` returned."""
    for _ in range(MAX_DECISIONS):
        decider = Decider(session, ctx, origin)
        result = decide(decider)
        if commit(session, decider.decision):
            return decider, result
        decider.decision.forget(session)
    raise Conflict(f"the instances kept changing while this change was decided {MAX_DECISIONS} times")


def holds(session: Session, guards: dict[str, int], *, written: Collection[str] = ()) -> bool:
    """Whether every guarded row is still at the version it was read at (locking them); a row in
    ``written`` (changed earlier in this transaction by another decision) never holds."""
    if not guards:
        return True
    if any(i in written for i in guards):
        return False
    current = repo.instance_versions(session, guards)
    return all(current.get(i) == v for i, v in guards.items())


def commit(session: Session, decision: Decision) -> bool:
    """Write ``decision`` if the rows it read are unchanged; False (nothing written) otherwise."""
    if not holds(session, decision.guards):
        return False
    write(session, decision)
    return True


def write(session: Session, decision: Decision) -> None:
    """Write what ``decision`` holds, its guards checked (``holds``): the steps (one UPDATE per
    shape of columns), the new instances, the relation index, the adoption and audit records,
    then the event lines and compile requests (inserted once per table, in a group commit by its
    batch: ``defer_insert``), and the notice to the compile workers."""
    repo.write_steps(session, decision.steps)  # first: a deleted row frees its identity value
    if decision.created:
        session.add_all(decision.created.values())
        session.flush()
    for env_id, instance_id, refs, current in decision.references:
        repo.replace_references(session, env_id, instance_id, refs, current=current)
    for claim in decision.adoptions:
        claim_adoption(session, **claim)
    for record in decision.audits:
        audit.record(session, **record)
    compiles, events = decision.compiles, decision.events
    for env_id in sorted({c["env_id"] for c in compiles}):
        notify_work(session, env_id)
    if compiles and not defer_insert(session, COMPILE_TABLE, compiles):
        insert_requests(session, compiles)
    if events and not defer_insert(session, repo.EVENT_TABLE, events):
        repo.insert_events(session, events)


@contextmanager
def identity_conflicts(detail: str = "") -> Iterator[None]:
    """A write that broke the identity index raises ``IdentityConflict`` (409), its message
    ending in ``detail``; any other ``IntegrityError`` passes. The partial unique index on
    identity values is the last line of defence between two concurrent creates on PostgreSQL."""
    try:
        yield
    except IntegrityError as exc:
        if "identity" in str(exc.orig).lower():
            raise IdentityConflict(
                f"identity value already used by another instance (concurrent create){detail}"
            ) from None
        raise
