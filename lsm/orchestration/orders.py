"""An order's items checked as a whole and turned into the commands of ONE batch.

Why here: an order (``POST /lsm/v1/order``) is applied by ``Orchestrator.execute_many``, the
same all-or-nothing batch as the bulk route, so its schemas, identities, versions and relations
are checked by the one decide step. What only an order has is checked first, for every item at
once, before anything is decided: the entity is known, the fields fit the action, local names
(``ref``) are unique and every ``{"$ref": name}`` names an item, no two items touch one
instance, the refs between creates form no cycle, the order fits the environment's
``max_order_items``. Each refusal names the item (``index``, ``ref``) and the ``rule``; one
refused item refuses the whole order and nothing is written.

Creates are decided in the order their refs need (a port after the router it names), whatever
order the file lists them in; their ids are chosen here, so a ``$ref`` becomes the id of the
instance its item creates before anything is decided. A batch refusal from the decide step
(a bad attribute, a version conflict) is renumbered to the order's items (``renumber``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from lsm.errors import InvalidInput, LsmError
from lsm.orchestration.batch import positions
from lsm.orchestration.commands import Command, Create, Delete, SetState, Update
from lsm.orchestration.context import EnvironmentContext
from lsm.schemas.orders import LocalRef, OrderItem
from lsm.store.instances import repository as repo

#: the state an item waits for when it names none, by action (``set_state``: its target)
DEFAULT_WAIT_FOR = {"create": "up", "update": "up", "delete": "terminated"}


@dataclass(frozen=True)
class PlannedItem:
    """One item of a checked order: the instance it makes or changes and the state it waits for."""

    index: int
    action: str
    entity: str
    ref: str | None
    instance_id: str
    wait_for: str

    def stored(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "action": self.action,
            "entity": self.entity,
            "ref": self.ref,
            "instance_id": self.instance_id,
            "wait_for": self.wait_for,
        }


@dataclass(frozen=True)
class OrderPlan:
    """The commands to run (in dependency order), which item each is, and every item."""

    commands: list[Command]
    item_of: list[int]
    items: list[PlannedItem]


class _Problems:
    """The refusals found so far, one entry per item and rule."""

    def __init__(self, items: Sequence[OrderItem]) -> None:
        self.items = items
        self.found: list[dict[str, Any]] = []

    def add(self, index: int, rule: str, message: str, **details: Any) -> None:
        item = self.items[index]
        named = f" ({item.ref})" if item.ref else ""
        self.found.append(
            {
                "index": index,
                "ref": item.ref,
                "action": item.action,
                "entity": item.entity,
                "error": "invalid_input",
                "rule": rule,
                "message": f"item {index}{named}: {message}",
                **details,
            }
        )

    def raise_any(self) -> None:
        if not self.found:
            return
        first = self.found[0]["message"]
        more = f" (and {len(self.found) - 1} more)" if len(self.found) > 1 else ""
        raise InvalidInput(
            f"the order is refused, nothing was written: {first}{more}", items=sorted(self.found, key=_at)
        )


def _at(problem: dict[str, Any]) -> int:
    return int(problem["index"])


def plan_order(
    session: Session, ctx: EnvironmentContext, items: Sequence[OrderItem], *, limit: int
) -> OrderPlan:
    """Check ``items`` as a whole (module docstring) and return the batch that applies them;
    ``InvalidInput`` listing every refused item otherwise (or ``NotFound``-free: an unknown
    instance is an item's refusal too)."""
    if len(items) > limit:
        raise InvalidInput(
            f"an order holds at most {limit} items (setting max_order_items), not {len(items)}",
            field="items",
            rule="max_order_items",
            limit=limit,
            given=len(items),
        )
    problems = _Problems(items)
    names = _local_names(items, problems)
    uses = [_refs_in(item.attributes) for item in items]
    for index, item in enumerate(items):
        _check_fields(index, item, problems, ctx)
        for name in uses[index] | ({item.instance.ref} if isinstance(item.instance, LocalRef) else set()):
            if name not in names:
                problems.add(
                    index, "dangling_ref", f'{{"$ref": "{name}"}} names no item of the order', name=name
                )
    problems.raise_any()
    ids, versions = _instances(session, ctx, items, names, problems)
    _one_item_per_instance(items, ids, problems)
    order = _dependency_order(items, names, uses, problems)
    problems.raise_any()
    commands: list[Command] = []
    for index in order:
        commands.append(_command(items[index], ids, versions[index], names, index))
    planned = [
        PlannedItem(
            index,
            item.action,
            ctx.binding(item.entity).name,
            item.ref,
            ids[index],
            item.wait_for or item.target_state or DEFAULT_WAIT_FOR.get(item.action, "up"),
        )
        for index, item in enumerate(items)
    ]
    return OrderPlan(commands, order, planned)


def _local_names(items: Sequence[OrderItem], problems: _Problems) -> dict[str, int]:
    names: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.ref is None:
            continue
        if item.ref in names:
            problems.add(
                index, "duplicate_ref", f"the local name {item.ref!r} is item {names[item.ref]}'s already"
            )
            continue
        names[item.ref] = index
    return names


def _refs_in(value: Any) -> set[str]:
    """Every ``{"$ref": name}`` in an attribute value, at any depth."""
    if isinstance(value, dict):
        if set(value) == {"$ref"} and isinstance(value["$ref"], str):
            return {value["$ref"]}
        return {name for v in value.values() for name in _refs_in(v)}
    if isinstance(value, list):
        return {name for v in value for name in _refs_in(v)}
    return set()


def _resolved(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every ``{"$ref": name}`` replaced by the id of that item's instance."""
    if isinstance(value, dict):
        if set(value) == {"$ref"} and isinstance(value["$ref"], str):
            return ids[value["$ref"]]
        return {k: _resolved(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, ids) for v in value]
    return value


def _check_fields(index: int, item: OrderItem, problems: _Problems, ctx: EnvironmentContext) -> None:
    try:
        binding = ctx.binding(item.entity)
    except LsmError:
        problems.add(index, "unknown_entity", f"no service entity {item.entity!r}")
        return
    create = item.action == "create"
    if create and item.instance is not None:
        problems.add(index, "fields", "a create names no instance (instance_id chooses its id)")
    if not create and item.instance is None:
        problems.add(index, "fields", f"a {item.action} names its instance")
    if not create and item.instance_id is not None:
        problems.add(index, "fields", "only a create chooses an instance_id")
    if item.action == "update" and item.attributes is None:
        problems.add(index, "fields", "an update carries attributes")
    if item.action in ("delete", "set_state") and item.attributes is not None:
        problems.add(index, "fields", f"a {item.action} carries no attributes")
    if (item.action == "set_state") != (item.target_state is not None):
        problems.add(index, "fields", "target_state is for a set_state, and a set_state needs one")
    if create and item.current_version is not None:
        problems.add(index, "fields", "a create has no current_version")
    lifecycle = ctx.lifecycle(binding)
    for state in (item.wait_for, item.target_state):
        if state is not None and not lifecycle.has_state(state):
            problems.add(
                index, "unknown_state", f"lifecycle {lifecycle.name!r} has no state {state!r}", state=state
            )
    default = DEFAULT_WAIT_FOR.get(item.action)
    if item.wait_for is None and item.target_state is None and not lifecycle.has_state(default or "up"):
        problems.add(
            index,
            "unknown_state",
            f"lifecycle {lifecycle.name!r} has no state {default!r} to wait for: name one in wait_for",
            state=default,
        )


def _instances(
    session: Session,
    ctx: EnvironmentContext,
    items: Sequence[OrderItem],
    names: dict[str, int],
    problems: _Problems,
) -> tuple[list[str], list[int | None]]:
    """The instance id of every item (chosen for a create, found for the others; a ``$ref``
    instance is the named item's) and the version a change is based on."""
    ids: list[str] = [""] * len(items)
    versions: list[int | None] = [None] * len(items)
    for index, item in enumerate(items):
        if item.action != "create":
            continue
        if item.instance_id is None:
            ids[index] = str(uuid.uuid4())
            continue
        try:  # the form the instance is created under (as a create's chosen id), not as written
            ids[index] = str(uuid.UUID(item.instance_id))
        except ValueError:
            ids[index] = f"$invalid:{index}"  # refused below; never taken for another item's id
            problems.add(index, "instance_id", f"instance_id {item.instance_id!r} is not a UUID")
    for index, item in enumerate(items):
        if item.action == "create":
            continue
        if isinstance(item.instance, LocalRef):
            ids[index] = ids[names[item.instance.ref]] or f"$ref:{item.instance.ref}"
            versions[index] = item.current_version
            continue
        assert item.instance is not None
        binding = ctx.binding(item.entity)
        try:
            row = repo.find_instance(
                session, ctx.env_id, binding.name, item.instance, identity_attr=binding.identity
            )
        except LsmError as exc:
            problems.add(index, "unknown_instance", exc.message, instance=item.instance)
            continue
        ids[index] = row.id
        versions[index] = row.version if item.current_version is None else item.current_version
    return ids, versions


def _one_item_per_instance(items: Sequence[OrderItem], ids: list[str], problems: _Problems) -> None:
    first: dict[str, int] = {}
    for index, instance_id in enumerate(ids):
        if not instance_id:
            continue
        if instance_id in first:
            problems.add(
                index,
                "one_item_per_instance",
                f"item {first[instance_id]} changes the same instance {instance_id}",
                instance=instance_id,
                other=first[instance_id],
            )
        else:
            first[instance_id] = index


def _dependency_order(
    items: Sequence[OrderItem], names: dict[str, int], uses: list[set[str]], problems: _Problems
) -> list[int]:
    """Item indexes with every item after the items its attribute ``$ref``s name (stable:
    otherwise in the order given); a cycle is every item on it refused."""
    needs = {i: sorted({names[n] for n in uses[i] if n in names} - {i}) for i in range(len(items))}
    for i, name_set in enumerate(uses):
        if any(names.get(n) == i for n in name_set):
            problems.add(i, "ref_cycle", "the item refers to itself")
    done: list[int] = []
    placed: set[int] = set()
    state: dict[int, int] = {}  # 1: on the path, 2: placed

    for start in range(len(items)):
        if start in placed:
            continue
        stack: list[tuple[int, int]] = [(start, 0)]
        path: list[int] = []
        while stack:
            node, at = stack.pop()
            if at == 0:
                if state.get(node) == 2:
                    continue
                state[node] = 1
                path.append(node)
            deps = needs[node]
            if at < len(deps):
                stack.append((node, at + 1))
                nxt = deps[at]
                if state.get(nxt) == 1:
                    cycle = path[path.index(nxt) :]
                    chain = " -> ".join(_named(items, c) for c in [*cycle, nxt])
                    for c in cycle:
                        problems.add(c, "ref_cycle", f"its $refs form a cycle: {chain}", cycle=cycle)
                    continue
                if state.get(nxt) != 2:
                    stack.append((nxt, 0))
                continue
            state[node] = 2
            path.pop()
            placed.add(node)
            done.append(node)
    return done


def _named(items: Sequence[OrderItem], index: int) -> str:
    ref = items[index].ref
    return f"{index} ({ref})" if ref else str(index)


def _command(
    item: OrderItem, ids: list[str], version: int | None, names: dict[str, int], index: int
) -> Command:
    by_name = {name: ids[i] for name, i in names.items()}
    attributes = _resolved(item.attributes, by_name) if item.attributes is not None else {}
    instance_id = ids[index]
    if item.action == "create":
        return Create(item.entity, attributes, instance_id=instance_id, drawn=item.instance_id is None)
    current = version if version is not None else 0
    if item.action == "update":
        return Update(item.entity, instance_id, current, attributes)
    if item.action == "delete":
        return Delete(item.entity, instance_id, current)
    assert item.target_state is not None
    return SetState(item.entity, instance_id, current, item.target_state, item.message)


def renumber(error: LsmError, plan: OrderPlan, items: Sequence[OrderItem]) -> LsmError:
    """A batch refusal of the decide step, its items named by the order's ``index`` and ``ref``
    (the batch counts within ``create`` and ``update``, in dependency order)."""
    commands = plan.commands
    where = {pos: plan.item_of[n] for n, pos in enumerate(positions(commands))}

    def named(entry: dict[str, Any]) -> None:
        key = (entry.pop("op", None), entry.get("index"))
        if key in where:
            index = where[key]
            entry.update(index=index, ref=items[index].ref, action=items[index].action)
            entry.update(entity=items[index].entity)

    named(error.details)
    entries = error.details.get("items") or []
    for entry in entries:
        named(entry)
    if entries:  # the batch's message counts within create/update: say it with the order's numbers
        first = entries[0]
        item = f"item {first.get('index')}" + (f" ({first['ref']})" if first.get("ref") else "")
        more = f" (and {len(entries) - 1} more)" if len(entries) > 1 else ""
        error.message = f"the order is refused, nothing was written: {item}: {first.get('message')}{more}"
    return error
