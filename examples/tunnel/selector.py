"""``TunnelSelector``: owner trees, plus the tunnels that read them and the trees tunnels read.

A teaching example of a custom selector, written as a plugin author would (only the public
``lsm.selection`` API). The rule it encodes is this model's data flow, nothing more:

1. every requested instance brings its whole ownership tree (what the default does: one
   resource set per tree, so a partial compile must rebuild whole trees);
2. a tunnel copies attributes of its ports, so every live tunnel attached to a port of those
   trees comes along (found backwards through the relation index: ``references_to``);
3. a tunnel's implementation reads both of its ports and their routers, so every selected
   tunnel brings the trees of both routers (``references_from``, then up to the root).

It stops there: the far router's other ports and their tunnels do not depend on anything that
changed, so their sets can stay as stored. That is what makes it cheaper than the bundled
``relation_closure`` selector, which takes the whole connected component.

Subclassing ``OwnerTreeSelector`` gives step 1, ``add_trees`` (select whole trees of roots we
found ourselves) and ``roots()`` (the sets the export replaces, or deletes when a tree produces
nothing) for free. Every lookup is a batched, indexed query over a frontier, never a scan.

Terminated (deleted) instances: a requested one still selects its tree's root, so that its set
is deleted; a terminated tunnel reached through a port is ignored, as it produces nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsm.selection import OwnerTreeSelector, ownership_roots, tree_members

#: binding names of the model (``examples/tunnel``); a selector works on ids and names only
PORT = "port"
TUNNEL = "tunnel"


class TunnelSelector(OwnerTreeSelector):
    """Owner trees of the requested ids, their ports' tunnels, and those tunnels' router trees."""

    name = "tunnel"

    def register(self, instance_ids: Sequence[str]) -> None:
        view = self.view
        # 1. the whole owner tree of each requested id (a requested tunnel is its own tree)
        roots = set(ownership_roots(view, instance_ids).values())
        members = view.get_many(tree_members(view, roots), include_terminated=True)
        # 2. the tunnels that refer to a port of those trees (what points to it)
        ports = [i for i, record in members.items() if record.entity == PORT]
        attached = {rel.source_id for rels in view.references_to_many(ports).values() for rel in rels}
        tunnels = self._live_tunnels([*members, *attached])
        # 3. the ports every such tunnel reads (what it points to), and so their routers' trees
        ends = {rel.target_id for rels in view.references_from_many(tunnels).values() for rel in rels}
        self.add_trees([*roots, *ownership_roots(view, [*tunnels, *ends]).values()])

    def _live_tunnels(self, ids: Iterable[str]) -> list[str]:
        """The live tunnels among ``ids`` (``get_many`` leaves terminated instances out)."""
        return [i for i, record in self.view.get_many(ids).items() if record.entity == TUNNEL]


__all__ = ["TunnelSelector"]
