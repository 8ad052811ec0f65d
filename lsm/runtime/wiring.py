"""The ONE composition root: what an API process and a worker process are made of.

Why one module: the API, ``lsm worker``, ``lsm quickstart`` and ``lsm.testing`` must run the
same engine, built the same way; everything that constructs the engine's parts lives here and
nowhere else. Three entry points:

* ``build_api(config)``: the core, the facades, the FastAPI app, and the compile processing,
  started in the process when ``config.embedded_worker`` (the embedded default);
* ``build_worker(config)``: the core and the compile processing, no API;
* ``build_agent(config)``: the core and a deploy agent (``lsm agent``), no API, no compiles.

A deploy agent (``lsm.deploy.agent.AgentService``) adds its sources of work (recovery passes,
plans, claims) and its keepalives to the same service loop: ``build_api`` adds them to the
compile processing's loop when ``config.embedded_agent`` (``lsm server``), and the agent is woken
when a compile finished.

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

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.engine import make_url

from lsm.compiler import CompileQueue, CompileRunner, CompileService, EnvironmentLocks, ExportFailures
from lsm.compiler.isolation import CompilePool
from lsm.deploy.agent import AgentService
from lsm.deploy.jail import Jail
from lsm.desired_state import DesiredStateStore
from lsm.facade import ChangeSignal, Core, EventsFacade, Facades
from lsm.lifecycle import LifecycleRegistry
from lsm.orchestration import EnvironmentContext, Orchestrator
from lsm.runtime.config import ServerConfig
from lsm.runtime.environments import Environments
from lsm.services import ServiceLoop, WorkSource
from lsm.services.leases import Lease, process_identity
from lsm.services.scheduler import Scheduler
from lsm.services.singleton import hold_sqlite_worker
from lsm.services.wakeup import Listener
from lsm.services.webhook_dispatch import WebhookDispatcher
from lsm.services.webhook_send import WebhookSender
from lsm.store.compiles.requests import notify_work
from lsm.store.database import Database, normalize_url
from lsm.store.instances import repository as repo

if TYPE_CHECKING:
    from fastapi import FastAPI


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


class WorkerProcessing:
    """Compile processing by the service loop (``lsm.services``) over the leased compile queue.

    The loop runs the compile service and the scheduler (``auto_full_compile``); on PostgreSQL a
    LISTEN connection wakes it when another process queued work; on SQLite this process holds
    the one worker lease SQLite allows (a second worker is refused at ``start``).
    """

    def __init__(
        self,
        db: Database,
        runner: CompileRunner,
        compiles: CompileService,
        scheduler: Scheduler,
        loop: ServiceLoop,
        *,
        role: str,
        agent: AgentService | None = None,
        webhooks: Webhooks | None = None,
        sqlite_watch: bool = False,
    ) -> None:
        self.db = db
        self.webhooks = webhooks
        self.runner = runner
        self.compiles = compiles
        self.scheduler = scheduler
        self.loop = loop
        self.agent = agent
        self.listener = Listener(db, loop.wake, sqlite_watch=sqlite_watch)
        self.role = role
        self._lease: Lease | None = None

    def start(self) -> None:
        if self.db.is_sqlite:
            self._lease = hold_sqlite_worker(self.db, self.role)
        if self.runner.pool is not None:
            self.runner.pool.start()
        self.loop.start()
        self.listener.start()

    def stop(self) -> None:
        """Stop (safe when never started: ``drain`` may have taken the scheduler's lease); the
        compile processes last, once no compile waits for them."""
        self.listener.stop()
        self.loop.stop()
        if self.runner.pool is not None:
            self.runner.pool.stop()
        self.scheduler.shutdown()
        if self.agent is not None:
            self.agent.stop()
        if self.webhooks is not None:
            self.webhooks.sender.close()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def wake(self, env_id: str | None = None) -> None:
        self.loop.wake(env_id)

    def wake_webhooks(self) -> None:
        """A delivery was queued in this process (a ping): the sender looks now."""
        if self.webhooks is not None:
            self.webhooks.sender.wake()
        self.loop.wake()

    def drain(self) -> int:
        return self.loop.drain()

    def keep_lease(self) -> None:
        if self._lease is not None:
            self._lease.keep()


def build_compile_processing(
    core: Core,
    environments: Environments,
    config: ServerConfig,
    *,
    agent: AgentService | None = None,
    sqlite_watch: bool = False,
) -> WorkerProcessing:
    """The compile queue, its locks, the runner, the scheduler, the webhooks and the service
    loop over ``core``: the one place they are built (for the API process and ``lsm worker``).

    After each compile batch, ``core.changes`` is told (the waiters and the event stream of this
    process hear of it at once instead of at their next poll). ``agent``: a deploy agent run by
    the same loop (woken when a compile finished); webhooks (when configured) are two more
    sources of the same loop; ``sqlite_watch``: a process without the API wakes when another
    process commits (``lsm.services.wakeup``).
    """
    db, orchestrator, store = core.db, core.orchestrator, core.store
    on_finished = core.changes.notify
    webhooks = build_webhooks(core, config)
    queue = CompileQueue(db, lease_ttl=config.lease_ttl)
    queue.export_failed = ExportFailures(orchestrator, environments.context, environments.lifecycles).record
    # model code runs in compile processes, one per runner thread at most (lsm.compiler.isolation)
    pool = CompilePool(config.worker_threads)
    runner = CompileRunner(db, queue, store, orchestrator, environments.context, pool)
    owner, _ = process_identity(config.role)
    compiles = CompileService(
        queue,
        EnvironmentLocks(db),
        runner,
        environments.context,
        worker=owner,
        per_environment=max(1, config.worker_threads - 1),
    )
    compiles.listeners.append(on_finished)
    if not db.is_sqlite:
        compiles.listeners.append(lambda env_id: _notify_deploy(db, env_id))

    def schedules() -> list[tuple[str, str]]:
        """Every environment's ``auto_full_compile`` cron (the scheduler's view)."""
        with db.read() as session:
            rows = repo.list_environments(session)
        return [(r.id, environments.effective_settings(r.settings).auto_full_compile) for r in rows]

    scheduler = Scheduler(db, schedules)
    keepalives: list[Callable[[], None]] = [scheduler.keepalive]
    sources: list[WorkSource] = [compiles, scheduler]
    if agent is not None:
        sources.extend(agent.sources)
        keepalives.extend(agent.keepalives)
    if webhooks is not None:
        sources.extend(webhooks.sources)
    loop = ServiceLoop(
        sources,
        threads=config.worker_threads,
        poll_interval=config.poll_interval,
        keepalives=keepalives,
        heartbeat_interval=min(5.0, config.lease_ttl / 3),
        name=config.role,
    )
    compiles.stopping = lambda: loop.stopping  # a validation work claims no more once it stops
    processing = WorkerProcessing(
        db,
        runner,
        compiles,
        scheduler,
        loop,
        role=config.role,
        agent=agent,
        webhooks=webhooks,
        sqlite_watch=sqlite_watch,
    )
    keepalives.append(processing.keep_lease)
    if agent is not None:
        agent.wake = loop.wake
        compiles.listeners.append(loop.wake)
    return processing


@dataclasses.dataclass(frozen=True)
class Webhooks:
    """The webhook dispatcher and sender of a process (``lsm.services.webhook_*``)."""

    dispatcher: WebhookDispatcher
    sender: WebhookSender

    @property
    def sources(self) -> Sequence[WorkSource]:
        return (self.dispatcher, self.sender)


def build_webhooks(core: Core, config: ServerConfig) -> Webhooks | None:
    """The webhook dispatcher and sender of this process: the one place they are built."""
    if not config.webhooks_enabled:
        return None
    owner, _ = process_identity(f"{config.role}-webhooks")
    sender = WebhookSender(core.db, config.webhooks, owner)
    dispatcher = WebhookDispatcher(core.db, EventsFacade(core), config.webhooks, queued=sender.wake)
    return Webhooks(dispatcher=dispatcher, sender=sender)


def _notify_deploy(db: Database, env_id: str) -> None:
    """A compile finished: agents in other processes (PostgreSQL LISTEN) look for a new version now.

    One statement in autocommit (a NOTIFY needs no transaction of its own: no BEGIN, no COMMIT
    round trip); nothing on SQLite, where there is no other process to wake."""
    if db.is_sqlite:
        return
    try:
        with db.write_engine.connect() as conn:
            notify_work(conn.execution_options(isolation_level="AUTOCOMMIT"), env_id)
    except Exception:  # a lost wake-up costs one poll interval, never the compile
        pass


def state_dir_of(config: ServerConfig) -> Path:
    """Where handlers may write: ``config.state_dir``, else ``lsm-state`` beside the SQLite file or in cwd."""
    if config.state_dir:
        return Path(config.state_dir)
    url = make_url(normalize_url(config.database_url))
    if url.get_backend_name() == "sqlite" and url.database:
        return Path(url.database).resolve().parent / "lsm-state"
    return Path.cwd() / "lsm-state"


def jail_of(config: ServerConfig) -> Jail:
    """Where this process's handlers may act: ``handler_roots`` (default: the state directory)."""
    return Jail.of(
        config.handler_roots or [state_dir_of(config)],
        urls=config.handler_url_roots,
        special_bits=config.handler_special_bits,
    )


