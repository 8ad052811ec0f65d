"""The shared-base-class pattern: a discovery handler and a CRUD handler share their connection code.

After the ``Credentials`` / ``InterfaceBase`` example of Inmanta's discovery documentation: the
resources that need to log in to a device inherit their credential fields from one abstract
resource (``Credentials``), and both handlers inherit ``login`` from one ordinary base class
(``InterfaceBase``). Nothing in the engine knows of either: they are plain Python classes.

The "device" is a directory holding ``credentials.json`` (``{"username", "password"}``) and
``interfaces.json`` (``{name: {"ip_address": ...}}``), so that the example runs anywhere; a real
one would open an SSH or HTTP session in ``login`` (and close it in ``post``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import lsm
from lsm.deploy.handler import Change, HandlerError
from lsm.deploy.jail import Jail
from lsm.deploy.patterns import user_pattern


class Credentials(lsm.Resource):
    """Fields every resource that logs in to a device has (abstract: no resource type)."""

    device: str
    username: str
    password: str


class InterfaceDiscovery(Credentials, type="example::InterfaceDiscovery", id_attribute="name"):
    """Find the interfaces of a device whose names match ``name_filter`` (all when empty)."""

    name: str
    name_filter: str | None = None


class Interface(Credentials, type="example::Interface", id_attribute="name"):
    """One interface of a device, with its IP address."""

    name: str
    ip_address: str | None = None


class UnmanagedInterface(BaseModel):
    """What the discovery finds of one interface: the seed's host, interface name, IP address."""

    host: str
    interface_name: str
    ip_address: str | None = None


class DeviceSession:
    """A logged-in connection to a device (here: its directory, reached through the agent's jail)."""

    def __init__(self, jail: Jail, root: Path, who: str) -> None:
        self.jail = jail
        self.root = root
        self.who = who

    def interfaces(self) -> dict[str, dict[str, Any]]:
        found = self.jail.read(self.root / "interfaces.json", who=self.who)
        return dict(json.loads(found[0])) if found is not None else {}

    def save(self, interfaces: Mapping[str, Any]) -> None:
        data = json.dumps(dict(interfaces), sort_keys=True, indent=1).encode()
        self.jail.write(self.root / "interfaces.json", data, 0o644, who=self.who)


class InterfaceBase:
    """The connection code both handlers share: log in with a resource's credentials.

    Like every handler that touches files, it does so through ``ctx.jail`` (docs/handlers.md
    §3): a device directory outside the agent's roots, or a link leading out of them, is refused.
    """

    def login(self, ctx: lsm.HandlerContext, resource: Credentials) -> DeviceSession:
        root = Path(resource.device)
        found = ctx.jail.read(root / "credentials.json", who=resource.id)
        try:
            if found is None:
                raise ValueError("credentials.json is missing")
            known = json.loads(found[0])
        except ValueError as exc:
            raise HandlerError(f"{resource.id}: can not reach device {root}: {exc}") from None
        if (known.get("username"), known.get("password")) != (resource.username, resource.password):
            raise HandlerError(f"{resource.id}: login to {root} as {resource.username!r} refused")
        ctx.debug("logged in", device=str(root), username=resource.username)
        return DeviceSession(ctx.jail, root, resource.id)


class InterfaceDiscoveryHandler(InterfaceBase, lsm.DiscoveryHandler[InterfaceDiscovery, UnmanagedInterface]):
    """Reports every interface of the device as ``example::Interface[agent,name=...]``."""

    def discover_resources(
        self, ctx: lsm.HandlerContext, resource: InterfaceDiscovery
    ) -> dict[str, UnmanagedInterface]:
        session = self.login(ctx, resource)
        wanted = user_pattern(resource.name_filter, "name_filter") if resource.name_filter else None
        return {
            Interface.resource_id(resource.agent, name): UnmanagedInterface(
                host=resource.agent, interface_name=name, ip_address=values.get("ip_address")
            )
            for name, values in sorted(session.interfaces().items())
            if wanted is None or wanted.fullmatch(name)
        }


class InterfaceHandler(InterfaceBase, lsm.CRUDHandler[Interface]):
    """Reads, creates, updates and removes one interface of the device."""

    def read(self, ctx: lsm.HandlerContext, resource: Interface) -> Mapping[str, Any] | None:
        found = self.login(ctx, resource).interfaces().get(resource.name)
        if found is None:
            return None
        # the credentials are how we reach the device, not a property of the interface
        return {**resource.attributes(), "ip_address": found.get("ip_address")}

    def _put(self, ctx: lsm.HandlerContext, resource: Interface) -> None:
        session = self.login(ctx, resource)
        interfaces = session.interfaces()
        interfaces[resource.name] = {"ip_address": resource.ip_address}
        session.save(interfaces)

    def create(self, ctx: lsm.HandlerContext, resource: Interface) -> None:
        self._put(ctx, resource)

    def update(self, ctx: lsm.HandlerContext, resource: Interface, changes: Mapping[str, Change]) -> None:
        self._put(ctx, resource)

    def delete(self, ctx: lsm.HandlerContext, resource: Interface) -> None:
        session = self.login(ctx, resource)
        interfaces = session.interfaces()
        interfaces.pop(resource.name, None)
        session.save(interfaces)


HANDLERS = {
    InterfaceDiscovery.resource_type: InterfaceDiscoveryHandler,
    Interface.resource_type: InterfaceHandler,
}
