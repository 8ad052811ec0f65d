"""The delivery signature and the delivery policy: invariants, checked with Hypothesis."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsm.client import verify_signature
from lsm.errors import ConfigurationError
from lsm.runtime.config import load_config
from lsm.schemas.webhooks import DeliveryPolicy, signature
from lsm.services.webhook_send import body_of

secrets_ = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=16, max_size=64)


@given(secret=secrets_, body=st.binary(max_size=2000))
def test_a_signature_verifies_with_its_secret_and_body_only(secret: str, body: bytes) -> None:
    header = signature(secret, body)
    assert header == "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert verify_signature(secret, body, header)
    assert not verify_signature(secret + "x", body, header)
    assert not verify_signature(secret, body + b"\n", header)
    assert not verify_signature(secret, body, None) and not verify_signature(secret, body, "")


@given(payload=st.dictionaries(st.text(max_size=10), st.integers() | st.text(max_size=20), max_size=8))
def test_the_body_is_the_same_bytes_whatever_the_key_order(payload: dict[str, object]) -> None:
    assert body_of(payload) == body_of(dict(reversed(list(payload.items()))))


@given(
    backoff=st.floats(0.01, 3600),
    cap=st.floats(0.01, 86400),
    attempts=st.integers(0, 1000),
)
def test_the_backoff_grows_and_never_passes_its_cap(backoff: float, cap: float, attempts: int) -> None:
    policy = DeliveryPolicy(backoff=backoff, backoff_max=cap, max_attempts=1000)
    assert 0 < policy.delay(attempts) <= cap
    assert policy.delay(attempts) <= policy.delay(attempts + 1)
    assert policy.delay(1) == min(cap, backoff)


def test_the_policy_is_the_webhooks_table_of_lsm_toml(tmp_path: Path) -> None:
    (tmp_path / "lsm.toml").write_text("[webhooks]\nbackoff = 1.5\nmax_attempts = 3\n")
    config = load_config(tmp_path / "lsm.toml")
    assert (config.webhooks.backoff, config.webhooks.max_attempts, config.webhooks.timeout) == (1.5, 3, 10.0)

    (tmp_path / "lsm.toml").write_text("[webhooks]\nbackoff = -1\n")
    with pytest.raises(ConfigurationError, match=r"webhooks\.backoff"):
        load_config(tmp_path / "lsm.toml")
