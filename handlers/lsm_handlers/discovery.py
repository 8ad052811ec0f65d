"""Bundled discovery handlers: files, the objects of an HTTP collection, a namespace's interfaces.

Why these three: they find real things on this machine with nothing to install, and their
results have the shape of the bundled resource types, so a discovered resource can be adopted
into an instance that manages exactly it (docs/semantics.md §6):

* ``std::FileDiscovery``: the regular files directly under ``directory`` (or below it, with
  ``recursive``) whose names match ``pattern`` (``re.fullmatch`` on the file name), reported as
  the bundled ``std::File`` ids ``std::File[agent,path=/abs/path]`` with ``path``, ``content``
  and ``mode``, exactly what the ``std::File`` handler's ``read`` returns, so an adopted file
  deploys with no write. Files that are not UTF-8 text, larger than ``max_size`` bytes, or
  unreadable are left out with a warning in the run's log (the std::File type holds text).
* ``std::HttpCollectionDiscovery``: GET ``url``; a JSON list of objects (each identified by its
  ``id_field``) or a JSON object of objects (identified by their keys). Each becomes
  ``<found_type>[agent,<found_attribute>=<id>]`` (default ``std::HttpObject[agent,id=<id>]``)
  with the object as its attributes.
* ``linux::InterfaceDiscovery``: the links of network namespace ``namespace`` (the agent's own
  namespace when empty) whose names match ``name_filter`` (all when empty), reported as
  ``linux::Interface[agent,name=<link>]`` with the seed's ``host``, ``interface_name`` and
  ``ip_address`` (the first address, CIDR), plus ``namespace``, every address, ``mtu`` and
  ``up`` (the fields an adopter needs for a ``linux::Interface``). Read with
  ``ip -json`` (argument lists, never a shell).

Discovery never changes the target, and reads it only through the agent's jail
(``lsm.deploy.jail``): files under the agent's roots, never through a link that leads out, URLs
under ``handler_url_roots``; patterns run on RE2 (``lsm.deploy.patterns``), in linear time.
A handler that fails (unreachable URL, missing directory,
missing namespace) raises ``HandlerError``: the run fails and the previous results stay.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field, field_validator

import lsm
from lsm.deploy.handler import HandlerError
from lsm.deploy.jail import checked_path, read_at
from lsm.deploy.patterns import user_pattern

#: seconds one ``ip`` command or one HTTP request may take
TIMEOUT = 30.0
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*")


def _regex(value: str | None, what: str) -> str | None:
    if value is not None:
        user_pattern(value, what)
    return value


# -- files ------------------------------------------------------------------------------------------
class FileDiscovery(lsm.Resource, type="std::FileDiscovery", id_attribute="name"):
    """Find the files under ``directory`` whose names match ``pattern``."""

    name: str
    directory: str
    pattern: str = ".*"
    recursive: bool = False
    max_size: int = Field(1_000_000, ge=0)

    @field_validator("directory")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return checked_path(value, "std::FileDiscovery directory")

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        _regex(value, "pattern")
        return value


class FoundFile(BaseModel):
    """A discovered file, as the ``std::File`` handler reads it."""

    path: str
    content: str
    mode: int


def file_id(agent: str, path: str | Path) -> str:
    """``std::File[agent,path=...]``: the id the bundled ``std::File`` type gives ``path``."""
    return f"std::File[{agent},path={os.path.normpath(str(path))}]"


class FileDiscoveryHandler(lsm.DiscoveryHandler[FileDiscovery, FoundFile]):
    """Lists and reads files through the agent's jail: only under its roots, never through a link."""

    @staticmethod
    def _candidates(top: int, recursive: bool) -> Iterator[tuple[int, str, str]]:
        """``(folder descriptor, path relative to the directory, file name)``, links never followed."""
        if not recursive:
            with os.scandir(top) as entries:
                names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
            yield from ((top, name, name) for name in names)
            return
        for folder, dirs, files, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            dirs.sort()
            for name in sorted(files):
                yield fd, os.path.normpath(os.path.join(folder, name)), name

    def discover_resources(self, ctx: lsm.HandlerContext, resource: FileDiscovery) -> dict[str, FoundFile]:
        who = resource.id
        _root, directory = ctx.jail.resolve(resource.directory, who=who)
        wanted = user_pattern(resource.pattern)
        found: dict[str, FoundFile] = {}
        with ctx.jail.directory(directory, who=who) as top:
            for fd, relative, name in self._candidates(top, resource.recursive):
                if not wanted.fullmatch(name):
                    continue
                path = str(directory / relative)
                try:
                    data, info = read_at(fd, name, who=who, shown=path, max_size=resource.max_size)
                    content = data.decode("utf-8")
                except UnicodeDecodeError:
                    ctx.warning("file left out: not UTF-8 text", path=path)
                    continue
                except (HandlerError, OSError) as exc:
                    ctx.warning("file left out", path=path, error=str(exc))
                    continue
                found[file_id(resource.agent, path)] = FoundFile(
                    path=path, content=content, mode=stat.S_IMODE(info.st_mode)
                )
        ctx.info("files discovered", directory=str(directory), count=len(found))
        return found


