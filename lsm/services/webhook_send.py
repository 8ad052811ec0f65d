"""The webhook sender: claims due deliveries, POSTs them signed, retries with back-off.

Why a leased claim per delivery (``lsm.store.webhooks.statements.claim``): several runner threads,
and on PostgreSQL several processes, send at once; each delivery is held by one sender at a
time, and one whose sender died is due again once the lease ran out. A delivery is at least
once: a sender that dies after the receiver answered but before it recorded the answer sends
it again, so receivers de-duplicate by ``X-LSM-Delivery`` (the same id at every retry).

Outcome of an attempt: a 2xx answer is ``delivered``. Anything else (another status, a
refused connection, a timeout) is retried after ``policy.delay(attempts)`` seconds, until
``policy.max_attempts`` attempts or ``policy.max_age`` seconds, then the delivery is
``failed``. Every attempt is logged with its status code or error, and its duration
(``lsm_webhook_attempt``), never with the receiver's answer: what a receiver says is not the
sender's to keep (an internal service hit by a webhook would otherwise be read through the log).
The answer's body is not even read.

Targets: unless ``policy.allow_internal``, every attempt resolves the URL's host, refuses an
internal address and sends to the address it checked (``lsm.webhooks.targets``). A
redirect is followed only when it keeps the signed POST (307, 308), at most ``MAX_REDIRECTS``
times, each new target checked the same way; any other 3xx is a failed attempt.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urljoin

import httpx

from lsm.errors import WebhookTargetRefused
from lsm.schemas.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    DeliveryPolicy,
    signature,
)
from lsm.store.database import Database
from lsm.store.tables import utcnow
from lsm.store.transient import retry_transient
from lsm.store.webhooks import statements as store
from lsm.webhooks.targets import Resolver, pinned, system_resolver

log = logging.getLogger(__name__)

#: the most characters of an error kept per attempt
ERROR_CHARS = 500
#: redirects (307/308) one attempt follows
MAX_REDIRECTS = 3


def body_of(payload: dict[str, Any]) -> bytes:
    """The exact bytes sent (and signed): compact, keys sorted, the same at every retry."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


class _Send:
    """One claimed delivery: the sender's unit of work."""

    def __init__(self, sender: WebhookSender, claimed: store.Claimed) -> None:
        self.sender = sender
        self.claimed = claimed
        self.label = f"webhook delivery {claimed.delivery_id}"
        self._deadline = time.monotonic() + sender.policy.timeout * 2 + 5

    def run(self) -> None:
        try:
            self.sender.send(self.claimed)
        finally:
            self.sender.finished()

    def deadline(self) -> float | None:
        return self._deadline

    def expire(self) -> None:
        return None  # its lease runs out: another sender takes it


