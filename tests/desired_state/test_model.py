"""Random sequences of partial exports against a plain in-memory model of the desired state.

The model is a dict ``set name -> {id: record}`` plus a dict of shared records; a partial
export replaces, deletes or adds to it as docs/semantics.md §4 says, or is rejected (the
model then predicts the rule). After every step the store's latest version must equal the
model; at the end every version ever stored must still read back as the model was then, also
after retention removed the oldest ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.errors import ExportRuleViolation, UnknownVersion
from lsm.store.database import Database
from tests.desired_state import new_env, rec

SET_NAMES = ["a", "b", "c", "d"]
RESOURCES = [f"r{i}" for i in range(8)]
SHARED = ["s0", "s1", "s2"]  # attributes fixed per id: a partial export never changes them


@dataclass
class Model:
    sets: dict[str, dict[str, ResourceRecord]] = field(default_factory=dict)
    shared: dict[str, ResourceRecord] = field(default_factory=dict)

    def placement(self) -> dict[str, str]:
        return {rid: name for name, records in self.sets.items() for rid in records}

    def state(self) -> dict[str | None, dict[str, ResourceRecord]]:
        found: dict[str | None, dict[str, ResourceRecord]] = {n: dict(r) for n, r in self.sets.items()}
        if self.shared:
            found[None] = dict(self.shared)
        return found

    def copy(self) -> Model:
        return Model({n: dict(r) for n, r in self.sets.items()}, dict(self.shared))


def shared_record(short: str) -> ResourceRecord:
    return rec(short, kind="shared")


def read(store: DesiredStateStore, env: str, number: int) -> dict[str | None, dict[str, ResourceRecord]]:
    found: dict[str | None, dict[str, ResourceRecord]] = {}
    for name, record in store.resources(env, number):
        found.setdefault(name, {})[record.id] = record
    return found


def draw_set(data: st.DataObject, shared_ids: list[str]) -> list[ResourceRecord]:
    """A set of 0-3 resources; each may require a member of its own set or a stored shared one."""
    members = data.draw(st.lists(st.sampled_from(RESOURCES), max_size=3, unique=True))
    records = []
    for short in members:
        targets = [m for m in members if m != short] + shared_ids
        requires = data.draw(st.lists(st.sampled_from(targets), max_size=2, unique=True)) if targets else []
        records.append(rec(short, requires=tuple(requires), v=data.draw(st.integers(0, 3))))
    return records


def expected_rules(model: Model, request: ExportRequest) -> set[int]:
    """The rules ``request`` breaks against ``model`` (only rules 1 and 3 can occur here)."""
    rules: set[int] = set()
    nonempty = {name for name, records in request.sets.items() if records}
    if set(request.deleted_sets) & nonempty and not request.soft_delete:
        rules.add(3)
    touched = set(request.sets) | set(request.deleted_sets)
    seen: dict[str, str] = {}
    stored = model.placement()
    for name, records in request.sets.items():
        for record in records:
            if seen.setdefault(record.id, name) != name:
                rules.add(1)
            old = stored.get(record.id)
            if old is not None and old != name and old not in touched:
                rules.add(1)
    return rules


def _moves(model: Model, request: ExportRequest) -> bool:
    stored = model.placement()
    return any(stored.get(r.id, name) != name for name, records in request.sets.items() for r in records)


def apply(model: Model, request: ExportRequest) -> Model:
    new = model.copy()
    nonempty = {name for name, records in request.sets.items() if records}
    for name in set(request.deleted_sets) - nonempty:
        new.sets.pop(name, None)
    for name, records in request.sets.items():
        if records:
            new.sets[name] = {r.id: r for r in records}
        else:
            new.sets.pop(name, None)
    for record in request.shared:
        new.shared.setdefault(record.id, record)
    return new


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_partial_exports_match_the_model(db: Database, data: st.DataObject) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    first = ExportRequest("full", sets={"a": [rec("r0", requires=("s0",))]}, shared=[shared_record("s0")])
    model = apply(Model(), first)
    history = {store.export(env, first).number: model}

    for _ in range(data.draw(st.integers(1, 8), label="steps")):
        names = data.draw(st.lists(st.sampled_from(SET_NAMES), min_size=0, max_size=2, unique=True))
        request = ExportRequest(
            "partial",
            sets={name: draw_set(data, sorted(model.shared)) for name in names},
            shared=[
                shared_record(s)
                for s in data.draw(st.lists(st.sampled_from(SHARED), max_size=2, unique=True))
            ],
            deleted_sets=data.draw(st.lists(st.sampled_from(SET_NAMES), max_size=1)),
            soft_delete=data.draw(st.booleans()),
        )
        rules = expected_rules(model, request)
        latest = store.latest_version(env)
        if rules:
            try:
                store.export(env, request)
            except ExportRuleViolation as error:
                assert error.details["rule"] == min(rules), error.message
                event(f"rejected by rule {min(rules)}")
            else:
                raise AssertionError(f"accepted an export breaking rules {rules}: {request}")
            assert store.latest_version(env) == latest
        else:
            info = store.export(env, request)
            event("accepted, moving a resource" if _moves(model, request) else "accepted")
            model = apply(model, request)
            history[info.number] = model
            assert info.resource_count == sum(len(r) for r in model.sets.values()) + len(model.shared)
        number = store.latest_version(env)
        assert number is not None
        assert read(store, env, number) == history[number].state()

    for number, snapshot in history.items():
        assert read(store, env, number) == snapshot.state()
    keep = data.draw(st.integers(1, len(history)), label="keep")
    store.collect_garbage(env, keep)
    kept = sorted(history)[-keep:]
    for number, snapshot in history.items():
        if number in kept:
            assert read(store, env, number) == snapshot.state()
            assert store.content(env, number).sets == {n: sorted(r) for n, r in sorted(snapshot.sets.items())}
        else:
            try:
                store.content(env, number)
            except UnknownVersion:
                pass
            else:
                raise AssertionError(f"version {number} survived retention keeping {keep}")
