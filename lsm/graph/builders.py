"""Pictures of the engine's things as ``Graph`` data: lifecycles, owner trees, sets, requires.

Pure functions over plain records (the facade reads them); nothing here touches the database,
so the same builders serve the API, the CLI and the console. Ids of nodes are the things' own ids
(state names, instance ids, resource ids), which is what a DOT user greps for.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from lsm.graph.model import Edge, Graph, Node
from lsm.schemas.deploy import ResourceStatus

if TYPE_CHECKING:
    from lsm.lifecycle.spec import LifecycleSpec

#: Fill colours per lifecycle state label, readable on white and in grey-scale print. The
#: lifecycle tables, ``lsm lifecycle show --dot``, owner trees and the console all use these.
LABEL_COLOURS: dict[str, str] = {
    "info": "lightblue",
    "success": "palegreen",
    "warning": "gold",
    "danger": "salmon",
}
#: Fill colours per resource deploy status.
STATUS_COLOURS: dict[str, str] = {
    ResourceStatus.DEPLOYED: "palegreen",
    ResourceStatus.DEPLOYING: "lightblue",
    ResourceStatus.FAILED: "salmon",
    ResourceStatus.SKIPPED: "gold",
    "undefined": "gold",
}
SET_COLOUR = "lightsteelblue"
#: Stroke colours per transfer trigger (error outcomes stay dashed red); the console's legend.
TRIGGER_COLOURS: dict[str, str] = {
    "auto": "slategray",
    "api_set_state": "purple",
    "on_update": "royalblue",
    "on_delete": "darkorange",
    "resource_based": "green",
    "validate": "teal",
    "export_failed": "firebrick",
}
#: Triggers whose transfer is itself an error outcome: drawn dashed like the error edges.
ERROR_TRIGGERS = frozenset({"export_failed"})


def lifecycle_graph(spec: LifecycleSpec) -> Graph:
    """States filled by label (initial bold, deleted doubled); an edge per transfer outcome.

    Edge labels read ``<number>: <trigger> [validate] {operation}`` with transfers numbered from 1
    in definition order, as docs/semantics.md §1 numbers them; edges are coloured by trigger,
    error edges dashed red.
    """
    initial = set(spec.initial_states)
    nodes = tuple(
        Node(
            id=state.name,
            label=state.name,
            kind=" ".join(
                [
                    "state",
                    *(["initial"] if state.name in initial else []),
                    *(["deleted"] if state.deleted else []),
                ]
            ),
            color=LABEL_COLOURS[state.label],
            tooltip=state.description or f"{state.name} ({state.label})",
        )
        for state in spec.states
    )
    edges: list[Edge] = []
    for number, t in enumerate(spec.transfers, start=1):
        label = f"{number}: {t.trigger}" + (" [validate]" if t.validate else "")
        label += " [export]" if t.request_export else ""
        target_label = label + (f"\n{{{t.target_operation}}}" if t.target_operation else "")
        style = "dashed" if t.trigger in ERROR_TRIGGERS else "solid"
        colour = TRIGGER_COLOURS.get(f"{t.trigger}")
        edges.append(Edge(t.source, t.target, label=target_label, color=colour, style=style))
        if t.error is not None:
            error_label = f"{label} error" + (f"\n{{{t.error_operation}}}" if t.error_operation else "")
            edges.append(Edge(t.source, t.error, label=error_label, style="dashed", color="red"))
    return Graph(title=spec.name, nodes=nodes, edges=tuple(edges), direction="LR")


class InstanceLike(Protocol):
    """What an owner tree needs of an instance (``InstanceOut`` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def service_entity(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def owner(self) -> str | None: ...


def owner_tree_graph(
    instances: Iterable[InstanceLike],
    *,
    title: str = "owners",
    state_label: Callable[[str, str], str | None] | None = None,
    href: Callable[[InstanceLike], str | None] | None = None,
    identities: Mapping[str, str] | None = None,
) -> Graph:
    """Instances as nodes, an edge from each owner to what it owns (top to bottom).

    ``state_label(entity, state)`` gives the lifecycle label that colours the node; an owner not
    among ``instances`` (another environment's, or purged) is drawn as an ``external`` node.
    ``identities`` (instance id -> identity value) names a node by what a person reads; an
    instance without one is named by its short id (the tooltip has the whole id either way).
    """
    identities = identities or {}
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    owners: list[str] = []
    for instance in instances:
        label = state_label(instance.service_entity, instance.state) if state_label else None
        named = identities.get(instance.id) or instance.id[:8]
        nodes[instance.id] = Node(
            id=instance.id,
            label=f"{instance.service_entity}\n{named}\n{instance.state}",
            kind="instance" if instance.owner else "instance root",
            color=LABEL_COLOURS.get(label or ""),
            tooltip=f"{instance.service_entity} {instance.id} in {instance.state}",
            href=href(instance) if href else None,
        )
        if instance.owner:
            edges.append(Edge(instance.owner, instance.id, label="owns"))
            owners.append(instance.owner)
    for owner in owners:
        if owner not in nodes:
            nodes[owner] = Node(id=owner, label=f"{owner[:8]}\n(not shown)", kind="instance external")
    return Graph(title=title, nodes=tuple(nodes.values()), edges=tuple(edges), direction="TB")


def resource_sets_graph(
    sets: Mapping[str, Sequence[str]],
    shared: Sequence[str] = (),
    *,
    title: str = "resource sets",
    status: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
) -> Graph:
    """Each resource set and the shared set as a node, with an edge to each resource it holds;
    ``names`` (set id -> its root's entity and identity) labels a set for a person."""
    status = status or {}
    names = names or {}
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    groups = [(f"set:{name}", names.get(name, name), "set", ids) for name, ids in sets.items()]
    if shared:
        groups.append(("set:", "shared", "set shared", shared))
    for node_id, name, kind, ids in groups:
        nodes[node_id] = Node(id=node_id, label=f"{name}\n{len(ids)} resources", kind=kind, color=SET_COLOUR)
        for rid in ids:
            nodes.setdefault(rid, _resource_node(rid, status.get(rid), shared=kind == "set shared"))
            edges.append(Edge(node_id, rid))
    return Graph(title=title, nodes=tuple(nodes.values()), edges=tuple(edges), direction="LR")


class ResourceLike(Protocol):
    """What a requires graph needs of a resource (``ResourceRecord`` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def requires(self) -> Sequence[str]: ...


def requires_graph(
    resources: Iterable[ResourceLike],
    *,
    title: str = "requires",
    shared: Collection[str] = (),
    status: Mapping[str, str] | None = None,
    automatic: Mapping[str, Collection[str]] | None = None,
) -> Graph:
    """One set's resources and their requires, drawn in deploy order: ``required -> requirer``.

    A required resource outside the given ones (a shared resource, another set's) is added and
    marked ``external``; ids in ``shared`` are marked ``shared`` (dashed border). ``automatic``
    maps a resource id to the required ids the engine added (``autoedge``): those edges are
    dashed and labelled ``auto``.
    """
    status = status or {}
    automatic = automatic or {}
    listed = list(resources)
    nodes: dict[str, Node] = {
        r.id: _resource_node(r.id, status.get(r.id), shared=r.id in shared) for r in listed
    }
    edges: list[Edge] = []
    for resource in listed:
        for required in resource.requires:
            if required not in nodes:
                node = _resource_node(required, status.get(required), shared=required in shared)
                nodes[required] = Node(
                    id=node.id,
                    label=node.label,
                    kind=node.kind + " external",
                    color=node.color,
                    tooltip=node.tooltip,
                )
            if required in automatic.get(resource.id, ()):
                edges.append(Edge(required, resource.id, label="auto", style="dashed"))
            else:
                edges.append(Edge(required, resource.id, label="", style="solid"))
    return Graph(title=title, nodes=tuple(nodes.values()), edges=tuple(edges), direction="LR")


def _resource_node(resource_id: str, status: str | None, *, shared: bool) -> Node:
    kind = "resource shared" if shared else "resource"
    tooltip = resource_id + (f" ({status})" if status else "") + (" - shared" if shared else "")
    label = resource_id if not status else f"{resource_id}\n{status}"
    return Node(
        id=resource_id, label=label, kind=kind, color=STATUS_COLOURS.get(status or ""), tooltip=tooltip
    )
