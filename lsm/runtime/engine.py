"""``Engine``: the one facade the API, the CLI and ``lsm.testing`` call.

Why: HTTP routes and CLI commands must stay thin (parse, call, format). Everything they need
(environment resolution, the catalog of the environment's model, the orchestration function,
compile requests, the desired-state store, settings) is reached through this object, so that
the same behaviour is served over HTTP and in-process in tests.

Every method takes ``env``: an environment name or id; ``None`` means the default environment.
Entity-scoped instance methods take ``ref``: an instance id or ``<identity_attr>=<value>``.
"""

from __future__ import annotations

import time
from typing import Any

from lsm.compiler import CompileQueue, CompileRunner, CompileService, EnvironmentLocks
from lsm.desired_state import DesiredStateStore, VersionInfo
from lsm.errors import InvalidInput, InvalidSetting
from lsm.inventory import repository as repo
from lsm.inventory.compile_requests import CompileOrder, enqueue
from lsm.inventory.database import Database
from lsm.inventory.settings import describe_settings, selector_parts, validate_setting
from lsm.inventory.tables import InstanceResourcesRow
from lsm.inventory.views import CompileOut, EnvironmentOut, EventOut, InstanceOut
from lsm.lifecycle import LifecycleRegistry
from lsm.orchestration import Create, Delete, EnvironmentContext, Orchestrator, SetState, Update
from lsm.orchestration.imports import import_instances
from lsm.runtime.config import ServerConfig
from lsm.runtime.environments import Environments
from lsm.schemas.compiles import CompileKind
from lsm.selection import InventoryView, available_selectors
from lsm.selection.specs import check_spec, parameters_of
from lsm.services import ServiceLoop
from lsm.services.leases import Lease, process_identity
from lsm.services.scheduler import Scheduler
from lsm.services.singleton import hold_sqlite_worker
from lsm.services.wakeup import Listener

FINISHED = ("success", "failed")


