"""Metaparameters are checked when a version is stored (docs/semantics.md §5): a value the deploy
engine could not honour is refused with a 400 naming the resource and the field, and nothing is
written, whichever kind of export carries it and whatever produced the record."""

from __future__ import annotations

from typing import Any

import pytest

from lsm.desired_state import DesiredStateStore, ExportRequest
from lsm.errors import InvalidMetaparameter
from lsm.store.database import Database
from tests.desired_state import new_env, rec, rid_of, snapshot

BAD: list[tuple[dict[str, Any], str]] = [
    ({"limit": 5.0}, "meta.burst"),  # a finite limit with no burst could never act
    ({"sema": ["db:0"]}, "meta.sema"),  # a semaphore of size 0
    ({"sema": [":2"]}, "meta.sema"),  # a semaphore with no id
    ({"retry": -2}, "meta.retry"),  # below -1 (for ever)
    ({"limit": 0.0, "burst": 1}, "meta.limit"),  # not a rate
    ({"retry": "often"}, "meta.retry"),  # a wrong type
    ({"frequency": 1}, "meta.frequency"),  # no such metaparameter
    ({"deletion": True}, "meta.deletion"),  # a deletion policy of the wrong type
    ({"deletion": "forget"}, "meta.deletion"),  # no such deletion policy
]


@pytest.fixture
def store(db: Database) -> DesiredStateStore:
    return DesiredStateStore(db)


@pytest.mark.parametrize(("meta", "field"), BAD, ids=[f"{f}:{sorted(m.items())}" for m, f in BAD])
@pytest.mark.parametrize("kind", ["full", "partial", "shared"])
def test_an_export_with_a_bad_metaparameter_is_refused_naming_the_resource_and_writes_nothing(
    db: Database, store: DesiredStateStore, meta: dict[str, Any], field: str, kind: str
) -> None:
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [rec("x")]}, shared=[rec("s")]))
    bad = rec("y", meta=meta)
    if kind == "shared":
        request = ExportRequest("partial", sets={}, shared=[bad])
    else:
        request = ExportRequest(kind, sets={"a": [rec("x")], "b": [bad]}, shared=[rec("s")])  # type: ignore[arg-type]  # "full" or "partial" here
    before = snapshot(db)

    with pytest.raises(InvalidMetaparameter) as info:
        store.export(env, request)

    assert info.value.status == 400 and info.value.kind == "invalid_metaparameter"
    assert info.value.details["resource"] == rid_of("y")
    assert info.value.details["field"] == field
    assert rid_of("y") in info.value.message
    assert snapshot(db) == before and store.latest_version(env) == 1


def test_good_metaparameters_are_stored_as_given(db: Database, store: DesiredStateStore) -> None:
    env = new_env(db)
    meta = {"limit": 2.0, "burst": 3, "sema": ["db:2", "api"], "retry": -1, "delay": 1.5, "noop": True}
    store.export(env, ExportRequest("full", sets={"a": [rec("x", meta=meta)]}, shared=[]))
    stored = {r.id: r.attributes for _, r in store.resources(env, 1)}
    assert stored[rid_of("x")]["meta"] == meta
