"""``RetryPolicy``: when the client tries a request again, and how long it waits in between.

Why so narrow: every mutating request of the API carries ``current_version`` and is answered
409 when it is stale, 422 when it is invalid; repeating those can only repeat the answer, or
worse, apply a change twice. So only failures where the server certainly did not act, or says
it could not yet, are retried:

* ``httpx.ConnectError`` / ``httpx.ConnectTimeout``: the request never reached the server;
* ``httpx.RemoteProtocolError``: the connection broke mid-answer; retried only for idempotent
  methods (GET, HEAD, OPTIONS, PUT, DELETE), because a POST or PATCH may have been applied,
  and for a create that carries an ``Idempotency-Key`` (the server answers a retry with the
  first answer: the client keeps the key across its retries);
* a status in ``retry_statuses`` (503 by default: the engine is starting).

Never a 4xx: the constructor refuses a policy that would retry one.

Example::

    Client(url, retry=RetryPolicy(attempts=10, max_wait=2.0))
    Client(url, retry=NO_RETRY)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
import tenacity
from tenacity import (
    RetryCallState,
    retry_if_exception,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@dataclass(frozen=True)
class RetryPolicy:
    """A bounded exponential back-off: waits ``initial_wait * 2**n`` (capped at ``max_wait``) plus
    up to ``jitter`` seconds, for at most ``attempts`` tries in total (1 = no retry)."""

    attempts: int = 5
    initial_wait: float = 0.1
    max_wait: float = 5.0
    jitter: float = 0.1
    retry_statuses: frozenset[int] = field(default_factory=lambda: frozenset({503}))

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if min(self.initial_wait, self.max_wait, self.jitter) < 0:
            raise ValueError("waits must not be negative")
        client_errors = sorted(s for s in self.retry_statuses if s < 500)
        if client_errors:
            raise ValueError(f"a 4xx answer is final and is never retried: {client_errors}")

    def retries_exception(self, exc: BaseException, method: str, *, idempotent: bool = False) -> bool:
        """Whether a transport error on a ``method`` request is worth another try
        (``idempotent``: the request is safe to repeat whatever its method)."""
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return True
        return isinstance(exc, httpx.RemoteProtocolError) and (
            idempotent or method.upper() in IDEMPOTENT_METHODS
        )

    def retries_response(self, response: httpx.Response) -> bool:
        """Whether an answer is worth another try (a status in ``retry_statuses``)."""
        return response.status_code in self.retry_statuses

    def _arguments(self, method: str, idempotent: bool) -> dict[str, Any]:
        return {
            "stop": stop_after_attempt(self.attempts),
            "wait": wait_exponential(multiplier=self.initial_wait, max=self.max_wait)
            + wait_random(0, self.jitter),
            "retry": retry_if_exception(
                lambda exc: self.retries_exception(exc, method, idempotent=idempotent)
            )
            | retry_if_result(self.retries_response),
            # When tries are spent: the last response (a 503 goes on to become an error) or the
            # last exception, never tenacity's RetryError wrapper.
            "retry_error_callback": _last_outcome,
        }

    def retrying(self, method: str, *, idempotent: bool = False) -> tenacity.Retrying:
        """A tenacity controller for one synchronous request with ``method``."""
        return tenacity.Retrying(**self._arguments(method, idempotent))

    def async_retrying(self, method: str, *, idempotent: bool = False) -> tenacity.AsyncRetrying:
        """A tenacity controller for one asynchronous request with ``method``."""
        return tenacity.AsyncRetrying(**self._arguments(method, idempotent))


def _last_outcome(state: RetryCallState) -> Any:
    assert state.outcome is not None
    return state.outcome.result()


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(attempts=1)
