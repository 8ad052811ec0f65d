"""Fixtures of the webhook tests: a real receiver, and engines that deliver fast.

Engines come from ``tests/conftest.py``'s ``engine_factory`` (every configured backend); the
receiver listens on loopback, so the policy allows internal targets explicitly
(``allow_internal``: off by default, ``tests/webhooks/test_targets.py``); the
delivery policy is shortened (back-off of hundredths of a second, a short settle window) so
that retries happen within the test, never by sleeping: tests wait on what the receiver got.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from lsm.schemas.webhooks import DeliveryPolicy
from lsm.store.database import Database
from lsm.store.webhooks import statements as store
from tests.webhooks.receiver import Receiver, running_receiver

FILE_MODEL = "tests.deploy.file_model"


def fast_policy(**changes: Any) -> DeliveryPolicy:
    values: dict[str, Any] = {
        "timeout": 5.0,
        "backoff": 0.02,
        "backoff_max": 0.2,
        "poll_interval": 0.05,
        "settle": 0.3,
        "lease": 30.0,
        "allow_internal": True,
    }
    return DeliveryPolicy(**{**values, **changes})


def fast_config(tmp_path: Any, **policy: Any) -> dict[str, Any]:
    """``ServerConfig`` fields of an engine that dispatches and retries within a test."""
    return {"webhooks": fast_policy(**policy), "poll_interval": 0.05, "state_dir": str(tmp_path / "state")}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def queue_pings(db: Database, url: str, count: int) -> tuple[str, list[str]]:
    """A webhook row for ``url`` (as registration would store it, unchecked) with ``count``
    pings queued, due now; its id and the deliveries' ids."""
    now = datetime.now(UTC)
    with db.write() as session:
        conn = session.connection()
        row = store.create(
            conn,
            env_id="env",
            url=url,
            events=["instance_state"],
            secret="x" * 20,
            cursor="0///0",
            created_by=None,
            now=now,
        )
        deliveries = [
            store.NewDelivery("ping", f"ping:{i}", {"i": i}, str(uuid.uuid4())) for i in range(count)
        ]
        store.insert_deliveries(conn, row["id"], deliveries, env_id="env", now=now)
    return str(row["id"]), [d.delivery_id for d in deliveries]
