"""The emergency brake, stored: halted environments and paused agent names.

Why rows in the database: the compile workers and deploy agents that must obey a halt may be
other processes on other machines, and a halt must outlive a restart or a ``kill -9`` of every
one of them. So the halt is not a flag in memory but a row that every claim looks at:

* ``lsm_halt``: one row per halted environment (when, by whom). While it exists no compile of
  the environment is claimed (``lsm.compiler.queue``) and no agent claims a resource of it
  (``lsm.deploy.claiming``); orders and compile requests are still written and wait.
* ``lsm_agent_pause``: one row per paused agent name of an environment. ``stay_paused`` says
  whether a resume of the environment keeps it paused: a pause made while the environment
  runs is the agent's own and always stays; one made during a halt is lifted by the resume
  unless it was asked to stay (Inmanta: resume unpauses what the halt paused, not what was
  paused on its own).

Both tables are tiny (one row per halt or pause) and read by primary key or whole: a claim
pays one keyed read, never a scan of the inventory. Every change here is idempotent: halting a
halted environment, pausing a paused agent, resuming a running one change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    DateTime,
    PrimaryKeyConstraint,
    String,
    Table,
    delete,
    literal,
    select,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import SQLModel

from lsm.store.batches import aware, utc

metadata = SQLModel.metadata

lsm_halt = Table(
    "lsm_halt",
    metadata,
    Column("env_id", String(36), primary_key=True),
    Column("halted_at", DateTime(timezone=True), nullable=False),
    Column("halted_by", String(200), nullable=True),
)

lsm_agent_pause = Table(
    "lsm_agent_pause",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("paused_at", DateTime(timezone=True), nullable=False),
    Column("paused_by", String(200), nullable=True),
    Column("stay_paused", Boolean, nullable=False),
    PrimaryKeyConstraint("env_id", "agent", name="pk_lsm_agent_pause"),
)


@dataclass(frozen=True)
class Pause:
    """One paused agent name."""

    agent: str
    paused_at: datetime
    paused_by: str | None
    stay_paused: bool


@dataclass(frozen=True)
class HaltState:
    """An environment's brake: whether it is halted, and its paused agent names."""

    env_id: str
    halted_at: datetime | None = None
    halted_by: str | None = None
    paused: dict[str, Pause] = field(default_factory=dict)

    @property
    def halted(self) -> bool:
        return self.halted_at is not None

    def holds(self, agent: str) -> bool:
        """Whether a resource of ``agent`` may not be claimed now."""
        return self.halted or agent in self.paused


def _insert(conn: Connection, table: Table) -> sqlite.Insert | postgresql.Insert:
    return postgresql.insert(table) if conn.dialect.name == "postgresql" else sqlite.insert(table)


def state(conn: Connection, env_id: str) -> HaltState:
    """The halt and pauses of ``env_id`` (two keyed reads of tiny tables)."""
    halt = conn.execute(
        select(lsm_halt.c.halted_at, lsm_halt.c.halted_by).where(lsm_halt.c.env_id == env_id)
    ).first()
    p = lsm_agent_pause
    paused = {
        r.agent: Pause(r.agent, aware(r.paused_at), r.paused_by, bool(r.stay_paused))
        for r in conn.execute(
            select(p.c.agent, p.c.paused_at, p.c.paused_by, p.c.stay_paused)
            .where(p.c.env_id == env_id)
            .order_by(p.c.agent)
        )
    }
    if halt is None:
        return HaltState(env_id, paused=paused)
    return HaltState(env_id, utc(halt.halted_at), halt.halted_by, paused)


def is_halted(conn: Connection, env_id: str) -> bool:
    """One primary-key read: what a compile claim asks before it takes anything."""
    found = conn.execute(select(lsm_halt.c.env_id).where(lsm_halt.c.env_id == env_id)).first()
    return found is not None


