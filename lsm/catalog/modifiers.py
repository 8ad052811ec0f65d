"""Attribute modifiers: who may write a service attribute, and when.

``r``   set by the server only (allocation during a validation compile, written to candidate).
``rw``  set at creation, read-only afterwards. The default when an attribute names none.
``rw+`` may change in any state that allows updates.

A modifier rides in ``typing.Annotated``::

    mtu: Annotated[int, lsm.rw_plus] = 1500
"""

from __future__ import annotations

from enum import StrEnum


class Modifier(StrEnum):
    R = "r"
    RW = "rw"
    RW_PLUS = "rw+"


r = Modifier.R
rw = Modifier.RW
rw_plus = Modifier.RW_PLUS
