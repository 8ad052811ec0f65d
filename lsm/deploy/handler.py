"""The handler API: how a resource type is read, created, updated and deleted on its target.

A handler is written once per resource type and knows nothing of retries, rate limits, ordering
or semaphores: the engine (``lsm.deploy``) applies the metaparameters around every call, so every
handler gets them the same way. A handler only says how to look and how to act::

    class FileHandler(lsm.CRUDHandler[File]):
        def read(self, ctx, resource):
            path = Path(resource.path)
            if not path.exists():
                return None                       # missing
            return {"content": path.read_text(), "mode": path.stat().st_mode & 0o777}

        def create(self, ctx, resource):
            Path(resource.path).write_text(resource.content)

        def update(self, ctx, resource, changes):
            ...                                   # changes: {"content": Change(current, desired)}

        def delete(self, ctx, resource):
            Path(resource.path).unlink()

Any of ``read`` / ``create`` / ``update`` / ``delete`` / ``pre`` / ``post`` / ``discover_resources``
may be ``async def``; the engine awaits it. ``pre`` runs before and ``post`` after (always, even
on failure) the other calls of one deploy of one resource: open and close a connection there.

**Registration.** In a model module, ``@lsm.handler(File)`` (or ``@lsm.handler("std::File")``) on
the class, or ``HANDLERS = {"std::File": FileHandler}``; in a package, an entry point in the group
``lsm.handlers`` whose value is the handler class (its ``resource_type`` names the type it
handles). The model wins a clash, as for selectors: it is the environment's own code.

**The engine's contract with a CRUD handler** (``CRUDHandler.deploy``): ``read`` returns the
current values (a mapping, or ``None`` when the resource does not exist); the engine compares
them with the desired attributes (``diff``) and then calls exactly one of ``create`` (missing,
not purged), ``update`` (present, changes, not purged), ``delete`` (present, purged), or
nothing (in the desired state already). With ``dry_run`` or ``noop`` only ``read`` is called,
and the changes a deploy would make are reported.

A **discovery handler** (``DiscoveryHandler``) implements ``discover_resources`` instead; what it
returns is recorded in ``ctx.discovered`` and goes to the discovered-resources inventory.

Nothing here does I/O or touches the store; the agent (``lsm.deploy.agent``) does.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, NamedTuple, TypeVar, get_args, get_origin

from lsm.model.loader import HANDLER_MARK
from lsm.model.resource import Resource

if TYPE_CHECKING:
    from lsm.deploy.file_watch import FileWatcher
    from lsm.deploy.jail import Jail

R = TypeVar("R", bound=Resource)
D = TypeVar("D")

#: attributes the engine owns; never compared, never given to a handler as a change
ENGINE_ATTRIBUTES = frozenset({"agent", "purged", "meta", "requires", "auto_requires"})

#: what one deploy of one resource did
ActionKind = Literal["read", "create", "update", "delete", "noop", "skip", "error", "discover", "none"]


class Change(NamedTuple):
    """One attribute that differs: its value on the target and the desired one."""

    current: Any
    desired: Any


@dataclass(frozen=True)
class LogLine:
    level: Literal["debug", "info", "warning", "error"]
    message: str
    at: float
    data: dict[str, Any] = field(default_factory=dict)


class HandlerContext:
    """What a handler reports of one deploy of one resource: changes, log lines, outcome.

    The engine creates one per deploy, passes it to every call, and records it in the resource's
    action log. ``state_dir`` is a directory the agent owns (the embedded default handlers write
    their files under it); ``dry_run`` is true when only the read side may run. ``jail`` says
    where handlers may act (``lsm.deploy.jail``): the agent's configured roots, by default the
    state directory alone, no URL and no setuid/setgid/sticky bits.
    """

    def __init__(
        self, resource_id: str, *, state_dir: Path, dry_run: bool = False, jail: Jail | None = None
    ) -> None:
        self.resource_id = resource_id
        self.state_dir = state_dir
        self.dry_run = dry_run
        self._jail = jail
        self.changes: dict[str, Change] = {}
        self.logs: list[LogLine] = []
        self.action: ActionKind = "none"
        #: set by a discovery handler's run: ``{resource_id: attributes}``
        self.discovered: dict[str, Any] | None = None

    @property
    def jail(self) -> Jail:
        """Where this deploy may act: files, folders and URLs (``lsm.deploy.jail.Jail``)."""
        if self._jail is None:
            from lsm.deploy.jail import Jail  # here: the jail raises this module's HandlerError

            self._jail = Jail.of([self.state_dir])
        return self._jail

    def log(self, level: Literal["debug", "info", "warning", "error"], message: str, **data: Any) -> None:
        self.logs.append(LogLine(level, message, time.time(), data))

    def debug(self, message: str, **data: Any) -> None:
        self.log("debug", message, **data)

    def info(self, message: str, **data: Any) -> None:
        self.log("info", message, **data)

    def warning(self, message: str, **data: Any) -> None:
        self.log("warning", message, **data)

    def error(self, message: str, **data: Any) -> None:
        self.log("error", message, **data)


class WatchContext:
    """What a handler's ``watch`` gets: where it may look, and how to say what it saw.

    ``drifted()`` says the resource may have drifted (the engine then checks it through the
    normal deploy path, under its metaparameters); ``failed(exc)`` says the watch broke while
    it ran (the engine stops it and starts it again under ``retry``/``delay``). Both are cheap
    and safe to call from any thread, any number of times. ``files`` is the agent's one
    inotify instance (``lsm.deploy.file_watch.FileWatcher``): watch files through it rather
    than opening an instance per resource.
    """

    def __init__(
        self,
        resource_id: str,
        *,
        state_dir: Path,
        jail: Jail | None,
        files: FileWatcher,
        drifted: Callable[[], None],
        failed: Callable[[BaseException], None],
    ) -> None:
        self.resource_id = resource_id
        self.state_dir = state_dir
        self._jail = jail
        self.files = files
        self.drifted = drifted
        self.failed = failed

    @property
    def jail(self) -> Jail:
        """Where the handler may look (``lsm.deploy.jail.Jail``), as for a deploy."""
        if self._jail is None:
            from lsm.deploy.jail import Jail

            self._jail = Jail.of([self.state_dir])
        return self._jail


#: what ``Handler.watch`` returns: the function that stops the watch (or ``None``: nothing to stop)
StopWatch = Callable[[], None] | None


class HandlerError(Exception):
    """A handler's way to fail a deploy with a message (any exception fails it too)."""


