"""The ``Host`` check: the server answers only to the names it is known by.

Why: with authentication off every caller may do everything, and the only guard is that the
server listens on loopback. DNS rebinding walks around that guard: a page of ``evil.example``
has its name re-pointed at ``127.0.0.1`` and, being same-origin with itself, drives the API
with the browser of someone on this machine. Its requests still say ``Host: evil.example``,
so a server that answers only to its own names refuses them (the same defence as Django's
``ALLOWED_HOSTS`` or the Docker and Jupyter APIs).

Which names (``allowed_names``):

* with authentication off, the loopback names ``localhost``, ``127.0.0.1`` and ``[::1]``, plus
  what ``allowed_hosts`` of the configuration lists and the address the server listens on;
* with authentication on, the same when ``allowed_hosts`` lists anything, else every name (a
  rebinding page holds no token, and the browser sends it no cookie of ours);
* ``*`` in ``allowed_hosts`` turns the check off.

A request with another ``Host`` (or none) is answered 400 ``host_not_allowed`` before anything
else looks at it. The port is not part of the name.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from lsm.api.errors import error_response
from lsm.errors import HostNotAllowed

#: the names of this machine a browser uses for a server on loopback
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
#: ``allowed_hosts`` entry that allows every name
ANY_HOST = "*"
#: addresses that mean "every interface" when listened on: no client uses them as a name
_WILDCARDS = frozenset({"0.0.0.0", "::", "[::]"})


def host_name(value: str) -> str:
    """The name of a ``Host`` header value: lower case, without the port or a trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    return value.rsplit(":", 1)[0].rstrip(".")


def _as_name(entry: str) -> str:
    """A configured name or address as ``host_name`` gives it (an IPv6 address in brackets)."""
    return host_name(f"[{entry}]" if ":" in entry and not entry.startswith("[") else entry)


def allowed_names(
    configured: Iterable[str], *, auth_enabled: bool, listen: str | None = None
) -> frozenset[str] | None:
    """The ``Host`` names to answer (see the module docstring); ``None``: every name.
    ``listen``: the address the server listens on, a name its clients use when it is not a
    wildcard."""
    names = {_as_name(entry) for entry in configured}
    if ANY_HOST in names or (auth_enabled and not names):
        return None
    if listen and listen not in _WILDCARDS:
        names.add(_as_name(listen))
    return frozenset(names | set(LOOPBACK_NAMES))


class HostCheckMiddleware:
    """Refuse a request whose ``Host`` is not among ``allowed`` (``None``: accept every one)."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str] | None) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allowed is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        sent = next((v for k, v in scope.get("headers", ()) if k == b"host"), b"")
        name = host_name(sent.decode("latin-1"))
        if name in self.allowed:
            await self.app(scope, receive, send)
            return
        error = HostNotAllowed(
            f"this server does not answer to the host {name!r}: add it to allowed_hosts in the "
            "server's configuration if clients reach the server by that name",
            host=name[:200],
        )
        await error_response(error.status, error.kind, error.message, **error.details)(scope, receive, send)
