"""The pure compile core: instances in, resources grouped per ownership tree out.

    result = refine(model, {"network": [inst, ...]}, purge=lambda inst: inst["state"] == "deleting")
    result.sets["<root instance id>"]   # the owned resources of that tree
    result.shared                       # resources no instance owns

The caller (the compiler) chooses the instances: every exporting instance for a full compile,
whole ownership trees for a partial one, each instance with the set the validation rules name for
a validation compile. ``refine`` then

1. unrolls every instance into a ``Service`` (references resolved; a reference or an owner
   outside the compile, or an owner cycle, is a model error naming both ids);
2. runs every implementation of every instance's binding, with ``lsm.all`` answering from this
   compile, and records which instance owns which resource;
3. groups: one set per ownership tree, named after the root instance id; and checks the model
   rules below. Every problem is reported with the instance, the resource and the model line.

Model errors (one ``lsm.errors.ModelError``, ``errors`` detail lists them all):
an exception in an implementation; something produced that is not a resource; a resource
owned by instances of two trees ("resource X can not be part of multiple resource sets: A and
B"); a resource produced twice in one tree with different attributes; two different shared
resources with one id; a resource both owned and shared; a ``requires`` that no implementation
produced (dangling) or that points into another tree's set; a resource whose id is longer than
``MAX_RESOURCE_ID_BYTES`` (it could be stored on no backend: the report names the resource, its
identifying attribute and the limit).

Nothing here does I/O: the same function serves exporting, partial and validation compiles, so
a candidate that breaks the model fails its validation exactly as it would fail an export.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lsm.gc_pause import gc_paused
from lsm.model.context import CompileContext, InstanceDict, _current
from lsm.model.implementation import Implementation
from lsm.model.loader import Model
from lsm.model.report import (
    MAX_PROBLEMS,
    Problem,
    definition_line,
    exception_line,
    format_traceback,
    locate,
    raise_problems,
)
from lsm.model.resource import Resource, Shared
from lsm.model.resource_id import id_bytes_over
from lsm.model.service import Service
from lsm.model.unroll import PurgeRule, owner_trees, unroll
from lsm.schemas.limits import MAX_RESOURCE_ID_BYTES


@dataclass
class RefineResult:
    """The resources of one compile, grouped; lists are shared internally: treat as read-only."""

    #: root instance id -> the owned resources of every instance in that tree (one per id)
    sets: dict[str, list[Resource]]
    #: resources owned by no instance, one per id
    shared: list[Resource]
    #: resource id -> the instance that owns it (the first producer, for identical duplicates)
    owner_of: dict[str, str]
    #: instance id -> root instance id of its ownership tree (the name of its set)
    tree_of: dict[str, str]
    #: instance id -> the owned resources its implementations produced
    owned: dict[str, list[Resource]]
    #: instance id -> ids of the shared resources it produced (duplicates included: every
    #: producer is listed, so that each tree knows what it shares; see lsm.compiler.incremental)
    shared_of: dict[str, list[str]] = field(default_factory=dict)
    #: instance id -> ``r`` attributes its implementations allocated (see ``Service.allocate``)
    allocations: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: seconds per stage: unroll, implementations, check, total
    timings: dict[str, float] = field(default_factory=dict)

    @cached_property
    def resources_by_instance(self) -> dict[str, list[str]]:
        """Instance id -> ids of the owned resources it produced (for resource-based transfers)."""
        return {iid: [r.id for r in rs] for iid, rs in self.owned.items()}

    @property
    def resource_count(self) -> int:
        return sum(len(rs) for rs in self.sets.values()) + len(self.shared)


def refine(
    model: Model,
    instances: Mapping[str, Sequence[InstanceDict]],
    *,
    purge: PurgeRule = None,
    trees: Collection[str] | None = None,
    validation: bool = False,
    pause_gc: bool = True,
) -> RefineResult:
    """Refine ``instances`` (binding name -> instance dicts) into resources; see the module docstring.

    ``purge`` says which instances have ``purge_resources``: a mapping instance id -> bool, a
    function of the instance dict, or ``None`` to read an optional ``purge_resources`` key of
    each dict. ``trees`` limits the returned ``sets`` to those root ids (every instance is still
    refined and checked). ``validation`` marks a validation compile for ``CompileContext``.

    ``pause_gc``: the cyclic garbage collector is off while the run allocates its objects
    (about six per resource, all kept): collections triggered by that growth would traverse the
    ever larger heap again and again, a large share of a big refine. One young collection
    follows when it is back on. Nothing here creates cycles that need it meanwhile.
    """
    started = time.perf_counter()
    ctx = CompileContext(
        catalog=model.catalog,
        instances={name: tuple(dicts) for name, dicts in instances.items()},
        validation=validation,
    )
    token = _current.set(ctx)
    try:
        with gc_paused(pause_gc):
            services, problems = unroll(ctx, instances, purge)
            tree_of, tree_problems = owner_trees(services)
            raise_problems(problems + tree_problems)
            unrolled = time.perf_counter()
            run = _Run(model, services, tree_of)
            run.implementations()
            ran = time.perf_counter()
            if not run.problems:
                run.check()
            run.locate()
            raise_problems(run.problems)
            sets = run.sets(trees)
    finally:
        _current.reset(token)
    done = time.perf_counter()
    return RefineResult(
        sets=sets,
        shared=[r for r, _ in run.shared.values()],
        owner_of=run.owner_of,
        tree_of=tree_of,
        owned=run.owned,
        shared_of=run.shared_of,
        allocations=ctx.allocations,
        timings={
            "unroll": unrolled - started,
            "implementations": ran - unrolled,
            "check": done - ran,
            "total": done - started,
        },
    )


def validate(
    model: Model, instances: Mapping[str, Sequence[InstanceDict]], *, purge: PurgeRule = None
) -> RefineResult:
    """A validation compile: the same refinement, the same model errors, nothing exported.

    The caller passes every instance with the set its state names (``validate_self`` for the
    validated instance, ``validate_others`` for the rest, none left out). A ``ModelError`` means
    the validation failed; ``result.allocations[validated id]`` holds the ``r`` values to write
    to the validated instance's candidate set.
    """
    return refine(model, instances, purge=purge, validation=True)


class _Run:
    """Steps 2 and 3 of ``refine``, with the indexes they share."""

    def __init__(self, model: Model, services: dict[str, Service[Any]], tree_of: dict[str, str]) -> None:
        self.services = services
        self.tree_of = tree_of
        self.impls: dict[str, tuple[Implementation, ...]] = {
            b.name: tuple(model.implementations_for(b.name)) for b in model.catalog
        }
        self.owned: dict[str, list[Resource]] = {}
        self.owner_of: dict[str, str] = {}
        self.shared: dict[str, tuple[Resource, str]] = {}
        self.shared_of: dict[str, list[str]] = {}
        self.dup_roots: set[str] = set()
        self.problems: list[Problem] = []
        #: (problem, resource id, producing instance id): lines found after the run
        self.to_locate: list[tuple[Problem, str, str]] = []

    # -- step 2 ---------------------------------------------------------------------------
    def implementations(self) -> None:
        owned, owner_of, shared, shared_of, impls, problems = (
            self.owned,
            self.owner_of,
            self.shared,
            self.shared_of,
            self.impls,
            self.problems,
        )
        for iid, svc in self.services.items():
            mine: list[Resource] = []
            owned[iid] = mine
            shares: list[str] = []
            for fn in impls[svc.binding.name]:
                try:
                    out = fn(svc)
                    if out is None:
                        continue
                    if isinstance(out, Resource | Shared):
                        out = (out,)
                    for item in out:
                        if isinstance(item, Resource):
                            rid = item.id
                            if len(rid) * 4 > MAX_RESOURCE_ID_BYTES and self._too_long(item, svc):
                                continue
                            prev = owner_of.get(rid)
                            if prev is None:
                                owner_of[rid] = iid
                                mine.append(item)
                            else:
                                self._owned_again(item, rid, prev, svc, mine)
                        elif type(item) is Shared:
                            r = item.resource
                            if len(r.id) * 4 > MAX_RESOURCE_ID_BYTES and self._too_long(r, svc):
                                continue
                            shares.append(r.id)
                            first = shared.get(r.id)
                            if first is None:
                                shared[r.id] = (r, iid)
                            elif not first[0].same_as(r):
                                self._shared_conflict(r.id, first[1], iid)
                        else:
                            self._not_a_resource(svc, fn, item)
                except MemoryError:  # a limit of the compile, not an error of this instance
                    raise
                except Exception as exc:
                    self._failed(svc, fn, exc)
                if shares:
                    shared_of[iid] = shares
                if len(problems) >= MAX_PROBLEMS:
                    return

    def _too_long(self, item: Resource, svc: Service[Any]) -> bool:
        """Report ``item`` when its id is over ``MAX_RESOURCE_ID_BYTES``: it could be stored on
        no backend (an index key), so the compile fails here, naming the resource and its parts,
        instead of in the database."""
        size = id_bytes_over(item.id)
        if size is None:
            return False
        cls = type(item)
        parts = {"agent": item.agent, cls.id_attribute: str(getattr(item, cls.id_attribute))}
        sizes = ", ".join(
            f"{name} {len(value.encode('utf-8', 'surrogatepass'))}" for name, value in parts.items()
        )
        shown = f"{item.id[:120]}..."
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(
                Problem(
                    "resource_id_too_long",
                    f"{self._who(svc.id)}: resource {shown} ({cls.resource_type}): its id is {size} "
                    f"bytes, over the limit of {MAX_RESOURCE_ID_BYTES} bytes (bytes of {sizes})",
                    svc.id,
                    svc.binding.name,
                    resource=shown,
                    details={"field": cls.id_attribute, "limit": MAX_RESOURCE_ID_BYTES},
                )
            )
        return True

    def _owned_again(
        self, item: Resource, rid: str, prev: str, svc: Service[Any], mine: list[Resource]
    ) -> None:
        root, prev_root = self.tree_of[svc.id], self.tree_of[prev]
        first = next(r for r in self.owned[prev] if r.id == rid)
        if prev_root != root:
            self._resource_problem(
                "multiple_sets",
                f"resource {rid} can not be part of multiple resource sets: {prev_root} and {root} "
                f"(owned by {self._who(prev)} and by {self._who(svc.id)})",
                rid,
                svc.id,
                prev,
            )
        elif not first.same_as(item):
            self._resource_problem(
                "owned_conflict",
                f"resource {rid} is produced twice with different attributes "
                f"(by {self._who(prev)} and by {self._who(svc.id)})",
                rid,
                svc.id,
                prev,
            )
        elif prev != svc.id:
            mine.append(item)  # the same resource made by two instances of one tree: both depend on it
            self.dup_roots.add(root)

    def _shared_conflict(self, rid: str, first: str, second: str) -> None:
        self._resource_problem(
            "shared_conflict",
            f"shared resource {rid} is produced with different attributes "
            f"by {self._who(first)} and by {self._who(second)}",
            rid,
            second,
            first,
        )

    def _not_a_resource(self, svc: Service[Any], fn: Implementation, item: object) -> None:
        self.problems.append(
            Problem(
                "not_a_resource",
                f"{self._who(svc.id)}: implementation {fn.__name__} produced {item!r} "
                f"({type(item).__name__}), not a Resource (at {definition_line(fn)})",
                svc.id,
                svc.binding.name,
                line=definition_line(fn),
            )
        )

    def _failed(self, svc: Service[Any], fn: Implementation, exc: Exception) -> None:
        line = exception_line(exc, fn)
        building = getattr(exc, "title", None) if type(exc).__name__ == "ValidationError" else None
        resource = f" while building {building}" if building else ""
        self.problems.append(
            Problem(
                "implementation_failed",
                f"{self._who(svc.id)}: implementation {fn.__name__} failed{resource} at {line}: "
                f"{type(exc).__name__}: {exc}",
                svc.id,
                svc.binding.name,
                resource=building,
                line=line,
                traceback=format_traceback(exc),
            )
        )

    # -- step 3 ---------------------------------------------------------------------------
    def check(self) -> None:
        """Owned-and-shared ids, dangling and cross-set ``requires``."""
        owner_of, shared, tree_of = self.owner_of, self.shared, self.tree_of
        for rid, (_r, producer) in shared.items():
            owner = owner_of.get(rid)
            if owner is not None:
                self._resource_problem(
                    "owned_and_shared",
                    f"resource {rid} is owned by {self._who(owner)} (set {tree_of[owner]}) "
                    f"and produced as shared by {self._who(producer)}",
                    rid,
                    producer,
                    owner,
                )
        for iid, resources in self.owned.items():
            root = tree_of[iid]
            for r in resources:
                if r.requires:
                    self._check_requires(r, iid, root)
        for r, producer in shared.values():
            if r.requires:
                self._check_requires(r, producer, None)

    def _check_requires(self, r: Resource, producer: str, root: str | None) -> None:
        for req in r.requires:
            qid = req if isinstance(req, str) else req.id
            owner = self.owner_of.get(qid)
            if owner is not None:
                if root is not None and self.tree_of[owner] != root:
                    self._resource_problem(
                        "cross_set_requires",
                        f"resource {r.id} (set {root}) requires {qid} of another resource set "
                        f"({self.tree_of[owner]}); a resource may only require its own set "
                        "or shared resources (export rule 6)",
                        r.id,
                        producer,
                        rule=6,
                        sets=[root, self.tree_of[owner]],
                        requires=qid,
                    )
            elif qid not in self.shared:
                self._resource_problem(
                    "dangling_requires",
                    f"resource {r.id} requires {qid}, which no implementation produced in this compile",
                    r.id,
                    producer,
                )

    def _resource_problem(
        self, kind: str, message: str, rid: str, producer: str, other: str | None = None, **details: Any
    ) -> None:
        """``details``: more ids for the report (an export rule's number, the sets involved)."""
        if len(self.problems) >= MAX_PROBLEMS:
            return
        svc = self.services[producer]
        problem = Problem(kind, message, producer, svc.binding.name, resource=rid)
        if other is not None and other != producer:
            details["other_instance"] = other
        if details:
            problem.details = details
        self.problems.append(problem)
        self.to_locate.append((problem, rid, producer))

    def locate(self) -> None:
        """Point each resource problem at the model line that built the resource."""
        for problem, rid, producer in self.to_locate:
            svc = self.services[producer]
            line = locate(rid, svc, self.impls[svc.binding.name])
            if line is not None:
                problem.line = line
                problem.message += f" (at {line})"

    def sets(self, trees: Collection[str] | None) -> dict[str, list[Resource]]:
        """One list per tree root; a tree of one instance reuses that instance's list."""
        sets: dict[str, list[Resource]] = {}
        copied: set[str] = set()
        wanted = None if trees is None else set(trees)
        for iid, resources in self.owned.items():
            root = self.tree_of[iid]
            if wanted is not None and root not in wanted:
                continue
            current = sets.get(root)
            if current is None:
                sets[root] = resources
                continue
            if root not in copied:
                current = sets[root] = list(current)
                copied.add(root)
            if root in self.dup_roots:
                current.extend(r for r in resources if self.owner_of[r.id] == iid)
            else:
                current.extend(resources)
        return sets

    def _who(self, iid: str) -> str:
        svc = self.services.get(iid)
        return f"{svc.binding.name} {iid}" if svc is not None else iid
