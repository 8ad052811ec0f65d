"""Finding the handler of a resource type: the model's handlers over the ``lsm.handlers`` entry points.

Why entry points: the bundled handlers (``lsm_handlers``) and third-party ones are found the
same way, and the core never imports them. A package registers a handler class with::

    [project.entry-points."lsm.handlers"]
    file = "lsm_handlers.files:FileHandler"

The entry point's name is a label; the class's ``resource_type`` says what it handles. Entry
points are loaded on first use, one at a time, so a broken plugin fails only the resources of
its own type. **On a clash the model wins** (``@lsm.handler`` classes and ``HANDLERS``): it is the
environment's own code. A resource type with no handler fails its deploys with an error that
names the type; it is never silently skipped.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from lsm.deploy.handler import Handler
from lsm.errors import ConfigurationError

ENTRY_POINT_GROUP = "lsm.handlers"


class NoHandler(ConfigurationError):
    """No handler is registered for a resource type."""


@functools.cache
def _installed() -> dict[str, type[Handler[Any]]]:
    """``{resource_type: handler class}`` of the installed entry points (broken ones left out)."""
    found: dict[str, type[Handler[Any]]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            value = ep.load()
        except Exception:
            continue  # reported by ``handler_problems``; other types still deploy
        if isinstance(value, type) and issubclass(value, Handler) and value.resource_type:
            found.setdefault(value.resource_type, value)
    return found


def handler_problems() -> dict[str, str]:
    """Entry points of ``lsm.handlers`` that do not load or are not handlers: ``{name: why}``."""
    problems: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            value = ep.load()
        except Exception as exc:
            problems[ep.name] = f"{ep.value!r} can not be loaded: {type(exc).__name__}: {exc}"
            continue
        if not (isinstance(value, type) and issubclass(value, Handler) and value.resource_type):
            problems[ep.name] = f"{ep.value!r} is not an lsm.Handler subclass with a resource_type"
    return problems


class HandlerRegistry:
    """One environment's handlers: instances are made once and reused by the agent's threads.

    Handlers must therefore be safe to call from several threads at once (for different
    resources); keep per-deploy state in ``pre``'s return or in the context, not on ``self``.
    """

    def __init__(self, model_handlers: Mapping[str, Any] | None = None) -> None:
        self._model = dict(model_handlers or {})
        self._instances: dict[str, Handler[Any]] = {}
        self._lock = threading.Lock()

    def handler_class(self, resource_type: str) -> type[Handler[Any]]:
        cls = self._model.get(resource_type) or _installed().get(resource_type)
        if cls is None:
            known = sorted({*self._model, *_installed()})
            raise NoHandler(
                f"no handler for resource type {resource_type!r}; known: {', '.join(known) or 'none'}",
                resource_type=resource_type,
                known=known,
            )
        if not (isinstance(cls, type) and issubclass(cls, Handler)):
            raise ConfigurationError(
                f"handler for {resource_type!r} is {cls!r}, not an lsm.Handler subclass",
                resource_type=resource_type,
            )
        return cls

    def handler_for(self, resource_type: str) -> Handler[Any]:
        found = self._instances.get(resource_type)
        if found is not None:
            return found
        with self._lock:
            found = self._instances.get(resource_type)
            if found is None:
                found = self.handler_class(resource_type)()
                self._instances[resource_type] = found
        return found

    def known_types(self) -> list[str]:
        return sorted({*self._model, *_installed()})
