"""``RequestContext``: who asks, in which environment, under which request id.

Why one value instead of an ``env`` argument: every facade method needs the environment, and
every change must record who made it (``actor``) and the API request that caused it
(``request_id``, echoed as ``X-Request-ID``) on its event lines and compile requests. Passing
the three together keeps a later authentication layer to one place (the API dependency that
builds this value) instead of a new parameter on every method.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from lsm.orchestration import Origin

#: the actor of requests while the API has no authentication (a later issue adds tokens)
LOCAL_ACTOR = "local"


def new_request_id() -> str:
    """A fresh request id (uuid4 hex) for a request that brought none."""
    return uuid.uuid4().hex


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

    @classmethod
    def local(cls, environment: str | None = None) -> RequestContext:
        """A context for in-process callers (tests, scripts): actor ``local``, a new request id."""
        return cls(actor=LOCAL_ACTOR, environment=environment)

    def in_environment(self, environment: str | None) -> RequestContext:
        """The same caller and request, about another environment (routes naming it in the path)."""
        return replace(self, environment=environment)

    @property
    def origin(self) -> Origin:
        """What the orchestration records on the rows this request writes."""
        return Origin(self.actor, self.request_id)
