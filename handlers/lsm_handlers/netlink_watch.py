"""Watches of the Linux lab: netlink link and address events of a namespace (pyroute2).

Why netlink and not polling ``ip``: the kernel announces every change of a link (created,
deleted, its MTU, up or down, moved) and of an address on the rtnetlink groups; one socket bound
to them in a namespace hears all of it at no cost while nothing changes. One monitor (socket
and thread) per namespace, shared by every watched link in it (``Netlink``, one per process);
the thread sleeps in ``poll`` on the socket and on a pipe that wakes it to stop.

Events name the link (``IFLA_IFNAME``) or its index (an address event); the monitor keeps the
index -> name map of its namespace from a dump and from link events, and calls ``changed`` of
the watches of that name. A namespace that is missing is never created here (pyroute2's
``IPRoute(netns=...)`` would create it): the watch fails and the engine retries it. A namespace
deleted (and maybe created again) under a running watch is seen through its file in
``/run/netns`` (the agent's file watcher): drift, and the watch is restarted, so that it listens
in the new namespace.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.rtnl import RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR, RTMGRP_LINK

log = logging.getLogger(__name__)

#: where iproute2 keeps a named namespace (``ip netns add``)
NETNS_DIR = Path("/run/netns")


class _Monitor:
    """One namespace's netlink socket and its reading thread."""

    def __init__(self, namespace: str) -> None:
        if not (NETNS_DIR / namespace).exists():
            raise OSError(f"network namespace {namespace!r} does not exist (nothing to watch yet)")
        self.namespace = namespace
        self.callbacks: dict[str, list[Callable[[], None]]] = {}
        self.lock = threading.Lock()
        self.names: dict[int, str] = {}
        self.wake_r, self.wake_w = os.pipe()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        # pyroute2's socket belongs to the thread that made it (its event loop): the reading
        # thread opens, binds, dumps and reads it, and nothing else touches it
        self.thread = threading.Thread(target=self._run, name=f"lsm-netlink-{namespace}", daemon=True)
        self.thread.start()
        self._ready.wait()
        if self._error is not None:
            os.close(self.wake_r)
            os.close(self.wake_w)
            raise OSError(f"netlink of namespace {namespace!r}: {self._error}") from self._error

    def _run(self) -> None:
        try:
            ipr = IPRoute(netns=self.namespace)
        except Exception as exc:
            self._error = exc
            self._ready.set()
            return
        try:
            ipr.bind(groups=RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR)
            self.names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
        except Exception as exc:
            ipr.close()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self._read(ipr)
        finally:
            ipr.close()

    def _read(self, ipr: Any) -> None:
        poller = select.poll()
        poller.register(ipr.fileno(), select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if self.wake_r in ready:
                return
            try:
                messages = ipr.get()
            except Exception as exc:  # the socket broke: every watch of it is told
                log.warning("netlink of namespace %s stopped: %s", self.namespace, exc)
                self._notify(None)
                return
            for message in messages:
                self._notify(self._name_of(message))

    def _name_of(self, message: Any) -> str | None:
        index = message.get("index")
        name = message.get_attr("IFLA_IFNAME")
        if name is not None and index is not None:
            if message["event"] == "RTM_DELLINK":
                self.names.pop(index, None)
            else:
                self.names[index] = name
            return str(name)
        return self.names.get(index) if index is not None else None

    def _notify(self, name: str | None) -> None:
        with self.lock:
            if name is None:
                targets = [c for cs in self.callbacks.values() for c in cs]
            else:
                targets = list(self.callbacks.get(name, ()))
        for callback in targets:
            try:
                callback()
            except Exception:  # one watch's bug must not stop the others
                log.exception("a netlink watch callback failed")

    def close(self) -> None:
        os.write(self.wake_w, b"x")
        self.thread.join(timeout=5)
        os.close(self.wake_r)
        os.close(self.wake_w)


class Netlink:
    """The netlink monitors of this process, one per namespace, shared by the watches in it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._monitors: dict[str, _Monitor] = {}

    def watch(self, namespace: str, links: Iterable[str], changed: Callable[[], None]) -> Callable[[], None]:
        """Call ``changed`` on every event of one of ``links`` in ``namespace``; returns the stop
        function. Raises ``OSError`` when the namespace does not exist."""
        names = sorted(set(links))
        with self._lock:
            monitor = self._monitors.get(namespace)
            if monitor is None:
                monitor = _Monitor(namespace)
                self._monitors[namespace] = monitor
            with monitor.lock:
                for name in names:
                    monitor.callbacks.setdefault(name, []).append(changed)

        def stop() -> None:
            closing = None
            with self._lock:
                with monitor.lock:
                    for name in names:
                        listed = monitor.callbacks.get(name, [])
                        if changed in listed:
                            listed.remove(changed)
                        if not listed:
                            monitor.callbacks.pop(name, None)
                    if not monitor.callbacks and self._monitors.get(namespace) is monitor:
                        closing = self._monitors.pop(namespace)
            if closing is not None:
                closing.close()

        return stop


#: the process's monitors (a handler instance per environment shares them)
NETLINK = Netlink()


def watch_links(ctx: Any, watched: Iterable[tuple[str, Iterable[str]]]) -> Callable[[], None]:
    """Watch ``(namespace, link names)`` pairs for a handler's ``watch``: netlink events of the
    links, and the namespace's file (deleted or made again: drift, and the watch restarts).
    Returns one stop function for all of it; a failure to start stops what had started."""
    stops: list[Callable[[], None]] = []

    def stop_all() -> None:
        for stop in reversed(stops):
            stop()

    def namespace_changed() -> None:
        ctx.drifted()
        ctx.failed(OSError("the network namespace was deleted or made again"))

    try:
        for namespace, links in watched:
            stops.append(ctx.files.watch(NETNS_DIR / namespace, namespace_changed, ctx.failed))
            stops.append(NETLINK.watch(namespace, links, ctx.drifted))
    except BaseException:
        stop_all()
        raise
    return stop_all


# -- the ``watch`` of each Linux-lab handler (``lsm_handlers.linux`` binds them as methods) --------
def watch_namespace(handler: Any, ctx: Any, resource: Any) -> Callable[[], None]:
    """``linux::Namespace``: its file in ``/run/netns`` (deleted: drift)."""
    return ctx.files.watch(NETNS_DIR / resource.name, ctx.drifted, ctx.failed)  # type: ignore[no-any-return]  # ctx is the engine's WatchContext


def watch_interface(handler: Any, ctx: Any, resource: Any) -> Callable[[], None]:
    """``linux::Interface``: its link (and a veth's peer end) in its namespace."""
    links = [resource.name] + ([resource.peer] if getattr(resource, "peer", None) else [])
    return watch_links(ctx, [(resource.namespace, links)])


def watch_veth(handler: Any, ctx: Any, resource: Any) -> Callable[[], None]:
    """``linux::Veth``: each end in its namespace."""
    return watch_links(
        ctx, [(resource.namespace, [resource.name]), (resource.peer_namespace, [resource.peer])]
    )


__all__ = ["NETLINK", "Netlink", "watch_interface", "watch_links", "watch_namespace", "watch_veth"]
