"""``lsm.store.deploy.claims``: conflicts are retried (and only they), rows are locked in id order.

The retry is what makes a deadlocked result write or give-back harmless where the lock order
can not rule one out; anything else must fail at once, never be repeated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from sqlalchemy.exc import OperationalError

from lsm.store.deploy import claims as deploy_claims


class _Orig(Exception):
    def __init__(self, sqlstate: str | None) -> None:
        super().__init__(f"sqlstate {sqlstate}")
        self.sqlstate = sqlstate


def failing(times: int, sqlstate: str | None) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def transaction() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise OperationalError("UPDATE ...", {}, _Orig(sqlstate))
        return "written"

    return calls, transaction


@pytest.mark.parametrize("sqlstate", deploy_claims.CONFLICTS)
def test_a_conflict_is_run_again_and_each_retry_is_logged(
    sqlstate: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lsm.store.deploy.claims.time.sleep", lambda _s: None)
    calls, transaction = failing(2, sqlstate)
    with caplog.at_level(logging.WARNING, logger=deploy_claims.__name__):
        assert deploy_claims.retry_conflicts(transaction, "a result write") == "written"
    assert len(calls) == 3
    assert [r.getMessage().count("deadlock") for r in caplog.records] == [1, 1]


def test_other_errors_and_the_last_try_are_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lsm.store.deploy.claims.time.sleep", lambda _s: None)
    calls, transaction = failing(1, "23505")  # a unique violation: the content, not a conflict
    with pytest.raises(OperationalError):
        deploy_claims.retry_conflicts(transaction, "a give-back")
    assert len(calls) == 1
    calls, transaction = failing(deploy_claims.TRIES, "40P01")
    with pytest.raises(OperationalError):
        deploy_claims.retry_conflicts(transaction, "a give-back")
    assert len(calls) == deploy_claims.TRIES
