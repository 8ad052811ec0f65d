"""The running compile, as implementations see it: ``lsm.all(binding)``.

Why a context variable: an implementation is a plain function of one service object, yet some
need to look at their peers (a port checking that no other port of its router has its name).
The refinement sets the compile it runs here for the duration of the run, so implementations
need no extra parameter, concurrent compiles in threads or tasks never see each other's
instances, and a call outside a compile fails loudly instead of answering "nothing".

    @implementation(port)
    def interface(p: Service[Port]) -> Iterator[Resource]:
        same = [o for o in all_instances(port) if o["attributes"]["router"] == p.router.id]
        ...

Each instance dict has ``id``, ``entity``, ``version``, ``state``, ``attributes`` (the set this
compile uses) and the three raw sets ``candidate_attributes``, ``active_attributes``,
``rollback_attributes`` -- exactly what the caller of the refinement passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lsm.catalog import Binding, Catalog
from lsm.errors import ModelError

InstanceDict = Mapping[str, Any]
T = TypeVar("T")


@dataclass
class CompileContext:
    """What one refinement run shares with the implementations it calls."""

    catalog: Catalog
    instances: dict[str, tuple[InstanceDict, ...]]
    #: True for a validation compile (no export); implementations rarely need to know
    validation: bool = False
    #: instance id -> ``r`` attribute values allocated by ``Service.allocate`` in this run
    allocations: dict[str, dict[str, Any]] = field(default_factory=dict)
    _memo: dict[Hashable, Any] = field(default_factory=dict, repr=False)

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per compile under ``key``: an index over ``all(...)`` that every
        instance's implementation consults costs O(n) per compile instead of O(n) per instance.
        """
        try:
            return self._memo[key]  # type: ignore[no-any-return]  # the memo holds what compute() returned for this key
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def all(self, binding: Binding | str) -> tuple[InstanceDict, ...]:
        name = binding if isinstance(binding, str) else binding.name
        if name not in self.catalog:
            raise ModelError(f"lsm.all({name!r}): no such binding in this model", entity=name)
        return self.instances.get(name, ())


_current: ContextVar[CompileContext | None] = ContextVar("lsm_compile", default=None)


def current_compile() -> CompileContext:
    """The compile running now; a ``ModelError`` outside one."""
    ctx = _current.get()
    if ctx is None:
        raise ModelError(
            "lsm.all() and Service.allocate() only work while a compile runs an implementation "
            "(there is no compile running in this context)"
        )
    return ctx


def all_instances(binding: Binding | str) -> Sequence[InstanceDict]:
    """The instance dicts of ``binding`` that the current compile sees (``lsm.all``).

    A partial compile sees only the selected trees (or what the selector chose); a validation
    compile sees each instance with the attribute set its state names for it.
    """
    return current_compile().all(binding)
