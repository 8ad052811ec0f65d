"""Server configuration: ``lsm.toml`` (or ``[tool.lsm]`` in pyproject.toml) plus environment overrides.

Precedence, lowest first: defaults, the file, ``LSM_*`` environment variables, command-line
options. Example ``lsm.toml``::

    database_url = "sqlite:///./lsm.db"
    model = "examples/router_port"
    lifecycle_dirs = ["./lifecycles"]

    [settings]              # defaults for every environment's settings
    selector = "relation_closure"

    [models]                # models environments may be created with, by name (API, CLI)
    routers = "examples/router_port"

    [auth]                  # off by default; see lsm.schemas.auth.AuthConfig
    enabled = true
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lsm.errors import ConfigurationError
from lsm.model.policy import ModelChoices, model_name
from lsm.schemas.auth import AuthConfig
from lsm.schemas.limits import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS_PER_CALLER,
)
from lsm.schemas.webhooks import DeliveryPolicy
from lsm.store.database import DEFAULT_DATABASE_URL
from lsm.store.pools import PoolConfig

ENV_VARS = {
    "database_url": "LSM_DATABASE_URL",
    "model": "LSM_MODEL",
    "environment": "LSM_ENVIRONMENT",
    "host": "LSM_HOST",
    "port": "LSM_PORT",
    "max_body_bytes": "LSM_MAX_BODY_BYTES",
    "state_dir": "LSM_STATE_DIR",
    "group_commit": "LSM_GROUP_COMMIT",
    "access_log": "LSM_ACCESS_LOG",
}
#: ``LSM_AUTH=1`` turns authentication on (as ``[auth] enabled = true``)
AUTH_ENV_VAR = "LSM_AUTH"


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database_url: str = DEFAULT_DATABASE_URL
    model: str | None = None
    environment: str = "default"
    lifecycle_dirs: list[str] = Field(default_factory=list)
    host: str = "127.0.0.1"
    port: int = 8888
    settings: dict[str, Any] = Field(default_factory=dict)
    #: run the compile worker inside the server process
    embedded_worker: bool = True
    #: ``lsm server``: compile worker processes it starts, watches and stops (``lsm.runtime.
    #: supervisor``; the first also runs the deploy agent); 0: compiles and the agent run in the
    #: server process itself. SQLite allows one worker process per database file
    server_workers: int = Field(1, ge=0, le=64)
    #: concurrent API writes share write transactions (``lsm.orchestration.group``); ``None``:
    #: on SQLite (writers are serialized there anyway), off on PostgreSQL, where one writer
    #: thread serializes round trips that concurrent transactions overlap (measured slower)
    group_commit: bool | None = None
    #: ``lsm server`` logs a line per HTTP request (uvicorn's access log). Off, a burst costs
    #: the API noticeably less CPU per request (a line formatted and written per PATCH), for a
    #: deployment whose proxy logs the requests already; the audit trail records every change
    #: either way
    access_log: bool = True
    #: compile runner threads of a worker (a hung model occupies one until its time limit)
    worker_threads: int = Field(4, ge=1, le=64)
    #: seconds between looks at the queue when nothing woke the worker (a fallback on PostgreSQL)
    poll_interval: float = Field(1.0, gt=0, le=60)
    #: seconds a claimed compile's lease lasts unrenewed: how soon a dead worker's work is taken over
    lease_ttl: float = Field(30.0, ge=1, le=3600)
    #: the largest request body the API accepts, in bytes (413 above it)
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024, le=1024**3)
    #: what this process is, in leases and logs (``lsm server``, ``lsm worker``, ``lsm agent``)
    role: str = "lsm-server"
    #: models environments may be given by name (``model`` is offered too, under its file name)
    models: dict[str, str] = Field(default_factory=dict)
    #: directories under which an admin may name a model by path
    model_dirs: list[str] = Field(default_factory=list)
    #: authentication (tokens, JWTs): off by default
    auth: AuthConfig = Field(default_factory=AuthConfig)
    #: listen on a non-loopback address without authentication (``lsm server --insecure``)
    insecure: bool = False
    #: ``Host`` names the API answers to besides ``localhost``, ``127.0.0.1``, ``[::1]`` and
    #: ``host`` (``lsm.api.hosts``: DNS rebinding); with authentication on and nothing listed,
    #: every name; ``"*"``: every name
    allowed_hosts: list[str] = Field(default_factory=list)
    #: event streams (``/api/v1/events``, the console's) one API process serves at once, and
    #: of one caller (token, or client address with authentication off): 429 past either
    max_streams: int = Field(DEFAULT_MAX_STREAMS, ge=1, le=100_000)
    max_streams_per_caller: int = Field(DEFAULT_MAX_STREAMS_PER_CALLER, ge=1, le=100_000)
    #: seconds a request's headers may take to arrive before the connection is cut (slow
    #: clients, ``lsm.api.slow_clients``), and an idle keep-alive connection is kept
    header_timeout: float = Field(DEFAULT_HEADER_TIMEOUT, gt=0, le=3600)
    keep_alive_timeout: int = Field(DEFAULT_KEEP_ALIVE, ge=1, le=3600)
    #: run a deploy agent in the server's service loop (``lsm server`` turns it on; tests decide)
    embedded_agent: bool = False
    #: the agent names this process may hold (empty: every name)
    agent_names: list[str] = Field(default_factory=list)
    #: global noop for this agent process (``lsm agent --noop``); no resource can undo it
    agent_noop: bool = False
    #: a global semaphore: at most this many handlers of this process at once (``--sema N``)
    agent_sema: int | None = Field(None, ge=1)
    #: handler threads of an agent process (resources of a batch run concurrently on them)
    agent_threads: int = Field(8, ge=1, le=256)
    #: resources claimed per batch
    agent_batch: int = Field(200, ge=1, le=10_000)
    #: seconds one resource's handler may run (overrides the environment setting ``deploy_timeout``)
    deploy_timeout: float | None = Field(None, gt=0)
    #: the directory handlers may write under (default: ``lsm-state`` beside the SQLite file, or in cwd)
    state_dir: str | None = None
    #: the directories handlers may act under (lsm.deploy.jail; empty: the state directory alone)
    handler_roots: list[str] = Field(default_factory=list)
    #: URL prefixes the HTTP handlers may reach (empty: none)
    handler_url_roots: list[str] = Field(default_factory=list)
    #: handlers may set setuid, setgid and sticky bits (off: such a mode fails its deploy)
    handler_special_bits: bool = False
    #: webhook deliveries: timeout, back-off, give-up limits, feed poll (``[webhooks]``)
    webhooks: DeliveryPolicy = Field(default_factory=DeliveryPolicy)
    #: dispatch and send webhook deliveries in this process's service loop (server and worker)
    webhooks_enabled: bool = True
    #: PostgreSQL connection pools: this process's ceiling, the wait for a free connection, and
    #: the deployment's budget checked at start-up (``[db_pool]``, ``lsm.store.pools``)
    db_pool: PoolConfig = Field(default_factory=PoolConfig)

    @field_validator("handler_url_roots")
    @classmethod
    def _absolute_urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            if not url.startswith(("http://", "https://")) or not url.split("://", 1)[1].strip("/"):
                raise ValueError(f"{url!r} is not an absolute http(s) URL")
        return urls

    def model_choices(self) -> ModelChoices:
        """What the API may give an environment: the named models, the server's, the model dirs."""
        named = dict(self.models)
        if self.model is not None and self.model not in named.values():
            named.setdefault(model_name(self.model), self.model)
        return ModelChoices(named, self.model_dirs)

    def default_model(self) -> str | None:
        """The default environment's model: ``model``, or the named model it names."""
        return self.models.get(self.model, self.model) if self.model is not None else None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``): reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_listen(config: ServerConfig) -> None:
    """Refuse to serve a non-loopback address without authentication, unless ``insecure``."""
    if is_loopback(config.host) or config.auth.enabled or config.insecure:
        return
    raise ConfigurationError(
        f"refusing to listen on {config.host} without authentication: anyone who can reach it could "
        "order, change and delete services and run compiles. Turn authentication on ([auth] enabled "
        "= true, or lsm server --auth) after creating an admin token (lsm token create --admin), or "
        "pass --insecure if this network is trusted.",
        host=config.host,
    )


