"""Decide, then commit: a decision is written only while the rows it read are at the versions it
read them at; otherwise it is decided again, and then answers as the moved row says (a 409 for a
command that names a ``current_version``, no step for an outcome that no longer applies).
Nothing of the stale decision is written. Runs on every configured backend.

The move is simulated inside the write transaction, between the decision and its commit: what
another transaction's commit does on PostgreSQL between the read and the commit's lock.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import Session

from lsm.errors import VersionConflict
from lsm.orchestration import SYSTEM, ResourceOutcome, Update
from lsm.orchestration.commit import decide_and_commit
from lsm.orchestration.decide import Decider
from lsm.orchestration.decide_batch import decide_one
from lsm.runtime.wiring import ApiRuntime
from lsm.store.tables import InstanceRow
from tests.orchestration.helpers import Driver

_TABLE: Any = InstanceRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy


def moved_once(session: Session, instance_id: str, command: Any) -> Any:
    """A decide function that, the first time, lets the row move on after deciding."""
    calls = [0]

    def decide(d: Decider) -> Any:
        calls[0] += 1
        result = decide_one(d, command)
        if calls[0] == 1:
            session.connection().execute(
                update(_TABLE).where(_TABLE.c.id == instance_id).values(version=_TABLE.c.version + 1)
            )
        return result

    return decide, calls


def test_a_command_whose_row_moved_before_its_commit_is_refused_with_a_409(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    thing = driver.reach("up")
    command = Update("thing", thing.id, thing.version, {"size": 9})

    with pytest.raises(VersionConflict):
        with engine.db.write() as session:
            decide, calls = moved_once(session, thing.id, command)
            decide_and_commit(session, driver.ctx, SYSTEM, decide)
    assert calls[0] == 2  # decided again, with the row as it moved
    now = driver.get(thing)
    assert (now.state, now.version, now.candidate_attributes) == (
        "up",
        thing.version,
        thing.candidate_attributes,
    )


def test_an_outcome_whose_row_moved_is_decided_again_and_takes_no_step_twice(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    creating = driver.reach("creating")
    command = ResourceOutcome(creating.id, creating.desired_state_version, True)

    with engine.db.write() as session:
        decide, calls = moved_once(session, creating.id, command)
        _, (outcome, _) = decide_and_commit(session, driver.ctx, SYSTEM, decide)

    assert calls[0] == 2
    now = driver.get(creating)
    # the stale decision (creating -> up at version + 1) was not written; the second one was,
    # on the row as it moved (version + 1 by the simulated commit, + 1 by the step)
    assert (now.state, now.version) == ("up", creating.version + 2)
    assert outcome.instance.version == now.version
