"""``/api/v1/graph``: pictures of the environment as SVG (default), Graphviz DOT or JSON.

Thin: the facade builds an ``lsm.graph.Graph``, this router picks the writer by ``format``.
SVG comes from the engine's own layout, so a browser (the console) can show it with no
Graphviz installed; DOT is for people who have it. Too large a graph is a 422 from the facade
naming the limit and how to narrow it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import Name, QueryName
from lsm.api.responses import READ, errors
from lsm.graph import Graph, to_dot, to_svg
from lsm.schemas.auth import Role
from lsm.schemas.limits import MAX_INT, MAX_REF_LENGTH

router = APIRouter(
    prefix="/api/v1/graph",
    tags=["graphs"],
    dependencies=[require(Role.VIEWER)],
    responses=errors(*READ),
)


class GraphFormat(StrEnum):
    SVG = "svg"
    DOT = "dot"
    JSON = "json"


FormatParam = Annotated[GraphFormat, Query(alias="format", description="svg (default), dot or json.")]
VersionParam = Annotated[
    int | None, Query(ge=0, le=MAX_INT, description="A desired-state version; the newest by default.")
]
_CONTENT: dict[str, Any] = {
    "content": {
        "image/svg+xml": {"schema": {"type": "string"}},
        "text/vnd.graphviz": {"schema": {"type": "string"}},
        "application/json": {"schema": {"type": "object"}},
    },
    "description": "The graph in the requested format.",
}


def rendered(graph: Graph, fmt: GraphFormat) -> Response:
    """The graph written in ``fmt`` with its media type."""
    if fmt is GraphFormat.DOT:
        return Response(to_dot(graph), media_type="text/vnd.graphviz; charset=utf-8")
    if fmt is GraphFormat.JSON:
        return JSONResponse(graph.to_json())
    return Response(to_svg(graph), media_type="image/svg+xml")


@router.get("/lifecycle/{name}", response_class=Response, responses={200: _CONTENT})
def lifecycle_graph(
    name: Name, facades: FacadesDep, ctx: ContextDep, fmt: FormatParam = GraphFormat.SVG
) -> Response:
    """A lifecycle: states coloured by label, transfers labelled by number and trigger."""
    return rendered(facades.graphs.lifecycle(ctx, name), fmt)


@router.get("/owners", response_class=Response, responses={200: _CONTENT})
def owners_graph(
    facades: FacadesDep,
    ctx: ContextDep,
    entity: Annotated[QueryName | None, Query(description="Only this entity's instances.")] = None,
    instance: Annotated[
        str | None,
        Query(
            alias="id",
            min_length=1,
            max_length=MAX_REF_LENGTH,
            description="One tree: the tree around this instance (an id, or attr=value with entity).",
        ),
    ] = None,
    fmt: FormatParam = GraphFormat.SVG,
) -> Response:
    """Ownership trees: instances as nodes, an edge from each owner to what it owns."""
    return rendered(facades.graphs.owners(ctx, entity=entity, instance=instance), fmt)


@router.get("/sets", response_class=Response, responses={200: _CONTENT})
def sets_graph(
    facades: FacadesDep, ctx: ContextDep, version: VersionParam = None, fmt: FormatParam = GraphFormat.SVG
) -> Response:
    """The resource sets of a desired-state version and the resources each holds."""
    return rendered(facades.graphs.sets(ctx, version=version), fmt)


@router.get("/requires", response_class=Response, responses={200: _CONTENT})
def requires_graph(
    facades: FacadesDep,
    ctx: ContextDep,
    set_name: Annotated[str, Query(alias="set", min_length=1, max_length=MAX_REF_LENGTH)],
    version: VersionParam = None,
    fmt: FormatParam = GraphFormat.SVG,
) -> Response:
    """One resource set's resources and their requires (``set=shared`` for the shared set)."""
    return rendered(facades.graphs.requires(ctx, set_name, version=version), fmt)
