"""``lsm.ResourceSet``: resource sets a model declares by name, outside any service instance.

Why: the seeds' partial compiles (Inmanta's ``std::ResourceSet`` with ``inmanta export
--partial``) work on models that are trimmed by hand or written by a generator: a set is a name
and the resources in it, not an ownership tree of service instances. ``lsm export MODEL``
(``lsm.cli.export``) loads such a model and stores what it declares as a full or partial
desired-state version; the rules of docs/semantics.md §4 are the store's, checked on the server.

A model module declares its sets while it runs, the way an Inmanta model instantiates
entities: every ``ResourceSet`` built during the load is collected (a plain ``for`` loop over
1,000 networks needs no list of its own), and so is every ``lsm.shared(resource)`` made
during the load. A resource that a set member ``requires`` as an object and that is in no set
is shared too (Inmanta exports every resource the model holds). Example::

    import lsm

    class Host(lsm.Resource, type="example::Host", id_attribute="name"):
        name: str

    for i in range(1000):
        hosts = [Host(agent="hosts", name=f"{i}-{j}") for j in range(5)]
        lsm.ResourceSet(name=f"network-{i}", resources=hosts)

A set built with no resources deletes that set in a partial export (as in Inmanta); sets built
twice under one name are one set (Inmanta's index on the name). Pure Python, no I/O beyond
importing the model's files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from lsm.errors import ConfigurationError, InvalidInput
from lsm.model.loader import fresh_import
from lsm.model.resource import SHARED_SINK, Resource, ResourceData, Shared


class ResourceSet:
    """A named resource set: ``ResourceSet(name="network-0", resources=[...])``.

    ``resources`` is a plain list: ``s.resources.append(host)`` or ``s.resources += hosts``
    (Inmanta's ``set.resources += host``) both work; ``add`` does the same.
    """

    __slots__ = ("name", "resources")

    def __init__(self, name: str, resources: Iterable[Resource] = ()) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"a resource set needs a non-empty name, not {name!r}")
        self.name = name
        self.resources: list[Resource] = list(resources)
        collector = _collector.get()
        if collector is not None:
            collector.sets.append(self)

    def add(self, *resources: Resource) -> ResourceSet:
        self.resources.extend(resources)
        return self

    def __repr__(self) -> str:
        return f"ResourceSet(name={self.name!r}, resources=<{len(self.resources)}>)"


@dataclass
class _Collector:
    """What a model load built: its sets and its ``lsm.shared(...)`` markers, in order."""

    sets: list[ResourceSet] = field(default_factory=list)
    shared: list[Shared] = field(default_factory=list)


_collector: ContextVar[_Collector | None] = ContextVar("lsm_resource_set_collector", default=None)


@dataclass(frozen=True)
class DeclaredModel:
    """What a model declares for an export: set name -> resources (an empty list: the set is
    exported empty, which a partial export takes as a deletion), and the shared resources."""

    sets: dict[str, list[ResourceData]]
    shared: list[ResourceData]

    @property
    def resource_count(self) -> int:
        return sum(len(r) for r in self.sets.values()) + len(self.shared)


@contextmanager
def collecting() -> Iterator[_Collector]:
    """Collect every ``ResourceSet`` and ``lsm.shared`` built inside the block (for tests and
    for models built in code rather than loaded from files)."""
    collector = _Collector()
    token = _collector.set(collector)
    sink = SHARED_SINK.set(collector.shared)
    try:
        yield collector
    finally:
        SHARED_SINK.reset(sink)
        _collector.reset(token)


def declared_model(spec: str) -> DeclaredModel:
    """Load the model named by ``spec`` (a file, a package directory or a module path) afresh
    and return the sets and shared resources it declares.

    ``ConfigurationError`` when the model can not be loaded or declares nothing;
    ``InvalidInput`` naming the resource when one id is produced twice with different content.
    """
    with collecting() as collector:
        module = fresh_import(spec)
    # sets held by module-level names count too (a model imported before, by a test say)
    for value in vars(module).values():
        if isinstance(value, ResourceSet) and all(value is not s for s in collector.sets):
            collector.sets.append(value)
    if not collector.sets and not collector.shared:
        raise ConfigurationError(
            f"model {spec!r} declares no lsm.ResourceSet and no lsm.shared resource: nothing to export",
            model=spec,
        )
    return model_of(collector.sets, collector.shared)


def model_of(sets: Iterable[ResourceSet], shared: Iterable[Shared | Resource] = ()) -> DeclaredModel:
    """The export of ``sets`` and ``shared`` resources, with the resources set members require
    (as objects) that no set holds added to the shared ones."""
    by_set: dict[str, dict[str, Resource]] = {}
    for resource_set in sets:
        members = by_set.setdefault(resource_set.name, {})
        for resource in resource_set.resources:
            _put(members, resource, resource_set.name)
    in_sets = {rid for members in by_set.values() for rid in members}
    shared_out: dict[str, Resource] = {}
    for item in shared:
        _put(shared_out, item.resource if isinstance(item, Shared) else item, "shared")
    for members in by_set.values():
        for resource in members.values():
            for required in resource.requires:
                if isinstance(required, Resource) and required.id not in in_sets:
                    _put(shared_out, required, "shared")
    return DeclaredModel(
        sets={name: [r.to_data() for r in members.values()] for name, members in by_set.items()},
        shared=[r.to_data() for r in shared_out.values()],
    )


def _put(into: dict[str, Resource], resource: object, where: str) -> None:
    """Add ``resource`` once: the same resource built twice is one, two different ones with one
    id are a model error naming it (the store would take only one of them)."""
    if not isinstance(resource, Resource):
        raise InvalidInput(
            f"resource set {where}: {resource!r} is not an lsm.Resource",
            set=where,
            value=repr(resource)[:200],
        )
    rid = resource.id
    known = into.get(rid)
    if known is None:
        into[rid] = resource
    elif not known.same_as(resource):
        raise InvalidInput(
            f"resource {rid} is built twice in {where} with different attributes or requires",
            resources=[rid],
            sets=[where],
        )


__all__ = ["DeclaredModel", "ResourceSet", "collecting", "declared_model", "model_of"]
