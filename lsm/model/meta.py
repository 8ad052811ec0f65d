"""``Meta``: the deploy metaparameters of one resource (docs/semantics.md §5).

Why here, in the model layer: a model author sets them where the resource is built,
``Interface(..., meta=lsm.Meta(retry=3, delay=2))``, and the desired-state store checks them
before a version is stored; neither may import the deploy engine. The engine enforces them for
every handler, so no handler reimplements retries, rate limits or semaphores.

Types are checked when the resource is built (pydantic); the rules that relate values
(``check_meta``) are checked when a version is stored, so that a bad value is refused with the
resource's id whatever produced the record (a model, a test, an import).

Stored form: a resource's attributes carry ``"meta"`` only when it differs from the defaults,
so resources without metaparameters keep the attributes (and set hashes) they always had.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

#: what leaving the desired state does to a resource on its target (``Meta.deletion``)
DeletionPolicy = Literal["delete", "orphan"]
DELETION_POLICIES: tuple[DeletionPolicy, ...] = ("delete", "orphan")


class Meta(BaseModel):
    """Engine-enforced deploy behaviour of a resource; every field has a do-nothing default.

    * ``noop``: compute and report the change, never apply it.
    * ``retry``: tries after the first failure (``-1``: for ever); ``delay`` seconds between
      tries, doubled after each failure when ``backoff`` (never above ``max_delay``).
    * ``poll``: re-read (and repair) the resource every ``poll`` seconds; ``0`` = only on change.
    * ``limit`` / ``burst``: a token bucket (``limit`` actions per second, ``burst`` tokens) on
      how often the resource is acted on; ``inf`` = unlimited.
    * ``sema``: counting semaphores ``"id"`` (size 1) or ``"id:N"``, shared by the agent.
    * ``autoedge``: let the engine add the ``requires`` edges the resource's type implies
      (``Resource.autoedges``) when a version is stored; ``False`` keeps only the written ones.
    * ``autogroup``: let the agent hand the resource to its handler together with others of
      its group (``Handler.group_key``); ``False`` deploys it alone.

    The two switches are strict booleans: a string such as ``"no"`` is refused, never read as
    true, because a switch that silently means the opposite is worse than an error.
    * ``deletion``: what happens on its target when the resource leaves the desired state:
      ``delete`` (its handler deletes it, after the resources that required it) or ``orphan``
      (it is forgotten and left as it is, as Inmanta does). A resource type may change the
      default (``class X(Resource, ..., deletion="orphan")``); ``meta`` overrides it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    noop: bool = False
    retry: int = 0
    delay: float = Field(0.0, ge=0)
    backoff: bool = False
    max_delay: float = Field(300.0, ge=0)
    poll: float = Field(0.0, ge=0)
    limit: float = math.inf
    burst: int = Field(0, ge=0)
    sema: tuple[str, ...] = ()
    autoedge: StrictBool = True
    autogroup: StrictBool = True
    deletion: DeletionPolicy = "delete"


DEFAULT_META = Meta()


class MetaError(ValueError):
    """A metaparameter value breaks a rule of docs/semantics.md §5; ``field`` names the value."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_sema(spec: str) -> tuple[str, int]:
    """``"id"`` -> ``("id", 1)``, ``"id:N"`` -> ``("id", N)``; size 0, a bad N or no id is a ``MetaError``."""
    name, sep, size_text = spec.rpartition(":")
    if not sep:
        name, size_text = spec, "1"
    if not name:
        raise MetaError("sema", f"semaphore {spec!r} has no id")
    try:
        size = int(size_text)
    except ValueError:
        raise MetaError("sema", f"semaphore {spec!r}: size {size_text!r} is not an integer") from None
    if size < 1:
        raise MetaError("sema", f"semaphore {spec!r}: size must be at least 1")
    return name, size


def check_meta(meta: Meta) -> None:
    """Raise ``MetaError`` when values break a rule; types are already checked by ``Meta``."""
    if meta.retry < -1:
        raise MetaError("retry", f"retry {meta.retry} is below -1 (-1 means for ever)")
    if math.isnan(meta.limit) or meta.limit <= 0:
        raise MetaError("limit", f"limit {meta.limit} must be a positive rate (or inf)")
    if math.isfinite(meta.limit) and meta.burst == 0:
        raise MetaError("burst", f"a finite limit ({meta.limit}/s) needs a burst of at least 1")
    for spec in meta.sema:
        parse_sema(spec)


def meta_of(attributes: Mapping[str, Any]) -> Meta:
    """The metaparameters in a stored resource's attributes (defaults when it has none).

    Raises ``MetaError`` (naming the field) for a value of the wrong type or that breaks a rule.
    """
    raw = attributes.get("meta")
    if raw is None:
        return DEFAULT_META
    if isinstance(raw, Meta):
        meta = raw
    else:
        try:
            meta = Meta.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(map(str, first["loc"])) or "meta"
            raise MetaError(field, f"meta.{field}: {first['msg']}") from None
    check_meta(meta)
    return meta


def stored_meta(meta: Meta | None) -> dict[str, Any] | None:
    """The JSON a resource stores for ``meta``: only the fields set away from the defaults."""
    if meta is None:
        return None
    data = meta.model_dump(mode="json", exclude_defaults=True)
    return data or None
