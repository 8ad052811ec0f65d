"""Fixtures of the webhook tests: a real receiver, and engines that deliver fast.

Engines come from ``tests/conftest.py``'s ``engine_factory`` (every configured backend); the
receiver listens on loopback, so the policy allows internal targets explicitly
(``allow_internal``: off by default, ``tests/webhooks/test_targets.py``); the
delivery policy is shortened (back-off of hundredths of a second, a short settle window) so
that retries happen within the test, never by sleeping: tests wait on what the receiver got.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lsm.schemas.webhooks import DeliveryPolicy
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
