"""``lsm.Name``: a string attribute that names something on a target, bounded at the order.

Why: a model turns some attributes into resource ids (index keys on both backends, at most
``MAX_RESOURCE_ID_BYTES``) and into file or interface names on the agents' hosts (a name part
holds ``MAX_FILE_NAME_BYTES``). The engine cannot see which attributes a model uses that way,
so the model says it with this type: an order whose value does not fit is then refused with a
422 naming the attribute and the limit, instead of being accepted and its validation compile
(or, without one, its export) failing later. Bytes, not characters, are counted: the limits are
in bytes, and a character of UTF-8 takes up to four.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, StringConstraints

from lsm.schemas.limits import MAX_FILE_NAME_BYTES


def _fits(value: str) -> str:
    size = len(value.encode("utf-8"))
    if size > MAX_FILE_NAME_BYTES:
        raise ValueError(
            f"is {size} bytes of UTF-8: a name holds at most {MAX_FILE_NAME_BYTES} "
            "(it becomes part of a resource id and of names on the target)"
        )
    if "\x00" in value:
        raise ValueError("must not contain NUL")
    return value


#: a non-empty string of at most ``MAX_FILE_NAME_BYTES`` bytes of UTF-8, without NUL
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_FILE_NAME_BYTES), AfterValidator(_fits)]
