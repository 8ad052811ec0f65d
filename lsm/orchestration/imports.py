"""Bulk import of instances straight into a state: migrations from another orchestrator, benchmarks.

Why here: the orchestration is the only place that writes instance state. An import bypasses
the lifecycle's transfers on purpose (no validation compile per instance), but not its checks:
the state must exist, attributes are validated against the catalog, relations must name live
instances of the right entity (one batched lookup for the whole import), and identity or id
clashes refuse the whole import with a 409. Nothing is written unless everything passes; no
compile is requested (run a full compile afterwards).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from lsm.catalog import identity_value, validate_attributes
from lsm.errors import Conflict, InvalidAttributes, InvalidInput
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.references import check_references_of_many
from lsm.store.database import Database
from lsm.store.instances.bulk import import_instances as insert_instances


def import_instances(
    db: Database, ctx: EnvironmentContext, entity: str, state: str, attribute_sets: list[dict[str, Any]]
) -> list[str]:
    """Import instances of ``entity`` in ``state`` with these active attributes; their ids, in order."""
    binding = ctx.binding(entity)
    if not ctx.lifecycle(binding).has_state(state):
        raise InvalidInput(f"{state!r} is not a state of {binding.lifecycle!r}", state=state)
    validated = []
    for index, attributes in enumerate(attribute_sets):
        try:
            checked = validate_attributes(binding.entity, attributes)
            identity_value(checked, binding.identity)
            validated.append(checked)
        except InvalidAttributes as exc:
            raise InvalidAttributes([{**e, "path": f"[{index}].{e['path']}"} for e in exc.errors]) from None
    try:
        with db.write() as session:
            check_references_of_many(session, ctx, binding, [(f"[{i}].", a) for i, a in enumerate(validated)])
            return insert_instances(
                session,
                ctx.env_id,
                binding.name,
                state,
                validated,
                identity=binding.identity,
                relation_to_owner=binding.relation_to_owner,
                relations=binding.entity.relations(),
            )
    except IntegrityError:
        raise Conflict(
            f"import of {len(validated)} {binding.name} instances refused: an id or identity value "
            "is already used (nothing was imported)",
            entity=binding.name,
        ) from None