@dataclass(eq=False)
class GroupMember(Generic[R]):
    """One resource of a group handed to ``Handler.deploy_group``: its own context (changes,
    log lines, action, ``dry_run`` from its own ``noop``) and its own outcome: a handler that
    fails one member sets ``error`` and goes on with the others."""

    ctx: HandlerContext
    resource: R
    error: BaseException | None = None


class Handler(Generic[R]):
    """Base of every handler; the engine calls ``deploy``, or ``deploy_group`` for a group.

    **Groups** (mgmt's GroupCmp; docs/semantics.md §5, ``autogroup``): a handler that returns a
    key from ``group_key`` lets the agent hand it the resources of its type on one agent with
    the same key in one ``deploy_group`` call (N files in one directory). Each member keeps its
    own result, ``noop`` and ``retry``; the group holds the de-duplicated union of the members'
    semaphores. ``meta.autogroup = False`` keeps a resource out of every group.

    ``resource_type`` (the type string, e.g. ``std::File``) and ``resource_class`` are taken from
    the generic argument when the subclass names one (``CRUDHandler[File]``).
    """

    resource_type: ClassVar[str] = ""
    resource_class: ClassVar[type[Resource] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is None:
                continue
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, Resource) and arg.resource_type:
                    cls.resource_class = arg
                    if not cls.__dict__.get("resource_type"):
                        cls.resource_type = arg.resource_type
                    return

    def pre(self, ctx: HandlerContext, resource: R) -> Any:
        """Before the deploy of ``resource``: open a connection, log in."""

    def post(self, ctx: HandlerContext, resource: R) -> Any:
        """After it, whatever happened: close what ``pre`` opened."""

    def deploy(self, ctx: HandlerContext, resource: R, *, dry_run: bool = False) -> None:
        raise NotImplementedError

    def group_key(self, resource: R) -> Hashable | None:
        """Which group ``resource`` may be deployed with (``None``, the default: alone).

        The agent groups only resources of this handler's type on one agent, with the same key
        and the same ``noop``; a key must be hashable and cheap.
        """
        return None

    def deploy_group(self, members: Sequence[GroupMember[R]], *, dry_run: bool = False) -> None:
        """Deploy every member of one group; by default one ``deploy`` after the other.

        Override it to share work (open a directory once, send one request). Record a member's
        failure on ``member.error``; an exception raised from here fails every member that has
        no outcome of its own. ``pre`` and ``post`` still run once per member, around this call.
        """
        for member in members:
            try:
                self.deploy(member.ctx, member.resource, dry_run=dry_run)
            except Exception as exc:
                member.error = exc

    def watch(self, ctx: WatchContext, resource: R) -> StopWatch:
        """Start watching ``resource`` on its target; call ``ctx.drifted()`` when it may have
        drifted. Return the function that stops the watch. Optional: a handler that does not
        override it is not watched (its resources are checked by ``poll`` and the repair run).
        Return quickly: start a watch, do not wait for events here. Raising fails the watch,
        which the engine retries under the resource's ``retry``/``delay``."""
        raise NotImplementedError


