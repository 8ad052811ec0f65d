"""Concurrent partial exports of one environment are serialized on its head row, and each is
based on the latest stored version: none is lost, none shares a number."""

from __future__ import annotations

import threading

from lsm.desired_state import DesiredStateStore, ExportRequest, VersionInfo
from lsm.store.database import Database
from tests.desired_state import new_env, rec, rid_of

THREADS = 6
ROUNDS = 4


def test_concurrent_partial_exports_of_different_sets_all_land(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"base": [rec("b")]}, shared=[rec("s")]))
    results: dict[int, list[VersionInfo]] = {t: [] for t in range(THREADS)}
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        try:
            start.wait()
            for round_ in range(ROUNDS):
                request = ExportRequest(
                    "partial",
                    sets={f"set-{t}": [rec(f"t{t}-r{round_}", requires=("s",), round=round_)]},
                    shared=[rec("s"), rec(f"shared-{t}")],
                )
                results[t].append(store.export(env, request))
        except BaseException as exc:  # reported below, with the thread that raised it
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors

    numbers = sorted(info.number for infos in results.values() for info in infos)
    assert numbers == list(range(2, 2 + THREADS * ROUNDS))  # distinct, gap-free, after version 1
    for infos in results.values():
        assert [i.number for i in infos] == sorted(i.number for i in infos)  # strictly increasing per thread
        assert all(info.base == info.number - 1 for info in infos)  # each based on the latest

    latest = store.latest_version(env)
    assert latest == 1 + THREADS * ROUNDS
    content = store.content(env, latest)
    assert content.sets == {
        "base": [rid_of("b")],
        **{f"set-{t}": [rid_of(f"t{t}-r{ROUNDS - 1}")] for t in range(THREADS)},
    }
    assert content.shared == sorted([rid_of("s"), *(rid_of(f"shared-{t}") for t in range(THREADS))])
    assert store.get_version(env, latest).resource_count == 1 + THREADS + 1 + THREADS


def test_racing_first_full_exports_queue_up_instead_of_failing(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    infos: list[VersionInfo] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker(t: int) -> None:
        try:
            start.wait()
            infos.append(store.export(env, ExportRequest("full", sets={f"set-{t}": [rec(f"r{t}")]})))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert sorted(i.number for i in infos) == [1, 2, 3, 4]
    assert sorted((i.base or 0) for i in infos) == [0, 1, 2, 3]
