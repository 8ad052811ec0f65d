"""Inter-service relations: an attribute whose value is the id of another service instance.

``Ref[Router]`` is ``Annotated[uuid.UUID, Reference(Router)]``: the API value is the target
instance id (a list of ids for ``list[Ref[Port]]``); the engine resolves it to the target's
service object when it unrolls instances for a compile. The target may be named by a string
(``Ref["Router"]``, the entity class name or binding name) for forward references.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

if TYPE_CHECKING:
    from lsm.catalog.entity import ServiceEntity


@dataclass(frozen=True)
class Reference:
    """Marks an attribute as a relation to instances of ``target``."""

    target: type[ServiceEntity] | str

    @property
    def target_name(self) -> str:
        return self.target if isinstance(self.target, str) else self.target.__name__


if TYPE_CHECKING:
    _T = TypeVar("_T")

    class Ref(uuid.UUID, Generic[_T]):
        """For type checkers: ``Ref[Router]`` is a UUID (the target instance id)."""

else:

    class Ref:
        """``Ref[Entity]``: a reference to one instance of ``Entity`` (see the module docstring)."""

        def __class_getitem__(cls, target: Any) -> Any:
            return Annotated[uuid.UUID, Reference(target)]
