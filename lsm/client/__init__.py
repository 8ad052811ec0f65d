"""The Python client of the lsm-engine API (sync and async), on httpx with tenacity retries.

Imports nothing of the server side: it talks HTTP only, and raises ``lsm.errors`` classes.
"""

from lsm.client.client import DEFAULT_URL, ENVIRONMENT_HEADER, AsyncClient, Client
from lsm.client.errors import error_from_response
from lsm.client.retry import DEFAULT_RETRY, NO_RETRY, RetryPolicy
from lsm.client.webhooks import verify_signature

__all__ = [
    "DEFAULT_RETRY",
    "DEFAULT_URL",
    "ENVIRONMENT_HEADER",
    "NO_RETRY",
    "AsyncClient",
    "Client",
    "RetryPolicy",
    "error_from_response",
    "verify_signature",
]
