"""Where a webhook may send: never to an internal address, unless the operator allows it.

Why: registering a webhook makes the server send HTTP requests to a URL of the caller's
choosing. Without a rule, an environment's admin could point it at the server's own
neighbourhood (its database on ``127.0.0.1:5432``, a cloud's metadata service on
``169.254.169.254`` that hands out credentials, hosts of a private network) and read the
answers in the delivery log. So a target's address is checked against the ranges below
(``RULES``, then anything that is not globally routable), twice:

* at registration (``check_registration``): an address literal, in any of the spellings the
  resolver accepts (``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``[::ffff:127.0.0.1]``), the
  names ``localhost`` and ``*.localhost``, and what a name resolves to right now; a refusal is
  a 422 ``webhook_target_refused`` naming the ``rule``;
* at every delivery (``pinned``), after resolving the name again: a name that resolved to a
  public address at registration may point inward later (DNS rebinding). Every address the
  name resolves to must pass, and the request then goes to the address that was checked (the
  URL's host replaced by it, ``Host`` and the TLS server name kept), so that no second lookup
  can swap it between the check and the connection.

IPv6 forms that carry an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible, NAT64
``64:ff9b::/96``, 6to4 and Teredo) are judged by the IPv4 address they carry.

``[webhooks] allow_internal = true`` turns all of this off, for a deployment whose receivers
live on its own network (and for tests that deliver to a receiver on loopback).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from lsm.errors import WebhookTargetRefused

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: resolves ``(host, port)`` to addresses (``socket.getaddrinfo`` by default; tests replace it)
Resolver = Callable[[str, int], list[str]]

#: (rule, ranges), most specific first: the first rule whose ranges hold an address names it
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # cloud metadata services (AWS/GCP/Azure/OpenStack, AWS over IPv6, Alibaba): credentials
    ("metadata", ("169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32")),
    ("loopback", ("127.0.0.0/8", "::1/128")),
    ("unspecified", ("0.0.0.0/8", "::/128")),
    ("link_local", ("169.254.0.0/16", "fe80::/10")),
    ("private", ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")),
    ("shared", ("100.64.0.0/10",)),  # carrier-grade NAT (RFC 6598)
    ("unique_local", ("fc00::/7", "fec0::/10")),  # and the deprecated site-local
    ("multicast", ("224.0.0.0/4", "ff00::/8")),
)
_NETWORKS = [(rule, ipaddress.ip_network(net)) for rule, nets in RULES for net in nets]
#: the rule of an address no range above holds but that is not globally routable either
#: (documentation, benchmarking, reserved ranges, broadcast)
NOT_GLOBAL = "reserved"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPATIBLE = ipaddress.ip_network("::/96")


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def rule_of(address: Address) -> str | None:
    """The rule that refuses ``address``, or ``None`` when a webhook may reach it."""
    inner = embedded_ipv4(address)
    if inner is not None:
        return rule_of(inner)
    for rule, network in _NETWORKS:
        if address.version == network.version and address in network:
            return rule
    return None if address.is_global else NOT_GLOBAL


def literal(host: str) -> Address | None:
    """``host`` as an address when it is one, in any spelling the system resolver accepts."""
    host = host.replace("%25", "%")  # an IPv6 zone as a URL spells it
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(str(found[0][4][0]).split("%")[0])


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (``socket.gaierror`` when it resolves to none)."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(entry[4][0]).split("%")[0] for entry in found))


def _refuse(url: str, host: str, address: object, rule: str) -> WebhookTargetRefused:
    shown = host if str(address) == host else f"{host} ({address})"
    return WebhookTargetRefused(
        f"webhook target {shown} is a {rule.replace('_', '-')} address: webhooks may not reach "
        "internal addresses unless the server allows it ([webhooks] allow_internal = true)",
        field="url",
        rule=rule,
        address=str(address),
        url=url,
    )


def _judge(url: str, host: str, addresses: list[str]) -> list[Address]:
    """``addresses`` parsed, each checked (``WebhookTargetRefused`` for the first refused)."""
    checked: list[Address] = []
    for text in addresses:
        address = ipaddress.ip_address(text)
        rule = rule_of(address)
        if rule is not None:
            raise _refuse(url, host, address, rule)
        checked.append(address)
    return checked


def _named_local(host: str) -> bool:
    """``localhost`` and its subdomains are loopback by definition (RFC 6761), whatever DNS says."""
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def check_registration(url: str, *, resolve: Resolver = system_resolver) -> None:
    """Refuse ``url`` (already a valid http(s) URL) when its host is internal (see the module
    docstring). A name that does not resolve now is accepted: the delivery checks it again."""
    host = httpx.URL(url).host
    if _named_local(host):
        raise _refuse(url, host, host, "loopback")
    address = literal(host)
    if address is not None:
        _judge(url, host, [str(address)])
        return
    try:
        found = resolve(host, 0)
    except (OSError, UnicodeError):
        return
    _judge(url, host, found)


@dataclass(frozen=True)
class Pinned:
    """A request to send: the URL (its host replaced by a checked address), the headers that
    keep the original name (``Host``) and the request extensions (``sni_hostname`` for TLS)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)


def pinned(url: str, *, allow_internal: bool, resolve: Resolver = system_resolver) -> Pinned:
    """Where to send a delivery to ``url`` (see the module docstring): ``WebhookTargetRefused``
    when an address of its host is internal, ``httpx.ConnectError`` when it resolves to none."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookTargetRefused(f"{url!r} is not an http:// or https:// URL", field="url", rule="scheme")
    if allow_internal:
        return Pinned(url)
    target = httpx.URL(url)
    host = target.host
    if _named_local(host):
        raise _refuse(url, host, host, "loopback")
    address = literal(host)
    if address is not None:
        addresses = _judge(url, host, [str(address)])
    else:
        try:
            found = resolve(host, target.port or (443 if target.scheme == "https" else 80))
        except (OSError, UnicodeError) as exc:
            raise httpx.ConnectError(f"can not resolve {host}: {exc}") from None
        addresses = _judge(url, host, found)
        if not addresses:
            raise httpx.ConnectError(f"{host} resolves to no address")
    chosen = target.copy_with(host=str(addresses[0]))
    extensions = {"sni_hostname": host} if target.scheme == "https" else {}
    return Pinned(str(chosen), {"Host": target.netloc.decode("ascii")}, extensions)
