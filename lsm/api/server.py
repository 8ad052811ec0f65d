"""Serving an app with uvicorn on a background thread, on a real socket.

Why: ``lsm quickstart``, the CLI tests and ``lsm.testing.serve`` need a real HTTP server in the
same process as the code that drives it (the sync ``Client`` cannot use the async-only
``httpx.ASGITransport``). The socket is bound here, before uvicorn starts, so that port ``0``
(any free port) has no race between choosing the port and listening on it.

``lsm server`` does not use this: it runs uvicorn in the main thread, with signal handling.
Both cut slow clients off the same way (``lsm.api.slow_clients``).
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn
from starlette.types import ASGIApp

from lsm.api.slow_clients import http_options
from lsm.schemas.limits import DEFAULT_HEADER_TIMEOUT, DEFAULT_KEEP_ALIVE


class BackgroundServer:
    """uvicorn on ``host:port`` in a daemon thread; a context manager that waits until it listens.

    Example::

        with BackgroundServer(runtime.app) as server:
            Client(server.url).health()
    """

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_level: str = "warning",
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
        keep_alive: int = DEFAULT_KEEP_ALIVE,
    ) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level=log_level,
            lifespan="off",
            access_log=False,
            **http_options(header_timeout=header_timeout, keep_alive=keep_alive),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"uvicorn:{self.port}",
            daemon=True,
        )

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> None:
        """Start serving; return once uvicorn accepts connections (RuntimeError after ``timeout``)."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"the server on {self.url} stopped while starting")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server on {self.url} did not start within {timeout} s")
            time.sleep(0.01)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to finish the requests in flight and exit; wait for the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> BackgroundServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
