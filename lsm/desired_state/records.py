"""The values that cross the desired-state store's boundary, and their one canonical encoding.

Why a module of its own: the compiler builds ``ResourceRecord`` and ``ExportRequest`` values, the
API reads ``VersionInfo`` and ``VersionContent`` values, and neither should import the store (or
SQLAlchemy) to do so. The canonical encoding lives here too because three things must agree on
it byte for byte: the set hash (does a set need a new revision?), the stored text (what a read
returns) and the rule-4 comparison (did a shared resource change?).

Nothing here does I/O.

Example::

    >>> r = ResourceRecord("File[h1,path=/etc/motd]", {"content": "hi"}, requires=("Dir[h1,path=/etc]",))
    >>> len(resource_set_hash([r]))
    32
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import encode_basestring_ascii
from typing import Any, Literal

from lsm.errors import InvalidInput

ExportKind = Literal["full", "partial"]

#: Display name of the shared set in messages, details and ``VersionInfo`` (stored as "").
SHARED_NAME = "shared"


@dataclass(frozen=True, slots=True)
class ResourceRecord:
    """One resource of the desired state.

    ``id`` is the resource id string ``Type[agent,attr=value]``; ``attributes`` are JSON values
    (everything but the requires); ``requires`` are resource ids. ``requires`` is a set in
    meaning, so it is normalized to a sorted tuple without duplicates: two compiles that emit
    the same dependencies in another order then produce the same set hash and never trip the
    "shared resources can not change" rule.

    ``autoedges`` are what the resource may depend on: per need, the ids that would meet it,
    nearest first (``Resource.autoedges``). The store turns the first id of each need that the
    version holds into a ``requires`` edge and lists it in the attribute ``auto_requires``
    (``lsm.desired_state.autoedge``). They are input only: never stored, hashed or compared.
    """

    id: str
    attributes: dict[str, Any] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    autoedges: tuple[tuple[str, ...], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        requires = self.requires
        if requires and (type(requires) is not tuple or not _strictly_sorted(requires)):
            object.__setattr__(self, "requires", tuple(sorted(set(requires))))


def _strictly_sorted(values: tuple[str, ...]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


@dataclass(frozen=True, slots=True)
class ExportRequest:
    """What one compile hands to the store.

    * ``full``: ``sets`` and ``shared`` are the whole desired state; every stored set that is not
      in ``sets`` is deleted and the shared set is replaced wholly.
    * ``partial``: each set in ``sets`` replaces that set entirely (an empty list deletes it),
      other sets stay as they were, ``deleted_sets`` are deleted (unknown names are ignored),
      and ``shared`` resources are added to the stored shared set (never changed or removed).

    ``soft_delete`` drops, silently, the deletion of a set that the same export still fills.

    ``incremental`` (full only): the export of a full compile that refined only the trees that
    changed (``lsm.compiler.incremental``). Its sets behave as in a partial export (each one
    replaces that set, ``deleted_sets`` go, the sets it does not name stay: the compiler vouches
    that they are what refining everything would give); its shared set as in a full one:
    ``shared`` resources are added or replace the stored ones, and ``retired_shared`` ids (the
    shared resources no tree produces any more) are removed. The version is a full one.

    ``model_fingerprint``: what the sets were refined with. A full export stores it; a partial
    export keeps the base version's only when it is the same (a version refined with two models
    has none), so that a later full compile knows whether it may skip anything.
    """

    kind: ExportKind
    sets: dict[str, list[ResourceRecord]] = field(default_factory=dict)
    shared: list[ResourceRecord] = field(default_factory=list)
    deleted_sets: list[str] = field(default_factory=list)
    soft_delete: bool = False
    compile_id: str | None = None
    incremental: bool = False
    retired_shared: list[str] = field(default_factory=list)
    model_fingerprint: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("full", "partial"):
            raise InvalidInput(f"export kind must be 'full' or 'partial', not {self.kind!r}", kind=self.kind)
        if (self.incremental or self.retired_shared) and self.kind != "full":
            raise InvalidInput("only a full export can be incremental or retire shared resources")
        if self.retired_shared and not self.incremental:
            raise InvalidInput("a complete full export replaces the shared set: it retires nothing by name")


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """The header of one desired-state version (what the version list shows).

    ``sets_replaced`` are the sets that got a new revision in this version (an exported set
    whose content did not change is not listed); ``sets_deleted`` the stored sets it removed.
    """

    number: int
    kind: ExportKind
    base: int | None
    compile_id: str | None
    created_at: datetime
    sets_replaced: list[str]
    sets_deleted: list[str]
    resource_count: int
    #: what the version's sets were refined with (``None``: unknown, or refined with two models)
    model_fingerprint: str | None = None
    #: how many named sets the version holds (``None``: unknown, before the first full export
    #: after an upgrade)
    set_count: int | None = None


@dataclass(frozen=True, slots=True)
class VersionContent:
    """Which resources a version holds: set name -> sorted resource ids, and the shared ids."""

    number: int
    sets: dict[str, list[str]]
    shared: list[str]


# -- canonical encoding -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EncodedResource:
    """A record with its canonical JSON texts, computed once per export.

    ``attributes_json`` and ``requires_json`` are exactly what gets stored, hashed and compared.
    """

    record: ResourceRecord
    attributes_json: str
    requires_json: str

    @property
    def id(self) -> str:
        return self.record.id


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def _fast_encoder() -> Callable[[Any], str]:
    """``_ENCODER.encode``, without its per-call cost when the interpreter allows.

    ``JSONEncoder.encode`` builds a new C encoder on every call; for the small attribute dicts
    of a compile that is a large part of the time of encoding them. So build the C encoder
    once (``json.encoder.c_make_encoder``, what ``encode`` itself uses) and keep the
    public path as the fallback if it is missing, has another signature, or disagrees on a
    sample. No circular-reference markers: a cycle ends in RecursionError, which
    ``encode_record`` reports like any other value JSON can not carry.
    """
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    sample = {"b": [1.5, None, True, -0.0, 10**20], "a": "\u00e9\n", "c": {"y": 1, "x": {}}}
    try:
        iterencode = make(None, _ENCODER.default, encode_basestring_ascii, None, ":", ",", True, False, False)

        def encode(value: Any) -> str:
            return "".join(iterencode(value, 0))

        if encode(sample) == _ENCODER.encode(sample):
            return encode
    except Exception:  # any surprise means: use the public path
        pass
    return _ENCODER.encode


_encode = _fast_encoder()


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys and no NaN: one text per value, whoever encodes it."""
    return _encode(value)


