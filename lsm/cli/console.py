"""The two consoles of the ``lsm`` command: ``out`` for answers (stdout), ``err`` for errors,
progress and notes (stderr), so that ``lsm ... | grep`` and ``--json`` see only the answer.

Why ``out`` has rules of its own: rich lays everything out for the terminal, and without one
(a pipe, a file, cron, CI) it assumes 80 columns (or ``COLUMNS``), so a listing would fold its
ids and times over several lines that neither grep nor a reader of a log can use. So ``out``
hands every table it prints to ``lsm.cli.layout`` (plain lines off a terminal, a table fitted
to the terminal on one, every column with ``--wide``), and when stdout is not a terminal it
lays the rest out for ``UNBOUNDED_WIDTH`` columns whatever ``COLUMNS`` says: a line is never
wrapped for a pipe.

Imports only rich's console: ``lsm --help`` stays fast.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleDimensions

#: the width ``out`` lays out for when it writes to no terminal: wide enough that no row folds
UNBOUNDED_WIDTH = 1000


class _Output(Console):
    """A console that is wide when it writes to a pipe or a file (see the module docstring)."""

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(UNBOUNDED_WIDTH, measured.height)
        return measured

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    #: the invocation (its shared options) whose printed parts ``_parts`` counts
    _answer: object = None
    _parts = 0

    def _part(self) -> bool:
        """Count a part of the running invocation's answer; whether one came before it."""
        from lsm.cli.options import current

        options = current()
        if self._answer is not options:  # a new invocation
            self._answer, self._parts = options, 0
        self._parts += 1
        return self._parts > 1

    def note(self, text: str) -> None:
        """A line for a person about the answer (``(none)``): on a terminal only, since off one
        only records are written (``lsm.cli.layout``): an empty listing is no line at all."""
        if self.is_terminal:
            super().print(text)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Print as rich does, each table laid out for where it goes (``lsm.cli.layout``)."""
        from rich.table import Table

        from lsm.cli.layout import arrange
        from lsm.cli.options import current

        if not any(isinstance(item, Table) for item in objects):
            self._part()
            super().print(*objects, **kwargs)
            return
        for item in objects:
            section = self._part()
            shown = arrange(item, self, wide=current().wide, section=section)
            if isinstance(shown, list):
                # written as they are: rich would expand the tabs that separate the cells
                self.file.write("".join(f"{line}\n" for line in shown))
            else:
                super().print(shown, **kwargs)


out = _Output(highlight=False)
err = Console(stderr=True, highlight=False)
