"""Server configuration: ``lsm.toml`` (or ``[tool.lsm]`` in pyproject.toml) plus environment overrides.

Precedence, lowest first: defaults, the file, ``LSM_*`` environment variables, command-line
options. Example ``lsm.toml``::

    database_url = "sqlite:///./lsm.db"
    model = "examples/router_port"
    lifecycle_dirs = ["./lifecycles"]

    [settings]              # defaults for every environment's settings
    selector = "relation_closure"
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lsm.errors import ConfigurationError
from lsm.inventory.database import DEFAULT_DATABASE_URL

ENV_VARS = {
    "database_url": "LSM_DATABASE_URL",
    "model": "LSM_MODEL",
    "environment": "LSM_ENVIRONMENT",
    "host": "LSM_HOST",
    "port": "LSM_PORT",
    "state_dir": "LSM_STATE_DIR",
}


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
    #: compile runner threads of a worker (a hung model occupies one until its time limit)
    worker_threads: int = Field(4, ge=1, le=64)
    #: seconds between looks at the queue when nothing woke the worker (a fallback on PostgreSQL)
    poll_interval: float = Field(1.0, gt=0, le=60)
    #: seconds a claimed compile's lease lasts unrenewed: how soon a dead worker's work is taken over
    lease_ttl: float = Field(30.0, ge=1, le=3600)
    #: what this process is, in leases and logs (``lsm server``, ``lsm worker``, ``lsm agent``)
    role: str = "lsm-server"
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
    data.update({k: v for k, v in overrides.items() if v is not None})
    if isinstance(data.get("model"), str) and (base / data["model"]).exists():
        data["model"] = str((base / data["model"]).resolve())
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
