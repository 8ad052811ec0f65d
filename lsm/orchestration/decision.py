"""``Decision``: what deciding a command concluded, before anything is written.

Why a value of its own: a command is decided by reading (``lsm.orchestration.decide``) and
written by one commit (``lsm.orchestration.commit``). Between the two sits this record: the
instance rows the decision relied on and the version each was read at (the commit's check),
the lifecycle steps taken (new column values per instance), the instances created, the relation
index changes, the event lines, the compile requests and the audit and adoption records. The
same record is written whether it was decided on a read snapshot before the write lock or in
the write transaction itself.

Steps are taken on the loaded rows at once (``repository.take_step``, so a later command of the
same decision sees them); ``mark`` and ``undo_to`` put the rows and the record back where they
stood, for a chain of automatic transfers that is refused part way (``lsm.orchestration.chain``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from lsm.orchestration.commands import SYSTEM, Origin
from lsm.store.instances import repository as repo
from lsm.store.instances.repository import STEP_COLUMNS
from lsm.store.tables import InstanceRow


@dataclass
class Outcome:
    """What one command did: the instance after it, and whether compiles were requested."""

    instance: InstanceRow
    executed: bool = False
    compiles: list[str] = field(default_factory=list)
    #: who it was done for (a validation outcome learns its request id from the compile row)
    origin: Origin = SYSTEM


@dataclass
class _Mark:
    """Where a decision stood (``Decision.mark``): list lengths, and what was changed since."""

    lengths: tuple[int, int, int, int, int, int]
    created: set[str]
    #: instance id -> its step columns (rows) / pending step values (steps) at the mark
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: dict[str, dict[str, Any] | None] = field(default_factory=dict)


@dataclass
class Decision:
    """The writes one decision holds, and the row versions they rest on."""

    #: instance id -> the version it was read at: the commit writes only while all still hold
    guards: dict[str, int] = field(default_factory=dict)
    #: every existing instance row read (by id), as loaded and stepped in memory
    rows: dict[str, InstanceRow] = field(default_factory=dict)
    #: instances to insert (their values as decided, steps included)
    created: dict[str, InstanceRow] = field(default_factory=dict)
    #: instance id -> the columns its steps changed (one UPDATE each at the commit)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: relation index changes, in order: (environment, instance id, its relations, what the
    #: index holds now if known)
    references: list[tuple[str, str, set[tuple[str, str]], set[tuple[str, str]] | None]] = field(
        default_factory=list
    )
    events: list[dict[str, Any]] = field(default_factory=list)
    compiles: list[dict[str, Any]] = field(default_factory=list)
    #: the ids of ``compiles``, in order
    compile_ids: list[str] = field(default_factory=list)
    #: keyword arguments of ``audit.record`` (expert calls) and of ``claim_adoption``
    audits: list[dict[str, Any]] = field(default_factory=list)
    adoptions: list[dict[str, Any]] = field(default_factory=list)
    _mark: _Mark | None = None

    def saw(self, row: InstanceRow) -> None:
        """``row`` was read at its version (the first read counts)."""
        if row.id not in self.created:
            self.guards.setdefault(row.id, row.version)
            self.rows.setdefault(row.id, row)

    def take_step(self, row: InstanceRow, values: dict[str, Any]) -> None:
        """``row`` takes a lifecycle step's new ``values`` now (in memory; written by the commit)."""
        mark = self._mark
        if mark is not None and row.id not in mark.rows:
            mark.rows[row.id] = {name: getattr(row, name) for name in STEP_COLUMNS}
            held = self.steps.get(row.id)
            mark.steps[row.id] = None if held is None else dict(held)
        repo.take_step(row, values)
        if row.id not in self.created:  # a new row is inserted with its values as they end
            self.steps.setdefault(row.id, {}).update(values)  # a second step adds to the first

    def mark(self) -> None:
        """Remember where the decision stands (``undo_to`` returns there)."""
        lengths = (
            len(self.references),
            len(self.events),
            len(self.compiles),
            len(self.compile_ids),
            len(self.audits),
            len(self.adoptions),
        )
        self._mark = _Mark(lengths, set(self.created))

    def undo_to_mark(self) -> None:
        """Forget what was decided since ``mark``, the rows' steps included."""
        mark, self._mark = self._mark, None
        assert mark is not None, "undo_to_mark without a mark"
        refs, events, compiles, ids, audits, adoptions = mark.lengths
        del self.references[refs:]
        del self.events[events:]
        del self.compiles[compiles:]
        del self.compile_ids[ids:]
        del self.audits[audits:]
        del self.adoptions[adoptions:]
        for instance_id, values in mark.rows.items():
            row = self.created.get(instance_id) or self.rows[instance_id]
            repo.take_step(row, values)
        for instance_id, held in mark.steps.items():
            if held is None:
                self.steps.pop(instance_id, None)
            else:
                self.steps[instance_id] = held
        for instance_id in set(self.created) - mark.created:
            del self.created[instance_id]

    def keep(self) -> None:
        """What was decided since ``mark`` stands."""
        self._mark = None

    def forget(self, session: Session) -> None:
        """The commit found a version moved: the rows read are reloaded when next read."""
        for row in self.rows.values():
            if row in session:
                session.expire(row)
