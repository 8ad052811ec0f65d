"""The access log written by a thread of its own, not by the event loop.

Why: uvicorn formats and writes its access line (``uvicorn.access``) on the event loop, one
write system call per request, and every request of a burst waits behind it. Here the loop
only puts the record on a queue; a listener thread formats it with uvicorn's own formatter
and writes it through uvicorn's own handlers, so the lines read as before. At shutdown the
listener writes what is queued and stops.
"""

from __future__ import annotations

import logging
import queue
from logging.handlers import QueueHandler, QueueListener

__all__ = ["ACCESS_LOGGER", "off_the_loop"]

ACCESS_LOGGER = "uvicorn.access"


class _AsIs(QueueHandler):
    """A queue handler that leaves formatting to the listener's handlers (uvicorn's access
    formatter needs the record's ``args``, which ``QueueHandler.prepare`` would fold away)."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


def off_the_loop(name: str = ACCESS_LOGGER) -> QueueListener | None:
    """Move logger ``name``'s handlers behind a queue; the started listener (stop it at
    shutdown), or ``None`` when the logger has no handler of its own to move."""
    logger = logging.getLogger(name)
    handlers = list(logger.handlers)
    if not handlers:
        return None
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    listener = QueueListener(records, *handlers, respect_handler_level=True)
    for handler in handlers:
        logger.removeHandler(handler)
    logger.addHandler(_AsIs(records))
    listener.start()
    return listener
