"""The selector API: which instances a partial compile sees, decided from the requested ids.

Why: a partial compile must see every instance whose resources may change with the requested
ones, and nothing more. The default (``OwnerTreeSelector``) takes whole ownership trees; other
topologies (a tunnel between two routers, every port in a VLAN) need other rules. A selector is
that rule: it receives the requested instance ids and a read-only ``InventoryView`` and returns,
per binding name, the instance ids that ``lsm.all(binding)`` returns in that compile.

Two forms, because some rules are naturally per entity and others are one walk:

* ``Selector``: one method, ``select_all(instance_ids) -> {binding name: [ids]}``;
* ``PhasedSelector``: ``analyse(bindings)`` once, ``register(instance_ids)``, then
  ``select(binding)`` per binding.

``run_selector`` makes both look the same to the compiler, checks the answer (known bindings,
live instances of that binding) and turns any exception into ``SelectorError`` carrying the
selector name and the formatted traceback. Selectors only read, so a failed selector leaves
nothing behind: the compiler runs it before any write. After ``run_selector``, ``roots()`` gives
the ownership root of every selected tree (terminated roots included) so that the compiler can
delete the resource sets of trees that produce nothing. Selectors compose by union: ``a | b``.

**Completeness: a selector picks trees, the engine compiles them whole.** A resource set holds
the resources of a whole ownership tree and a partial export replaces a set entirely, so a
compile that saw half a tree would silently drop the other half's resources (or, for a tree it
did not see at all, delete its set). ``run_selector`` therefore never trusts the answer to be
complete: the trees it compiles are those of every requested instance plus those of every
instance the selector returned (plus any root ``compute_roots`` names), and every live member of
those trees is selected, whether the selector returned it or not. Nothing outside those trees
is touched, so a live root that neither was requested nor selected keeps its set as stored.
We complete rather than refuse because plugin authors (most of them porting Inmanta LSM
selectors) think in instances, and a selector that returns "the router" means "the router's
tree"; ``select()`` reports what the engine added (``Selection.completed``) so that nothing
happens silently.

Writing a custom selector (a plugin author's view)::

    from lsm.selection import Selector

    class SameSiteSelector(Selector):
        \"\"\"Recompile every router of the site of each requested router.\"\"\"

        name = "same_site"

        def select_all(self, instance_ids):
            sites = {self.view.attribute(i, "site") for i in instance_ids}
            routers = self.view.instances_of("router")
            return {"router": [r.id for r in routers if self.view.attribute(r.id, "site") in sites]}

    # in the model module:       SELECTORS = {"same_site": SameSiteSelector}
    # or in a package's pyproject:
    #   [project.entry-points."lsm.selectors"]
    #   same_site = "my_package.selectors:SameSiteSelector"

and the environment setting ``selector = "same_site"`` chooses it. ``roots()`` comes for free:
by default it is the ownership roots of everything requested and selected.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from lsm.catalog import Binding, Catalog
from lsm.errors import SelectorError
from lsm.selection.ownership import ownership_roots, tree_members
from lsm.selection.view import InventoryView
from lsm.store.transient import is_transient

#: What ``run_selector`` returns: binding name -> sorted ids of live instances of that binding.
SelectionResult = dict[str, list[str]]


@dataclass(frozen=True)
class Selection:
    """What ``select`` decided, and why (the compile report and ``--explain`` show it).

    ``instances``: what ``lsm.all`` returns, per binding (whole trees, see "Completeness").
    ``roots``: the root of every tree compiled (its set is replaced, or deleted if it produces
    nothing). ``answer``: what the selector itself returned (checked). ``completed``: ids the
    engine added to complete a tree the selector returned only part of (or none of, for a
    requested tree). ``requested``: the requested ids, de-duplicated, in order.
    """

    requested: list[str]
    answer: SelectionResult
    instances: SelectionResult
    roots: list[str]
    completed: list[str] = field(default_factory=list)
    #: whether relations explain what the selector added (``BaseSelector.follows_relations``)
    follows_relations: bool = True

    @property
    def ids(self) -> list[str]:
        """Every selected id, sorted."""
        return sorted(i for ids in self.instances.values() for i in ids)


class BaseSelector:
    """What every selector shares: the view, the catalog, ``roots()`` and union (``|``).

    Subclass ``Selector`` or ``PhasedSelector``, not this class. A selector object lives for one
    compile: it is constructed with the compile's view and catalog, run once, then discarded.
    Selectors configured with parameters take them as keyword arguments after these two.
    """

    #: The name used in errors and reports (the registered name for bundled selectors).
    name: ClassVar[str] = ""
    #: Whether this selector picks what inter-service relations reach (``relation_closure``, a
    #: tunnel's selector): the compile report then says ``relation`` for an instance a relation
    #: reaches. A filter (by entity, state, attribute) sets it False: its picks are ``custom``
    #: whatever relations happen to join them (``lsm.selection.diagnostics``).
    follows_relations: ClassVar[bool] = True

    def __init__(self, view: InventoryView, catalog: Catalog) -> None:
        self.view = view
        self.catalog = catalog
        self._roots: list[str] | None = None

    def roots(self) -> list[str]:
        """The ownership root id of every selected tree, terminated or not; after ``run_selector``."""
        if self._roots is None:
            raise RuntimeError(f"{selector_name(self)}: roots() is only known after run_selector()")
        return list(self._roots)

    def compute_roots(self, requested_ids: Sequence[str], selected: SelectionResult) -> Iterable[str]:
        """Override to report roots cheaper; by default the ownership roots of requested + selected."""
        ids = [*requested_ids, *(i for ids in selected.values() for i in ids)]
        return set(ownership_roots(self.view, ids).values())

    def __or__(self, other: BaseSelector) -> UnionSelector:
        return UnionSelector(self, other)

    def _run_phases(self, requested_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        """Drive this selector's own phases and return its raw answer (``run_selector`` calls it).

        Each form implements it; a new form (``lsm.selection.lsm_compat``) only overrides this.
        """
        raise TypeError(f"{selector_name(self)} is neither a Selector nor a PhasedSelector")


class Selector(BaseSelector):
    """The one-method form: ``select_all(instance_ids) -> {binding name: [ids]}``."""

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        raise NotImplementedError

    def _run_phases(self, requested_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        return self.select_all(requested_ids)


class PhasedSelector(BaseSelector):
    """The phased form: ``analyse(bindings)``, ``register(instance_ids)``, then ``select(binding)``."""

    def analyse(self, bindings: Sequence[Binding]) -> None:
        """Look at the bindings of the compile once (precompute relations, owners...)."""

    def register(self, instance_ids: Sequence[str]) -> None:
        raise NotImplementedError

    def select(self, binding: Binding) -> Iterable[str]:
        raise NotImplementedError

    def _run_phases(self, requested_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        bindings = list(self.catalog)
        self.analyse(bindings)
        self.register(requested_ids)
        return {b.name: self.select(b) for b in bindings}


class UnionSelector(Selector):
    """Every instance that any of its selectors selects; roots are the union of theirs."""

    name = "union"

    def __init__(self, *selectors: BaseSelector) -> None:
        if not selectors:
            raise ValueError("a union needs at least one selector")
        parts: list[BaseSelector] = []
        for selector in selectors:  # (a | b) | c is one flat union of three
            parts.extend(selector.selectors if isinstance(selector, UnionSelector) else [selector])
        if any(part.view is not parts[0].view for part in parts):
            raise ValueError("the selectors of a union must share one InventoryView (one compile)")
        super().__init__(parts[0].view, parts[0].catalog)
        self.selectors: tuple[BaseSelector, ...] = tuple(parts)

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        merged: dict[str, set[str]] = {}
        for selector in self.selectors:
            for binding, ids in run_selector(selector, instance_ids).items():
                merged.setdefault(binding, set()).update(ids)
        return merged

    def compute_roots(self, requested_ids: Sequence[str], selected: SelectionResult) -> Iterable[str]:
        return {root for selector in self.selectors for root in selector.roots()}


def selector_name(selector: BaseSelector | type[BaseSelector]) -> str:
    cls = selector if isinstance(selector, type) else type(selector)
    return cls.name or cls.__qualname__


def run_selector(selector: BaseSelector, requested_ids: Iterable[str]) -> SelectionResult:
    """Run either form of selector; return ``{binding name: sorted ids}`` for every binding.

    The answer is what ``lsm.all`` returns: whole ownership trees (see "Completeness" in the
    module doc), minus the instances for which the view's ``attribute_set`` chooser says
    ``None`` (not exported, ``none`` in a validation compile), so that selectors choose by
    topology only; those still count for ``roots()``, so the set of a tree that no longer
    exports anything is deleted.

    Raises ``SelectorError`` (details: ``selector``, ``traceback``) when the selector raises or
    answers with an unknown binding, an unknown or terminated instance, or an instance of
    another binding. Afterwards ``selector.roots()`` is known.
    """
    return select(selector, requested_ids).instances


def select(selector: BaseSelector, requested_ids: Iterable[str]) -> Selection:
    """``run_selector`` with the whole decision: what was answered, completed, and compiled."""
    requested = list(dict.fromkeys(requested_ids))
    name = selector_name(selector)
    try:
        checked = _checked(selector, selector._run_phases(requested))
        view = selector.view
        answered = [i for ids in checked.values() for i in ids]
        chosen = set(selector.compute_roots(requested, checked))
        roots = sorted(chosen | set(ownership_roots(view, [*requested, *answered]).values()))
        live = view.get_many(tree_members(view, roots))  # the whole trees, live members only
        complete: dict[str, set[str]] = {binding.name: set() for binding in selector.catalog}
        for record in live.values():
            complete[record.entity].add(record.id)
        selector._roots = roots
        instances = {
            b: sorted(i for i in ids if view.attribute_set_name(i) is not None) for b, ids in complete.items()
        }
        answered_set = set(answered)
        completed = sorted(i for ids in instances.values() for i in ids if i not in answered_set)
    except SelectorError as exc:
        exc.details.setdefault("selector", name)
        exc.details.setdefault("traceback", traceback.format_exc())
        raise
    except Exception as exc:
        if is_transient(exc):
            raise  # the database the view reads, not the selector: the compile is given back
        raise SelectorError(
            f"selector {name!r} failed: {type(exc).__name__}: {exc}",
            selector=name,
            traceback=traceback.format_exc(),
        ) from exc
    return Selection(
        requested=requested,
        answer=checked,
        instances=instances,
        roots=roots,
        completed=completed,
        follows_relations=follows_relations(selector),
    )


def follows_relations(selector: BaseSelector) -> bool:
    """Whether relations explain a selector's picks: a union's when any of its parts' do."""
    if isinstance(selector, UnionSelector):
        return any(follows_relations(part) for part in selector.selectors)
    return selector.follows_relations


def _checked(selector: BaseSelector, raw: Mapping[str, Iterable[str]]) -> SelectionResult:
    """Every binding present, ids de-duplicated and sorted, each a live instance of its binding."""
    unknown = sorted(set(raw) - set(selector.catalog.names()))
    if unknown:
        raise SelectorError(f"selector answered for unknown entities: {', '.join(unknown)}", entities=unknown)
    result = {binding.name: sorted(set(raw.get(binding.name, ()))) for binding in selector.catalog}
    records = selector.view.get_many(i for ids in result.values() for i in ids)  # one batch, mostly cached
    for binding in selector.catalog:
        ids = result[binding.name]
        wrong = [i for i in ids if i not in records or records[i].entity != binding.name]
        if wrong:
            raise SelectorError(
                f"selector returned ids that are not live {binding.name} instances: {', '.join(wrong)}",
                entity=binding.name,
                instance_ids=wrong,
            )
    return result


__all__ = [
    "BaseSelector",
    "PhasedSelector",
    "Selection",
    "SelectionResult",
    "Selector",
    "UnionSelector",
    "run_selector",
    "select",
    "selector_name",
]