def build_agent_service(
    db: Database, environments: Environments, orchestrator: Orchestrator, config: ServerConfig
) -> AgentService:
    """The deploy agent of this process: the one place it is built."""
    owner, info = process_identity(config.role if config.role != "lsm-server" else "lsm-server-agent")
    return AgentService(
        db,
        orchestrator,
        environments.context,
        owner=owner,
        info=info,
        agents=config.agent_names or None,
        noop=config.agent_noop,
        sema=config.agent_sema,
        threads=config.agent_threads,
        batch=config.agent_batch,
        lease_ttl=config.lease_ttl,
        state_dir=state_dir_of(config),
        deploy_timeout=config.deploy_timeout,
        jail=jail_of(config),
    )


class AgentProcessing:
    """A deploy agent on its own service loop (``lsm agent``): no compiles, no scheduler."""

    def __init__(self, db: Database, agent: AgentService, config: ServerConfig) -> None:
        self.db = db
        self.agent = agent
        self.loop = ServiceLoop(
            agent.sources,
            threads=max(1, min(4, config.worker_threads)),
            poll_interval=config.poll_interval,
            keepalives=agent.keepalives,
            heartbeat_interval=min(5.0, config.lease_ttl / 3),
            name=config.role,
        )
        agent.wake = self.loop.wake
        self.listener = Listener(db, self.loop.wake, sqlite_watch=True)

    def start(self) -> None:
        self.loop.start()
        self.listener.start()

    def stop(self) -> None:
        self.listener.stop()
        self.loop.stop()
        self.agent.stop()

    def wake(self, env_id: str | None = None) -> None:
        self.loop.wake(env_id)

    def drain(self) -> int:
        return self.loop.drain()


