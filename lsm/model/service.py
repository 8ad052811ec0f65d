"""``Service``: one instance as an implementation sees it.

The engine unrolls each instance dict of a compile into a service object: the validated entity
(``svc.entity``, a frozen ``ServiceEntity``), the instance's ``id``, ``state``, ``version`` and
``purge_resources`` (true while its state removes its resources), and every attribute readable
directly, with inter-service references resolved to the target's service object::

    @implementation(port)
    def interface(p: Service[Port]) -> Iterator[Resource]:
        yield Interface(agent=p.router.mgmt_ip, name=p.name, mtu=p.mtu, purged=p.purge_resources)

Why a wrapper and not the entity itself: the entity's reference fields hold ids (that is the
API value) and its field names are the model author's, so ``id``/``state``/``version`` could
clash; the wrapper keeps the engine's fields apart and resolves references. An attribute whose
name is shadowed by one of those is still reachable as ``svc["state"]`` or ``svc.entity.state``.

``allocate(name=value)`` sets ``r`` attributes (server-allocated, e.g. a VLAN id) during a
validation compile; the values show in this service object at once and come back in the
refinement result as ``allocations[instance id]`` for the compiler to write to the candidate set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from lsm.catalog import Binding, Modifier, ServiceEntity
from lsm.errors import ModelError

if TYPE_CHECKING:
    from lsm.model.context import CompileContext

E = TypeVar("E", bound=ServiceEntity)

#: names the engine uses on a service object; an entity attribute of that name is ``svc[name]``
_ENGINE_FIELDS = frozenset(
    {"id", "binding", "state", "version", "purge_resources", "entity", "instance", "_values", "_compile"}
    | {"allocate", "entity_name"}
)


class Service(Generic[E]):
    """An instance in a compile: engine fields plus the entity's attributes (references resolved).

    Attributes live in the instance ``__dict__`` (engine fields written last, so they win a
    name clash): an implementation reads them at plain attribute speed, several times per
    resource it builds.
    """

    id: str
    binding: Binding
    state: str
    version: int
    purge_resources: bool
    entity: E
    instance: Mapping[str, Any]
    _values: dict[str, Any]
    _compile: CompileContext

    def __init__(
        self,
        *,
        id: str,  # noqa: A002 - the instance id, named as everywhere else
        binding: Binding,
        state: str,
        version: int,
        purge_resources: bool,
        entity: E,
        instance: Mapping[str, Any],
        values: dict[str, Any],
        compile: CompileContext,  # noqa: A002  # the name the model-author API gives it
    ) -> None:
        fields = self.__dict__
        fields.update(values)
        fields.update(
            id=id,
            binding=binding,
            state=state,
            version=version,
            purge_resources=purge_resources,
            entity=entity,
            instance=instance,
            _values=values,
            _compile=compile,
        )
        if "allocate" in values:  # an attribute may not hide the method
            del fields["allocate"]

    def __getattr__(self, name: str) -> Any:
        """Only called for names that are not there: say which entity lacks what."""
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"{self.binding.name} has no attribute {name!r}")

    def _resolved(self, name: str, value: Any) -> None:
        """Set a resolved reference (unrolling) without letting it override an engine field."""
        self._values[name] = value
        if name not in _ENGINE_FIELDS:
            self.__dict__[name] = value

    def __getitem__(self, name: str) -> Any:
        """An attribute by name (references resolved), also when an engine field shadows it."""
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"{self.binding.name} has no attribute {name!r}") from None

    @property
    def entity_name(self) -> str:
        """The binding (API) name, e.g. ``port``."""
        return self.binding.name

    def allocate(self, **values: Any) -> None:
        """Set server-allocated (``r``) attributes; see the module docstring.

        Only ``r`` attributes may be allocated (anything else is a ``ModelError`` naming it),
        so that a model can not overwrite what an operator set.
        """
        infos = self.binding.entity.attributes()
        for name in values:
            info = infos.get(name)
            if info is None or info.modifier is not Modifier.R:
                raise ModelError(
                    f"{self.binding.name} {self.id}: only 'r' attributes can be allocated, not {name!r}",
                    instance=self.id,
                    entity=self.binding.name,
                    attribute=name,
                )
        self._values = {**self._values, **values}  # copy on write: values may be the entity's dict
        for name, value in values.items():
            if name not in _ENGINE_FIELDS:
                self.__dict__[name] = value
        self._compile.allocations.setdefault(self.id, {}).update(values)

    def __repr__(self) -> str:
        return f"<Service {self.binding.name} {self.id} state={self.state!r} version={self.version}>"