def free_agents(conn: Connection, env_id: str, agents: Iterable[str]) -> list[str]:
    """Of ``agents``, those that may claim work of ``env_id`` now: none while it is halted,
    else those not paused. One statement, both tables by their key (what an agent's claim asks
    in its own transaction)."""
    p = lsm_agent_pause
    holds = union_all(
        select(literal(None).label("agent")).where(lsm_halt.c.env_id == env_id),
        select(p.c.agent).where(p.c.env_id == env_id),
    )
    found = [r[0] for r in conn.execute(holds)]
    if None in found:
        return []
    return [a for a in agents if a not in found]


def held(conn: Connection) -> tuple[set[str], set[tuple[str, str]]]:
    """Every halted environment and every paused ``(env_id, agent)``: what an agent process
    leaves alone when it looks for work (both tables whole: a row per halt or pause)."""
    halted = {r[0] for r in conn.execute(select(lsm_halt.c.env_id))}
    p = lsm_agent_pause
    return halted, {(r[0], r[1]) for r in conn.execute(select(p.c.env_id, p.c.agent))}


def runnable(conn: Connection, names: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """``names`` (``(env_id, agent)``) less those of halted environments and paused agents."""
    halted, paused = held(conn)
    return {n for n in names if n[0] not in halted and n not in paused}


def halt(conn: Connection, env_id: str, *, actor: str | None, now: datetime) -> bool:
    """Halt ``env_id``; whether it was running (False: it was halted already, nothing changed)."""
    statement = (
        _insert(conn, lsm_halt)
        .values(env_id=env_id, halted_at=now, halted_by=actor)
        .on_conflict_do_nothing(index_elements=["env_id"])
        .returning(lsm_halt.c.env_id)  # a row only when inserted (rowcount is no proof on psycopg)
    )
    return conn.execute(statement).first() is not None


def resume(conn: Connection, env_id: str) -> bool:
    """Lift the halt of ``env_id`` and the pauses made during it that were not asked to stay;
    whether it was halted (False: nothing changed)."""
    if not conn.execute(delete(lsm_halt).where(lsm_halt.c.env_id == env_id)).rowcount:
        return False
    p = lsm_agent_pause
    conn.execute(delete(p).where(p.c.env_id == env_id, p.c.stay_paused.is_(False)))
    return True


def pause(
    conn: Connection, env_id: str, agent: str, *, actor: str | None, now: datetime, stay_paused: bool
) -> bool:
    """Pause ``agent`` of ``env_id``; whether anything changed.

    Outside a halt a pause is the agent's own and stays across halts and resumes. During a halt
    it stays only with ``stay_paused``; a second pause never shortens the first (asking to stay
    turns a pause that would end at the resume into one that stays)."""
    stays = stay_paused or not is_halted(conn, env_id)
    p = lsm_agent_pause
    inserted = (
        conn.execute(
            _insert(conn, p)
            .values(env_id=env_id, agent=agent, paused_at=now, paused_by=actor, stay_paused=stays)
            .on_conflict_do_nothing(index_elements=["env_id", "agent"])
            .returning(p.c.agent)
        ).first()
        is not None
    )
    if inserted or not stays:
        return inserted
    kept = conn.execute(
        update(p)
        .where(p.c.env_id == env_id, p.c.agent == agent, p.c.stay_paused.is_(False))
        .values(stay_paused=True)
    )
    return bool(kept.rowcount)


def unpause(conn: Connection, env_id: str, agent: str) -> bool:
    """Lift the pause of ``agent`` (a halt still holds it until the resume); whether it was paused."""
    p = lsm_agent_pause
    return bool(conn.execute(delete(p).where(p.c.env_id == env_id, p.c.agent == agent)).rowcount)


__all__ = [
    "HaltState",
    "Pause",
    "free_agents",
    "halt",
    "held",
    "is_halted",
    "lsm_agent_pause",
    "lsm_halt",
    "pause",
    "resume",
    "runnable",
    "state",
    "unpause",
]
