"""``lsm server``, ``lsm worker`` and ``lsm quickstart``: the commands that run the engine.

These are the server side of the command: each builds its runtime from the configuration
(``lsm.runtime``) and runs until interrupted. The engine, FastAPI and uvicorn are imported
inside the commands, so that the client commands and ``lsm --help`` never load them.
``lsm agent`` runs a deploy agent the same way (``lsm.cli.agent``).
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from rich.console import Console

from lsm.cli.console import err
from lsm.cli.errors import errors_reported
from lsm.gc_pause import freeze_startup_heap


def server(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            help="Model path or module (LSM_MODEL); repeatable, as name=path: the first runs the "
            "default environment, every one may be chosen by name for a new environment.",
        ),
    ] = None,
    model_dir: Annotated[
        list[str] | None,
        typer.Option("--model-dir", help="Directory under which an admin may name a model by path."),
    ] = None,
    auth: Annotated[
        bool, typer.Option("--auth", help="Require a token on every request but /health (LSM_AUTH=1).")
    ] = False,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="Listen on a non-loopback address without authentication."),
    ] = False,
    database: Annotated[
        str | None, typer.Option("--database", help="Database URL (LSM_DATABASE_URL); ./lsm.db by default.")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Address to listen on (127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port to listen on (8888).")] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="Configuration file (./lsm.toml or pyproject.toml).")
    ] = None,
    agent: Annotated[
        bool, typer.Option("--agent/--no-agent", help="Run a deploy agent in the server (default).")
    ] = True,
    worker: Annotated[
        bool,
        typer.Option(
            "--worker/--no-worker",
            help="Run compiles (and the agent) in the server (default); --no-worker: only the API, "
            "with `lsm worker` (and `lsm agent`) in processes of their own.",
        ),
    ] = True,
    access_log: Annotated[
        bool | None,
        typer.Option(
            "--access-log/--no-access-log",
            help="Log a line per HTTP request (default; or LSM_ACCESS_LOG=0, access_log = false).",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=0,
            max=64,
            help="Compile worker processes the server starts and watches (server_workers, default 1; "
            "the first also runs the agent); 0: compiles and the agent in the server process.",
        ),
    ] = None,
) -> None:
    """Run the API with its compile worker and deploy agent until interrupted.

    The worker (and the agent) run in processes the server starts, watches and stops, so the
    API and the compiles use separate cores; ``--workers 0`` keeps them in the server process.
    """
    import contextlib

    import uvicorn

    from lsm.api.access_log import off_the_loop
    from lsm.api.slow_clients import http_options
    from lsm.errors import ConfigurationError
    from lsm.model.policy import parse_model_option
    from lsm.runtime.config import check_listen, load_config
    from lsm.runtime.supervisor import Supervisor, worker_children
    from lsm.runtime.wiring import build_api

    supervisor: Supervisor | None = None
    with errors_reported():
        named = dict(parse_model_option(m) for m in model or [])
        first = parse_model_option(model[0])[1] if model else None
        settings = load_config(
            config,
            database_url=database,
            model=first,
            host=host,
            port=port,
            models=named or None,
            model_dirs=model_dir or None,
            insecure=insecure or None,
            auth_enabled=auth,
            access_log=access_log,
        )
        check_listen(settings)
        count = settings.server_workers if workers is None else workers
        supervised = worker and count > 0
        if supervised and count > 1 and settings.database_url.startswith("sqlite"):
            raise ConfigurationError(
                f"server_workers is {count}, but SQLite allows one worker process per database "
                "file: use 1, or PostgreSQL for more"
            )
        runtime = build_api(
            settings.model_copy(
                update={
                    "embedded_agent": agent and not supervised,
                    "embedded_worker": worker and not supervised,
                }
            )
        )
        runtime.start()  # the schema and the default environment exist before a worker starts
        if supervised:
            supervisor = Supervisor(
                worker_children(
                    [
                        settings.model_copy(
                            update={"role": "lsm-worker", "embedded_agent": agent and index == 0}
                        ).model_dump_json()
                        for index in range(count)
                    ]
                )
            )
            supervisor.start()
    freeze_startup_heap()
    access = None
    try:
        state = "on" if settings.auth.enabled else "OFF (every caller may do everything)"
        err.print(
            f"lsm server on http://{settings.host}:{settings.port} (database {settings.database_url}); "
            f"authentication {state}"
            + (f"; worker processes {', '.join(map(str, supervisor.pids()))}" if supervisor else "")
        )
        http = http_options(header_timeout=settings.header_timeout, keep_alive=settings.keep_alive_timeout)
        server = uvicorn.Server(
            uvicorn.Config(
                runtime.app,
                host=settings.host,
                port=settings.port,
                log_level="info",
                access_log=settings.access_log,
                **http,
            )
        )
        # uvicorn configured its loggers above: the access lines now go through a thread
        access = off_the_loop() if settings.access_log else None
        with contextlib.suppress(KeyboardInterrupt):  # as ``uvicorn.run``: a Ctrl-C is a stop
            server.run()
    finally:
        if supervisor is not None:
            supervisor.stop()
        runtime.stop()
        if access is not None:
            access.stop()
    if not server.started:  # as ``uvicorn.run``: the port was taken, say
        raise typer.Exit(3)  # uvicorn's exit status for a server that never started


def _dump_threads_on_sigusr1() -> None:
    """``kill -USR1 <pid>`` prints every thread's stack to stderr: why is a worker stuck."""
    import faulthandler
    import signal

    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)


