"""Selectors registered at run time (``lsm_compat.global_cache.set_selector_factory``).

Why a module of its own: Inmanta LSM plugin modules register their selector by calling
``set_selector_factory`` when they are imported, and ``lsm.selection.plugins`` must find those
by name without importing the adapter (nor the adapter the plugins). Process-wide, like the
entry points; a model's own ``SELECTORS`` still wins a name clash.
"""

from __future__ import annotations

from typing import Any

#: name -> selector class, in registration order (the latest registration of a name wins)
REGISTERED: dict[str, Any] = {}

__all__ = ["REGISTERED"]
