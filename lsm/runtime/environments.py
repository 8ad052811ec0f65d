"""Environments: rows, their loaded models, and the per-environment context cache.

Why: resolving ``X-LSM-Environment`` (name or id) and loading that environment's model happen
on every request; the context (catalog, lifecycle machines, settings) is built once and
rebuilt only when the environment's settings or model change, or when the model's source files
are edited (the model is then imported afresh: a long-running worker picks up a fixed model
without a restart).

A model is loaded and checked BEFORE the environment row is written (``ensure``, ``create``):
a model that fails to load leaves the environment as it was. Models named through the API go
through ``ModelChoices`` first (``lsm.model.policy``): nothing else is ever imported.
"""

from __future__ import annotations

import logging
import threading
import time

from lsm.errors import ConfigurationError, Conflict
from lsm.lifecycle import LifecycleRegistry
from lsm.model.loader import Model, load_model, load_model_files, source_changed
from lsm.model.policy import ModelChoices
from lsm.orchestration import EnvironmentContext
from lsm.store import audit
from lsm.store.database import Database
from lsm.store.environments.entities import register_entities
from lsm.store.environments.settings import EnvironmentSettings, parse_settings, validate_setting
from lsm.store.instances import repository as repo
from lsm.store.tables import EnvironmentRow

EMPTY_MODEL = Model(bindings=[], source="")
log = logging.getLogger(__name__)