def worker(
    model: Annotated[str | None, typer.Option("--model", help="Model path or module (LSM_MODEL).")] = None,
    database: Annotated[
        str | None, typer.Option("--database", help="Database URL (LSM_DATABASE_URL); ./lsm.db by default.")
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="Configuration file (./lsm.toml or pyproject.toml).")
    ] = None,
    poll: Annotated[
        float, typer.Option(help="Seconds between looks at the queue when nothing woke it (a fallback).")
    ] = 1.0,
    threads: Annotated[
        int, typer.Option(help="Compile runner threads (one environment gets all but one of them).")
    ] = 4,
    lease_ttl: Annotated[
        float, typer.Option(help="Seconds before a dead worker's compiles are taken over.")
    ] = 30.0,
) -> None:
    """Run a compile worker (no API) until interrupted.

    On PostgreSQL, more workers on any machine share the work (validations in parallel,
    exporting compiles one at a time per environment). On SQLite one worker process runs
    (``lsm server`` includes one); a second refuses to start.
    """
    from lsm.runtime.supervisor import SETTINGS_ENV, die_with_parent

    die_with_parent()  # first: a worker started by ``lsm server`` never outlives it

    from lsm.runtime.config import ServerConfig, load_config
    from lsm.runtime.wiring import build_worker

    with errors_reported():
        supervised = os.environ.get(SETTINGS_ENV)
        if supervised:  # started by ``lsm server``: the settings it loaded
            settings = ServerConfig.model_validate_json(supervised)
        else:
            settings = load_config(config, database_url=database, model=model).model_copy(
                update={
                    "poll_interval": poll,
                    "worker_threads": threads,
                    "lease_ttl": lease_ttl,
                    "role": "lsm-worker",
                }
            )
        runtime = build_worker(settings)
        runtime.start()
    run_until_interrupted(runtime, f"lsm worker on {settings.database_url}")


def run_until_interrupted(runtime: Any, banner: str) -> None:
    """A started background process (worker, agent): dump threads on SIGUSR1, wait for Ctrl-C, stop."""
    import threading

    _dump_threads_on_sigusr1()
    freeze_startup_heap()
    err.print(f"{banner}; Ctrl-C to stop")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        runtime.stop()


def quickstart(
    timeout: Annotated[float, typer.Option(help="Overall bound on following the lifecycles (s).")] = 60.0,
) -> None:
    """Start an embedded server, order a router and two ports, follow their lifecycles."""
    from lsm import quickstart as demo

    with errors_reported():
        # a console of its own: the demo's rules span the terminal's width, not the unbounded
        # width ``out`` takes when it writes to no terminal (lsm.cli.console)
        code = demo.run(Console(highlight=False), timeout=timeout)
    raise typer.Exit(code)
