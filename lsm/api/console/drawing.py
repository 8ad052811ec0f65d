"""The console's drawings, through ``lsm.graph``: a lifecycle (states coloured by label, transfers
by trigger), the owner tree of an instance, a version's resource sets and one set's requires.

Why here: ``lsm.graph`` draws the same pictures for the API, the CLI and the console (transfer
arrows coloured by trigger, ``lsm.graph.builders.TRIGGER_COLOURS``, the page's legend); the
console only embeds the SVG. A picture too large to draw (``GraphsFacade`` refuses above its
node limit) is answered by ``None``: the page lists what it would have shown anyway.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup

from lsm.errors import InvalidInput
from lsm.facade import Facades, RequestContext
from lsm.graph import Graph
from lsm.graph.render import to_svg


def lifecycle_svg(facades: Facades, ctx: RequestContext, name: str) -> Markup:
    """The lifecycle ``name`` as embedded SVG."""
    return Markup(to_svg(facades.graphs.lifecycle(ctx, name)))


def owner_tree_svg(facades: Facades, ctx: RequestContext, entity: str, instance_id: str) -> Markup | None:
    """The whole owner tree around an instance, or ``None`` when it is too large to draw."""
    return _drawn(lambda: facades.graphs.owners(ctx, entity=entity, instance=instance_id))


def sets_svg(facades: Facades, ctx: RequestContext, version: int) -> Markup | None:
    """A version's resource sets and the resources each holds, or ``None`` when too large."""
    return _drawn(lambda: facades.graphs.sets(ctx, version=version))


def requires_svg(facades: Facades, ctx: RequestContext, version: int, set_name: str) -> Markup | None:
    """One set's resources and their ``requires`` edges, or ``None`` when too large."""
    return _drawn(lambda: facades.graphs.requires(ctx, set_name, version=version))


def _drawn(graph: Callable[[], Graph]) -> Markup | None:
    """The graph as embedded SVG; ``None`` when the facade refuses it as too large (a 422)."""
    try:
        return Markup(to_svg(graph()))
    except InvalidInput:
        return None