def watches(handler: Handler[Any]) -> bool:
    """Whether ``handler`` watches its resources (overrides ``Handler.watch``)."""
    return type(handler).watch is not Handler.watch


class CRUDHandler(Handler[R]):
    """A handler that reads the current state and creates, updates or deletes to converge."""

    def read(self, ctx: HandlerContext, resource: R) -> Mapping[str, Any] | None:
        """The resource's current values on the target, or ``None`` when it does not exist."""
        raise NotImplementedError

    def create(self, ctx: HandlerContext, resource: R) -> Any:
        raise NotImplementedError

    def update(self, ctx: HandlerContext, resource: R, changes: Mapping[str, Change]) -> Any:
        raise NotImplementedError

    def delete(self, ctx: HandlerContext, resource: R) -> Any:
        raise NotImplementedError

    def diff(self, ctx: HandlerContext, resource: R, current: Mapping[str, Any]) -> dict[str, Change]:
        """The desired attributes whose current value differs (a key ``read`` left out counts)."""
        desired = resource.attributes()
        return {
            key: Change(current.get(key), value)
            for key, value in desired.items()
            if key not in ENGINE_ATTRIBUTES and (key not in current or current[key] != value)
        }

    def deploy(self, ctx: HandlerContext, resource: R, *, dry_run: bool = False) -> None:
        """Read, compare, and (unless ``dry_run``) make exactly the one call that converges."""
        current = call(self.read, ctx, resource)
        if resource.purged:
            if current is None:
                ctx.action = "none"
                return
            ctx.changes = {"purged": Change(False, True)}
            ctx.action = "delete"
            if not dry_run:
                call(self.delete, ctx, resource)
            return
        if current is None:
            ctx.changes = {
                key: Change(None, value)
                for key, value in resource.attributes().items()
                if key not in ENGINE_ATTRIBUTES
            }
            ctx.action = "create"
            if not dry_run:
                call(self.create, ctx, resource)
            return
        changes = self.diff(ctx, resource, current)
        ctx.changes = changes
        if not changes:
            ctx.action = "none"
            return
        ctx.action = "update"
        if not dry_run:
            call(self.update, ctx, resource, changes)


class DiscoveryHandler(Handler[R], Generic[R, D]):
    """Finds unmanaged resources: ``discover_resources`` returns ``{resource_id: attributes}``.

    ``D`` is the shape of what it finds (a pydantic model or any JSON value). Running it never
    changes the target, so a dry run runs it too.
    """

    def discover_resources(self, ctx: HandlerContext, resource: R) -> Mapping[str, D]:
        raise NotImplementedError

    def deploy(self, ctx: HandlerContext, resource: R, *, dry_run: bool = False) -> None:
        found = call(self.discover_resources, ctx, resource)
        ctx.action = "discover"
        ctx.discovered = dict(found)


def handler(resource: type[Resource] | str) -> Callable[[type[Handler[Any]]], type[Handler[Any]]]:
    """Register a handler class for a resource type in a model module: ``@lsm.handler(File)``."""
    name = resource if isinstance(resource, str) else resource.resource_type
    if not name:
        raise TypeError(f"@lsm.handler: {resource!r} names no resource type")

    def mark(cls: type[Handler[Any]]) -> type[Handler[Any]]:
        if not (isinstance(cls, type) and issubclass(cls, Handler)):
            raise TypeError(f"@lsm.handler({name!r}) decorates {cls!r}, not a subclass of lsm.Handler")
        handled = [*getattr(cls, HANDLER_MARK, ()), name]
        setattr(cls, HANDLER_MARK, tuple(handled))
        if not cls.__dict__.get("resource_type"):
            cls.resource_type = name
        return cls

    return mark


# -- sync or async ------------------------------------------------------------------------------------
_loops = threading.local()


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a handler method; when it is a coroutine, run it on this thread's event loop.

    One loop per agent thread, kept for the thread's life: async handlers may cache clients
    (an ``httpx.AsyncClient``) across calls without binding them to a dead loop.
    """
    result = fn(*args)
    if not inspect.isawaitable(result):
        return result
    loop: asyncio.AbstractEventLoop | None = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _loops.loop = loop
    return loop.run_until_complete(result)
