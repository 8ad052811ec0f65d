"""``Resource``: the low-level, deployable unit an implementation produces.

A resource type is a pydantic model that names its type and its identifying attribute as class
keyword arguments; every resource has an ``agent`` (who deploys it) and a ``purged`` flag::

    class Host(Resource, type="net::Host", id_attribute="name"):
        name: str
        ip: str

    h = Host(agent="net1", name="h1", ip="10.0.0.1")
    h.id                      # 'net::Host[net1,name=h1]'
    Interface(agent="net1", name="eth0", requires=[h])   # or requires=["net::Host[net1,name=h1]"]

Why pydantic: attribute values are validated where the model author builds them, so a wrong
value fails at the line that made it. Why so little else: a compile builds tens of thousands
of resources, each of which must cost next to nothing, so there is no per-instance hook; the
id is computed on first use and cached in the instance ``__dict__``.

``requires`` holds other resources or resource ids; it is not an attribute (it is left out of
``attributes()``). This layer knows nothing of the desired-state store: ``to_data()`` gives a
plain ``(id, attributes, requires)`` tuple that the compiler converts.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, ClassVar, NamedTuple, Self

from pydantic import BaseModel, ConfigDict, Field

from lsm.model.meta import DELETION_POLICIES, DeletionPolicy, Meta, stored_meta

#: where a resource caches its id in its ``__dict__`` (never a field, never serialized)
_ID_KEY = "_lsm_id"
#: names a resource type may not use for a field: they mean something to the engine
RESERVED_FIELDS = frozenset({"id", "requires", "purged", "agent", "meta", "auto_requires"})
#: the stored attribute that lists the ``requires`` the engine added (docs/semantics.md §5)
AUTO_REQUIRES = "auto_requires"


class ResourceData(NamedTuple):
    """A resource as plain data: what the compiler turns into a desired-state record."""

    id: str
    attributes: dict[str, Any]
    requires: tuple[str, ...]
    #: what this resource may depend on: per need, the ids that meet it, nearest first
    #: (``Resource.autoedges``)
    autoedges: tuple[tuple[str, ...], ...] = ()

    def to_data(self) -> ResourceData:
        """Itself: a result whose resources are already data reads like one of resources
        (``lsm.compiler.isolated_child`` sends its results so)."""
        return self


class Resource(BaseModel):
    """Base class of resource types; see the module docstring.

    Instances are frozen: once an implementation produced a resource, its id and attributes
    stay what they were when the compile grouped it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: the type part of the id, e.g. ``net::Host``; set with ``class X(Resource, type=...)``
    resource_type: ClassVar[str] = ""
    #: the attribute whose value identifies the resource on its agent
    id_attribute: ClassVar[str] = ""
    #: ``"<type>["`` and ``",<id_attribute>="``: the constant parts of every id of the class
    _id_prefix: ClassVar[str] = ""
    _id_infix: ClassVar[str] = ""
    #: what leaving the desired state does to resources of this type on their target, unless
    #: their ``meta`` says otherwise (``Meta.deletion``); ``class X(Resource, deletion="orphan")``
    deletion_policy: ClassVar[DeletionPolicy] = "delete"

    agent: str
    purged: bool = False
    #: deploy metaparameters (docs/semantics.md §5); stored only when set away from the defaults
    meta: Meta | None = None
    requires: tuple[Resource | str, ...] = Field(default=(), exclude=True)

    def __init_subclass__(
        cls,
        *,
        type: str | None = None,  # noqa: A002 - the name model authors expect: type="net::Host"
        id_attribute: str | None = None,
        deletion: DeletionPolicy | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if deletion is not None:
            if deletion not in DELETION_POLICIES:
                raise TypeError(
                    f"resource {cls.__name__}: deletion={deletion!r} is not one of {DELETION_POLICIES}"
                )
            cls.deletion_policy = deletion
        if type is not None:
            cls.resource_type = type
        if id_attribute is not None:
            cls.id_attribute = id_attribute
        cls._id_prefix = f"{cls.resource_type}["
        cls._id_infix = f",{cls.id_attribute}="

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Check the declaration once the fields are known, so a typo fails at import time."""
        super().__pydantic_init_subclass__(**kwargs)
        own = set(cls.model_fields) - set(Resource.model_fields)
        clash = sorted(own & RESERVED_FIELDS)
        if clash:
            raise TypeError(f"resource {cls.__name__}: field name(s) {clash} are reserved")
        if not cls.resource_type:
            return  # an abstract intermediate class: no instances expected
        if not cls.id_attribute:
            raise TypeError(f"resource {cls.__name__} ({cls.resource_type}) needs id_attribute=...")
        if cls.id_attribute not in cls.model_fields or cls.id_attribute == "requires":
            raise TypeError(
                f"resource {cls.__name__}: id_attribute {cls.id_attribute!r} is not one of its fields"
            )

    # -- identity --------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """``Type[agent,attr=value]``, computed once."""
        values = self.__dict__
        rid: str | None = values.get(_ID_KEY)
        if rid is None:
            cls = type(self)
            if not cls.resource_type:
                raise TypeError(f"{cls.__name__} declares no resource type (type=...)")
            rid = f"{cls._id_prefix}{values['agent']}{cls._id_infix}{values[cls.id_attribute]}]"
            values[_ID_KEY] = rid
        return rid

    @classmethod
    def resource_id(cls, agent: str, value: object) -> str:
        """The id a resource of this type with that agent and identifying value has.

        For ``requires`` on a resource that another implementation produces::

            Interface(..., requires=[RouterConfig.resource_id(router.mgmt_ip, router.name)])
        """
        if not cls.resource_type:
            raise TypeError(f"{cls.__name__} declares no resource type")
        return f"{cls.resource_type}[{agent},{cls.id_attribute}={value}]"

    # -- data ------------------------------------------------------------------------------
    @property
    def requires_ids(self) -> tuple[str, ...]:
        requires = self.requires
        if not requires:
            return ()
        return tuple(r if isinstance(r, str) else r.id for r in requires)

    def autoedges(self) -> tuple[str | tuple[str, ...], ...]:
        """What this resource depends on when the desired state holds it (mgmt's AutoEdges).

        One entry per need: a resource id, or a tuple of ids that would each meet it, nearest
        first. Override it in a resource type whose resources imply a dependency: a file needs
        the resource that manages its directory (its parent, else the grandparent, ...), an
        interface its namespace, a veth pair both of its namespaces. When a version is stored
        the engine adds a ``requires`` edge to the first id of each need that the version holds
        where the export rules allow it (docs/semantics.md §5, ``autoedge``), unless the model
        wrote an edge between the two or ``meta.autoedge`` is ``False``. Ids of other types are
        fine: any resource that manages the directory may be named.
        """
        return ()

    def autoedge_needs(self) -> tuple[tuple[str, ...], ...]:
        """``autoedges()`` with every need as a tuple (what the compiler hands the store); a
        ``TypeError`` naming the resource when a need holds anything but resource id strings, so
        the compile that made it fails as a model error."""
        needs = tuple((need,) if isinstance(need, str) else tuple(need) for need in self.autoedges())
        for need in needs:
            if not all(isinstance(rid, str) for rid in need):
                raise TypeError(f"resource {self.id}: autoedges() must give resource ids (str), not {need!r}")
        return needs

    def attributes(self) -> dict[str, Any]:
        """Every field as JSON, ``agent`` and ``purged`` included, ``requires`` left out.

        ``meta`` appears only when it differs from the defaults (``stored_meta``), so that
        resources without metaparameters keep the attributes and set hashes they always had.
        A type whose ``deletion_policy`` is not the default stores it in ``meta.deletion`` unless
        the resource's own ``meta`` set one: the stored record says what the engine must do
        when the resource leaves the desired state, without the model at hand.
        """
        data = self.model_dump(mode="json", exclude={"meta"})
        meta = self.meta
        stored = stored_meta(meta)
        policy = type(self).deletion_policy
        if policy != "delete" and (meta is None or "deletion" not in meta.model_fields_set):
            stored = {**(stored or {}), "deletion": policy}
        if stored:
            data["meta"] = stored
        return data

    def to_data(self) -> ResourceData:
        return ResourceData(self.id, self.attributes(), self.requires_ids, self.autoedge_needs())

    def same_as(self, other: Resource) -> bool:
        """Whether two productions of one id are the same resource (attributes and requires)."""
        if self is other:
            return True
        if type(self) is not type(other):
            return False
        if self.__dict__ == other.__dict__:
            return True
        return self.attributes() == other.attributes() and self.requires_ids == other.requires_ids

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; the cached id is dropped because ``update`` may change the identity."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop(_ID_KEY, None)
        return copied


class Shared:
    """Marks a produced resource as shared: owned by no instance, in no resource set.

    Made by ``shared(resource)``; the refinement unwraps it.
    """

    __slots__ = ("resource",)

    def __init__(self, resource: Resource) -> None:
        if not isinstance(resource, Resource):
            raise TypeError(f"shared() takes a Resource, not {type(resource).__name__}")
        self.resource = resource

    def __repr__(self) -> str:
        return f"shared({self.resource!r})"


def shared(resource: Resource) -> Shared:
    """Yield ``shared(r)`` from an implementation for a resource no instance owns.

    Shared resources live outside every resource set: many instances may produce the same one
    (identically), and a partial compile may add them but never change them. While ``lsm
    export`` loads a model (``lsm.model.resource_set``), the marker is also kept for it.
    """
    marker = Shared(resource)
    sink = SHARED_SINK.get()
    if sink is not None:
        sink.append(marker)
    return marker


#: where ``shared`` markers go while a model for ``lsm export`` loads (``lsm.model.resource_set``);
#: ``None`` otherwise (in a compile, the refinement reads them from the implementation's output)
SHARED_SINK: ContextVar[list[Shared] | None] = ContextVar("lsm_shared_sink", default=None)
