"""``inmanta_plugins.lsm.partial``'s names: the selector base classes (see ``lsm_compat``)."""

from lsm.selection.lsm_compat._core import AbstractSelector, TreeSelector

__all__ = ["AbstractSelector", "TreeSelector"]