def build_core(config: ServerConfig, db: Database | None = None) -> tuple[Core, Environments]:
    """The engine's parts over ``config.database_url`` (or ``db``), and the environments' cache."""
    database = (
        db
        if db is not None
        else Database(config.database_url, pools=config.db_pool.limits(), role=config.role)
    )
    lifecycles = LifecycleRegistry.discover(config.lifecycle_dirs)
    environments = Environments(
        database, lifecycles, config.environment, config.settings, models=config.model_choices()
    )
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
        processing: WorkerProcessing | AgentProcessing,
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
        """Check the connection budget, create or migrate the schema, the default environment
        (its model loads now), then run."""
        if self._owns_db:
            self.db.check_budget(self.config.db_pool)
        self.db.create_schema()
        self.environments.ensure(self.config.environment, self.config.default_model())
        if processing:
            self.orchestrator.listeners.append(self.processing.wake)
            self.processing.start()
            self._processing_started = True
        self.ready = True

    def stop(self) -> None:
        """Stop processing; dispose of the database when this runtime opened it."""
        self.ready = False
        if self._processing_started:
            self.orchestrator.listeners.remove(self.processing.wake)
            self._processing_started = False
        self.processing.stop()  # also when never started: a drain may hold the scheduler's lease
        self.orchestrator.close()  # answers the writes it holds first
        if self._owns_db:
            self.db.dispose()


