"""``@implementation(binding)``: a function that refines one service object into resources.

An implementation receives one ``Service`` and returns (or yields) the resources it makes.
Every resource it produces is **owned** by that instance and lands in the resource set of the
instance's ownership tree; wrap one in ``shared(...)`` when no instance owns it (it then lives
outside every set, and every producer must make it identically)::

    from lsm.model import Resource, Service, implementation, shared

    class Host(Resource, type="net::Host", id_attribute="name"):
        name: str

    class AgentConfig(Resource, type="net::AgentConfig", id_attribute="name"):
        name: str

    @implementation(network)
    def hosts(net: Service[Network]) -> Produced:
        for i in range(net.hosts):
            yield Host(agent=net.name, name=f"h{i}", purged=net.purge_resources)
        yield shared(AgentConfig(agent="internal", name="networks"))

Why a generator (or any iterable, a single resource, or ``None``) and a marker for shared
resources rather than two return lists: most resources are owned, so the common case carries no
ceremony, and the place that makes a shared resource says so on the same line.

One function may serve several bindings (``@implementation(a, b)``, or stacked decorators);
a binding may have several implementations, which all run. Implementations must be
deterministic: the engine runs them again to point at the line that made a faulty resource.
An exception in an implementation fails the compile, naming the instance and the line; raise
``lsm.errors.ModelError("why")`` for a rule of the model (a validation compile then fails).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeAlias, TypeVar

from lsm.catalog import Binding
from lsm.model.loader import IMPLEMENTATION_MARK
from lsm.model.resource import Resource, Shared

#: what an implementation may return
Produced: TypeAlias = Iterable[Resource | Shared] | Resource | Shared | None
#: an implementation: one service object in, resources out
Implementation: TypeAlias = Callable[..., Produced]

F = TypeVar("F", bound=Callable[..., Any])


def implementation(*bindings: Binding) -> Callable[[F], F]:
    """Mark a function as an implementation of ``bindings`` (see the module docstring).

    The mark is a tuple of bindings under ``IMPLEMENTATION_MARK``; the model loader collects
    marked functions from the model module's namespace.
    """
    if not bindings or not all(isinstance(b, Binding) for b in bindings):
        raise TypeError("@implementation(...) takes one or more lsm.Binding objects")

    def mark(fn: F) -> F:
        existing: tuple[Binding, ...] = getattr(fn, IMPLEMENTATION_MARK, ())
        setattr(fn, IMPLEMENTATION_MARK, existing + tuple(b for b in bindings if b not in existing))
        return fn

    return mark


def bindings_of(fn: Callable[..., Any]) -> tuple[Binding, ...]:
    """The bindings a function implements (empty when it is not an implementation)."""
    return tuple(getattr(fn, IMPLEMENTATION_MARK, ()))
