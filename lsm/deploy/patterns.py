"""Regular expressions that come from users: compiled for RE2, which never backtracks.

Why RE2 (the ``google-re2`` bindings) and not ``regex`` with a timeout: Python's ``re``
backtracks, so a pattern like ``(a+)+$`` against a long name takes exponential time, holding a
handler thread and the GIL (the whole server froze). A timeout would bound one match, but a
discovery matches thousands of names, each burning CPU up to that timeout; RE2 matches in time
linear in the name, whatever the pattern, and refuses what it can not do so (backreferences,
look-around) when the pattern is compiled, which is where the resource is built: the order's
compile fails with the reason instead of a deploy hanging later. RE2 also bounds the memory of
a compiled pattern (``MAX_PATTERN_MEMORY``): a pattern too large is refused, not built.
"""

from __future__ import annotations

from typing import Any, Protocol

import re2

#: bytes RE2 may use for one compiled pattern (its default is 8 MiB)
MAX_PATTERN_MEMORY = 8 << 20


class Pattern(Protocol):
    """What a compiled user pattern offers (RE2's, typed)."""

    pattern: str

    def fullmatch(self, text: str) -> Any: ...

    def search(self, text: str) -> Any: ...


def user_pattern(pattern: str, what: str = "pattern") -> Pattern:
    """``pattern`` compiled for RE2, or ``ValueError`` naming ``what`` and why it was refused."""
    options = re2.Options()
    options.log_errors = False  # the reason goes into the error, not to the process's stderr
    options.max_mem = MAX_PATTERN_MEMORY
    try:
        compiled: Pattern = re2.compile(pattern, options)
    except re2.error as exc:
        reason = (
            exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        )
        raise ValueError(
            f"{what} {pattern!r} is not a regular expression this agent runs (RE2 syntax, "
            f"no backreferences or look-around): {reason}"
        ) from None
    return compiled


__all__ = ["MAX_PATTERN_MEMORY", "Pattern", "user_pattern"]
