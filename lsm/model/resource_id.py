"""Parsing a resource id ``Type[agent,attr=value]`` back into its parts.

Why: ids arrive from outside the model too (a discovery handler's output, an adoption request,
a URL). ``Resource.id`` builds them; this module is the one place that reads them, so every
caller refuses the same malformed ids with the same message. The value is everything between
the first ``=`` after the attribute name and the final ``]``: it may hold ``, = : / [ ]``
(paths, URLs, IPv6 addresses), as ``Resource.id`` writes it unescaped.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lsm.errors import InvalidInput
from lsm.schemas.limits import MAX_RESOURCE_ID_BYTES

#: ``std::File``, ``net::Host``, ``R``: names separated by ``::``
_TYPE = r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*"
_ID = re.compile(
    rf"(?P<type>{_TYPE})\[(?P<agent>[^,\[\]\s][^,\[\]]*),(?P<attr>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.+)\]"
)
#: longer ids (in bytes of UTF-8) are refused: they are index keys on both backends
MAX_ID_LENGTH = MAX_RESOURCE_ID_BYTES


def id_bytes_over(resource_id: str) -> int | None:
    """The size in bytes of ``resource_id`` when it is over ``MAX_RESOURCE_ID_BYTES``, else ``None``.

    Cheap for the ids of every compile: only an id of more than a quarter of the limit in
    characters can be over it, so most are never encoded.
    """
    if len(resource_id) * 4 <= MAX_RESOURCE_ID_BYTES:
        return None
    size = len(resource_id.encode("utf-8", "surrogatepass"))
    return size if size > MAX_RESOURCE_ID_BYTES else None


class ResourceIdParts(NamedTuple):
    """The four parts of a resource id."""

    type: str
    agent: str
    attribute: str
    value: str

    @property
    def id(self) -> str:
        return f"{self.type}[{self.agent},{self.attribute}={self.value}]"


def parse_resource_id(resource_id: object, *, field: str = "resource_id") -> ResourceIdParts:
    """The parts of ``resource_id``; ``InvalidInput`` naming ``field`` and the id when it is not one.

    >>> parse_resource_id("std::File[host1,path=/etc/motd]")
    ResourceIdParts(type='std::File', agent='host1', attribute='path', value='/etc/motd')
    """
    if not isinstance(resource_id, str):
        raise InvalidInput(
            f"{field}: a resource id must be a string, not {type(resource_id).__name__}",
            field=field,
            resource_id=repr(resource_id),
        )
    shown = resource_id if len(resource_id) <= 200 else resource_id[:200] + "..."
    size = id_bytes_over(resource_id)
    if size is not None:
        raise InvalidInput(
            f"{field}: resource id {shown!r} is {size} bytes long, over the limit of "
            f"{MAX_RESOURCE_ID_BYTES} bytes",
            field=field,
            resource_id=shown,
            limit=MAX_RESOURCE_ID_BYTES,
        )
    match = _ID.fullmatch(resource_id)
    if match is None or "\0" in resource_id or "\n" in resource_id:
        raise InvalidInput(
            f"{field}: {shown!r} is not a resource id of the form Type[agent,attribute=value]",
            field=field,
            resource_id=shown,
        )
    return ResourceIdParts(match["type"], match["agent"], match["attr"], match["value"])


def is_resource_id(value: object) -> bool:
    try:
        parse_resource_id(value)
    except InvalidInput:
        return False
    return True


__all__ = ["MAX_ID_LENGTH", "ResourceIdParts", "id_bytes_over", "is_resource_id", "parse_resource_id"]