class Environments:
    """Resolves environments and caches their ``EnvironmentContext``."""

    def __init__(
        self,
        db: Database,
        lifecycles: LifecycleRegistry,
        default: str,
        setting_defaults: dict[str, object] | None = None,
        models: ModelChoices | None = None,
    ) -> None:
        """``setting_defaults`` (``[settings]`` of lsm.toml) apply where an environment set nothing;
        ``models``: what ``create`` may give an environment (none but the empty model by default)."""
        self.models = models if models is not None else ModelChoices({})
        self.setting_defaults = {k: validate_setting(k, v) for k, v in (setting_defaults or {}).items()}
        self.db = db
        self.lifecycles = lifecycles
        self.default = default
        self._contexts: dict[str, EnvironmentContext] = {}
        #: env id -> (model, settings) the cached context was built from, and when it was checked
        self._stamp: dict[str, tuple[str | None, dict[str, object]]] = {}
        self._loaded: dict[str, float] = {}
        self.refresh_after = 2.0
        self._lock = threading.Lock()

    def ensure(self, name: str, model: str | None) -> EnvironmentRow:
        """Create the environment if missing (idempotent); a given model replaces the stored one.

        The operator's door (``lsm server --model``): the model is trusted, but loaded first, so
        that one that fails leaves the environment as it was.
        """
        if model is not None:
            self._checked_model(model)
        with self.db.write() as session:
            row = repo.find_environment(session, name)
            if row is None:
                row = EnvironmentRow(name=name, model=model, settings={})
                session.add(row)
            elif model is not None and row.model != model:
                row.model = model
                session.add(row)
            session.flush()
        self.invalidate(row.id)
        self.context(row.id)  # load the model now: a broken model fails at start, not later
        return row

    def create(
        self, name: str, choice: str | None, *, actor: str | None = None, request_id: str | None = None
    ) -> EnvironmentRow:
        """Create ``name`` with the model ``choice`` (the API's door; see ``ModelChoices``).

        Idempotent for the same model; an existing environment with another model is a 409.
        The model is resolved (nothing imported unless allowed), then loaded, then the row is
        written with its audit line: a model that fails leaves nothing behind.
        """
        spec = self.models.resolve(choice) if choice is not None else None
        with self.db.read() as session:
            existing = repo.find_environment(session, name)
        if existing is not None:
            if choice is not None and existing.model != spec:
                raise Conflict(
                    f"environment {name!r} exists with another model", environment=name, field="model"
                )
            return existing
        if spec is not None:
            self._checked_model(spec)
        with self.db.write() as session:
            if repo.find_environment(session, name) is not None:  # created meanwhile
                raise Conflict(f"environment {name!r} was created meanwhile", environment=name)
            row = EnvironmentRow(name=name, model=spec, settings={})
            session.add(row)
            session.flush()
            audit.record(
                session,
                actor=actor,
                request_id=request_id,
                action="environment.create",
                target=name,
                env_id=row.id,
                model=spec,
            )
        self.context(row.id)
        return row

    def change_model(
        self, env: str, choice: str, *, actor: str | None = None, request_id: str | None = None
    ) -> EnvironmentRow:
        """Give the environment ``env`` another model (an admin's ``PUT .../model``): resolved
        (nothing imported unless allowed), loaded and checked, and only then stored."""
        spec = self.models.resolve(choice)
        with self.db.read() as session:
            repo.get_environment(session, env)
        self._checked_model(spec)
        with self.db.write() as session:
            row = repo.get_environment(session, env)
            previous = row.model
            row.model = spec
            session.add(row)
            audit.record(
                session,
                actor=actor,
                request_id=request_id,
                action="environment.model",
                target=row.name,
                env_id=row.id,
                model=spec,
                previous=previous,
            )
            session.flush()
        self.invalidate(row.id)
        self.context(row.id)
        return row

    def _checked_model(self, spec: str) -> Model:
        """Load ``spec`` and check it against the lifecycles, writing nothing."""
        model = load_model(spec)
        self._check_bindings(model)
        model.catalog  # noqa: B018  (build and check the catalog now)
        return model

    def _check_bindings(self, model: Model) -> None:
        for binding in model.bindings:
            if binding.lifecycle not in self.lifecycles:
                raise ConfigurationError(
                    f"entity {binding.name!r} uses unknown lifecycle {binding.lifecycle!r}; "
                    f"known: {', '.join(self.lifecycles.names())}. A lifecycle of your own is "
                    f"found through the setting lifecycle_dirs (lsm.toml: lifecycle_dirs = "
                    f'["<the folder of {binding.lifecycle}.yaml>"])',
                    entity=binding.name,
                    lifecycle=binding.lifecycle,
                )

    def fresh_context(self, env: str | None) -> EnvironmentContext | None:
        """The cached context of ``env`` if it was checked less than ``refresh_after`` seconds
        ago, else None; never reads the database (for callers on an event loop)."""
        cached = self._contexts.get(env or self.default)
        if cached is None or time.monotonic() - self._loaded.get(cached.env_id, 0.0) >= self.refresh_after:
            return None
        return cached

    def context(self, env: str | None) -> EnvironmentContext:
        """The context of an environment (name or id; ``None`` = default), cached.

        Another process (an API server, a worker) may change an environment's settings or
        model: a cached context older than ``refresh_after`` seconds is checked against the
        environment row (one primary-key read) and rebuilt when the row changed.
        """
        key = env or self.default
        cached = self.fresh_context(key)
        if cached is not None:
            return cached
        with self.db.read() as session:
            row = repo.get_environment(session, key)
        with self._lock:
            ctx = self._contexts.get(row.id)
            reload = ctx is not None and self._edited(ctx)
            if ctx is not None and (reload or self._stamp.get(row.id) != (row.model, row.settings)):
                self.invalidate_locked(row.id)
                previous, ctx = ctx, None
            self._loaded[row.id] = time.monotonic()
            if ctx is None:
                try:
                    model = load_model(row.model, reload=reload) if row.model else EMPTY_MODEL
                except ConfigurationError:
                    if not reload:
                        raise
                    # an edit that does not load (a syntax error half-way through saving):
                    # keep compiling with the model that works, and say so once per edit
                    log.exception(
                        "environment %s: the edited model does not load; the previous one stays", row.name
                    )
                    previous.model.files = load_model_files(previous.model)
                    self._contexts[row.id] = previous
                    self._stamp[row.id] = (row.model, dict(row.settings))
                    self._contexts[row.name] = previous
                    return previous
                self._check_bindings(model)
                model.catalog  # noqa: B018  (build and check the catalog now)
                ctx = EnvironmentContext(
                    env_id=row.id,
                    name=row.name,
                    model=model,
                    lifecycles=self.lifecycles,
                    settings=self.effective_settings(row.settings),
                )
                self._register_entities(ctx)
                self._contexts[row.id] = ctx
                self._stamp[row.id] = (row.model, dict(row.settings))
            self._contexts[row.name] = ctx
            if env is None:
                self._contexts[self.default] = ctx
            return ctx

    @staticmethod
    def _edited(ctx: EnvironmentContext) -> bool:
        return ctx.model is not EMPTY_MODEL and source_changed(ctx.model)

    def effective_settings(self, stored: dict[str, object]) -> EnvironmentSettings:
        """Stored settings over the configured defaults over the built-in defaults."""
        return parse_settings({**self.setting_defaults, **stored})

    def invalidate(self, env_id: str) -> None:
        with self._lock:
            self.invalidate_locked(env_id)

    def invalidate_locked(self, env_id: str) -> None:
        for key in [k for k, c in self._contexts.items() if c.env_id == env_id]:
            del self._contexts[key]
        self._stamp.pop(env_id, None)

    def _register_entities(self, ctx: EnvironmentContext) -> None:
        """Persist the catalog (name, lifecycle, schema) so that it is visible in the database;
        any number of processes may do it at once (``lsm.store.environments.entities``)."""
        with self.db.write() as session:
            register_entities(
                session.connection(),
                ctx.env_id,
                [(b.name, b.lifecycle, ctx.catalog.json_schema(b.name)) for b in ctx.catalog],
            )
