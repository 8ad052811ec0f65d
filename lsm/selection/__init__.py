"""Selection: which instances a partial compile sees (docs/semantics.md §3).

The compiler builds an ``InventoryView`` per compile, looks the environment's selector up by
name (``selector_for`` / ``build_selector``: entry points ``lsm.selectors`` plus the model's
``SELECTORS``), runs it with ``run_selector`` before writing anything, and reads ``roots()``
to know which resource sets the export replaces or deletes. See ``lsm.selection.selector`` for
writing a selector of your own.

This package reads the inventory and never writes it; it never imports ``lsm_selectors``.
"""

from lsm.selection.owner_tree import OwnerTreeSelector
from lsm.selection.ownership import ownership_roots, tree_members
from lsm.selection.plugins import (
    DEFAULT_SELECTOR,
    ENTRY_POINT_GROUP,
    HasSelectors,
    available_selectors,
    build_selector,
    selector_for,
    selector_names,
)
from lsm.selection.selector import (
    BaseSelector,
    PhasedSelector,
    Selection,
    SelectionResult,
    Selector,
    UnionSelector,
    run_selector,
    select,
    selector_name,
)
from lsm.selection.view import (
    AttributeSetChooser,
    AttributeSetName,
    InstanceRecord,
    InventoryView,
    Relation,
    default_attribute_set,
)

__all__ = [
    "DEFAULT_SELECTOR",
    "ENTRY_POINT_GROUP",
    "AttributeSetChooser",
    "AttributeSetName",
    "BaseSelector",
    "HasSelectors",
    "InstanceRecord",
    "InventoryView",
    "OwnerTreeSelector",
    "PhasedSelector",
    "Relation",
    "Selection",
    "SelectionResult",
    "Selector",
    "UnionSelector",
    "available_selectors",
    "build_selector",
    "default_attribute_set",
    "ownership_roots",
    "run_selector",
    "select",
    "selector_for",
    "selector_name",
    "selector_names",
    "tree_members",
]
