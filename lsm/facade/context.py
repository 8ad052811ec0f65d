"""``RequestContext``: who asks, in which environment, under which request id.

Why one value instead of an ``env`` argument: every facade method needs the environment, and
every change must record who made it (``actor``) and the API request that caused it
(``request_id``, echoed as ``X-Request-ID``) on its event lines and compile requests. Passing
them together keeps authentication in one place (the API dependency that builds this value,
``lsm.api.deps.request_context``) instead of a new parameter on every method.

``roles`` are what the caller may do, per environment: keys are environment ids or names, or
``*`` for every environment. Routes never look at them (the API's ``require`` declarations
do); facades use them only to leave out what the caller may not see (the environment list,
the audit trail).
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from lsm.orchestration import Origin
from lsm.schemas.auth import ALL_ENVIRONMENTS, Role

#: the actor of requests while authentication is off (in-process callers, the embedded default)
LOCAL_ACTOR = "local"
#: every right in every environment: in-process callers, and every caller while auth is off
EVERYTHING: Mapping[str, Role] = MappingProxyType({ALL_ENVIRONMENTS: Role.ADMIN})


class _RequestIds:
    """Request ids as 32 hex digits: a random prefix per process, then a counter.

    Why not ``uuid4`` per request: it asks the kernel for randomness on every request, a
    system call on the event loop's hot path of a burst, while an id only has to be unique.
    The prefix (64 random bits) tells processes apart; a forked child draws its own.
    """

    def __init__(self) -> None:
        self._reseed()
        os.register_at_fork(after_in_child=self._reseed)

    def _reseed(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count(1)

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter) & 0xFFFF_FFFF_FFFF_FFFF:016x}"


_REQUEST_IDS = _RequestIds()


def new_request_id() -> str:
    """A fresh request id (32 hex digits, unique across processes) for a request that brought none."""
    return _REQUEST_IDS.next()


@dataclass(frozen=True)
class RequestContext:
    """The caller of one facade call. ``environment``: a name or id; ``None`` = the default one.

    Example::

        ctx = RequestContext.local()                 # the default environment, a new request id
        facades.inventory.get_instance(ctx.in_environment("lab"), "router", "name=edge-1")
    """

    actor: str
    environment: str | None = None
    request_id: str = field(default_factory=new_request_id)
    roles: Mapping[str, Role] = field(default_factory=lambda: EVERYTHING, hash=False, compare=False)

    @classmethod
    def local(cls, environment: str | None = None) -> RequestContext:
        """A context for in-process callers (tests, scripts): actor ``local``, a new request id."""
        return cls(actor=LOCAL_ACTOR, environment=environment)

    def in_environment(self, environment: str | None) -> RequestContext:
        """The same caller and request, about another environment (routes naming it in the path)."""
        return replace(self, environment=environment)

    def role_in(self, env_id: str, name: str | None = None) -> Role | None:
        """The highest role the caller holds in the environment ``env_id`` (named ``name``)."""
        held = [self.roles.get(key) for key in (env_id, name, ALL_ENVIRONMENTS) if key is not None]
        found = [role for role in held if role is not None]
        return max(found, key=lambda role: role.rank) if found else None

    def role_everywhere(self) -> Role | None:
        """The role the caller holds over every environment (``*``), if any."""
        return self.roles.get(ALL_ENVIRONMENTS)

    def sees(self, env_id: str, name: str | None = None) -> bool:
        """Whether the caller may know that the environment exists."""
        return self.role_in(env_id, name) is not None

    @property
    def origin(self) -> Origin:
        """What the orchestration records on the rows this request writes."""
        return Origin(self.actor, self.request_id)
