"""Pictures: graphs as data (``model``), their layout and DOT/SVG writers (``render``), and
builders for lifecycles, owner trees, resource sets and requires graphs (``builders``).

Layer 2, pure: the facade reads the records and hands them to a builder.
"""

from lsm.graph.builders import (
    LABEL_COLOURS,
    STATUS_COLOURS,
    lifecycle_graph,
    owner_tree_graph,
    requires_graph,
    resource_sets_graph,
)
from lsm.graph.model import Edge, Graph, Node
from lsm.graph.render import dot_quote, to_dot, to_svg

__all__ = [
    "LABEL_COLOURS",
    "STATUS_COLOURS",
    "Edge",
    "Graph",
    "Node",
    "dot_quote",
    "lifecycle_graph",
    "owner_tree_graph",
    "requires_graph",
    "resource_sets_graph",
    "to_dot",
    "to_svg",
]