def _requires_json(requires: tuple[str, ...]) -> str:
    # the canonical JSON of a list of strings, without the generic encoder's per-call overhead
    return "[" + ",".join(map(encode_basestring_ascii, requires)) + "]"


def encode_record(record: ResourceRecord) -> EncodedResource:
    """Encode one record; a value JSON can not carry is an ``InvalidInput`` naming the resource."""
    rid = record.id
    if not isinstance(rid, str) or not rid:
        raise InvalidInput(f"resource id must be a non-empty string, not {rid!r}", resources=[str(rid)])
    try:
        attributes_json = _encode(record.attributes)
        requires_json = _requires_json(record.requires)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"resource {rid} is not JSON-serializable: {exc}", resources=[rid]) from exc
    return EncodedResource(record, attributes_json, requires_json)


def decode_record(resource_id: str, attributes_json: str, requires_json: str) -> ResourceRecord:
    """The inverse of ``encode_record`` for a stored row."""
    return ResourceRecord(resource_id, json.loads(attributes_json), tuple(json.loads(requires_json)))


def encoded_set_hash(resources: Iterable[EncodedResource]) -> str:
    """``resource_set_hash`` over already encoded resources (no second serialization).

    The hashed text is the canonical JSON of ``[[id, attributes, requires], ...]`` sorted by id,
    assembled from the per-resource texts.
    """
    ordered = sorted(resources, key=lambda e: e.record.id)
    text = (
        "["
        + ",".join(
            f"[{encode_basestring_ascii(e.record.id)},{e.attributes_json},{e.requires_json}]" for e in ordered
        )
        + "]"
    )
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def resource_set_hash(records: Iterable[ResourceRecord]) -> str:
    """The content hash of a resource set: equal content gives an equal hash, in any order.

    It is the blake2b-128 hex digest of the canonical JSON (sorted keys, compact separators) of
    the set's ``[id, attributes, requires]`` triples sorted by id; the store compares it with
    the stored revision's hash to skip sets whose content did not change.
    """
    return encoded_set_hash(encode_record(r) for r in records)


__all__ = [
    "SHARED_NAME",
    "EncodedResource",
    "ExportKind",
    "ExportRequest",
    "ResourceRecord",
    "VersionContent",
    "VersionInfo",
    "canonical_json",
    "decode_record",
    "encode_record",
    "encoded_set_hash",
    "resource_set_hash",
]
