"""The errors of a batch of commands: every bad item named, one error for the whole batch.

Why: ``Orchestrator.execute_many`` runs many commands all-or-nothing. A caller who sent 500
items must learn of every bad one at once (not fix them one 422 at a time), and still get the
status a single request would have had:

* any invalid item (422): ``InvalidInput`` listing every bad item, whatever its own status;
* else an unknown instance (404), else a version conflict or a transfer not allowed (409), else
  the first item's own error: that item's own error class (so ``except VersionConflict`` works
  as for one request), with ``index``, ``op`` and the ``items`` list added.

Each entry of ``items`` is ``{index, op, id?, error, message, **details}``: ``index`` counts within
its ``op`` list (``create`` or ``update``), ``error`` is the item's error kind, and ``details``
are the item's own (``errors`` for invalid attributes, ``instance`` and ``current_version``
for a conflict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsm.errors import Conflict, InvalidInput, LsmError, NotFound
from lsm.orchestration.commands import Command, Create

#: the most commands one batch may hold: one transaction must stay a reasonable size
MAX_BATCH = 10_000


def op_of(command: Command) -> str:
    """The name of a command in a bulk request (``create`` or ``update``)."""
    return "create" if isinstance(command, Create) else "update"


def positions(commands: list[Command]) -> list[tuple[str, int]]:
    """``(op, index within that op)`` for each command, in order."""
    seen: dict[str, int] = {}
    out = []
    for command in commands:
        op = op_of(command)
        out.append((op, seen.get(op, 0)))
        seen[op] = seen.get(op, 0) + 1
    return out


def check_size(commands: list[Command]) -> None:
    if len(commands) > MAX_BATCH:
        raise InvalidInput(
            f"a batch holds at most {MAX_BATCH} items, not {len(commands)}",
            field="items",
            limit=MAX_BATCH,
            given=len(commands),
        )


@dataclass(frozen=True)
class ItemError:
    """One refused item of a batch."""

    op: str
    index: int
    error: LsmError
    #: the instance the item names (an update's id or ``<identity_attr>=<value>``)
    ref: str | None = None

    def body(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "op": self.op,
            **({"id": self.ref} if self.ref is not None else {}),
            "error": self.error.kind,
            "message": self.error.message,
            **self.error.details,
        }


def batch_error(failures: list[ItemError], total: int) -> LsmError:
    """The one error that refuses the whole batch (see the module docstring)."""
    items = [f.body() for f in failures]
    summary = f"{len(failures)} of {total} items refused; nothing was written"
    if any(isinstance(f.error, InvalidInput) for f in failures):
        return InvalidInput(f"{summary}: {_first(failures)}", items=items)
    for wanted in (NotFound, Conflict, LsmError):
        chosen = next((f for f in failures if isinstance(f.error, wanted)), None)
        if chosen is not None:
            break
    assert chosen is not None
    error = chosen.error
    where = {"index": chosen.index, "op": chosen.op, **({"id": chosen.ref} if chosen.ref is not None else {})}
    details = {**error.details, **where, "items": items}
    return _rebuilt(error, f"{summary}: {_describe(chosen)}", details)


def _first(failures: list[ItemError]) -> str:
    return _describe(failures[0]) + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else "")


def _describe(failure: ItemError) -> str:
    named = f" ({failure.ref})" if failure.ref is not None else ""
    return f"{failure.op}[{failure.index}]{named}: {failure.error.message}"


def _rebuilt(error: LsmError, message: str, details: dict[str, Any]) -> LsmError:
    """``error``'s class with a new message and details (whatever its constructor looks like)."""
    rebuilt = LsmError.__new__(type(error))
    LsmError.__init__(rebuilt, message, **details)
    for name, value in vars(error).items():  # extra attributes of the class (``errors``)
        if name not in ("message", "details"):
            setattr(rebuilt, name, value)
    return rebuilt