class Engine:
    """The running engine over one database. See ``lsm.runtime.engine`` for the contract.

    ``Engine(config)`` then ``start()``; ``ready`` is true once started (``GET /health``).
    """

    def __init__(self, config: ServerConfig, *, db: Database | None = None) -> None:
        self.config = config
        self.ready = False
        self.db = db if db is not None else Database(config.database_url)
        self.lifecycles = LifecycleRegistry.discover(config.lifecycle_dirs)
        self.environments = Environments(self.db, self.lifecycles, config.environment, config.settings)
        self.orchestrator = Orchestrator(self.db)
        self.store = DesiredStateStore(self.db)
        self.queue = CompileQueue(self.db, lease_ttl=config.lease_ttl)
        self.runner = CompileRunner(
            self.db,
            self.queue,
            self.store,
            self.orchestrator,
            lambda env_id: self.environments.context(env_id),
        )
        owner, _ = process_identity(config.role)
        self.compiles = CompileService(
            self.queue,
            EnvironmentLocks(self.db),
            self.runner,
            lambda env_id: self.environments.context(env_id),
            worker=owner,
        )
        self.scheduler = Scheduler(self.db, self._schedules)
        self.worker = ServiceLoop(
            [self.compiles, self.scheduler],
            threads=config.worker_threads,
            poll_interval=config.poll_interval,
            keepalives=[self.scheduler.keepalive, self._keep_worker_lease],
            heartbeat_interval=min(5.0, config.lease_ttl / 3),
            name=config.role,
        )
        self.listener = Listener(self.db, self.worker.wake)
        self._worker_lease: Lease | None = None

    # -- lifecycle of the engine itself -----------------------------------------------------------
    def start(self) -> None:
        """Create the schema, the default environment, and start the embedded workers.

        On SQLite, the process that runs the worker holds the one worker lease SQLite allows
        (``lsm.services.singleton``): a second one is refused here, before anything runs.
        """
        self.db.create_schema()
        self.environments.ensure(self.config.environment, self.config.model)
        if self.config.embedded_worker:
            if self.db.is_sqlite:
                self._worker_lease = hold_sqlite_worker(self.db, self.config.role)
            self.orchestrator.listeners.append(self.worker.wake)
            self.worker.start()
            self.listener.start()
        self.ready = True

    def stop(self) -> None:
        self.ready = False
        if self.config.embedded_worker:
            self.listener.stop()
            self.worker.stop()
        self.scheduler.shutdown()
        if self._worker_lease is not None:
            self._worker_lease.release()
        self.db.dispose()

    def _keep_worker_lease(self) -> None:
        if self._worker_lease is not None:
            self._worker_lease.keep()

    def _schedules(self) -> list[tuple[str, str]]:
        """Every environment's ``auto_full_compile`` cron (the scheduler's view)."""
        with self.db.read() as session:
            rows = repo.list_environments(session)
        return [(r.id, self.environments.effective_settings(r.settings).auto_full_compile) for r in rows]

    def context(self, env: str | None) -> EnvironmentContext:
        return self.environments.context(env)

    # -- environments and settings ---------------------------------------------------------
    def list_environments(self) -> list[EnvironmentOut]:
        with self.db.read() as session:
            rows = repo.list_environments(session)
        return [
            EnvironmentOut.from_row(r, self.environments.effective_settings(r.settings).model_dump())
            for r in rows
        ]

    def create_environment(self, name: str, model: str | None = None) -> EnvironmentOut:
        if not name.strip():
            raise InvalidInput("an environment needs a name", field="name")
        self.environments.ensure(name, model)
        return self.get_environment(name)

    def get_environment(self, env: str | None) -> EnvironmentOut:
        with self.db.read() as session:
            row = repo.get_environment(session, env or self.config.environment)
        return EnvironmentOut.from_row(row, self.environments.effective_settings(row.settings).model_dump())

    def get_settings(self, env: str | None) -> dict[str, Any]:
        current = self.get_environment(env).settings
        return {key: {**meta, "value": current[key]} for key, meta in describe_settings().items()}

    def set_setting(self, env: str | None, key: str, value: Any) -> dict[str, Any]:
        typed = validate_setting(key, value)
        if key == "selector":
            self.check_selector(env, typed, error=InvalidSetting)
        with self.db.write() as session:
            row = repo.get_environment(session, env or self.config.environment)
            row.settings = {**row.settings, key: typed}
            session.add(row)
            env_id = row.id
        self.environments.invalidate(env_id)
        return self.get_settings(env_id)

    # -- catalog and lifecycles ---------------------------------------------------------------
    def catalog(self, env: str | None) -> list[dict[str, Any]]:
        ctx = self.context(env)
        return [self.catalog_entity(ctx.env_id, name) for name in ctx.catalog.names()]

    def catalog_entity(self, env: str | None, entity: str) -> dict[str, Any]:
        ctx = self.context(env)
        out = ctx.catalog.describe(entity)
        out["lifecycle"] = self.lifecycle(ctx.binding(entity).lifecycle)
        with self.db.read() as session:
            out["instance_summary"] = repo.count_by_state(session, ctx.env_id, entity)
        return out

    def entity_schema(self, env: str | None, entity: str) -> dict[str, Any]:
        return self.context(env).catalog.json_schema(entity)

    def lifecycle(self, name: str) -> dict[str, Any]:
        return self.lifecycles.get(name).model_dump(mode="json")

    # -- inventory -----------------------------------------------------------------------------
    def create_instance(
        self,
        env: str | None,
        entity: str,
        attributes: dict[str, Any],
        *,
        instance_id: str | None = None,
        initial_state: str | None = None,
    ) -> InstanceOut:
        ctx = self.context(env)
        command = Create(entity, attributes, instance_id=instance_id, initial_state=initial_state)
        return InstanceOut.from_row(self.orchestrator.execute(ctx, command))

    def import_instances(
        self, env: str | None, entity: str, state: str, attribute_sets: list[dict[str, Any]]
    ) -> list[str]:
        """Bulk-import instances straight into ``state`` (see ``lsm.orchestration.imports``)."""
        return import_instances(self.db, self.context(env), entity, state, attribute_sets)

    def list_instances(
        self,
        env: str | None,
        entity: str,
        *,
        states: list[str] | None = None,
        include_deleted: bool = False,
        limit: int = 100,
        offset: int = 0,
        sort: str = "created_at",
    ) -> list[InstanceOut]:
        ctx = self.context(env)
        binding = ctx.binding(entity)
        if limit < 1 or limit > 10_000 or offset < 0:
            raise InvalidInput("limit must be 1..10000 and offset >= 0", limit=limit, offset=offset)
        with self.db.read() as session:
            rows = repo.list_instances(
                session,
                ctx.env_id,
                binding.name,
                states=states,
                include_deleted=include_deleted,
                limit=limit,
                offset=offset,
                sort=sort,
            )
        return [InstanceOut.from_row(r) for r in rows]

    def get_instance(self, env: str | None, entity: str, ref: str) -> InstanceOut:
        ctx = self.context(env)
        binding = ctx.binding(entity)
        with self.db.read() as session:
            row = repo.find_instance(session, ctx.env_id, binding.name, ref, identity_attr=binding.identity)
        return InstanceOut.from_row(row)

    def update_instance(
        self, env: str | None, entity: str, ref: str, *, current_version: int, attributes: dict[str, Any]
    ) -> InstanceOut:
        command = Update(entity, ref, current_version, attributes)
        return InstanceOut.from_row(self.orchestrator.execute(self.context(env), command))

    def set_state(
        self,
        env: str | None,
        entity: str,
        ref: str,
        *,
        current_version: int,
        target_state: str,
        message: str = "",
    ) -> InstanceOut:
        command = SetState(entity, ref, current_version, target_state, message)
        return InstanceOut.from_row(self.orchestrator.execute(self.context(env), command))

    def delete_instance(self, env: str | None, entity: str, ref: str, *, current_version: int) -> InstanceOut:
        command = Delete(entity, ref, current_version)
        return InstanceOut.from_row(self.orchestrator.execute(self.context(env), command))

    def instance_log(self, env: str | None, entity: str, ref: str) -> list[EventOut]:
        instance = self.get_instance(env, entity, ref)
        with self.db.read() as session:
            return [EventOut.from_row(e) for e in repo.list_events(session, instance.id)]

    def instance_resources(self, env: str | None, entity: str, ref: str) -> list[dict[str, Any]]:
        instance = self.get_instance(env, entity, ref)
        return self._resources_of(self.context(env), instance)

    def _resources_of(self, ctx: EnvironmentContext, instance: InstanceOut) -> list[dict[str, Any]]:
        """The resources the instance produced in the latest desired state (deploy status: later)."""
        with self.db.read() as session:
            row = session.get(InstanceResourcesRow, (ctx.env_id, instance.id))
        if row is None:
            return []
        return [
            {
                "id": rid,
                "set": row.set_name,
                "desired_state_version": row.desired_state_version,
                "status": None,
            }
            for rid in row.resource_ids
        ]

    def diagnose(self, env: str | None, entity: str, ref: str) -> dict[str, Any]:
        ctx = self.context(env)
        instance = self.get_instance(env, entity, ref)
        with self.db.read() as session:
            validation = repo.last_validation_compile(session, ctx.env_id, instance.id)
            pending = repo.pending_compile_for(session, ctx.env_id, instance.id)
            events = repo.list_events(session, instance.id)
        last_error = next((EventOut.from_row(e) for e in reversed(events) if e.is_error), None)
        return {
            "instance": instance.model_dump(mode="json"),
            "state": instance.state,
            "allowed": self.lifecycles.machine(ctx.binding(entity).lifecycle).allowed(instance.state),
            "last_error": None if last_error is None else last_error.model_dump(mode="json"),
            "validation_compile": None
            if validation is None
            else CompileOut.from_row(validation).model_dump(mode="json"),
            "pending_compile": None
            if pending is None
            else CompileOut.from_row(pending).model_dump(mode="json"),
            "resources": [
                r for r in self._resources_of(ctx, instance) if r.get("status") in ("failed", "skipped")
            ],
        }

    # -- compiles and desired state ---------------------------------------------------------
    def request_compile(
        self,
        env: str | None,
        *,
        kind: str = "full",
        instance_ids: list[str] | None = None,
        service_entities: list[str] | None = None,
        exclude: list[str] | None = None,
        wait: bool = False,
        timeout: float = 300.0,
        selector: Any = None,
    ) -> CompileOut:
        ctx = self.context(env)
        if kind not in ("full", "partial"):
            raise InvalidInput(f"compile kind must be 'full' or 'partial', not {kind!r}", field="kind")
        for entity in service_entities or []:
            ctx.binding(entity)
        if selector is not None:
            if kind != "partial":
                raise InvalidInput("only a partial compile takes a selector", field="selector")
            self.check_selector(env, selector)
        if kind == "partial" and not (instance_ids or service_entities or selector is not None):
            raise InvalidInput(
                "a partial compile needs instance_ids or service_entities", field="instance_ids"
            )
        order = CompileOrder(
            env_id=ctx.env_id,
            kind=CompileKind(kind),
            requested_ids=list(instance_ids or []),
            service_entities=list(service_entities or []),
            exclude=list(exclude or []),
            reason="requested through the API",
            selector=selector,
        )
        with self.db.write() as session:
            row = enqueue(session, order)
        self.orchestrator.notify(ctx.env_id)
        if wait:
            return self.wait_for_compile(ctx.env_id, row.id, timeout=timeout)
        return CompileOut.from_row(row)

    def check_selector(self, env: str | None, spec: Any, *, error: type[InvalidInput] = InvalidInput) -> None:
        """Refuse (422, naming it) a selector spec this environment can not build."""
        ctx = self.context(env)
        try:
            selector_parts(spec)
        except InvalidInput as exc:
            raise error(exc.message, **exc.details) from None
        with self.db.read() as session:
            view = InventoryView(session, ctx.env_id, ctx.catalog)
            check_spec(spec, view, ctx.catalog, model=ctx.model, error=error)

    def explain_compile(
        self,
        env: str | None,
        *,
        instance_ids: list[str] | None = None,
        service_entities: list[str] | None = None,
        exclude: list[str] | None = None,
        selector: Any = None,
    ) -> dict[str, Any]:
        """What a partial compile would select and why (``lsm compile --explain``): nothing is queued."""
        ctx = self.context(env)
        for entity in service_entities or []:
            ctx.binding(entity)
        if selector is not None:
            self.check_selector(env, selector)
        return self.runner.explain(
            ctx,
            instance_ids=instance_ids or [],
            service_entities=service_entities or [],
            exclude=exclude or [],
            selector=selector,
        )

    def list_selectors(self, env: str | None) -> list[dict[str, Any]]:
        """The selectors this environment can name, with their parameters (``lsm selector list``)."""
        ctx = self.context(env)
        return [
            {"name": name, "class": f"{cls.__module__}.{cls.__qualname__}", "parameters": parameters_of(cls)}
            for name, cls in available_selectors(ctx.model).items()
        ]

    def wait_for_compile(self, env: str | None, compile_id: str, *, timeout: float = 300.0) -> CompileOut:
        """Poll until the compile (or the compile it was merged into) finished."""
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            out = self.get_compile(env, compile_id)
            if out.status in FINISHED:
                return out
            if time.monotonic() > deadline:
                return out
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def list_compiles(self, env: str | None, *, limit: int = 50, offset: int = 0) -> list[CompileOut]:
        ctx = self.context(env)
        with self.db.read() as session:
            return [
                CompileOut.from_row(r)
                for r in repo.list_compiles(session, ctx.env_id, limit=limit, offset=offset)
            ]

    def get_compile(self, env: str | None, compile_id: str) -> CompileOut:
        ctx = self.context(env)
        with self.db.read() as session:
            return CompileOut.from_row(repo.get_compile(session, ctx.env_id, compile_id))

    def list_desired_states(
        self, env: str | None, *, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        ctx = self.context(env)
        return [_version_dict(v) for v in self.store.list_versions(ctx.env_id, limit=limit, offset=offset)]

    def desired_state(self, env: str | None, version: int) -> dict[str, Any]:
        ctx = self.context(env)
        info = self.store.get_version(ctx.env_id, version)
        content = self.store.content(ctx.env_id, version)
        return {**_version_dict(info), "sets": content.sets, "shared": content.shared}

    def desired_state_resources(self, env: str | None, version: int) -> list[dict[str, Any]]:
        ctx = self.context(env)
        return [
            {"id": r.id, "set": set_name, "attributes": r.attributes, "requires": list(r.requires)}
            for set_name, r in self.store.resources(ctx.env_id, version)
        ]


def _version_dict(info: VersionInfo) -> dict[str, Any]:
    return {
        "version": info.number,
        "kind": info.kind,
        "base": info.base,
        "compile_id": info.compile_id,
        "created_at": info.created_at.isoformat(),
        "sets_replaced": info.sets_replaced,
        "sets_deleted": info.sets_deleted,
        "resource_count": info.resource_count,
    }
