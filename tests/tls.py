"""One default TLS context per test process, shared by every httpx client the tests create.

Why: httpx builds a new ``ssl.SSLContext`` for each client and loads the whole certifi bundle
into it (``load_verify_locations``), about 30 ms of CPU every time. The tests create thousands
of clients (every served engine's raw client, every ``lsm.client.Client``, every CLI
invocation) and almost all of them only ever speak plain HTTP to 127.0.0.1, so that load was a
noticeable share of the whole run's CPU. httpx documents passing one shared context to many
clients as the way to avoid this cost; the tests cannot pass it at each of those places (most
are inside ``lsm``), so the default one is made once and handed out again.

Only the default (``verify=True``, no client certificate) is shared, and only while the
``SSL_CERT_FILE``/``SSL_CERT_DIR`` variables that select its trust store are unchanged; any
other choice is built as httpx builds it.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx
import httpx._transports.default as _transports

#: the name httpx's transports call (imported from ``httpx._config``, public as ``httpx.create_ssl_context``)
_NAME = "create_ssl_context"
_create = httpx.create_ssl_context


@functools.cache
def _default(cert_file: str | None, cert_dir: str | None, trust_env: bool) -> ssl.SSLContext:
    return _create(verify=True, cert=None, trust_env=trust_env)


def _shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None:
        return _default(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"), trust_env)
    return _create(verify=verify, cert=cert, trust_env=trust_env)


def share_default_context() -> None:
    """Make httpx's transports take the shared default context (idempotent)."""
    # if a new httpx no longer calls this name, fail loudly here rather than silently paying
    # the cost again
    assert getattr(_transports, _NAME, None) in (_create, _shared), f"httpx no longer calls {_NAME}"
    setattr(_transports, _NAME, _shared)
