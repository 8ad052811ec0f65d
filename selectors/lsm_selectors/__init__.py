"""Bundled selectors, found through the ``lsm.selectors`` entry point (never imported by the core).

* ``relation_closure``: ``relation_closure.RelationClosureSelector``, no parameters;
* ``entity``: ``filters.EntitySelector``, ``entities=[...]``;
* ``state``: ``filters.StateSelector``, ``states=[...]``, optional ``entities=[...]``;
* ``attribute``: ``filters.AttributeSelector``, ``entity=``, ``attribute=``, ``value=``.

(``owner_tree``, the default, lives in the core: ``lsm.selection.owner_tree``.) This package is
a plugin like any third-party one: it imports ``lsm.selection`` and registers itself in
``pyproject.toml``; ``selectors/`` is a source root, not a package, so that the standard
library's ``selectors`` module is never shadowed.
"""