class WebhookSender:
    """A ``WorkSource`` of the service loop: one due delivery per claim."""

    name = "webhook-sender"

    def __init__(
        self,
        db: Database,
        policy: DeliveryPolicy,
        owner: str,
        *,
        clock: Callable[[], datetime] = utcnow,
        transport: httpx.BaseTransport | None = None,
        resolve: Resolver = system_resolver,
    ) -> None:
        self.db = db
        self.resolve = resolve
        self.policy = policy
        self.owner = owner
        self.clock = clock
        self._transport = transport
        self._http: httpx.Client | None = None
        self._http_lock = threading.Lock()
        self._closed = False
        self._lock = threading.Lock()
        self._sending = 0
        #: no look before this (``time.monotonic``): the last one found nothing pending
        self._idle_until = 0.0
        self._wakes = 0

    def claim(self) -> _Send | None:
        """One due delivery, unless ``policy.concurrency`` sends of this process are running.

        When the last look found no pending delivery at all, the next look waits
        ``policy.poll_interval`` seconds or a ``wake`` (a delivery queued in this process).
        Why: the service loop asks every source at every wake-up, and under a burst of changes
        that was a read transaction per runner thread every few milliseconds, a visible share
        of a worker's time, for a table that is empty unless webhooks are registered. A delivery
        queued by another process waits at most ``poll_interval`` for this one (its own sender
        has it).
        """
        if time.monotonic() < self._idle_until:
            return None
        with self._lock:
            if self._sending >= self.policy.concurrency:
                return None
            self._sending += 1
        try:
            claimed = self._claim()
        except BaseException:
            self.finished()
            raise
        if claimed is None:
            self.finished()
            return None
        return _Send(self, claimed)

    def finished(self) -> None:
        with self._lock:
            self._sending -= 1

    def wake(self) -> None:
        """A delivery was queued: look at the next claim, not after the idle wait."""
        with self._lock:
            self._wakes += 1
            self._idle_until = 0.0

    def _claim(self) -> store.Claimed | None:
        now = self.clock()
        wakes = self._wakes
        with self.db.read() as session:  # a read first: a write transaction per poll would
            first = store.first_pending(session.connection(), now=now)  # queue behind writers
        if first is None:
            with self._lock:
                if self._wakes == wakes:  # not woken meanwhile: what woke it may be unseen here
                    self._idle_until = time.monotonic() + self.policy.poll_interval
            return None
        if not first[1]:
            return None  # pending, not due yet: looked at again at every claim
        with self.db.write() as session:
            return store.claim(
                session.connection(),
                self.owner,
                now=now,
                lease=self.policy.lease,
                skip_locked=not self.db.is_sqlite,
            )

    def heartbeat(self, running: Sequence[Any]) -> None:
        ids = [w.claimed.delivery_id for w in running if isinstance(w, _Send)]

        def extend() -> None:
            with self.db.write() as session:
                store.extend(session.connection(), ids, self.owner, now=self.clock(), lease=self.policy.lease)

        retry_transient(extend, what="renewing webhook delivery leases", logger=log)

    def release(self, running: Sequence[Any]) -> None:
        ids = [w.claimed.delivery_id for w in running if isinstance(w, _Send)]

        def give_back() -> None:
            with self.db.write() as session:
                store.give_back(session.connection(), ids, self.owner, now=self.clock())

        retry_transient(give_back, what="giving webhook deliveries back", logger=log)

    @property
    def http(self) -> httpx.Client:
        """The HTTP client, made at the first delivery: making one loads the system's CA
        certificates, a cost every process would pay at start though most never send a webhook."""
        with self._http_lock:
            if self._closed:
                raise RuntimeError("the webhook sender is closed")
            if self._http is None:
                self._http = httpx.Client(
                    timeout=self.policy.timeout, follow_redirects=False, transport=self._transport
                )
            return self._http

    def close(self) -> None:
        with self._http_lock:
            self._closed = True
            if self._http is not None:
                self._http.close()

    def send(self, claimed: store.Claimed) -> store.Outcome:
        """POST ``claimed`` once and record the outcome (never raises for the receiver's errors)."""
        body = body_of(claimed.payload)
        sent_at = self.clock()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "lsm-engine-webhooks",
            SIGNATURE_HEADER: signature(claimed.secret, body),
            DELIVERY_HEADER: claimed.delivery_id,
            EVENT_HEADER: claimed.event_kind,
            TIMESTAMP_HEADER: sent_at.isoformat(),
        }
        started = time.monotonic()
        status_code: int | None = None
        error: str | None = None
        try:
            status_code, error = self.post(claimed.url, body, headers)
        except WebhookTargetRefused as exc:
            error = f"refused: {exc}"[:ERROR_CHARS]
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
        duration_ms = (time.monotonic() - started) * 1000
        outcome = self.outcome(claimed, status_code, error, duration_ms)

        def record() -> bool:  # fenced by the lease: recording it twice is harmless
            with self.db.write() as session:
                return store.record(
                    session.connection(), claimed.delivery_id, self.owner, outcome, now=self.clock()
                )

        recorded = retry_transient(record, what=f"recording {claimed.delivery_id}", logger=log)
        if not recorded:
            log.warning("%s: its lease was taken over; the outcome was not recorded", claimed.delivery_id)
        return outcome

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str | None]:
        """POST ``body`` to ``url``, following 307/308 redirects to checked targets; the last
        status code and, unless it is a 2xx, what was wrong (never the answer's body)."""
        for _ in range(MAX_REDIRECTS + 1):
            target = pinned(url, allow_internal=self.policy.allow_internal, resolve=self.resolve)
            request = self.http.build_request(
                "POST", target.url, content=body, headers={**headers, **target.headers}
            )
            request.extensions.update(target.extensions)
            response = self.http.send(request, stream=True)
            response.close()  # the status is all that is kept: the body is never read
            status = response.status_code
            location = response.headers.get("location")
            if 200 <= status < 300:
                return status, None
            if status not in (307, 308) or not location:
                if 300 <= status < 400:
                    return status, f"HTTP {status}: redirect not followed (only 307 and 308 keep the POST)"
                return status, f"HTTP {status}"
            url = urljoin(url, location)
        return status, f"HTTP {status}: more than {MAX_REDIRECTS} redirects"

    def outcome(
        self, claimed: store.Claimed, status_code: int | None, error: str | None, duration_ms: float
    ) -> store.Outcome:
        """Delivered on 2xx; else a retry after the back-off, or ``failed`` past the limits."""
        now = self.clock()
        if error is None:
            return store.Outcome("delivered", status_code, None, duration_ms, now)
        attempts = claimed.attempts + 1
        retry_at = now + timedelta(seconds=self.policy.delay(attempts))
        too_old = retry_at - claimed.created_at > timedelta(seconds=self.policy.max_age)
        status = "failed" if attempts >= self.policy.max_attempts or too_old else "pending"
        return store.Outcome(
            status, status_code, error, duration_ms, retry_at if status == "pending" else now
        )
