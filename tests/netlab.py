"""Helpers for tests that build real network namespaces (the ``linux::`` handlers, the *_linux examples).

Why a module of its own: the handler tests use it, and so do the end-to-end deploy tests of
``examples/*_linux`` (``tests/examples/test_linux_lab_e2e.py``: order a tunnel -> ping answers;
delete -> link gone), in this shape::

    def test_a_tunnel_pings(netns_prefix, ...):      # from tests.netlab import netns_prefix
        ... order routers r1/r2 named f"{netns_prefix}r1" ...
        assert ping(f"{netns_prefix}r1", "10.9.0.2")

Every namespace a test makes starts with the prefix the ``netns_prefix`` fixture yields
(``lsmt-<6 hex>-``, unique per test), and the fixture deletes every namespace with that prefix
afterwards, whether the test passed or not. Where the kernel or the user refuses ``ip netns add``
(not root, no namespace support, no ``ip``) the fixture skips the test and says why.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

PREFIX = "lsmt-"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    ip = shutil.which("ip") or "/usr/sbin/ip"
    return subprocess.run([ip, *args], capture_output=True, text=True, timeout=30, check=check)


#: ``ip <args>`` (check=True raises on failure), for tests that build links of their own
ip = _ip


@functools.cache
def netns_refusal() -> str | None:
    """Why namespaces can not be made here, or ``None`` when ``ip netns add`` works."""
    if shutil.which("ip") is None and not shutil.which("ip", path="/usr/sbin:/sbin"):
        return "the `ip` command (iproute2) is not installed"
    probe = f"{PREFIX}probe-{uuid.uuid4().hex[:6]}"
    done = _ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"`ip netns add` is refused here (needs root and kernel support): {done.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def namespaces() -> set[str]:
    done = _ip("-j", "netns", "list", check=False)
    return {entry["name"] for entry in json.loads(done.stdout or "[]")}


def remove_namespaces(prefix: str) -> None:
    for name in namespaces():
        if name.startswith(prefix):
            _ip("netns", "del", name, check=False)


def links(namespace: str) -> set[str]:
    """Names of the links in ``namespace`` (empty when it does not exist)."""
    done = _ip("-n", namespace, "-j", "link", "show", check=False)
    if done.returncode != 0:
        return set()
    return {entry["ifname"] for entry in json.loads(done.stdout or "[]")}


def ping(namespace: str, address: str, tries: int = 5) -> bool:
    """Whether ``ip netns exec <namespace> ping -c1 <address>`` answers (a bounded number of tries)."""
    if shutil.which("ping") is None:
        pytest.skip("the `ping` command (iputils-ping) is not installed")
    ip = shutil.which("ip") or "/usr/sbin/ip"
    for _ in range(tries):
        done = subprocess.run(
            [ip, "netns", "exec", namespace, "ping", "-c1", "-W1", address],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode == 0:
            return True
        time.sleep(0.2)  # a link that just came up may drop the first packet: try again
    return False


@pytest.fixture
def netns_prefix() -> Iterator[str]:
    """A namespace-name prefix unique to this test; every namespace with it is removed afterwards."""
    reason = netns_refusal()
    if reason is not None:
        pytest.skip(reason)
    prefix = f"{PREFIX}{uuid.uuid4().hex[:6]}-"
    try:
        yield prefix
    finally:
        remove_namespaces(prefix)
