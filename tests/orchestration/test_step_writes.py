"""A lifecycle step's columns are written by one prebuilt UPDATE per phase of a transaction
(``repository.take_step`` / ``write_steps``), not by the ORM's flush. What is stored must be
exactly what the caller is answered. Both backends.

Why these tests: the orchestration used to change the loaded ORM object and let the unit of
work write it; now it writes the step's columns itself and tells the object they are its
committed values. A step it forgot to write, or wrote with other values than it answered,
would be a silent divergence between the answer and the database.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event, select

from lsm.orchestration import ForceState, Update
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from lsm.store.instances.repository import STEP_COLUMNS
from lsm.store.tables import InstanceRow
from tests.orchestration.helpers import Driver, outcome


def stored(engine: ApiRuntime, instance_id: str) -> dict[str, Any]:
    """The step columns of ``instance_id`` as the database holds them (a fresh read)."""
    table = InstanceRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    with engine.db.read() as session:
        row = session.connection().execute(select(table).where(table.c.id == instance_id)).one()
    return {name: getattr(row, name) for name in STEP_COLUMNS}


def answered(row: InstanceRow | InstanceOut) -> dict[str, Any]:
    """The step columns of an answer (an orchestration row or the facade's view)."""
    return {name: getattr(row, name) for name in STEP_COLUMNS}


def test_a_batch_writes_its_steps_in_one_statement_per_phase_and_stores_what_it_answers(
    engine: ApiRuntime,
) -> None:
    driver = Driver(engine)
    updated = [driver.reach("update_start") for _ in range(4)]
    writes: list[tuple[int, bool]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool) -> None:
        if statement.lstrip().upper().startswith("UPDATE LSM_INSTANCE "):
            writes.append((len(parameters) if many else 1, many))

    event.listen(engine.db.write_engine, "before_cursor_execute", seen)
    try:
        rows = engine.orchestrator.execute_many(driver.ctx, [outcome(i) for i in updated])
    finally:
        event.remove(engine.db.write_engine, "before_cursor_execute", seen)

    # decided before the lock (``Orchestrator._decide_ahead``): each row's outcome and its
    # promotion are one UPDATE, the batch's rows one statement
    assert engine.orchestrator.planned_batches == 1
    assert writes == [(4, True)]
    for before, row in zip(updated, rows, strict=True):
        assert (row.state, row.version) == ("update_inprogress", before.version + 2)
        assert row.desired_state_version == before.desired_state_version + 1
        assert stored(engine, row.id) == answered(row)


def test_every_kind_of_step_stores_what_it_answers(engine: ApiRuntime) -> None:
    """Create, validation outcomes (with and without a promotion after them), deploy outcomes,
    update, set state and delete: after each, the row equals the answer, column by column."""
    driver = Driver(engine)
    walk: list[tuple[str, Callable[[InstanceOut], InstanceOut]]] = [
        ("creating", lambda i: driver.validate(i, True)),
        ("up", lambda i: driver.deploy(i, True)),
        ("update_start", lambda i: driver.update(i, size=2)),
        ("update_inprogress", lambda i: driver.validate(i, True)),
        ("update_failed", lambda i: driver.deploy(i, False)),
        ("rollback", lambda i: driver.set_state(i, "rollback")),
    ]
    instance = driver.create(size=1)
    assert_stored(engine, instance)
    for state, step in walk:
        instance = step(instance)
        assert instance.state == state
        assert_stored(engine, instance)
    gone = driver.delete(driver.reach("up"))
    assert_stored(engine, gone)
    assert_stored(engine, driver.deploy(gone, True))


def assert_stored(engine: ApiRuntime, instance: InstanceOut) -> None:
    assert stored(engine, instance.id) == answered(instance), instance.state


def test_two_steps_of_one_instance_in_one_write_store_both(engine: ApiRuntime) -> None:
    """An update (it moves the candidate set) then a forced state (it moves none) in one batch:
    the second step's write must not drop the first one's attribute sets."""
    driver = Driver(engine)
    thing = driver.reach("up")
    rows = engine.orchestrator.execute_many(
        driver.ctx,
        [
            Update("thing", thing.id, thing.version, {"size": 7}),
            ForceState("thing", thing.id, thing.version + 1, "up"),
        ],
    )

    assert rows[1].candidate_attributes is not None and rows[1].candidate_attributes["size"] == 7
    assert (rows[1].state, rows[1].version) == ("up", thing.version + 2)
    assert stored(engine, thing.id) == answered(rows[1])
