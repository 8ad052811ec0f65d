"""A Linux network lab: routers are network namespaces, ports are interfaces, tunnels are veth pairs.

Why: the examples' routers, ports and tunnels can be deployed for real on one machine, and the
result checked with the system's own tools (``ip netns exec r1 ping <r2's tunnel address>``).

* ``linux::Namespace``: a network namespace (``ip netns add``) with its loopback up;
* ``linux::Interface``: a link in a namespace with ``mtu``, an ``address`` (CIDR) and ``up``,
  created as ``kind`` says: ``dummy``, ``bridge``, or ``veth`` (its ``peer`` end stays in the
  same namespace, up, with no address). Kernels without the dummy driver (containers) refuse
  ``dummy``; ``veth`` works wherever namespaces do;
* ``linux::Veth``: a veth pair between two namespaces, ``name`` in ``namespace`` and ``peer`` in
  ``peer_namespace``, with an address on each end, both ends up, one ``mtu``.

Everything goes through the ``ip`` command of iproute2 with argument lists (never a shell).
Names are checked where the resource is built, so a bad one fails the compile that made it, not
a deploy: link names are 1..15 characters (the kernel's ``IFNAMSIZ``), namespace names 1..64;
both of letters, digits, ``_``, ``.``, ``-``, and never starting with ``-`` or ``.`` (an ``ip``
argument that starts with ``-`` would be read as an option).

``read`` reports what exists (kind, mtu, addresses, up; ``None`` when the namespace or the link
is missing), so purging what is already gone is a no-op. A change of ``kind`` or ``peer`` is
applied by deleting and re-creating the link; the others in place. Link names must be unique
per agent (the resource id is the link name): give each namespace its own agent, as the
examples do (one agent per router).

Watched (``lsm_handlers.netlink_watch``): netlink link and address events of the namespace
(pyroute2), and the namespace's file in ``/run/netns``.

Needs root (``CAP_NET_ADMIN`` and ``CAP_SYS_ADMIN``); without it every call fails with the
command and the kernel's answer.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import field_validator, model_validator

import lsm
from lsm.deploy.handler import Change, HandlerError
from lsm_handlers import netlink_watch

#: IFNAMSIZ is 16 bytes with the terminating NUL
LINK_NAME_MAX = 15
NAMESPACE_NAME_MAX = 64
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
#: seconds one ``ip`` command may take
IP_TIMEOUT = 30.0


def check_link_name(value: str, what: str = "link name") -> str:
    if not (1 <= len(value) <= LINK_NAME_MAX) or not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be 1..{LINK_NAME_MAX} characters (Linux IFNAMSIZ) of letters, "
            "digits, '_', '.', '-', not starting with '-' or '.'"
        )
    return value


def check_namespace_name(value: str, what: str = "namespace name") -> str:
    if not (1 <= len(value) <= NAMESPACE_NAME_MAX) or not _NAME.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} must be 1..{NAMESPACE_NAME_MAX} characters of letters, digits, "
            "'_', '.', '-', not starting with '-' or '.'"
        )
    return value


def check_mtu(value: int) -> int:
    """An MTU Linux accepts on an interface (68..65535)."""
    if not 68 <= value <= 65535:
        raise ValueError(f"mtu {value} is outside 68..65535")
    return value


def check_cidr(value: str | None, what: str = "address") -> str | None:
    """``"10.0.0.1/24"`` in canonical form (as ``ip`` prints it); ``None`` stays ``None``."""
    if value is None:
        return None
    if "/" not in value:
        raise ValueError(f"{what} {value!r} needs a prefix length (CIDR, e.g. 10.0.0.1/24)")
    try:
        return str(ipaddress.ip_interface(value))
    except ValueError:
        raise ValueError(f"{what} {value!r} is not an IP address with a prefix length") from None


# -- resource types ------------------------------------------------------------------------------------
class Namespace(lsm.Resource, type="linux::Namespace", id_attribute="name"):
    """A network namespace (a router of the lab)."""

    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_namespace_name(value)


class Interface(lsm.Resource, type="linux::Interface", id_attribute="name"):
    """A link ``name`` in ``namespace`` (a port); a ``veth`` one names its ``peer`` end."""

    name: str
    namespace: str
    kind: Literal["dummy", "bridge", "veth"] = "veth"
    peer: str | None = None
    mtu: int = 1500
    address: str | None = None
    up: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_link_name(value, "interface name")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return check_namespace_name(value)

    @field_validator("address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        return check_cidr(value)

    @field_validator("mtu")
    @classmethod
    def _mtu(cls, value: int) -> int:
        return check_mtu(value)

    @model_validator(mode="after")
    def _peer(self) -> Interface:
        if self.kind == "veth":
            if self.peer is None:
                raise ValueError(f"interface {self.name}: a veth interface needs peer=<its other end>")
            check_link_name(self.peer, "peer name")
            if self.peer == self.name:
                raise ValueError(f"interface {self.name}: peer must have another name")
        elif self.peer is not None:
            raise ValueError(f"interface {self.name}: only a veth interface has a peer")
        return self

    def autoedges(self) -> tuple[str | tuple[str, ...], ...]:
        """An interface lives in its namespace: it requires the ``linux::Namespace`` of that name
        on its agent when the desired state holds one (docs/semantics.md §5, ``autoedge``)."""
        return (Namespace.resource_id(self.agent, self.namespace),)


class Veth(lsm.Resource, type="linux::Veth", id_attribute="name"):
    """A veth pair: ``name`` in ``namespace`` and ``peer`` in ``peer_namespace`` (a tunnel)."""

    name: str
    namespace: str
    peer: str
    peer_namespace: str
    mtu: int = 1500
    address: str | None = None
    peer_address: str | None = None
    up: bool = True

    @field_validator("name", "peer")
    @classmethod
    def _links(cls, value: str) -> str:
        return check_link_name(value)

    @field_validator("namespace", "peer_namespace")
    @classmethod
    def _namespaces(cls, value: str) -> str:
        return check_namespace_name(value)

    @field_validator("address", "peer_address")
    @classmethod
    def _addresses(cls, value: str | None) -> str | None:
        return check_cidr(value)

    @field_validator("mtu")
    @classmethod
    def _mtu(cls, value: int) -> int:
        return check_mtu(value)

    @model_validator(mode="after")
    def _two_namespaces(self) -> Veth:
        if self.namespace == self.peer_namespace:
            raise ValueError(f"veth {self.name}: both ends are in namespace {self.namespace}")
        return self

    def autoedges(self) -> tuple[str | tuple[str, ...], ...]:
        """Both ends' namespaces, when the desired state holds them on this agent."""
        return (
            Namespace.resource_id(self.agent, self.namespace),
            Namespace.resource_id(self.agent, self.peer_namespace),
        )


