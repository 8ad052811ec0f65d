"""How the ``lsm`` command shows things: one table helper, one cell formatter, full timestamps.

Why one module: every listing (instances, event log, resources, compiles, tokens, audit, ...)
must look the same and obey the same two rules, and a rule kept by each command separately is
a rule some command forgets:

* **Nothing is cut here.** Every column folds (``overflow="fold"``) and none is ``no_wrap``:
  a table is built whole, and ``lsm.cli.layout`` decides, when it is printed, what a terminal
  shows of it (short ids and fewer columns unless ``--wide``) and makes it plain lines for a
  pipe, where every id and time is whole.
* **Times are full.** The API answers ISO 8601 in UTC (``--json`` prints it as is); a table
  shows each time as local time with its UTC offset and milliseconds
  (``2026-11-24 09:03:12.512+01:00``), so that it can be read at a glance and still compared
  across machines and with logs. A string cell that is an ISO 8601 time is converted wherever
  it appears, so a new listing gets this without thinking about it.

Imports only rich (lazily) and the standard library: ``lsm --help`` stays fast.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

#: an ISO 8601 time with a date, seconds and an offset (``Z`` or ``+hh:mm``), as the API writes
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})")


def parse_time(value: Any) -> datetime | None:
    """``value`` as an aware datetime when it is one or an ISO 8601 time with an offset, else None."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else None
    if isinstance(value, str) and _ISO_TIME.fullmatch(value):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def local_time(value: Any) -> str:
    """A time as local time with its offset and milliseconds; anything else as text."""
    moment = parse_time(value)
    if moment is None:
        return "" if value is None else str(value)
    return moment.astimezone().isoformat(sep=" ", timespec="milliseconds")


def compact(value: Any) -> str:
    """A value as one line of text: strings as they are, the rest as JSON."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def cell(value: Any) -> str:
    """A table cell (rich markup escaped): empty for None, times in local time, JSON for the rest."""
    if value is None:
        return ""
    if parse_time(value) is not None:
        return escape(local_time(value))
    return escape(compact(value))


def first_line(value: Any) -> str:
    """The first line of a message (a traceback's last line is in ``resources show``), whole."""
    if value is None:
        return ""
    lines = compact(value).strip().splitlines()
    return escape(lines[0] if lines else "")


def set_label(set_id: str | None, names: dict[str, str] | str | None = None) -> str:
    """A resource set as a person names it: its root's entity and identity (``router 10.0.0.1``,
    the API's ``set_name``), else its id; ``(shared)`` for the shared set. ``names``: the
    answer's ``set_name``, or its ``set_names`` map."""
    if not set_id:
        return "(shared)"
    name = names.get(set_id) if isinstance(names, dict) else names
    return name or set_id


def table(title: str | None, columns: tuple[str, ...] | list[str]) -> Table:
    """A listing: a header per column, every column folding, none cut (see the module docstring)."""
    from rich.table import Table

    made = Table(title=title, title_justify="left")
    for column in columns:
        made.add_column(column, overflow="fold")
    return made


def key_values(data: dict[str, Any], title: str | None = None) -> Table:
    """Two columns, key and value, without a header (one object: an instance, a resource)."""
    from rich.table import Table

    made = Table(show_header=False, title=title, title_justify="left", box=None)
    made.add_column(style="bold", overflow="fold")
    made.add_column(overflow="fold")
    for key, value in data.items():
        made.add_row(escape(str(key)), cell(value))
    return made


def print_key_values(console: Console, data: dict[str, Any], title: str | None = None) -> None:
    console.print(key_values(data, title))
