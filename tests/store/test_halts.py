"""The stored brake (``lsm.store.environments.halts``) against a model of it, on both backends.

Any sequence of halts, resumes, pauses and unpauses must leave the rows the model says, and each
call must report exactly whether it changed something (the audit trail and the wake-up rely on
it): a resume lifts the pauses made during the halt unless they were asked to stay, a pause made
outside a halt always stays, and a second pause never shortens the first.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsm.store.database import Database
from lsm.store.environments import halts

AGENTS = ("a", "b", "c")
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("halt")),
        st.tuples(st.just("resume")),
        st.tuples(st.just("pause"), st.sampled_from(AGENTS), st.booleans()),
        st.tuples(st.just("unpause"), st.sampled_from(AGENTS)),
    ),
    max_size=12,
)


class Model:
    def __init__(self) -> None:
        self.halted = False
        self.paused: dict[str, bool] = {}

    def apply(self, op: tuple[object, ...]) -> bool:
        name = op[0]
        if name == "halt":
            changed = not self.halted
            self.halted = True
            return changed
        if name == "resume":
            if not self.halted:
                return False
            self.halted = False
            self.paused = {a: stay for a, stay in self.paused.items() if stay}
            return True
        agent = str(op[1])
        if name == "unpause":
            return self.paused.pop(agent, None) is not None
        stays = bool(op[2]) or not self.halted
        if agent not in self.paused:
            self.paused[agent] = stays
            return True
        if stays and not self.paused[agent]:
            self.paused[agent] = True
            return True
        return False


def run(db: Database, env_id: str, op: tuple[object, ...]) -> bool:
    now = datetime.now(UTC)
    with db.write() as session:
        conn = session.connection()
        if op[0] == "halt":
            return halts.halt(conn, env_id, actor="tester", now=now)
        if op[0] == "resume":
            return halts.resume(conn, env_id)
        if op[0] == "pause":
            return halts.pause(conn, env_id, str(op[1]), actor="tester", now=now, stay_paused=bool(op[2]))
        return halts.unpause(conn, env_id, str(op[1]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=OPERATIONS)
def test_any_sequence_of_brake_calls_matches_the_model(
    db: Database, operations: list[tuple[object, ...]]
) -> None:
    env_id = str(uuid.uuid4())  # an environment of its own per example: no rows of another
    model = Model()
    for op in operations:
        assert run(db, env_id, op) is model.apply(op), op
        with db.read() as session:
            conn = session.connection()
            found = halts.state(conn, env_id)
            free = halts.free_agents(conn, env_id, AGENTS)
            runnable = halts.runnable(conn, [(env_id, a) for a in AGENTS])
        assert found.halted is model.halted
        assert {a: p.stay_paused for a, p in found.paused.items()} == model.paused
        expected = [] if model.halted else [a for a in AGENTS if a not in model.paused]
        assert free == expected
        assert runnable == {(env_id, a) for a in expected}
        assert all(found.holds(a) is (a not in expected) for a in AGENTS)