class ApiRuntime(_Runtime):
    """An API process: facades and the FastAPI app over the core (``build_api``)."""

    processing: WorkerProcessing

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
        self.facades = Facades.over(
            core,
            wake_agents=processing.wake,
            state_dir=state_dir_of(config),
            jail=jail_of(config),
            # a ping queues its delivery itself: only the sender needs waking
            wake_webhooks=processing.wake_webhooks,
            allow_internal_webhooks=config.webhooks.allow_internal,
        )
        # here, not at the top: a worker or an agent never serves HTTP, and FastAPI with the
        # API's routers is a third of a second of every ``lsm worker``'s start
        from lsm.api import create_app

        self.app: FastAPI = create_app(
            self.facades,
            is_ready=lambda: self.ready,
            auth=config.auth,
            max_body_bytes=config.max_body_bytes,
            allowed_hosts=config.allowed_hosts,
            listen_host=config.host,
            max_streams=config.max_streams,
            max_streams_per_caller=config.max_streams_per_caller,
        )

    def start(self) -> None:
        """Ready to serve; the embedded compile processing runs when ``config.embedded_worker``."""
        self._start(processing=self.config.embedded_worker)


class WorkerRuntime(_Runtime):
    """A worker process: compile processing without the API (``build_worker``)."""

    processing: WorkerProcessing

    def start(self) -> None:
        self._start(processing=True)


def build_api(config: ServerConfig, *, db: Database | None = None) -> ApiRuntime:
    """An API process over ``config`` (not started: call ``start()``, then ``stop()``); with
    ``config.embedded_agent`` its service loop also runs a deploy agent."""
    core, environments = build_core(config, db)
    agent = (
        build_agent_service(core.db, environments, core.orchestrator, config)
        if config.embedded_agent
        else None
    )
    processing = build_compile_processing(core, environments, config, agent=agent)
    core = dataclasses.replace(core, explain=processing.runner.explain)
    # the API's concurrent writes share transactions (``lsm.orchestration.group``)
    if config.group_commit or (config.group_commit is None and core.db.is_sqlite):
        core.orchestrator.enable_group_commit()
    return ApiRuntime(config, core, environments, processing, owns_db=db is None)


def build_worker(config: ServerConfig, *, db: Database | None = None) -> WorkerRuntime:
    """A compile-worker process over ``config`` (not started; ``config.poll_interval``: its fallback
    poll); with ``config.embedded_agent`` its service loop also runs a deploy agent (a worker
    that ``lsm server`` supervises)."""
    core, environments = build_core(config, db)
    agent = (
        build_agent_service(core.db, environments, core.orchestrator, config)
        if config.embedded_agent
        else None
    )
    processing = build_compile_processing(core, environments, config, agent=agent, sqlite_watch=True)
    return WorkerRuntime(config, core, environments, processing, owns_db=db is None)


class AgentRuntime(_Runtime):
    """An agent process: deploy agents without the API or compiles (``build_agent``)."""

    processing: AgentProcessing

    def start(self) -> None:
        self._start(processing=True)


def build_agent(config: ServerConfig, *, db: Database | None = None) -> AgentRuntime:
    """A deploy-agent process over ``config`` (not started); ``config.agent_names`` limits its names."""
    core, environments = build_core(config, db)
    agent = build_agent_service(core.db, environments, core.orchestrator, config)
    return AgentRuntime(
        config, core, environments, AgentProcessing(core.db, agent, config), owns_db=db is None
    )
