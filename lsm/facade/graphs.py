"""Pictures of one environment as ``lsm.graph.Graph`` data: lifecycles, owner trees, sets, requires.

The facade reads the records (bounded reads in ``lsm.store.instances.graph_queries`` and the
desired-state store) and hands them to the pure builders of ``lsm.graph``; the API and the CLI
render the graph as SVG, DOT or JSON. Every graph is limited to ``MAX_GRAPH_NODES`` nodes: a
larger one is an ``InvalidInput`` (422) that names the limit and the parameter to narrow it with,
never a slow answer nobody can read.
"""

from __future__ import annotations

from collections.abc import Iterable

from lsm.desired_state.autoedge import auto_requires_of
from lsm.desired_state.merge import SHARED
from lsm.errors import InvalidInput, NotFound, UnknownInstance, UnknownResourceSet, UnknownVersion
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.set_names import set_names
from lsm.facade.views import instance_out
from lsm.graph import Graph, lifecycle_graph, owner_tree_graph, requires_graph, resource_sets_graph
from lsm.orchestration import EnvironmentContext
from lsm.schemas.limits import MAX_GRAPH_NODES
from lsm.store.deploy import queries as deploy_queries
from lsm.store.instances import graph_queries
from lsm.store.instances import repository as repo


class GraphsFacade:
    """The four pictures of issue 12 §3, each at most ``limit`` nodes."""

    def __init__(self, core: Core, *, limit: int = MAX_GRAPH_NODES) -> None:
        self.core = core
        self.limit = limit

    def _env(self, ctx: RequestContext) -> EnvironmentContext:
        return self.core.environments.context(ctx.environment)

    def _bounded(self, graph: Graph, narrow: str) -> Graph:
        if len(graph.nodes) > self.limit:
            raise InvalidInput(
                f"the graph has more than {self.limit} nodes, the most a picture may have; {narrow}",
                limit=self.limit,
                nodes=len(graph.nodes),
            )
        return graph

    def lifecycle(self, ctx: RequestContext, name: str) -> Graph:
        """The lifecycle ``name`` as the environment knows it (UnknownLifecycle names the known ones)."""
        return lifecycle_graph(self._env(ctx).lifecycles.get(name))

    def owners(self, ctx: RequestContext, *, entity: str | None = None, instance: str | None = None) -> Graph:
        """Owner trees: the whole tree around ``instance`` (an id or ``attr=value`` of ``entity``),
        else the live instances of ``entity`` (or of the environment) with their owners."""
        env = self._env(ctx)
        binding = env.binding(entity) if entity is not None else None
        with self.core.db.read() as session:
            if instance is not None:
                if binding is not None:
                    start = repo.find_instance(
                        session, env.env_id, binding.name, instance, identity_attr=binding.identity
                    ).id
                else:
                    start = instance
                rows = graph_queries.owner_tree(session, env.env_id, start, self.limit)
                if not rows:
                    raise UnknownInstance(f"no instance {instance!r} in this environment", instance=instance)
                title = f"owner tree of {instance}"
            else:
                rows = graph_queries.live_instances(
                    session, env.env_id, binding.name if binding else None, self.limit
                )
                title = f"owners of {binding.name}" if binding else "owners"
        if len(rows) > self.limit:
            raise InvalidInput(
                f"more than {self.limit} instances, the most a picture may have; "
                + ("pass id= for one tree" if binding else "pass entity= or id= to narrow it"),
                limit=self.limit,
            )
        out = [instance_out(row) for row in rows]

        labels: dict[str, dict[str, str]] = {}  # entity -> state -> label, one lifecycle read per entity

        def state_label(entity_name: str, state: str) -> str | None:
            if entity_name not in labels:
                try:
                    spec = env.lifecycle(env.binding(entity_name))
                except NotFound:  # an entity the model no longer has: drawn uncoloured
                    spec = None
                labels[entity_name] = {s.name: s.label for s in spec.states} if spec else {}
            return labels[entity_name].get(state)

        identities = {row.id: row.identity for row in rows if row.identity is not None}
        graph = owner_tree_graph(out, title=title, state_label=state_label, identities=identities)
        return self._bounded(graph, "pass id= for one tree")

    def _statuses(self, env_id: str, ids: Iterable[str]) -> dict[str, str]:
        """Deploy status per resource id (keyed reads); ids the engine has not planned are left out."""
        with self.core.db.read() as session:
            rows = deploy_queries.states_of(session, env_id, ids)
        return {rid: str(row["status"]) for rid, row in rows.items()}

    def _version(self, env_id: str, version: int | None) -> int:
        if version is not None:
            return version
        latest = self.core.store.latest_version(env_id)
        if latest is None:
            raise UnknownVersion("the environment has no desired-state version yet", version=None)
        return latest

    def sets(self, ctx: RequestContext, *, version: int | None = None) -> Graph:
        """The resource sets of a version (newest by default) and the resources each holds."""
        env_id = self._env(ctx).env_id
        number = self._version(env_id, version)
        content = self.core.store.content(env_id, number)
        total = len(content.sets) + bool(content.shared) + sum(len(ids) for ids in content.sets.values())
        total += len(content.shared)
        if total > self.limit:
            raise InvalidInput(
                f"version {number} holds {total} sets and resources, more than the {self.limit} "
                "a picture may have; draw one set with /api/v1/graph/requires?set=<name>",
                limit=self.limit,
                nodes=total,
            )
        status = self._statuses(
            env_id, [rid for group in content.sets.values() for rid in group] + content.shared
        )
        with self.core.db.read() as session:  # each set named by its root's entity and identity
            names = set_names(session, env_id, content.sets)
        graph = resource_sets_graph(
            content.sets,
            content.shared,
            title=f"resource sets of version {number}",
            status=status,
            names=names,
        )
        return self._bounded(graph, "draw one set with /api/v1/graph/requires?set=<name>")

    def requires(self, ctx: RequestContext, set_name: str, *, version: int | None = None) -> Graph:
        """One set's resources and their requires (``shared`` for the shared set)."""
        env_id = self._env(ctx).env_id
        number = self._version(env_id, version)
        content = self.core.store.content(env_id, number)
        if set_name == "shared":  # through the set index too, not the whole version
            wanted = [record for _, record in self.core.store.resources(env_id, number, SHARED)]
        elif set_name in content.sets:
            wanted = [record for _, record in self.core.store.resources(env_id, number, set_name)]
        else:
            raise UnknownResourceSet(
                f"version {number} has no resource set {set_name!r}",
                set=set_name,
                version=number,
                known=sorted(content.sets)[:50],
            )
        if len(wanted) > self.limit:
            raise InvalidInput(
                f"set {set_name!r} holds {len(wanted)} resources, more than the {self.limit} a picture "
                "may have; use the resources listing (GET /api/v1/desired_state/{version}/resources)",
                limit=self.limit,
                nodes=len(wanted),
            )
        status = self._statuses(env_id, {r.id for r in wanted} | {req for r in wanted for req in r.requires})
        graph = requires_graph(
            wanted,
            title=f"requires of set {set_name} in version {number}",
            shared=set(content.shared),
            status=status,
            automatic={r.id: auto_requires_of(r.attributes) for r in wanted},
        )
        return self._bounded(graph, "the set requires too many resources of other sets to draw")
