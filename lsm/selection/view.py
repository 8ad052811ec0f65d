"""``InventoryView``: the read-only, cached window on one environment's inventory for one compile.

Why it exists: a selector asks many small questions (who owns this instance, what are its
children, what refers to it) and the compiler then needs the rows of everything selected. Asked
naively that is one query per instance and per question; a partial compile would then cost in
proportion to the inventory, which is exactly what partial compiles exist to avoid. The view
answers every question from a cache keyed by instance id, fetches each row at most once, and
offers batch forms (``get_many``, ``children_many``, ``references_*_many``) so that a walk over
a whole tree level is one ``IN`` query (chunked). Every query goes through an index of
``lsm_instance`` / ``lsm_instance_ref``: the cost depends on the rows touched, never on the size
of the inventory. Only ``instances_of`` lists a whole entity, and only filter selectors use it.

What it must not do: write. It hands out frozen ``InstanceRecord`` snapshots and read-only
mappings, never ORM objects, so nothing a selector does can reach the database. It is built per
compile and is not thread-safe.

Give it a ``Session`` inside a read transaction to see one consistent snapshot (what the
compiler does); given a ``Database`` it runs each query in its own short read transaction.

    with db.read() as session:
        view = InventoryView(session, env_id, catalog, attribute_set=lambda row: "active")
        view.owner(port_id)            # -> the router's id
        view.children(router_id)       # -> ids of its live ports
        view.attribute(port_id, "vlan")
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from types import MappingProxyType
from typing import Any, Concatenate, Literal, NamedTuple, ParamSpec, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from lsm.catalog import Catalog
from lsm.errors import UnknownInstance
from lsm.store.database import Database
from lsm.store.instances import reads as instance_reads

AttributeSetName = Literal["candidate", "active", "rollback"]

#: Chooses, per instance, the attribute set this compile uses (``None``: the instance is left out).
AttributeSetChooser = Callable[["InstanceRecord"], AttributeSetName | None]

#: Ids per ``IN (...)`` query: far below SQLite's and PostgreSQL's bound-parameter limits.
DEFAULT_CHUNK_SIZE = 500

_P = ParamSpec("_P")
#: one store read: the view's connection first (``lsm.store.instances.reads``)
_Read = Callable[Concatenate[sa.Connection, _P], list[sa.RowMapping]]


@dataclass(frozen=True, slots=True)
class InstanceRecord:
    """A frozen snapshot of one ``lsm_instance`` row (same field names as ``InstanceRow``)."""

    id: str
    env_id: str
    entity: str
    state: str
    version: int
    desired_state_version: int
    candidate_attributes: dict[str, Any] | None
    active_attributes: dict[str, Any] | None
    rollback_attributes: dict[str, Any] | None
    config: dict[str, Any]
    identity: str | None
    owner_id: str | None
    deleted: bool
    created_at: datetime
    last_updated: datetime

    @property
    def terminated(self) -> bool:
        """A deleted instance: kept for walks and history, never returned to a compile."""
        return self.deleted

    def attribute_set(self, name: AttributeSetName) -> dict[str, Any] | None:
        return cast("dict[str, Any] | None", getattr(self, f"{name}_attributes"))


_RECORD_FIELDS = tuple(f.name for f in fields(InstanceRecord))


class Relation(NamedTuple):
    """One inter-service relation ``source_id.attribute -> target_id`` (in any attribute set)."""

    source_id: str
    attribute: str
    target_id: str


def default_attribute_set(record: InstanceRecord) -> AttributeSetName | None:
    """The set an exporting compile uses: ``active`` (the compiler passes its own chooser)."""
    return "active"


class InventoryView:
    """Read-only, cached access to one environment's instances and relations (see module doc)."""

    def __init__(
        self,
        source: Database | Session,
        env_id: str,
        catalog: Catalog,
        *,
        attribute_set: AttributeSetChooser = default_attribute_set,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be positive")
        self._source = source
        self.env_id = env_id
        self.catalog = catalog
        self._choose = attribute_set
        self._chunk = chunk_size
        self._rows: dict[str, InstanceRecord | None] = {}  # None: known not to exist
        self._sets: dict[str, AttributeSetName | None] = {}
        self._children: dict[str, tuple[str, ...]] = {}
        self._refs_from: dict[str, tuple[Relation, ...]] = {}
        self._refs_to: dict[str, tuple[Relation, ...]] = {}
        self._listings: dict[tuple[str, bool, frozenset[str] | None], tuple[str, ...]] = {}
        self._read: set[str] = set()  # existing rows asked for through this view
        self._queries = 0

    def fork(self, *, attribute_set: AttributeSetChooser) -> InventoryView:
        """A view of the same snapshot that shares everything fetched so far (rows, children,
        relations, listings) but chooses attribute sets its own way and keeps its own
        ``read_ids``.

        Why: a batch of validations is planned in one read transaction; each validation needs
        its own choice of sets (``validate_self`` for its instance) and its own record of what
        its selection depended on, but fetching the same trees once per validation would cost
        a query per tree level per validation. Warm the shared cache once (``prefetch_trees``),
        then run each validation's selector on a fork: it answers from the cache exactly as a
        fresh view would have from the database.
        """
        other = InventoryView(self._source, self.env_id, self.catalog, attribute_set=attribute_set)
        other._chunk = self._chunk
        other._rows, other._children, other._listings = self._rows, self._children, self._listings
        other._refs_from, other._refs_to = self._refs_from, self._refs_to
        return other

    @property
    def queries(self) -> int:
        """Statements this view has issued so far (for compile reports and benchmarks)."""
        return self._queries

    def read_ids(self) -> set[str]:
        """Every existing instance this view has read so far (asked for by id, as a child or in
        a listing): all that a selection run could have depended on (batched validations keep
        such sets disjoint). A fork counts only what was asked through it."""
        return set(self._read)

    # -- instances -----------------------------------------------------------------------
    def get(self, instance_id: str, *, include_terminated: bool = False) -> InstanceRecord | None:
        """The instance, or ``None`` when unknown (or terminated, unless asked for)."""
        return self.get_many([instance_id], include_terminated=include_terminated).get(instance_id)

    def get_many(
        self, instance_ids: Iterable[str], *, include_terminated: bool = False
    ) -> dict[str, InstanceRecord]:
        """The known instances among ``instance_ids``; uncached ones are fetched in batches."""
        ids = list(dict.fromkeys(instance_ids))
        missing = [i for i in ids if i not in self._rows]
        for chunk in self._chunks(missing):
            # by id alone, the environment checked here (``lsm.store.instances.reads.rows_by_id`` says why)
            for mapping in self._fetch(instance_reads.rows_by_id, chunk):
                if mapping["env_id"] == self.env_id:
                    self._remember(mapping)
            for i in chunk:
                self._rows.setdefault(i, None)
        out: dict[str, InstanceRecord] = {}
        for i in ids:
            record = self._rows[i]
            if record is not None:
                self._read.add(i)
                if include_terminated or not record.deleted:
                    out[i] = record
        return out

    def require(self, instance_id: str) -> InstanceRecord:
        """The instance, terminated or not; ``UnknownInstance`` when it is not in the inventory."""
        record = self.get(instance_id, include_terminated=True)
        if record is None:
            raise UnknownInstance(
                f"instance {instance_id!r} is not in the inventory", instance_id=instance_id
            )
        return record

    def instances_of(
        self,
        binding_name: str,
        *,
        include_terminated: bool = False,
        states: Collection[str] | None = None,
    ) -> list[InstanceRecord]:
        """Every instance of a binding (optionally in ``states``), through the entity/state index.

        This one reads a whole entity: only entity, state and attribute-filter selectors use it.
        """
        name = self.catalog.get(binding_name).name
        key = (name, include_terminated, None if states is None else frozenset(states))
        if key not in self._listings:
            rows = self._fetch(
                instance_reads.rows_of_entity,
                self.env_id,
                name,
                states=key[2],
                include_deleted=include_terminated,
            )
            ids = [self._remember(m).id for m in rows]
            self._listings[key] = tuple(ids)
        self._read.update(self._listings[key])
        return [r for r in (self._rows[i] for i in self._listings[key]) if r is not None]

    # -- attributes --------------------------------------------------------------------------
    def attribute_set_name(self, instance_id: str) -> AttributeSetName | None:
        """The set this compile uses for the instance (``None``: the compile leaves it out)."""
        if instance_id not in self._sets:
            self._sets[instance_id] = self._choose(self.require(instance_id))
        return self._sets[instance_id]

    def attributes(self, instance_id: str) -> Mapping[str, Any] | None:
        """The chosen attribute set, read-only; ``None`` when there is no such set."""
        name = self.attribute_set_name(instance_id)
        values = None if name is None else self.require(instance_id).attribute_set(name)
        return None if values is None else MappingProxyType(values)

    def attribute(self, instance_id: str, name: str, default: Any = None) -> Any:
        """One attribute from the chosen set (``default`` when the set or the attribute is absent)."""
        values = self.attributes(instance_id)
        return default if values is None else values.get(name, default)

    # -- ownership ---------------------------------------------------------------------------
    def owner(self, instance_id: str) -> str | None:
        """The owner instance id (the cached ``relation_to_owner`` value), ``None`` for a root."""
        return self.require(instance_id).owner_id

    def children(self, instance_id: str, *, include_terminated: bool = False) -> list[str]:
        """Ids of the instances owned by ``instance_id`` (of every binding), sorted."""
        return self.children_many([instance_id], include_terminated=include_terminated)[instance_id]

    def children_many(
        self, instance_ids: Iterable[str], *, include_terminated: bool = False
    ) -> dict[str, list[str]]:
        """Children of many owners: one indexed query per chunk, child rows cached on the way."""
        ids = list(dict.fromkeys(instance_ids))
        missing = [i for i in ids if i not in self._children]
        for chunk in self._chunks(missing):
            found: dict[str, list[str]] = {i: [] for i in chunk}
            for mapping in self._fetch(instance_reads.rows_owned_by, self.env_id, chunk):
                record = self._remember(mapping)
                found[cast(str, record.owner_id)].append(record.id)
            for owner, kids in found.items():
                self._children[owner] = tuple(sorted(kids))
        for i in ids:
            self._read.update(self._children[i])
        return {
            i: [c for c in self._children[i] if include_terminated or not self._is_terminated(c)] for i in ids
        }

    # -- inter-service relations -----------------------------------------------------------
    def references_from(self, instance_id: str) -> list[Relation]:
        """Relations whose source is ``instance_id`` (what it points to)."""
        return self.references_from_many([instance_id])[instance_id]

    def references_to(self, instance_id: str) -> list[Relation]:
        """Relations whose target is ``instance_id`` (what points to it)."""
        return self.references_to_many([instance_id])[instance_id]

    def references_from_many(self, instance_ids: Iterable[str]) -> dict[str, list[Relation]]:
        return self._references(
            instance_ids, self._refs_from, instance_reads.relations_from, lambda r: r.source_id
        )

    def references_to_many(self, instance_ids: Iterable[str]) -> dict[str, list[Relation]]:
        return self._references(
            instance_ids, self._refs_to, instance_reads.relations_to, lambda r: r.target_id
        )

    # -- internals -------------------------------------------------------------------------------
    def _references(
        self,
        instance_ids: Iterable[str],
        cache: dict[str, tuple[Relation, ...]],
        read: Callable[[sa.Connection, str, Sequence[str]], list[sa.RowMapping]],
        key: Callable[[Relation], str],
    ) -> dict[str, list[Relation]]:
        ids = list(dict.fromkeys(instance_ids))
        missing = [i for i in ids if i not in cache]
        for chunk in self._chunks(missing):
            found: dict[str, list[Relation]] = {i: [] for i in chunk}
            for m in self._fetch(read, self.env_id, chunk):
                relation = Relation(m["source_id"], m["attribute"], m["target_id"])
                found[key(relation)].append(relation)
            for i, relations in found.items():
                cache[i] = tuple(sorted(relations))
        return {i: list(cache[i]) for i in ids}

    def _is_terminated(self, instance_id: str) -> bool:
        record = self._rows.get(instance_id)
        return record is None or record.deleted

    def _remember(self, mapping: sa.RowMapping) -> InstanceRecord:
        record = self._rows.get(mapping["id"])
        if record is None:  # first fetch wins: one snapshot of each row per view
            record = InstanceRecord(**{name: mapping[name] for name in _RECORD_FIELDS})
            self._rows[record.id] = record
        return record

    def _chunks(self, ids: Sequence[str]) -> Iterator[list[str]]:
        for start in range(0, len(ids), self._chunk):
            yield list(ids[start : start + self._chunk])

    def _fetch(self, read: _Read[_P], *args: _P.args, **kwargs: _P.kwargs) -> list[sa.RowMapping]:
        """One store read (``lsm.store.instances.reads``) on the view's connection, counted."""
        self._queries += 1
        if isinstance(self._source, Database):
            with self._source.read() as session:
                return read(session.connection(), *args, **kwargs)
        return read(self._source.connection(), *args, **kwargs)


__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "AttributeSetChooser",
    "AttributeSetName",
    "InstanceRecord",
    "InventoryView",
    "Relation",
    "default_attribute_set",
]
