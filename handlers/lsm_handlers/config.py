"""``ConfigFileHandler``: one JSON file per resource, for resource types with no handler of their own.

Why: a model's resource types (``net::Router``, ``net::Interface``, ...) stand for devices that
do not exist on a developer's machine, yet an order should still reach ``up`` there, deploying
to something real that a person can look at. This handler writes a resource's attributes
(without the engine's: ``agent``, ``purged``, ``meta``, ``requires``) as canonical JSON (sorted
keys, no spaces) to::

    <ctx.state_dir>/<agent>/<type with '::' as '/'>/<id value>.json

reads it back to compare, and removes it on purge. It names no resource class, so it handles any
type (the engine gives it a ``StoredResource``); register it per type in the model module::

    HANDLERS = config_handlers(RouterConfig, Interface)   # {"net::Router": ConfigFileHandler, ...}

Path parts come from the agent name and the id value, which a model chooses: each part is
percent-encoded (``/`` and a leading ``.`` included), so no value can leave the state directory.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import lsm
from lsm.deploy.handler import ENGINE_ATTRIBUTES, Change, HandlerError
from lsm.schemas.limits import MAX_FILE_NAME_BYTES
from lsm_handlers._atomic import atomic_write

FILE_MODE = 0o644


def safe_part(text: str, suffix: str = "") -> str:
    """``text`` as one path component: percent-encoded, never ``.``/``..``, never hidden, never empty.

    A component that would not fit a file name (``MAX_FILE_NAME_BYTES`` with ``suffix``) keeps
    its start and ends in ``~`` and a SHA-256 of the whole text: an agent name or id value of
    any length deploys (percent-encoding alone triples a non-ASCII name) and two names never
    share a file.
    """
    part = quote(text, safe="")
    if part.startswith("."):
        part = "%2E" + part[1:]
    part = part or "%"
    if len(part) + len(suffix) > MAX_FILE_NAME_BYTES:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        part = part[: MAX_FILE_NAME_BYTES - len(suffix) - len(digest) - 1] + "~" + digest
    return part + suffix


def id_value(resource_id: str, agent: str) -> str:
    """The identifying value of ``Type[agent,attr=value]`` (the agent may contain commas)."""
    body = resource_id[resource_id.index("[") + 1 : -1]
    rest = body[len(agent) + 1 :] if body.startswith(agent + ",") else body.split(",", 1)[-1]
    return rest.split("=", 1)[1] if "=" in rest else rest


def config_path(state_dir: Path, resource_id: str, agent: str) -> Path:
    """Where the config-file handler keeps ``resource_id``."""
    resource_type = resource_id.split("[", 1)[0]
    folders = [safe_part(p) for p in resource_type.split("::")]
    return Path(state_dir, safe_part(agent), *folders, safe_part(id_value(resource_id, agent), ".json"))


def canonical_json(values: Mapping[str, Any]) -> bytes:
    return json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class ConfigFileHandler(lsm.CRUDHandler[Any]):
    """Keeps a resource's attributes as a JSON file under the agent's state directory."""

    @staticmethod
    def _values(resource: Any) -> dict[str, Any]:
        return {k: v for k, v in resource.attributes().items() if k not in ENGINE_ATTRIBUTES}

    def diff(self, ctx: lsm.HandlerContext, resource: Any, current: Mapping[str, Any]) -> dict[str, Change]:
        """As the base, and a key the file holds that the resource no longer has is a change too."""
        changes = super().diff(ctx, resource, current)
        desired = self._values(resource)
        changes.update({key: Change(value, None) for key, value in current.items() if key not in desired})
        return changes

    def path(self, ctx: lsm.HandlerContext, resource: Any) -> Path:
        return config_path(ctx.state_dir, resource.id, resource.agent)

    def read(self, ctx: lsm.HandlerContext, resource: Any) -> Mapping[str, Any] | None:
        path = self.path(ctx, resource)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None  # a file where a folder should be: missing; creating it says why it fails
        except OSError as exc:
            raise HandlerError(f"{resource.id}: can not read {path}: {exc.strerror}") from None
        try:
            values = json.loads(data)
        except ValueError:
            ctx.warning("config file is not JSON; it will be rewritten", path=str(path))
            return {}
        if not isinstance(values, dict):
            ctx.warning("config file is not a JSON object; it will be rewritten", path=str(path))
            return {}
        return values

    def _write(self, ctx: lsm.HandlerContext, resource: Any) -> None:
        path = self.path(ctx, resource)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, canonical_json(self._values(resource)), FILE_MODE)
        except OSError as exc:
            raise HandlerError(f"{resource.id}: can not write {path}: {exc.strerror}") from None
        ctx.info("config file written", path=str(path))

    def create(self, ctx: lsm.HandlerContext, resource: Any) -> None:
        self._write(ctx, resource)

    def update(self, ctx: lsm.HandlerContext, resource: Any, changes: Mapping[str, Change]) -> None:
        self._write(ctx, resource)

    def delete(self, ctx: lsm.HandlerContext, resource: Any) -> None:
        path = self.path(ctx, resource)
        try:
            path.unlink()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise HandlerError(f"{resource.id}: can not remove {path}: {exc.strerror}") from None
        ctx.info("config file removed", path=str(path))


def config_handlers(*types: type[lsm.Resource] | str) -> dict[str, type[ConfigFileHandler]]:
    """``HANDLERS`` for a model: ``ConfigFileHandler`` for each given resource class or type name."""
    found: dict[str, type[ConfigFileHandler]] = {}
    for item in types:
        name = item if isinstance(item, str) else item.resource_type
        if not name:
            raise TypeError(f"config_handlers: {item!r} names no resource type")
        found[name] = ConfigFileHandler
    return found