# -- the ip command ------------------------------------------------------------------------------------
def ip_command() -> str:
    found = shutil.which("ip") or shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if found is None:
        raise HandlerError("the `ip` command (iproute2) is not installed")
    return found


def _run(resource_id: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=IP_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise HandlerError(f"{resource_id}: `ip {' '.join(argv[1:])}` took more than {IP_TIMEOUT}s") from None


def _failed(resource_id: str, argv: list[str], done: subprocess.CompletedProcess[str]) -> HandlerError:
    return HandlerError(
        f"{resource_id}: `ip {' '.join(argv[1:])}` failed (exit {done.returncode}): "
        f"{done.stderr.strip() or done.stdout.strip()}"
    )


def ip(resource_id: str, *args: str, namespace: str | None = None) -> str:
    """Run ``ip [-n namespace] args``; raise ``HandlerError`` naming the resource and the command."""
    argv = [ip_command(), *(["-n", namespace] if namespace else []), *args]
    done = _run(resource_id, argv)
    if done.returncode != 0:
        raise _failed(resource_id, argv, done)
    return done.stdout


def namespaces(resource_id: str) -> set[str]:
    """The names of the network namespaces ``ip netns`` knows (errors name ``resource_id``)."""
    out = ip(resource_id, "-j", "netns", "list")
    return {entry["name"] for entry in json.loads(out or "[]")}


def namespace_exists(resource_id: str, name: str) -> bool:
    return name in namespaces(resource_id)


def link(resource_id: str, namespace: str, name: str) -> dict[str, Any] | None:
    """``ip -d -j addr show`` of one link, or ``None`` when it (or its namespace) is missing."""
    if not namespace_exists(resource_id, namespace):
        return None
    argv = [ip_command(), "-n", namespace, "-d", "-j", "addr", "show", "dev", name]
    done = _run(resource_id, argv)
    if done.returncode != 0:
        if "does not exist" in done.stderr or "Cannot open network namespace" in done.stderr:
            return None
        raise _failed(resource_id, argv, done)
    found = json.loads(done.stdout or "[]")
    return dict(found[0]) if found else None


def link_state(info: Mapping[str, Any]) -> dict[str, Any]:
    """What ``read`` reports of a link: kind, mtu, global addresses, admin state."""
    addresses = sorted(
        f"{a['local']}/{a['prefixlen']}"
        for a in info.get("addr_info", ())
        if a.get("scope") == "global" and a.get("family") in ("inet", "inet6")
    )
    return {
        "kind": info.get("linkinfo", {}).get("info_kind"),
        "mtu": info.get("mtu"),
        "addresses": addresses,
        "address": addresses[0] if len(addresses) == 1 else (addresses or None),
        "up": "UP" in info.get("flags", ()),
    }


def set_address(resource_id: str, namespace: str, name: str, address: str | None) -> None:
    ip(resource_id, "addr", "flush", "dev", name, "scope", "global", namespace=namespace)
    if address is not None:
        ip(resource_id, "addr", "add", address, "dev", name, namespace=namespace)


def set_mtu(resource_id: str, namespace: str, names: Sequence[str], mtu: int) -> None:
    for name in names:
        ip(resource_id, "link", "set", "dev", name, "mtu", str(mtu), namespace=namespace)


def set_up(resource_id: str, namespace: str, names: Sequence[str], up: bool) -> None:
    for name in names:
        ip(resource_id, "link", "set", "dev", name, "up" if up else "down", namespace=namespace)


def _require_namespace(resource_id: str, namespace: str) -> None:
    if not namespace_exists(resource_id, namespace):
        raise HandlerError(f"{resource_id}: network namespace {namespace!r} does not exist")


# -- handlers ------------------------------------------------------------------------------------------
class NamespaceHandler(lsm.CRUDHandler[Namespace]):
    watch = netlink_watch.watch_namespace  # Watch: lsm_handlers.netlink_watch

    def read(self, ctx: lsm.HandlerContext, resource: Namespace) -> Mapping[str, Any] | None:
        return {"name": resource.name} if namespace_exists(resource.id, resource.name) else None

    def create(self, ctx: lsm.HandlerContext, resource: Namespace) -> None:
        ip(resource.id, "netns", "add", resource.name)
        ip(resource.id, "link", "set", "dev", "lo", "up", namespace=resource.name)
        ctx.info("namespace added", namespace=resource.name)

    def update(self, ctx: lsm.HandlerContext, resource: Namespace, changes: Mapping[str, Change]) -> None:
        """Nothing to update: a namespace is only its name."""

    def delete(self, ctx: lsm.HandlerContext, resource: Namespace) -> None:
        ip(resource.id, "netns", "del", resource.name)
        ctx.info("namespace deleted", namespace=resource.name)


class InterfaceHandler(lsm.CRUDHandler[Interface]):
    watch = netlink_watch.watch_interface

    def read(self, ctx: lsm.HandlerContext, resource: Interface) -> Mapping[str, Any] | None:
        info = link(resource.id, resource.namespace, resource.name)
        if info is None:
            return None
        state = link_state(info)
        return {"name": resource.name, "namespace": resource.namespace, "peer": info.get("link"), **state}

    def create(self, ctx: lsm.HandlerContext, resource: Interface) -> None:
        rid, ns = resource.id, resource.namespace
        _require_namespace(rid, ns)
        mtu = str(resource.mtu)
        add = ["link", "add", resource.name, "mtu", mtu, "type", resource.kind]
        if resource.kind == "veth":
            assert resource.peer is not None  # checked by the resource type
            add += ["peer", "name", resource.peer, "mtu", mtu]
        ip(rid, *add, namespace=ns)
        set_address(rid, ns, resource.name, resource.address)
        set_up(rid, ns, self._ends(resource), resource.up)
        ctx.info("interface added", namespace=ns, name=resource.name, kind=resource.kind)

    @staticmethod
    def _ends(resource: Interface) -> list[str]:
        return [resource.name, resource.peer] if resource.peer else [resource.name]

    def update(self, ctx: lsm.HandlerContext, resource: Interface, changes: Mapping[str, Change]) -> None:
        rid, ns = resource.id, resource.namespace
        if "kind" in changes or "peer" in changes:
            ip(rid, "link", "del", "dev", resource.name, namespace=ns)
            self.create(ctx, resource)
            return
        if "mtu" in changes:
            set_mtu(rid, ns, self._ends(resource), resource.mtu)
        if "address" in changes:
            set_address(rid, ns, resource.name, resource.address)
        if "up" in changes:
            set_up(rid, ns, self._ends(resource), resource.up)
        ctx.info("interface updated", namespace=ns, name=resource.name, changed=sorted(changes))

    def delete(self, ctx: lsm.HandlerContext, resource: Interface) -> None:
        ip(resource.id, "link", "del", "dev", resource.name, namespace=resource.namespace)
        ctx.info("interface deleted", namespace=resource.namespace, name=resource.name)


class VethHandler(lsm.CRUDHandler[Veth]):
    watch = netlink_watch.watch_veth

    def read(self, ctx: lsm.HandlerContext, resource: Veth) -> Mapping[str, Any] | None:
        near = link(resource.id, resource.namespace, resource.name)
        if near is None:
            return None
        far = link(resource.id, resource.peer_namespace, resource.peer)
        paired = (
            far is not None
            and near.get("linkinfo", {}).get("info_kind") == "veth"
            and far.get("link_index") == near.get("ifindex")
            and near.get("link_index") == far.get("ifindex")
        )
        state = link_state(near)
        current: dict[str, Any] = {
            "name": resource.name,
            "namespace": resource.namespace,
            "kind": state["kind"],
            "address": state["address"],
            "addresses": state["addresses"],
            "peer": resource.peer if paired else None,
            "peer_namespace": resource.peer_namespace if paired else None,
            "mtu": state["mtu"],
            "up": state["up"],
        }
        if paired and far is not None:
            far_state = link_state(far)
            current["peer_address"] = far_state["address"]
            current["peer_addresses"] = far_state["addresses"]
            if far_state["mtu"] != state["mtu"]:
                current["mtu"] = [state["mtu"], far_state["mtu"]]
            current["up"] = state["up"] and far_state["up"]
        return current

    def create(self, ctx: lsm.HandlerContext, resource: Veth) -> None:
        rid = resource.id
        _require_namespace(rid, resource.namespace)
        _require_namespace(rid, resource.peer_namespace)
        mtu = str(resource.mtu)
        near = ["link", "add", resource.name, "netns", resource.namespace, "mtu", mtu, "type", "veth"]
        far = ["peer", "name", resource.peer, "netns", resource.peer_namespace, "mtu", mtu]
        ip(rid, *near, *far)
        self._configure(resource)
        ctx.info(
            "veth pair added",
            ends=[f"{resource.namespace}/{resource.name}", f"{resource.peer_namespace}/{resource.peer}"],
        )

    def _configure(self, resource: Veth) -> None:
        rid = resource.id
        set_address(rid, resource.namespace, resource.name, resource.address)
        set_address(rid, resource.peer_namespace, resource.peer, resource.peer_address)
        set_up(rid, resource.namespace, [resource.name], resource.up)
        set_up(rid, resource.peer_namespace, [resource.peer], resource.up)

    def update(self, ctx: lsm.HandlerContext, resource: Veth, changes: Mapping[str, Change]) -> None:
        rid = resource.id
        if "peer" in changes or "peer_namespace" in changes or "kind" in changes:
            # both ends' namespaces first: never delete a link that can not be made again
            _require_namespace(rid, resource.namespace)
            _require_namespace(rid, resource.peer_namespace)
            ip(rid, "link", "del", "dev", resource.name, namespace=resource.namespace)
            self.create(ctx, resource)
            return
        if "mtu" in changes:
            set_mtu(rid, resource.namespace, [resource.name], resource.mtu)
            set_mtu(rid, resource.peer_namespace, [resource.peer], resource.mtu)
        if "address" in changes:
            set_address(rid, resource.namespace, resource.name, resource.address)
        if "peer_address" in changes:
            set_address(rid, resource.peer_namespace, resource.peer, resource.peer_address)
        if "up" in changes:
            set_up(rid, resource.namespace, [resource.name], resource.up)
            set_up(rid, resource.peer_namespace, [resource.peer], resource.up)
        ctx.info("veth pair updated", name=resource.name, changed=sorted(changes))

    def delete(self, ctx: lsm.HandlerContext, resource: Veth) -> None:
        ip(resource.id, "link", "del", "dev", resource.name, namespace=resource.namespace)
        ctx.info("veth pair deleted", name=resource.name)
