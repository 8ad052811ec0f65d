"""From a stored resource record to what a handler is called with.

Why one function: the agent (deploys), the dry run (``POST /api/v1/deploy {dry_run: true}``) and
discovery all hand a handler the resource of a desired-state version; they must build it the
same way. A handler generic in its resource type (``CRUDHandler[File]``) gets an instance of that
class, validated from the stored attributes; a handler that names no class (one handler for
many types) gets a ``StoredResource``, which offers what ``CRUDHandler.deploy`` uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from lsm.deploy.handler import GroupMember, Handler, HandlerContext, call
from lsm.deploy.registry import HandlerRegistry
from lsm.errors import ConfigurationError
from lsm.model.meta import DEFAULT_META, Meta, meta_of
from lsm.model.resource import AUTO_REQUIRES
from lsm.store.deploy.tables import resource_type_of


class StoredResource:
    """A resource as stored (id, attributes, requires) for handlers that name no resource class."""

    __slots__ = ("_attributes", "id", "requires_ids", "resource_type")

    def __init__(self, resource_id: str, attributes: Mapping[str, Any], requires: tuple[str, ...] = ()):
        self.id = resource_id
        self.resource_type = resource_type_of(resource_id)
        self._attributes = dict(attributes)
        self.requires_ids = requires

    @property
    def agent(self) -> str:
        return str(self._attributes["agent"])

    @property
    def purged(self) -> bool:
        return bool(self._attributes.get("purged", False))

    @property
    def meta(self) -> Meta:
        return meta_of(self._attributes) if "meta" in self._attributes else DEFAULT_META

    def attributes(self) -> dict[str, Any]:
        return dict(self._attributes)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._attributes[name]
        except KeyError:
            raise AttributeError(f"resource {self.id} has no attribute {name!r}") from None

    def __repr__(self) -> str:
        return f"StoredResource({self.id!r})"


def materialize(
    handler: Handler[Any], resource_id: str, attributes: Mapping[str, Any], requires: tuple[str, ...] = ()
) -> Any:
    """The object ``handler`` is called with for the stored resource ``resource_id``.

    Raises ``ConfigurationError`` naming the resource when the stored attributes do not fit the
    handler's resource class (the model and the handler disagree on the type's fields).
    """
    cls = handler.resource_class
    if cls is None:
        return StoredResource(resource_id, attributes, requires)
    if AUTO_REQUIRES in attributes:  # the engine's record of its own edges, not a field of the type
        attributes = {key: value for key, value in attributes.items() if key != AUTO_REQUIRES}
    try:
        return cls.model_validate({**attributes, "requires": requires})
    except ValidationError as exc:
        raise ConfigurationError(
            f"resource {resource_id}: its stored attributes do not fit {cls.__name__} "
            f"of handler {type(handler).__name__}: {exc.errors()[0]['msg']} "
            f"at {'.'.join(map(str, exc.errors()[0]['loc']))}",
            resource=resource_id,
        ) from None


def run_handler(
    registry: HandlerRegistry,
    ctx: HandlerContext,
    resource_id: str,
    attributes: Mapping[str, Any],
    requires: tuple[str, ...],
    *,
    dry_run: bool,
) -> None:
    """One deploy (or read-only run) of a stored resource: its handler, ``pre``, ``deploy``, and
    ``post`` whatever happened. What the handler found is in ``ctx``; any failure raises.

    The agent (under the metaparameters) and the dry run both call this, so a handler is always
    driven the same way.
    """
    handler = registry.handler_for(resource_type_of(resource_id))
    resource = materialize(handler, resource_id, attributes, requires)
    call(handler.pre, ctx, resource)
    try:
        handler.deploy(ctx, resource, dry_run=dry_run)
    finally:
        call(handler.post, ctx, resource)


def run_group(
    registry: HandlerRegistry,
    resource_type: str,
    members: Sequence[tuple[HandlerContext, str, Mapping[str, Any], tuple[str, ...]]],
    *,
    dry_run: bool,
) -> list[BaseException | None]:
    """One call of ``deploy_group`` over resources of ``resource_type``; each member's error.

    Each member is built and gets its ``pre`` on its own (one that fails is left out of the
    call, with its error), then the group call, then each member's ``post`` whatever happened.
    """
    handler = registry.handler_for(resource_type)
    group: list[GroupMember[Any]] = []
    errors: list[BaseException | None] = []
    for ctx, resource_id, attributes, requires in members:
        member: GroupMember[Any] = GroupMember(ctx, None)
        try:
            member.resource = materialize(handler, resource_id, attributes, requires)
            call(handler.pre, ctx, member.resource)
        except Exception as exc:
            member.error = exc
        group.append(member)
    live = [member for member in group if member.error is None]
    try:
        if live:
            handler.deploy_group(live, dry_run=dry_run)
    except Exception as exc:
        for member in live:
            if member.error is None:
                member.error = exc
    finally:
        for member in live:
            try:
                call(handler.post, member.ctx, member.resource)
            except Exception as exc:
                if member.error is None:
                    member.error = exc
    errors.extend(member.error for member in group)
    return errors


def group_key(
    registry: HandlerRegistry, resource_id: str, attributes: Mapping[str, Any], requires: tuple[str, ...]
) -> object | None:
    """The handler's group key of a stored resource, or ``None`` (deployed alone): no handler,
    a handler that does not group, attributes that do not fit, or a handler that fails to say."""
    try:
        handler = registry.handler_for(resource_type_of(resource_id))
    except Exception:
        return None
    if type(handler).group_key is Handler.group_key:
        return None
    try:
        return handler.group_key(materialize(handler, resource_id, attributes, requires))
    except Exception:
        return None
