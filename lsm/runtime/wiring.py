"""The ONE composition root: what an API process and a worker process are made of.

Why one module: the API, ``lsm worker``, ``lsm quickstart`` and ``lsm.testing`` must run the
same engine, built the same way; everything that constructs the engine's parts lives here and
nowhere else. Two entry points:

* ``build_api(config)``: the core, the facades, the FastAPI app, and the compile processing,
  started in the process when ``config.embedded_worker`` (the embedded default);
* ``build_worker(config)``: the core and the compile processing, no API.

The compile queue, worker and locks are constructed in ``build_compile_processing`` only,
behind the small ``CompileProcessing`` surface (start, stop, wake, drain): that one function
is what changes when compile processing changes.

Example::

    runtime = build_api(ServerConfig(database_url="sqlite:///./lsm.db", model="examples/router_port"))
    runtime.start()
    try:
        uvicorn.run(runtime.app)
    finally:
        runtime.stop()
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from fastapi import FastAPI

from lsm.api import create_app
from lsm.compiler import Batch, CompileQueue, CompileRunner, CompileWorker, EnvironmentLocks
from lsm.desired_state import DesiredStateStore
from lsm.facade import ChangeSignal, Core, Facades
from lsm.inventory.database import Database
from lsm.lifecycle import LifecycleRegistry
from lsm.orchestration import EnvironmentContext, Orchestrator
from lsm.runtime.config import ServerConfig
from lsm.runtime.environments import Environments


class CompileProcessing(Protocol):
    """What the runtime needs of compile processing, whatever runs it."""

    def start(self) -> None:
        """Process compile requests in the background until ``stop``."""

    def stop(self) -> None:
        """Finish the compile in progress and stop."""

    def wake(self, env_id: str | None = None) -> None:
        """Requests of ``env_id`` were committed in this process: look now, not at the next poll."""

    def drain(self) -> int:
        """Run every compile this process can claim now, in the calling thread (tests, benchmarks)."""


@dataclass
class WorkerProcessing:
    """Compile processing by a ``CompileWorker`` thread over the ``CompileQueue``."""

    worker: CompileWorker
    runner: CompileRunner

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()

    def wake(self, env_id: str | None = None) -> None:
        self.worker.wake(env_id)

    def drain(self) -> int:
        return self.worker.drain()


def build_compile_processing(
    db: Database,
    environments: Environments,
    orchestrator: Orchestrator,
    store: DesiredStateStore,
    *,
    poll_interval: float = 1.0,
    on_finished: Callable[[str], None] = lambda _env_id: None,
) -> WorkerProcessing:
    """The compile queue, its locks, the runner and the worker: the one place they are built.

    ``on_finished(env_id)`` is called after each batch of compiles finished (the waiters and the
    event stream of this process hear of it at once instead of at their next poll).
    """
    queue = CompileQueue(db)
    runner = CompileRunner(db, queue, store, orchestrator, environments.context)

    def run_batch(env_id: str, batch: Batch) -> None:
        try:
            runner.run_batch(env_id, batch)
        finally:
            on_finished(env_id)

    worker = CompileWorker(
        queue,
        EnvironmentLocks(db),
        run_batch,
        lambda env_id: environments.context(env_id).settings,
        poll_interval=poll_interval,
    )
    return WorkerProcessing(worker, runner)


def build_core(config: ServerConfig, db: Database | None = None) -> tuple[Core, Environments]:
    """The engine's parts over ``config.database_url`` (or ``db``), and the environments' cache."""
    database = db if db is not None else Database(config.database_url)
    lifecycles = LifecycleRegistry.discover(config.lifecycle_dirs)
    environments = Environments(database, lifecycles, config.environment, config.settings)
    orchestrator = Orchestrator(database)
    changes = ChangeSignal()
    orchestrator.watchers.append(changes.notify)
    core = Core(
        db=database,
        environments=environments,
        lifecycles=lifecycles,
        orchestrator=orchestrator,
        store=DesiredStateStore(database),
        changes=changes,
    )
    return core, environments


class _Runtime:
    """What an API and a worker process share: the core, compile processing, start and stop."""

    def __init__(
        self,
        config: ServerConfig,
        core: Core,
        environments: Environments,
        processing: WorkerProcessing,
        *,
        owns_db: bool,
    ) -> None:
        self.config = config
        self.core = core
        self.environments = environments
        self.processing = processing
        self.ready = False
        self._owns_db = owns_db
        self._processing_started = False

    @property
    def db(self) -> Database:
        return self.core.db

    @property
    def orchestrator(self) -> Orchestrator:
        return self.core.orchestrator

    @property
    def store(self) -> DesiredStateStore:
        return self.core.store

    @property
    def lifecycles(self) -> LifecycleRegistry:
        return self.core.lifecycles

    def context(self, env: str | None) -> EnvironmentContext:
        """The orchestration context of an environment (name or id; ``None`` = default)."""
        return self.environments.context(env)

    def _start(self, *, processing: bool) -> None:
        """Create or migrate the schema, the default environment (its model loads now), then run."""
        self.db.create_schema()
        self.environments.ensure(self.config.environment, self.config.model)
        if processing:
            self.orchestrator.listeners.append(self.processing.wake)
            self.processing.start()
            self._processing_started = True
        self.ready = True

    def stop(self) -> None:
        """Stop processing; dispose of the database when this runtime opened it."""
        self.ready = False
        if self._processing_started:
            self.processing.stop()
            self.orchestrator.listeners.remove(self.processing.wake)
            self._processing_started = False
        if self._owns_db:
            self.db.dispose()


class ApiRuntime(_Runtime):
    """An API process: facades and the FastAPI app over the core (``build_api``)."""

    def __init__(
        self,
        config: ServerConfig,
        core: Core,
        environments: Environments,
        processing: WorkerProcessing,
        *,
        owns_db: bool,
    ) -> None:
        super().__init__(config, core, environments, processing, owns_db=owns_db)
        self.facades = Facades.over(core)
        self.app: FastAPI = create_app(self.facades, is_ready=lambda: self.ready)

    def start(self) -> None:
        """Ready to serve; the embedded compile processing runs when ``config.embedded_worker``."""
        self._start(processing=self.config.embedded_worker)


class WorkerRuntime(_Runtime):
    """A worker process: compile processing without the API (``build_worker``)."""

    def start(self) -> None:
        self._start(processing=True)


def build_api(config: ServerConfig, *, db: Database | None = None) -> ApiRuntime:
    """An API process over ``config`` (not started: call ``start()``, then ``stop()``)."""
    core, environments = build_core(config, db)
    processing = build_compile_processing(
        core.db, environments, core.orchestrator, core.store, on_finished=core.changes.notify
    )
    return ApiRuntime(config, core, environments, processing, owns_db=db is None)


def build_worker(
    config: ServerConfig, *, db: Database | None = None, poll_interval: float = 1.0
) -> WorkerRuntime:
    """A compile-worker process over ``config`` (not started); polls every ``poll_interval`` seconds."""
    core, environments = build_core(config, db)
    processing = build_compile_processing(
        core.db,
        environments,
        core.orchestrator,
        core.store,
        poll_interval=poll_interval,
        on_finished=core.changes.notify,
    )
    return WorkerRuntime(config, core, environments, processing, owns_db=db is None)
