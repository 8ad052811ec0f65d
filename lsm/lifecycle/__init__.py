"""Lifecycles: the state machines every service instance walks (pure Python, no I/O but reading YAML).

* ``spec``: the validated definition (``LifecycleSpec``) and its consistency rules;
* ``loading``: lifecycle files, the entry-point group ``lsm.lifecycles``, the registry;
* ``machine``: the ``transitions`` machine that answers where a trigger takes an instance;
* ``operations``: what promote / rollback / clear do to the attribute sets;
* ``render``: tables and Graphviz DOT for people.

This package decides; it never writes an instance. ``lsm.orchestration`` applies its answers.
"""

from lsm.lifecycle.loading import (
    ENTRY_POINT_GROUP,
    LifecycleRegistry,
    entry_point_files,
    load_lifecycle_file,
)
from lsm.lifecycle.machine import LifecycleMachine, Step, changes_desired_state, edge_trigger
from lsm.lifecycle.operations import AttributeSets, apply_operation
from lsm.lifecycle.render import render_dot, render_states_table, render_table, render_transfers_table
from lsm.lifecycle.spec import (
    EXPORT_FAILED,
    AttributeSetName,
    Label,
    LifecycleSpec,
    Operation,
    StateSpec,
    TransferSpec,
    Trigger,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXPORT_FAILED",
    "AttributeSetName",
    "AttributeSets",
    "Label",
    "LifecycleMachine",
    "LifecycleRegistry",
    "LifecycleSpec",
    "Operation",
    "StateSpec",
    "Step",
    "TransferSpec",
    "Trigger",
    "apply_operation",
    "changes_desired_state",
    "edge_trigger",
    "entry_point_files",
    "load_lifecycle_file",
    "render_dot",
    "render_states_table",
    "render_table",
    "render_transfers_table",
]