def load_config(path: str | Path | None = None, **overrides: Any) -> ServerConfig:
    """Read the configuration file (``./lsm.toml`` or ``./pyproject.toml`` when not given)."""
    data: dict[str, Any] = {}
    base = Path.cwd()
    if path is not None:
        file = Path(path)
        if not file.is_file():
            raise ConfigurationError(f"configuration file {str(file)!r} not found", path=str(file))
        data = _read(file)
        base = file.parent
    elif (Path.cwd() / "lsm.toml").is_file():
        data = _read(Path.cwd() / "lsm.toml")
    elif (Path.cwd() / "pyproject.toml").is_file():
        data = _read(Path.cwd() / "pyproject.toml").get("tool", {}).get("lsm", {})
    for key, var in ENV_VARS.items():
        if os.environ.get(var):
            data[key] = os.environ[var]
    if os.environ.get(AUTH_ENV_VAR, "").lower() in ("1", "true", "yes", "on"):
        data["auth"] = {**data.get("auth", {}), "enabled": True}
    auth_override = overrides.pop("auth_enabled", None)
    data.update({k: v for k, v in overrides.items() if v is not None})
    if auth_override:
        data["auth"] = {**data.get("auth", {}), "enabled": True}
    if isinstance(data.get("model"), str) and (base / data["model"]).exists():
        data["model"] = str((base / data["model"]).resolve())
    if isinstance(data.get("models"), dict):
        data["models"] = {
            name: str((base / spec).resolve()) if isinstance(spec, str) and (base / spec).exists() else spec
            for name, spec in data["models"].items()
        }
    if isinstance(data.get("model_dirs"), list):
        data["model_dirs"] = [
            str((base / d).resolve()) if isinstance(d, str) else d for d in data["model_dirs"]
        ]
    try:
        return ServerConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid configuration: {problems}") from None


def _read(file: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"can not read {str(file)!r}: {exc}", path=str(file)) from None
