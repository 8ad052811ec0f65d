"""How a listing is laid out for where it goes: a table that fits the terminal, every column
(``--wide``), or plain lines for a pipe or a file.

Why here and not in each command: a command builds one rich table with every column
(``lsm.cli.render.table``) and prints it on ``lsm.cli.console.out``; ``out`` hands every table
to ``arrange``, so every listing obeys the same three rules:

* **Not a terminal** (a pipe, a file, ``-o table | cat``): plain text, ONE RECORD PER LINE and
  nothing else: no title, no header line, cells separated by a tab, no box drawing, full ids,
  never wrapped whatever the width, so that ``grep``, ``cut -f`` and ``wc -l`` see the records
  and only them (``-o json`` names the fields). The one exception is an answer in several
  parts (``resources show``: the resource, its attributes, its actions; ``instance show``): a
  table after the first part is a *section*, written with its title and its header first, so
  that the parts can be told apart and their columns read.
* **A terminal**: ids (UUIDs) are shown short (their first ``SHORT_ID`` characters), and the
  columns that do not fit are dropped, the last first (a command lists its columns most
  important first), the first of them kept shortened with an ellipsis when there is room for
  some of it; a row stays on one line, cut with an ellipsis when even the first columns do not
  fit.
* **A terminal with** ``--wide``: every column and full ids; columns fold to fit, nothing is cut.

A table without a header (one object's keys and values, ``render.key_values``) is one record
per key: it is never narrowed, only made plain off a terminal.

Imports only rich (lazily) and the standard library: ``lsm --help`` stays fast.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

#: how many characters of an id a table on a terminal shows (``--wide``: all of them)
SHORT_ID = 8

#: the fewest characters a shortened column keeps (fewer: it is left out instead)
SHORTENED_MIN = 12

#: a UUID as the API writes it: the ids that are shortened on a terminal
_UUID = re.compile(r"\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)


def short_ids(text: str) -> str:
    """``text`` with every UUID cut to its first ``SHORT_ID`` characters."""
    return _UUID.sub(lambda match: match.group(1)[:SHORT_ID], text)


def plain(value: Any) -> str:
    """A cell as one line of plain text: markup dropped, tabs and line breaks made spaces."""
    from rich.text import Text

    if isinstance(value, str):
        text = Text.from_markup(value).plain
    elif isinstance(value, Text):
        text = value.plain
    else:
        text = str(value)
    return " ".join(text.replace("\t", " ").splitlines())


def plain_lines(table: Table, *, section: bool = False) -> list[str]:
    """A table as plain lines: one line per row, tab-separated; its title and header first only
    when it is a ``section`` (not the first part of the answer); a table set in a cell (a grid
    of tables) as its own lines, each a section."""
    from rich.table import Table

    columns = table.columns
    lines = [plain(table.title)] if section and table.title else []
    if section and table.show_header:
        lines.append("\t".join(plain(column.header) for column in columns))
    for row in zip(*(list(column.cells) for column in columns), strict=True):
        nested = [cell for cell in row if isinstance(cell, Table)]
        if nested:
            lines.extend(line for inner in nested for line in plain_lines(inner, section=True))
        else:
            lines.append("\t".join(plain(cell) for cell in row))
    return lines


def _width(value: Any) -> int:
    from rich.cells import cell_len

    return cell_len(plain(value))


def _note(hidden: int, shortened: bool) -> str | None:
    """The caption of a fitted table that does not show everything."""
    if hidden:
        return f"{hidden} column(s) hidden: --wide shows them"
    return "a column is cut: --wide shows it whole" if shortened else None


def fitted(table: Table, width: int) -> Table:
    """``table`` for a terminal ``width`` columns wide: short ids, the columns that do not fit
    dropped from the last, every row on one line (see the module docstring)."""
    from rich.markup import escape
    from rich.table import Table

    columns = table.columns
    rows = [
        [short_ids(cell) if isinstance(cell, str) else cell for cell in row]
        for row in zip(*(list(column.cells) for column in columns), strict=True)
    ]
    natural = [
        max([_width(column.header)] + [_width(row[index]) for row in rows])
        for index, column in enumerate(columns)
    ]
    keep = len(columns)
    # a box-drawn table costs one border per column plus one, and a space each side of a cell
    while keep > 1 and sum(natural[:keep]) + 3 * keep + 1 > width:
        keep -= 1
    # the first column left out is shown shortened instead when there is room for some of it
    room = width - (sum(natural[:keep]) + 3 * keep + 1) - 3
    shortened = keep < len(columns) and room >= SHORTENED_MIN
    if shortened:
        natural[keep] = room
        keep += 1
    made = Table(
        title=table.title,
        title_justify=table.title_justify,
        show_header=table.show_header,
        box=table.box,
        caption=_note(len(columns) - keep, shortened),
        caption_justify="left",
    )
    for index, column in enumerate(columns[:keep]):
        made.add_column(
            escape(plain(column.header)),
            style=column.style,
            header_style=column.header_style,
            no_wrap=True,
            overflow="ellipsis",
            max_width=natural[index] if shortened and index == keep - 1 else None,
        )
    for row in rows:
        made.add_row(*row[:keep])
    return made


def arrange(
    renderable: RenderableType, console: Console, *, wide: bool, section: bool = False
) -> RenderableType | list[str]:
    """What ``console`` prints for ``renderable``: plain lines off a terminal when it is a table
    (its title and header first when it is a ``section``: not the answer's first part), a
    fitted table on a terminal (unless ``wide``), anything else as it is."""
    from rich.table import Table

    if not isinstance(renderable, Table):
        return renderable
    if not console.is_terminal:
        return plain_lines(renderable, section=section)
    if wide or not renderable.show_header:
        return renderable
    return fitted(renderable, console.width)
