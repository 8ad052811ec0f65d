"""``lsm agent`` processes on PostgreSQL share the agent names; kill -9 of one mid-deploy loses nothing.

Real subprocesses on a database of their own; a slow handler (content ``slow:<s>``) keeps
resources ``deploying`` long enough to kill a holder in the middle of its batch.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlmodel import col

from lsm.desired_state.records import ExportRequest
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.store.deploy.tables import lsm_resource_state
from lsm.store.tables import LeaseRow
from tests.conftest import POSTGRES_URL, TEST_LIFECYCLES
from tests.deploy.agents import file
from tests.runtime.test_scale_out import database_url, wait_for

__all__ = ["database_url"]

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(POSTGRES_URL is None, reason="needs LSM_TEST_POSTGRES_URL (PostgreSQL)")


#: seconds to wait for agent processes to come up and share the work (a loaded CI machine)
START_BOUND = 180.0


def start_agent(url: str, state_dir: Path, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsm.cli",
            "agent",
            "--database",
            url,
            "--lease-ttl",
            "3",
            "--poll",
            "0.2",
            "--threads",
            "2",
        ],
        cwd=ROOT,
        env={**os.environ, "LSM_STATE_DIR": str(state_dir), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        text=True,
        start_new_session=True,
    )


def test_agents_share_the_names_and_a_killed_ones_names_are_taken_over(
    database_url: str, tmp_path: Path
) -> None:
    engine = build_api(
        ServerConfig(
            database_url=database_url,
            model="tests.deploy.file_model",
            embedded_worker=False,
            lifecycle_dirs=[TEST_LIFECYCLES],
        )
    )
    engine.start()
    state_dir = tmp_path / "state"
    agents: list[subprocess.Popen[str]] = []
    try:
        env_id = engine.context(None).env_id
        records = [file(f"f{i}.conf", "slow:2.0", agent=f"ag{i % 4}") for i in range(40)]

        def present() -> int:
            with engine.db.read() as session:
                query = select(func.count()).where(col(LeaseRow.name).startswith("agent-process:"))
                return int(session.execute(query).scalar_one())

        def rows() -> list[tuple[str, str | None]]:
            with engine.db.read() as session:
                query = select(lsm_resource_state.c.status, lsm_resource_state.c.claimed_by)
                return [(r[0], r[1]) for r in session.connection().execute(query)]

        agents = [start_agent(database_url, state_dir, tmp_path / f"agent{n}.log") for n in range(2)]

        killed: set[int] = set()

        def alive(condition: Callable[[], bool]) -> Callable[[], bool]:
            """``condition``, failing at once (with the agents' logs) when an agent process died."""

            def check() -> bool:
                dead = [n for n, agent in enumerate(agents) if agent.poll() is not None and n not in killed]
                logs = [(tmp_path / f"agent{n}.log").read_text() for n in dead]
                assert not dead, f"agent process(es) {dead} exited: {logs}"
                return condition()

            return check

        # Bounds for a loaded machine (two interpreters start and import the engine): waiting
        # for a condition, not a timing assertion.
        assert wait_for(alive(lambda: present() == 2), START_BOUND)
        engine.store.export(env_id, ExportRequest(kind="full", sets={"s": records}))
        # both processes deploy at once: the names are shared between them
        owners: set[str] = set()

        def both_deploying() -> bool:
            owners.clear()
            owners.update(o for st, o in rows() if st == "deploying" and o is not None)
            return len(owners) == 2

        assert wait_for(alive(both_deploying), START_BOUND), rows()
        # a handler takes 2 s: the process seen deploying is still in the middle of its batch
        victim = next(a for a in agents if any(f":{a.pid}:" in o for o in owners))
        killed.add(agents.index(victim))
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(10)

        assert wait_for(alive(lambda: all(s == "deployed" for s, _ in rows())), START_BOUND), rows()
        assert not [r for r in rows() if r[0] == "deploying"]
        assert sorted(p.name for p in state_dir.iterdir()) == sorted(f"f{i}.conf" for i in range(40))
    finally:
        for agent in agents:
            if agent.poll() is None:
                os.killpg(agent.pid, signal.SIGTERM)
                try:
                    agent.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(agent.pid, signal.SIGKILL)
        engine.stop()