# -- HTTP collections -------------------------------------------------------------------------------
class HttpCollectionDiscovery(lsm.Resource, type="std::HttpCollectionDiscovery", id_attribute="name"):
    """Find the JSON objects of the collection at ``url``."""

    name: str
    url: str
    #: the type of the ids reported, and their identifying attribute
    found_type: str = "std::HttpObject"
    found_attribute: str = "id"
    #: the field of each object (of a JSON list) that identifies it
    id_field: str = "id"
    headers: dict[str, str] = {}

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url {value!r} must be http:// or https://")
        return value

    @field_validator("found_type")
    @classmethod
    def _type(cls, value: str) -> str:
        if not _TYPE.fullmatch(value):
            raise ValueError(f"found_type {value!r} is not a resource type name like std::HttpObject")
        return value


class HttpCollectionDiscoveryHandler(lsm.DiscoveryHandler[HttpCollectionDiscovery, Any]):
    def discover_resources(
        self, ctx: lsm.HandlerContext, resource: HttpCollectionDiscovery
    ) -> dict[str, Any]:
        try:
            url = ctx.jail.url(resource.url, who=resource.id)
            response = httpx.get(url, headers=resource.headers, timeout=TIMEOUT)
        except httpx.HTTPError as exc:
            raise HandlerError(f"{resource.id}: GET {resource.url} failed: {exc}") from None
        if response.status_code != 200:
            raise HandlerError(f"{resource.id}: GET {resource.url} answered {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise HandlerError(f"{resource.id}: GET {resource.url} did not answer JSON") from None
        items: list[tuple[str, Any]]
        if isinstance(body, dict):
            items = [(str(key), value) for key, value in body.items()]
        elif isinstance(body, list):
            items = []
            for index, value in enumerate(body):
                if not isinstance(value, dict) or value.get(resource.id_field) in (None, ""):
                    raise HandlerError(
                        f"{resource.id}: item {index} of {resource.url} has no {resource.id_field!r} field"
                    )
                items.append((str(value[resource.id_field]), value))
        else:
            raise HandlerError(
                f"{resource.id}: {resource.url} answered a JSON {type(body).__name__}, not a collection"
            )
        prefix = f"{resource.found_type}[{resource.agent},{resource.found_attribute}="
        found = {f"{prefix}{key}]": value for key, value in items}
        ctx.info("objects discovered", url=resource.url, count=len(found))
        return found


# -- Linux interfaces -------------------------------------------------------------------------------
class InterfaceDiscovery(lsm.Resource, type="linux::InterfaceDiscovery", id_attribute="name"):
    """Find the links of a network namespace whose names match ``name_filter``."""

    name: str
    namespace: str = ""
    name_filter: str | None = None

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if value and not _NAME.fullmatch(value):
            raise ValueError(f"namespace name {value!r} must be 1..64 letters, digits, '_', '.', '-'")
        return value

    @field_validator("name_filter")
    @classmethod
    def _filter(cls, value: str | None) -> str | None:
        return _regex(value, "name_filter")


class UnmanagedInterface(BaseModel):
    """One discovered interface: the seed's host, interface name and IP address, and a bit more."""

    host: str
    interface_name: str
    ip_address: str | None = None
    #: where it was found (as the bundled ``linux::Interface`` names it), and every address
    namespace: str = ""
    addresses: list[str] = []
    mtu: int | None = None
    up: bool = False


def ip_links(namespace: str) -> list[dict[str, Any]]:
    """``ip -json addr show`` in ``namespace`` (the current one when empty)."""
    ip = shutil.which("ip")
    if ip is None:
        raise HandlerError("the ip command (iproute2) is not installed")
    command = [ip, "-json"] + (["-n", namespace] if namespace else []) + ["addr", "show"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise HandlerError(f"{' '.join(command)} took more than {TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        raise HandlerError(f"{' '.join(command)} failed: {done.stderr.strip() or done.returncode}")
    links = json.loads(done.stdout or "[]")
    return [link for link in links if isinstance(link, dict)]


class InterfaceDiscoveryHandler(lsm.DiscoveryHandler[InterfaceDiscovery, UnmanagedInterface]):
    def discover_resources(
        self, ctx: lsm.HandlerContext, resource: InterfaceDiscovery
    ) -> dict[str, UnmanagedInterface]:
        wanted = user_pattern(resource.name_filter, "name_filter") if resource.name_filter else None
        found: dict[str, UnmanagedInterface] = {}
        for link in ip_links(resource.namespace):
            name = str(link.get("ifname", ""))
            if not name or (wanted is not None and not wanted.fullmatch(name)):
                continue
            addresses = [
                f"{a['local']}/{a['prefixlen']}"
                for a in link.get("addr_info", [])
                if isinstance(a, dict) and "local" in a and "prefixlen" in a
            ]
            found[f"linux::Interface[{resource.agent},name={name}]"] = UnmanagedInterface(
                host=resource.agent,
                interface_name=name,
                ip_address=addresses[0] if addresses else None,
                namespace=resource.namespace,
                addresses=addresses,
                mtu=link.get("mtu"),
                up="UP" in link.get("flags", []),
            )
        ctx.info("interfaces discovered", namespace=resource.namespace or "(agent's own)", count=len(found))
        return found


__all__ = [
    "FileDiscovery",
    "FileDiscoveryHandler",
    "FoundFile",
    "HttpCollectionDiscovery",
    "HttpCollectionDiscoveryHandler",
    "InterfaceDiscovery",
    "InterfaceDiscoveryHandler",
    "UnmanagedInterface",
    "file_id",
    "ip_links",
]
