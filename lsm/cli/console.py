"""The two consoles of the ``lsm`` command: ``out`` for answers (stdout), ``err`` for errors,
progress and notes (stderr), so that ``lsm ... | grep`` and ``--json`` see only the answer.

Why ``out`` has a width rule of its own: rich lays a table out for the terminal, and without
one (a pipe, a file, cron, CI) it assumes 80 columns, so a listing folds its ids and times over
several lines that neither grep nor a reader of a log can use. When stdout is not a terminal
and ``COLUMNS`` does not say otherwise, ``out`` lays out for ``UNBOUNDED_WIDTH`` columns: a row
is one line, as long as its cells. On a terminal, or with ``COLUMNS``, rich's own rule holds
(columns fold to fit, nothing is cut: ``lsm.cli.render``).

Imports only rich's console: ``lsm --help`` stays fast.
"""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions

#: the width ``out`` lays out for when it writes to no terminal: wide enough that no row folds
UNBOUNDED_WIDTH = 1000


class _Output(Console):
    """A console that is wide when it writes to a pipe or a file (see the module docstring)."""

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        if self._width is None and "COLUMNS" not in os.environ and not self.is_terminal:
            return ConsoleDimensions(UNBOUNDED_WIDTH, measured.height)
        return measured

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


out: Console = _Output(highlight=False)
err = Console(stderr=True, highlight=False)
