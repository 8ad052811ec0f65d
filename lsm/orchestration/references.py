"""Inter-service relations of an instance: checked when written, indexed for selectors.

Why here: a relation is only valid if the target exists, is live and is of the right entity;
that is a question for the inventory at write time, so it belongs with the function that
writes attributes. The relation index (``InstanceRefRow``) is kept equal to the union of the
relations in the three attribute sets, so that a selector can follow a relation backwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlmodel import Session

from lsm.catalog import Binding
from lsm.errors import InvalidAttributes
from lsm.orchestration.context import EnvironmentContext
from lsm.store.instances import repository as repo
from lsm.store.tables import InstanceRow


def _ids(value: Any) -> Iterable[str]:
    if value is None:
        return ()
    if isinstance(value, list | tuple | set):
        return [str(v) for v in value if v is not None]
    return (str(value),)


def _being_deleted(ctx: EnvironmentContext, row: InstanceRow) -> bool:
    """An instance whose resources are being purged can not gain new dependents."""
    binding = ctx.catalog.get(row.entity)
    return ctx.lifecycle(binding).state(row.state).purge_resources


def references_of(binding: Binding, row: InstanceRow) -> set[tuple[str, str]]:
    """``{(attribute, target_id)}`` over the candidate, active and rollback sets."""
    refs: set[tuple[str, str]] = set()
    relations = binding.entity.relations()
    for attributes in (row.candidate_attributes, row.active_attributes, row.rollback_attributes):
        if not attributes:
            continue
        for name in relations:
            refs.update((name, target) for target in _ids(attributes.get(name)))
    return refs


def check_references(
    session: Session,
    ctx: EnvironmentContext,
    binding: Binding,
    attributes: dict[str, Any],
    *,
    changed: set[str] | None = None,
    seen: Callable[[InstanceRow], None] | None = None,
    known: Mapping[str, InstanceRow] | None = None,
) -> None:
    """Every relation value must name a live instance of the target entity (422 otherwise)."""
    check_references_of_many(
        session, ctx, binding, [("", attributes)], changed=changed, seen=seen, known=known
    )


def check_references_of_many(
    session: Session,
    ctx: EnvironmentContext,
    binding: Binding,
    items: Sequence[tuple[str, dict[str, Any]]],
    *,
    changed: set[str] | None = None,
    seen: Callable[[InstanceRow], None] | None = None,
    known: Mapping[str, InstanceRow] | None = None,
) -> None:
    """``check_references`` for many attribute sets (``(path prefix, attributes)``) in one lookup.

    ``seen`` is shown every target row read (a decision keeps their versions); ``known``: rows
    not in the database yet (created by the same decision), looked up there first."""
    wanted: dict[str, list[tuple[str, str]]] = {}
    for name, (_info, target) in ctx.catalog.relations(binding.name).items():
        if changed is not None and name not in changed:
            continue
        for prefix, attributes in items:
            for target_id in _ids(attributes.get(name)):
                wanted.setdefault(target_id, []).append((prefix + name, target.name))
    if not wanted:
        return
    found = {i: known[i] for i in wanted if known and i in known}
    missing = [i for i in wanted if i not in found]
    found.update(repo.get_instances(session, ctx.env_id, missing) if missing else {})
    if seen is not None:
        for target_row in found.values():
            seen(target_row)
    errors = []
    for target_id, uses in wanted.items():
        row = found.get(target_id)
        for path, target_entity in uses:
            if row is None or row.deleted:
                errors.append({"path": path, "reason": f"no live {target_entity} instance {target_id}"})
            elif _being_deleted(ctx, row):
                errors.append(
                    {
                        "path": path,
                        "reason": f"{target_entity} {target_id} is being deleted (state {row.state})",
                    }
                )
            elif row.entity != target_entity:
                errors.append(
                    {"path": path, "reason": f"instance {target_id} is a {row.entity}, not a {target_entity}"}
                )
    if errors:
        raise InvalidAttributes(errors)
