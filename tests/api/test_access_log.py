"""The access log is written by a thread (``lsm.api.access_log``), in uvicorn's own format."""

from __future__ import annotations

import io
import logging
import threading

from uvicorn.logging import AccessFormatter

from lsm.api.access_log import off_the_loop


def test_access_lines_keep_uvicorns_format_and_are_written_by_another_thread() -> None:
    logger = logging.getLogger("lsm.tests.access")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    out = io.StringIO()
    writers: list[str] = []

    class Recording(logging.StreamHandler[io.StringIO]):
        def emit(self, record: logging.LogRecord) -> None:
            writers.append(threading.current_thread().name)
            super().emit(record)

    handler = Recording(out)
    handler.setFormatter(
        AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False)
    )
    logger.addHandler(handler)
    listener = off_the_loop(logger.name)
    assert listener is not None
    try:
        assert handler not in logger.handlers  # the loop's logger only queues now
        logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "PATCH", "/lsm/v1/x", "1.1", 200)
    finally:
        listener.stop()  # writes what is queued, then stops
        logger.handlers.clear()
    assert out.getvalue() == '127.0.0.1:5000 - "PATCH /lsm/v1/x HTTP/1.1" 200 OK\n'
    assert writers and threading.current_thread().name not in writers


def test_a_logger_without_handlers_is_left_alone() -> None:
    assert off_the_loop("lsm.tests.no-handlers") is None
