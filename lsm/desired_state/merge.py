"""The export rules (docs/semantics.md §4) and the plan of what an export writes.

Why pure: every rule must be checked before anything is written, and the checks must cost what
the export carries, not what the environment holds. So this module never queries: the store
encodes the request once (``ExportCheck``), asks it which set names and resource ids matter
(``set_names`` / ``resource_ids``), fetches the current stored rows for exactly those through
indexes, and hands them back to ``plan_partial`` (or, for a full export, every current set
revision and shared row to ``plan_full``). The result is an ``ExportPlan`` (what to close, what
to insert) or an ``ExportRuleViolation``.

How the rules are told apart, for a resource R exported in set B and stored in set A != B
("shared" counts as a set; a partial export never removes a stored shared resource, so it
always keeps the shared set):

* rule 1, R would end up in two sets: A is kept by this export (not replaced, not deleted),
  or R is in two places of the export itself;
* rule 5, R moves out of A (replaced or deleted here) into a set this export does not replace:
  only possible into the shared set of a partial export;
* otherwise R moves between two replaced/deleted sets, which is allowed.

When rules are broken, the lowest-numbered broken rule is reported (rule 7 first: without a
base there is nothing to check against), with every violation of that rule.

This module must not import SQLAlchemy or the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lsm.desired_state.autoedge import (
    AutoEdges,
    Fetch,
    auto_of,
    autoedges_of,
    reencode,
    requires_map,
    substituted,
    substituted_list,
)
from lsm.desired_state.records import (
    SHARED_NAME,
    EncodedResource,
    ExportRequest,
    encode_record,
    encoded_set_hash,
)
from lsm.errors import ExportRuleViolation, InvalidInput, InvalidMetaparameter
from lsm.model.meta import MetaError, meta_of
from lsm.store.desired_state.rows import SharedEdge, StoredResource, StoredRevision

#: Storage name of the shared set (``ds_resource.set_name``); messages say ``shared``.
SHARED = ""

#: How many violations a message spells out; the details always list every id and set.
MAX_MESSAGES = 10


def display(name: str) -> str:
    """The name of a set as people read it: ``shared`` for the shared set."""
    return SHARED_NAME if name == SHARED else name


@dataclass(slots=True)
class ExportPlan:
    """What an accepted export writes; everything else stays as it is.

    ``close_sets``: named sets whose current revision and rows are closed (``superseded_in``).
    ``new_sets``: name -> (content hash, resources) of the revisions to insert.
    ``close_shared`` / ``new_shared``: shared resources to close / insert, one by one.
    ``removed_count``: resources that leave with the closed rows (to keep a running count).
    """

    close_sets: list[str] = field(default_factory=list)
    new_sets: dict[str, tuple[str, list[EncodedResource]]] = field(default_factory=dict)
    close_shared: list[str] = field(default_factory=list)
    new_shared: list[EncodedResource] = field(default_factory=list)
    sets_replaced: list[str] = field(default_factory=list)
    sets_deleted: list[str] = field(default_factory=list)
    removed_count: int = 0

    @property
    def added_count(self) -> int:
        return sum(len(resources) for _, resources in self.new_sets.values()) + len(self.new_shared)


@dataclass(frozen=True, slots=True)
class _Violation:
    message: str
    resources: tuple[str, ...] = ()
    sets: tuple[str, ...] = ()


def _check_metaparameters(request: ExportRequest) -> None:
    """Refuse the export when a resource's ``meta`` breaks a rule of docs/semantics.md §5 (a
    finite limit with no burst, a semaphore of size 0, retry below -1, a wrong type), naming the
    resource and the field: the deploy engine must never meet a value it can not honour. Only
    resources that carry ``meta`` are looked at (it is stored only when set)."""
    for records in (*request.sets.values(), request.shared):
        for record in records:
            if "meta" not in record.attributes:
                continue
            try:
                meta_of(record.attributes)
            except MetaError as exc:
                raise InvalidMetaparameter(
                    f"resource {record.id}: {exc}", resource=record.id, field=f"meta.{exc.field}"
                ) from None


class ExportCheck:
    """One export, encoded once, with the rules that need no stored state already checked.

    Construction raises ``InvalidInput`` for a malformed request (a resource listed twice in
    the same set, an empty or reserved set name, a value JSON can not carry); rule violations
    are collected and raised by ``plan_partial`` / ``plan_full`` / ``no_base`` so that the
    reported rule does not depend on which check happened to run first.
    """

    def __init__(self, request: ExportRequest) -> None:
        self.request = request
        self.kind = request.kind
        self._violations: dict[int, list[_Violation]] = {}
        #: resource id -> set name ("" = shared) in the export (first placement wins)
        self.placement: dict[str, str] = {}
        #: required id outside the export -> [(requiring id, its set)]
        self.unresolved: dict[str, list[tuple[str, str]]] = {}
        #: resource id -> the requires edges the engine added (``lsm.desired_state.autoedge``)
        self.auto_of: dict[str, tuple[str, ...]] = {}

        _check_metaparameters(request)
        sets, shared = request.sets, request.shared
        autoedges = autoedges_of(request)
        #: automatic edges still to resolve against stored rows (``resolve_autoedges``)
        self._pending_autoedges: AutoEdges | None = None
        if autoedges is not None:
            if autoedges.complete:  # the whole version is here: resolve now, nothing stored matters
                changed = autoedges.resolve({})
                sets, shared = substituted(sets, changed), substituted_list(shared, changed)
                self.auto_of = auto_of(changed)
            else:
                self._pending_autoedges = autoedges
        #: exported non-empty sets, encoded, in request order
        self.replaced: dict[str, list[EncodedResource]] = {}
        self.shared: list[EncodedResource] = [encode_record(r) for r in shared]
        for name, records in sets.items():
            _check_set_name(name)
            if records:
                self.replaced[name] = [encode_record(r) for r in records]
        for name in request.deleted_sets:
            _check_set_name(name)
        emptied = {name for name, records in request.sets.items() if not records}
        both = [name for name in dict.fromkeys(request.deleted_sets) if name in self.replaced]
        if both and not request.soft_delete:
            for name in both:
                self._add(3, f"resource set {name} can not be both exported and deleted", sets=(name,))
        #: sets this export deletes (explicitly, or by exporting them empty)
        self.removed: set[str] = emptied | (set(request.deleted_sets) - set(self.replaced))

        for name, resources in self.replaced.items():
            self._place(name, resources)
        self._place(SHARED, self.shared)
        self._check_requires()
        if autoedges is not None and autoedges.complete and self.auto_of:
            autoedges.check_cycles(
                requires_map([*self.replaced.items(), (SHARED, self.shared)]), self.auto_of, None
            )

    # -- automatic edges ------------------------------------------------------------------------
    @property
    def autoedge_lookup(self) -> set[str] | None:
        """Ids whose stored rows ``resolve_autoedges`` needs (``None``: nothing to resolve)."""
        pending = self._pending_autoedges
        return None if pending is None else pending.lookup

    def resolve_autoedges(self, fetch: Fetch) -> None:
        """Add the automatic edges of a partial or incremental export, against the rows ``fetch``
        reads (its candidates outside the export, and what the cycle check reaches); call it
        under the export's lock, before planning. A cycle raises ``ExportRuleViolation``."""
        autoedges = self._pending_autoedges
        if autoedges is None:
            return
        self._pending_autoedges = None
        lookup = autoedges.lookup
        changed = autoedges.resolve(fetch(lookup) if lookup else {})
        if not changed:
            return
        self.auto_of = auto_of(changed)
        encoded = [*self.replaced.items(), (SHARED, self.shared)]
        reencode(changed, encoded, self.placement, self.unresolved)
        autoedges.check_cycles(requires_map(encoded), self.auto_of, fetch)

    # -- what the store must fetch --------------------------------------------------------------
    @property
    def set_names(self) -> set[str]:
        """Names whose current revision a partial export needs: those it replaces or deletes."""
        return set(self.replaced) | self.removed

    @property
    def resource_ids(self) -> set[str]:
        """Ids whose current row a partial export needs: its own and those it requires from outside."""
        return set(self.placement) | set(self.unresolved)

    # -- outcomes -----------------------------------------------------------------------------
    def no_base(self, env_id: str) -> None:
        """The environment has no version yet: only a full export may create the first one."""
        if self.kind == "partial" or self.request.incremental:
            self._add(
                7, f"the first desired-state version of environment {env_id} must come from a full export"
            )
        self._raise()

    def plan_partial(
        self,
        revisions: Mapping[str, StoredRevision],
        stored: Mapping[str, StoredResource],
        shared_edges: Iterable[SharedEdge] = (),
    ) -> ExportPlan:
        """Check the rules against the current rows of ``set_names`` and ``resource_ids``.

        ``revisions`` maps a name to its current revision (absent = no such set); ``stored`` maps
        a resource id to its current row (absent = not in the latest version); ``shared_edges``
        are the stored shared resources' requires into the sets of ``set_names`` (a partial
        export keeps every stored shared resource, so none of them may be left requiring a
        resource this export removes: rule 6).
        """
        for edge in shared_edges:
            if edge.required_id not in self.placement:
                self._add(
                    6,
                    f"stored shared resource {edge.requirer_id} requires {edge.required_id}, which this "
                    f"export removes from resource set {display(edge.required_set)}",
                    resources=(edge.requirer_id, edge.required_id),
                    sets=(display(edge.required_set), SHARED_NAME),
                )
        touched = self.set_names
        for rid, new in self.placement.items():
            row = stored.get(rid)
            if row is None or row.set_name == new:
                continue
            old = row.set_name
            if old == SHARED or old not in touched:
                self._multiple_sets(rid, old, new)
            elif new == SHARED:
                self._add(
                    5,
                    f"resource {rid} can not move from {display(old)} to {display(new)} unless both "
                    "resource sets are replaced or deleted in the same export",
                    resources=(rid,),
                    sets=(display(old), display(new)),
                )
        for res in self.shared:
            row = stored.get(res.id)
            if row is not None and row.set_name == SHARED and _differs(row, res):
                self._add(
                    4,
                    f"shared resource {res.id} differs from the stored one: "
                    "a partial export can not change shared resources",
                    resources=(res.id,),
                    sets=(SHARED_NAME,),
                )
        for required, requirers in self.unresolved.items():
            row = stored.get(required)
            for rid, in_set in requirers:
                if row is None or (row.set_name != SHARED and row.set_name in touched):
                    self._missing(rid, in_set, required)
                elif row.set_name != SHARED and in_set != SHARED:
                    self._cross_set(rid, in_set, required, row.set_name)
        self._raise()

        plan = ExportPlan()
        self._plan_sets(plan, revisions, self.removed)
        plan.new_shared = [res for res in self.shared if res.id not in stored]
        return plan

    def plan_full(
        self, revisions: Mapping[str, StoredRevision], shared: Iterable[StoredResource]
    ) -> ExportPlan:
        """A full export against every current revision and every current shared row."""
        for required, requirers in self.unresolved.items():
            for rid, in_set in requirers:
                self._missing(rid, in_set, required)
        self._raise()

        plan = ExportPlan()
        self._plan_sets(plan, revisions, set(revisions) - set(self.replaced))
        exported = {res.id: res for res in self.shared}
        for row in shared:
            res = exported.get(row.resource_id)
            if res is None or _differs(row, res):
                plan.close_shared.append(row.resource_id)
            else:
                del exported[row.resource_id]
        plan.new_shared = list(exported.values())
        plan.removed_count += len(plan.close_shared)
        return plan

    def plan_incremental(
        self,
        revisions: Mapping[str, StoredRevision],
        stored: Mapping[str, StoredResource],
        kept_shared: Mapping[str, Iterable[str]],
    ) -> ExportPlan:
        """An incremental full export (``ExportRequest.incremental``), checked like a partial one.

        ``stored`` maps each of ``resource_ids``, ``retired_ids`` and the ids ``kept_shared``
        requires to its current row; ``kept_shared`` maps each stored shared resource that the
        export neither carries nor retires to its ``requires``. Sets follow the partial rules;
        the shared set is replaced where the export names it: a stored shared resource that the
        export carries with other content is replaced (rule 4 guards partial exports only), a
        retired one is removed (and may move into a replaced set), and the others stay, since
        unchanged trees still produce them, so their ``requires`` must still resolve (rule 6).
        """
        touched = self.set_names
        retired = self.retired_ids
        for rid, new in self.placement.items():
            row = stored.get(rid)
            if row is None or row.set_name == new:
                continue
            old = row.set_name
            if rid not in retired and (old == SHARED or old not in touched):
                self._multiple_sets(rid, old, new)
        for required, requirers in self.unresolved.items():
            row = stored.get(required)
            gone = row is None or required in retired or (row.set_name != SHARED and row.set_name in touched)
            for rid, in_set in requirers:
                if gone:
                    self._missing(rid, in_set, required)
                elif row is not None and row.set_name != SHARED and in_set != SHARED:
                    self._cross_set(rid, in_set, required, row.set_name)
        for rid, requires in kept_shared.items():
            for required in requires:
                row = stored.get(required)
                if required not in self.placement and (
                    row is None or required in retired or (row.set_name != SHARED and row.set_name in touched)
                ):
                    self._add(
                        6,
                        f"shared resource {rid}, kept from the previous version, requires {required}, "
                        "which this export removes",
                        resources=(rid, required),
                        sets=(SHARED_NAME,),
                    )
        self._raise()

        plan = ExportPlan()
        self._plan_sets(plan, revisions, self.removed)
        for res in self.shared:
            row = stored.get(res.id)
            if row is not None and row.set_name == SHARED:
                if not _differs(row, res):
                    continue
                plan.close_shared.append(res.id)
            plan.new_shared.append(res)
        plan.close_shared.extend(
            rid for rid in sorted(retired) if (row := stored.get(rid)) is not None and row.set_name == SHARED
        )
        plan.removed_count += len(plan.close_shared)
        return plan

    @property
    def retired_ids(self) -> set[str]:
        """The shared ids an incremental export removes (an id it also exports is not retired)."""
        return set(self.request.retired_shared) - {res.id for res in self.shared}

    # -- internals ------------------------------------------------------------------------------
    def _plan_sets(
        self, plan: ExportPlan, revisions: Mapping[str, StoredRevision], removed: set[str]
    ) -> None:
        for name, resources in self.replaced.items():
            content_hash = encoded_set_hash(resources)
            current = revisions.get(name)
            if current is not None and current.content_hash == content_hash:
                continue  # same content: the revision in use stays, nothing is written
            if current is not None:
                plan.close_sets.append(name)
                plan.removed_count += current.resource_count
            plan.new_sets[name] = (content_hash, resources)
        for name in sorted(removed):
            current = revisions.get(name)
            if current is None:
                continue  # deleting a set that does not exist is not an error
            plan.close_sets.append(name)
            plan.sets_deleted.append(name)
            plan.removed_count += current.resource_count
        plan.sets_replaced = sorted(plan.new_sets)

    def _place(self, name: str, resources: list[EncodedResource]) -> None:
        placement = self.placement
        for res in resources:
            rid = res.id
            other = placement.get(rid)
            if other is None:
                placement[rid] = name
            elif other == name:
                raise InvalidInput(
                    f"resource {rid} is listed more than once in {display(name)}",
                    resources=[rid],
                    sets=[display(name)],
                )
            else:
                self._multiple_sets(rid, other, name)

    def _check_requires(self) -> None:
        placement = self.placement
        for name, resources in [*self.replaced.items(), (SHARED, self.shared)]:
            for res in resources:
                for required in res.record.requires:
                    where = placement.get(required)
                    if where is None:
                        self.unresolved.setdefault(required, []).append((res.id, name))
                    elif name != SHARED and where not in (name, SHARED):
                        self._cross_set(res.id, name, required, where)

    def _multiple_sets(self, rid: str, first: str, second: str) -> None:
        names = sorted({display(first), display(second)})
        self._add(
            1,
            f"resource {rid} can not be part of multiple resource sets: {names[0]} and {names[1]}",
            resources=(rid,),
            sets=tuple(names),
        )

    def _cross_set(self, rid: str, in_set: str, required: str, other: str) -> None:
        self._add(
            6,
            f"resource {rid} in resource set {display(in_set)} can not require {required} "
            f"in resource set {display(other)}",
            resources=(rid, required),
            sets=(display(in_set), display(other)),
        )

    def _missing(self, rid: str, in_set: str, required: str) -> None:
        if self.kind == "full" and not self.request.incremental:
            where = "not in the export"
        elif in_set == SHARED:
            where = "neither in the export nor kept from the previous version"
        else:
            where = "neither in the export nor a shared resource"
        self._add(
            6,
            f"resource {rid} in {display(in_set)} requires {required}, which is {where}",
            resources=(rid, required),
            sets=(display(in_set),),
        )

    def _add(
        self, rule: int, message: str, *, resources: tuple[str, ...] = (), sets: tuple[str, ...] = ()
    ) -> None:
        self._violations.setdefault(rule, []).append(_Violation(message, resources, sets))

    def _raise(self) -> None:
        if not self._violations:
            return
        rule = 7 if 7 in self._violations else min(self._violations)
        violations = self._violations[rule]
        messages = [v.message for v in violations[:MAX_MESSAGES]]
        if len(violations) > MAX_MESSAGES:
            messages.append(f"and {len(violations) - MAX_MESSAGES} more")
        raise ExportRuleViolation(
            "; ".join(messages),
            rule=rule,
            resources=sorted({rid for v in violations for rid in v.resources}),
            sets=sorted({name for v in violations for name in v.sets}),
        )


def _check_set_name(name: str) -> None:
    if not isinstance(name, str) or not name or name == SHARED_NAME:
        raise InvalidInput(
            f"resource set name {name!r} is not allowed (empty, or reserved for the shared set)",
            sets=[str(name)],
        )


def _differs(row: StoredResource, res: EncodedResource) -> bool:
    return row.attributes_json != res.attributes_json or row.requires_json != res.requires_json


__all__ = [
    "SHARED",
    "ExportCheck",
    "ExportPlan",
    "SharedEdge",
    "StoredResource",
    "StoredRevision",
    "display",
]
