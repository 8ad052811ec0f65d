"""Unrolling a compile's instance dicts into service objects, and finding their ownership trees.

Why separate from the refinement: these are the checks on the *input* of a compile (is every
referenced instance present, is every owner present, are owner relations a tree), which must
hold before any implementation runs. Their errors name both instance ids and the attribute.

Cost matters (a full compile unrolls every exporting instance): the entity is validated with
pydantic (faster than ``model_construct`` for already-valid JSON, and a stored set that no longer
fits the model becomes a clear model error); an entity without relations shares its field dict
with the service object instead of copying it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from lsm.catalog import Binding, Catalog
from lsm.catalog.validation import pydantic_errors
from lsm.model.context import CompileContext, InstanceDict
from lsm.model.report import Problem
from lsm.model.service import Service

PurgeRule = Mapping[str, bool] | Callable[[InstanceDict], bool] | None


def _purge_of(purge: PurgeRule) -> Callable[[InstanceDict], bool]:
    if purge is None:
        return lambda inst: bool(inst.get("purge_resources", False))
    if isinstance(purge, Mapping):
        table = purge
        return lambda inst: bool(table.get(str(inst["id"]), False))
    return purge


def unroll(
    ctx: CompileContext, instances: Mapping[str, Sequence[InstanceDict]], purge: PurgeRule
) -> tuple[dict[str, Service[Any]], list[Problem]]:
    """Service objects by instance id, references resolved; problems instead of exceptions."""
    catalog = ctx.catalog
    purges = _purge_of(purge)
    problems: list[Problem] = []
    services: dict[str, Service[Any]] = {}
    with_relations: list[tuple[Binding, list[Service[Any]]]] = []
    for name, dicts in instances.items():
        if name not in catalog:
            problems.append(
                Problem(
                    "unknown_entity", f"the compile names an unknown service entity {name!r}", entity=name
                )
            )
            continue
        binding = catalog.get(name)
        entity = binding.entity
        has_relations = bool(entity.relations())
        members: list[Service[Any]] = []
        if has_relations:
            with_relations.append((binding, members))
        for inst in dicts:
            iid = str(inst["id"])
            attributes = inst.get("attributes")
            if attributes is None:
                problems.append(
                    Problem("no_attributes", f"{name} {iid} has no attribute set for this compile", iid, name)
                )
                continue
            if iid in services:
                problems.append(
                    Problem("duplicate_instance", f"{name} {iid} is in the compile twice", iid, name)
                )
                continue
            try:
                obj = entity.model_validate(attributes)
            except ValidationError as exc:
                reasons = "; ".join(f"{e['path']}: {e['reason']}" for e in pydantic_errors(exc))
                problems.append(
                    Problem(
                        "invalid_attributes",
                        f"{name} {iid}: attributes do not fit the model: {reasons}",
                        iid,
                        name,
                    )
                )
                continue
            values = dict(obj.__dict__) if has_relations else obj.__dict__
            services[iid] = svc = Service(
                id=iid,
                binding=binding,
                state=str(inst.get("state", "")),
                version=int(inst.get("version", 0)),
                purge_resources=purges(inst),
                entity=obj,
                instance=inst,
                values=values,
                compile=ctx,
            )
            if has_relations:
                members.append(svc)
    for binding, members in with_relations:
        _resolve(catalog, binding, members, services, problems)
    return services, problems


def _resolve(
    catalog: Catalog,
    binding: Binding,
    members: list[Service[Any]],
    services: dict[str, Service[Any]],
    problems: list[Problem],
) -> None:
    """Replace reference ids by the target service objects, for the instances of ``binding``.

    The JSON value (the id as stored) is looked up first; the validated ``UUID``'s canonical
    spelling only when that misses, since ``str(UUID)`` is the slow part of a lookup.
    """
    relations = [
        (attr, target, attr == binding.relation_to_owner)
        for attr, (_i, target) in catalog.relations(binding.name).items()
    ]
    for svc in members:
        raw_attributes = svc.instance["attributes"]
        values = svc._values
        for attr, target, owner_relation in relations:
            value = values.get(attr)
            if value is None:
                continue
            raw = raw_attributes.get(attr)
            if isinstance(value, list):
                raws = raw if isinstance(raw, list) and len(raw) == len(value) else [None] * len(value)
                resolved = [
                    _target(svc, attr, target, r, v, services, problems, owner_relation)
                    for r, v in zip(raws, value, strict=True)
                ]
                svc._resolved(attr, [t for t in resolved if t is not None])
            else:
                svc._resolved(
                    attr, _target(svc, attr, target, raw, value, services, problems, owner_relation)
                )


def _target(
    svc: Service[Any],
    attr: str,
    target: Binding,
    raw: Any,
    value: Any,
    services: dict[str, Service[Any]],
    problems: list[Problem],
    quiet: bool,
) -> Service[Any] | None:
    found = services.get(raw) if isinstance(raw, str) else None
    if found is None:
        found = services.get(str(value))
    if found is not None and found.binding is target:
        return found
    if quiet:
        return None  # the owner relation: the owner walk reports it
    name = svc.binding.name
    target_id = str(value)
    if found is None:
        problems.append(
            Problem(
                "reference_missing",
                f"{name} {svc.id}: attribute {attr!r} refers to {target.name} {target_id}, "
                "which is not in this compile",
                svc.id,
                name,
                details={"attribute": attr, "target": target_id},
            )
        )
        return None
    problems.append(
        Problem(
            "reference_wrong_entity",
            f"{name} {svc.id}: attribute {attr!r} refers to {target_id}, "
            f"a {found.binding.name}, not a {target.name}",
            svc.id,
            name,
            details={"attribute": attr, "target": target_id},
        )
    )
    return None


def owner_trees(services: Mapping[str, Service[Any]]) -> tuple[dict[str, str], list[Problem]]:
    """Instance id -> root instance id, walking ``relation_to_owner`` up.

    The owner relation was resolved by ``unroll`` (to the owner's service object, or ``None``
    when the owner is missing or of another entity). An owner missing from the compile, an
    owner of the wrong entity and a cycle are problems; every instance below a broken link is
    left out of the result (reported once, at the link).
    """
    root_of: dict[str, str] = {}
    broken: set[str] = set()
    problems: list[Problem] = []
    for iid, svc in services.items():
        if iid in root_of or iid in broken:
            continue
        binding = svc.binding
        if binding.owner is None or binding.relation_to_owner is None:
            root_of[iid] = iid
            continue
        owner = svc._values.get(binding.relation_to_owner)
        if owner is not None:  # the common case: the owner's root is known already
            known = root_of.get(owner.id)
            if known is not None:
                root_of[iid] = known
                continue
        _walk(svc, services, root_of, broken, problems)
    return root_of, problems


def _walk(
    svc: Service[Any],
    services: Mapping[str, Service[Any]],
    root_of: dict[str, str],
    broken: set[str],
    problems: list[Problem],
) -> None:
    path: list[str] = []
    on_path: set[str] = set()
    cur = svc
    root: str | None = None
    while True:
        known = root_of.get(cur.id)
        if known is not None:
            root = known
            break
        if cur.id in broken:
            break
        if cur.id in on_path:
            cycle = [*path[path.index(cur.id) :], cur.id]
            problems.append(
                Problem(
                    "owner_cycle",
                    "owner relations form a cycle: " + " -> ".join(cycle),
                    cur.id,
                    cur.binding.name,
                    details={"cycle": cycle},
                )
            )
            break
        path.append(cur.id)
        on_path.add(cur.id)
        binding = cur.binding
        if binding.owner is None or binding.relation_to_owner is None:
            root = cur.id
            break
        rel = binding.relation_to_owner
        owner: Service[Any] | None = cur._values.get(rel)
        if owner is None:
            owner_id = str(cur.entity.__dict__[rel])
            other = services.get(owner_id)
            what = "is not in this compile" if other is None else f"is a {other.binding.name}"
            problems.append(
                Problem(
                    "owner_missing",
                    f"{binding.name} {cur.id}: its owner {binding.owner.name} {owner_id} "
                    f"(attribute {rel!r}) {what}",
                    cur.id,
                    binding.name,
                    details={"attribute": rel, "owner": owner_id},
                )
            )
            break
        cur = owner
    if root is None:
        broken.update(path)
    else:
        for member in path:
            root_of[member] = root
