"""Webhooks: registering a receiver, its deliveries, the delivery policy, and the signature.

Why the signature lives here (the bottom layer): the server signs each delivery and a
receiver verifies it (``lsm.client.verify_signature``); both must compute exactly the same
thing, and the client may import nothing but ``lsm.schemas`` and ``lsm.errors``.

A delivery is an HTTP ``POST`` of a JSON body (``{"delivery", "environment", "event",
"data", "created_at"}``) with the headers below. ``X-LSM-Signature`` is
``sha256=<hex HMAC-SHA256(secret, body bytes)>``; the body is the same bytes at every retry.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from lsm.schemas.deploy import ResourceStatus
from lsm.schemas.events import DEPLOY_OUTCOME

SIGNATURE_HEADER = "X-LSM-Signature"
DELIVERY_HEADER = "X-LSM-Delivery"
EVENT_HEADER = "X-LSM-Event"
TIMESTAMP_HEADER = "X-LSM-Timestamp"
#: the event filter that keeps only deploy outcomes with status ``failed``
DEPLOY_FAILED = "deploy_failed"
#: what a webhook may ask for: the stream's kinds, and failed deploys only
WebhookEvent = Literal["instance_state", "compile_finished", "deploy_outcome", "deploy_failed"]
#: what a webhook gets when it names no events: the issue's "state changes, compile outcomes,
#: deploy failures"
DEFAULT_EVENTS: tuple[WebhookEvent, ...] = ("instance_state", "compile_finished", "deploy_failed")
MAX_URL_LENGTH = 2000


def signature(secret: str, body: bytes) -> str:
    """The ``X-LSM-Signature`` value of ``body``: ``sha256=<hex HMAC-SHA256(secret, body)>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def matches(events: list[str], kind: str, status: str | None) -> bool:
    """Whether a webhook asking for ``events`` wants a feed item of ``kind`` (``status``: a deploy's)."""
    if kind in events:
        return True
    return kind == DEPLOY_OUTCOME and status == ResourceStatus.FAILED and DEPLOY_FAILED in events


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    if any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise ValueError("must not contain spaces or control characters")
    return value


class CreateWebhook(BaseModel):
    """``POST /api/v1/webhooks``: the receiver, the events it wants, and (optionally) its secret."""

    model_config = ConfigDict(extra="forbid")

    url: Annotated[str, Field(max_length=MAX_URL_LENGTH), AfterValidator(_http_url)]
    events: list[WebhookEvent] = Field(default_factory=lambda: list(DEFAULT_EVENTS), min_length=1)
    #: the HMAC key; generated when not given (returned once, in the creation's answer)
    secret: str | None = Field(None, min_length=16, max_length=200, pattern=r"^[\x21-\x7e]+$")


class WebhookOut(BaseModel):
    """A registered webhook; never its secret."""

    id: str
    url: str
    events: list[str]
    active: bool
    created_at: datetime
    created_by: str | None


class WebhookCreated(WebhookOut):
    """The answer to a creation: the only place the secret is ever shown."""

    secret: str


class AttemptOut(BaseModel):
    """One HTTP attempt of a delivery: the receiver's status code, or why there was none."""

    attempted_at: datetime
    status_code: int | None
    error: str | None
    duration_ms: float


class DeliveryOut(BaseModel):
    """One event for one webhook: ``pending`` (retrying), ``delivered``, ``failed`` (given up) or
    ``cancelled`` (its webhook was removed), with its attempts, newest last."""

    id: str
    webhook_id: str
    event: str
    event_key: str
    status: str
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None
    payload: dict[str, object]
    attempt_log: list[AttemptOut] = []


class DeliveryPolicy(BaseModel):
    """How deliveries are sent and retried (``[webhooks]`` of the server configuration).

    The wait before retry ``n`` (1-based) is ``backoff * 2**(n-1)``, at most ``backoff_max``;
    a delivery is given up (``failed``) after ``max_attempts`` attempts or once it is older
    than ``max_age`` seconds, whichever comes first.
    """

    model_config = ConfigDict(extra="forbid")

    timeout: float = Field(10.0, gt=0, le=300)
    backoff: float = Field(5.0, gt=0, le=3600)
    backoff_max: float = Field(600.0, gt=0, le=86400)
    max_attempts: int = Field(20, ge=1, le=1000)
    max_age: float = Field(86400.0, gt=0, le=30 * 86400)
    #: seconds between two looks at the event feed for new events
    poll_interval: float = Field(1.0, gt=0, le=60)
    #: PostgreSQL only: how long a feed position that a committing transaction could still
    #: fill is waited for before the items after it go (``lsm.facade.holdback``); SQLite
    #: commits in id order
    settle: float = Field(2.0, ge=0, le=60)
    #: seconds a sender holds a claimed delivery before another may take it over
    lease: float = Field(60.0, ge=1, le=3600)
    #: deliveries one process sends at once: the runner threads are shared with compiles and
    #: deploys, and a receiver that hangs until the timeout must not hold all of them
    concurrency: int = Field(2, ge=1, le=64)
    #: let webhooks reach internal addresses (loopback, link-local, private ranges...): off, a
    #: target on one is refused at registration and at every delivery
    #: (``lsm.webhooks.targets``)
    allow_internal: bool = False

    def delay(self, attempts: int) -> float:
        """Seconds before the next attempt, after ``attempts`` failed ones."""
        return float(min(self.backoff_max, self.backoff * 2.0 ** min(60, max(0, attempts - 1))))
