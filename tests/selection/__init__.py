"""Shared test model and inventory helper for the selection tests.

The model: a ``Router`` owns ``Port`` and ``Loopback`` (two child bindings); a ``Port`` owns
``SubInterface`` (three levels); a ``Tunnel`` refers to two ports and is owned by nobody; a
``Site`` stands alone. Rows are written directly (``Inventory.add``): the orchestration that
writes them for real is not what these tests are about.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from lsm.catalog import Binding, Catalog, Ref, ServiceEntity
from lsm.selection import InventoryView
from lsm.store.database import Database
from lsm.store.tables import EnvironmentRow, InstanceRefRow, InstanceRow, new_id


class Router(ServiceEntity):
    name: str
    site: str = "ams"


class Port(ServiceEntity):
    router: Ref[Router]
    vlan: int = 1


class Loopback(ServiceEntity):
    router: Ref[Router]


class SubInterface(ServiceEntity):
    port: Ref[Port]


class Tunnel(ServiceEntity):
    a: Ref[Port]
    b: Ref[Port]


class Site(ServiceEntity):
    name: str


ROUTER = Binding(Router, name="router")
PORT = Binding(Port, name="port", owner=ROUTER, relation_to_owner="router")
LOOPBACK = Binding(Loopback, name="loopback", owner=ROUTER, relation_to_owner="router")
SUBINTERFACE = Binding(SubInterface, name="sub_interface", owner=PORT, relation_to_owner="port")
TUNNEL = Binding(Tunnel, name="tunnel")
SITE = Binding(Site, name="site")
CATALOG = Catalog([ROUTER, PORT, LOOPBACK, SUBINTERFACE, TUNNEL, SITE])

#: binding name -> attribute naming the owner (what the orchestration caches in owner_id)
OWNER_ATTRIBUTE = {"port": "router", "loopback": "router", "sub_interface": "port"}


class Inventory:
    """Writes instance and relation rows for one environment, in batches."""

    def __init__(self, db: Database, name: str = "test") -> None:
        self.db = db
        self.env_id = new_id()
        with db.write() as session:
            session.add(EnvironmentRow(id=self.env_id, name=name))
        self._instances: list[dict[str, Any]] = []
        self._refs: list[dict[str, Any]] = []

    def add(
        self,
        entity: str,
        *,
        owner: str | None = None,
        state: str = "up",
        deleted: bool = False,
        refs: dict[str, str] | None = None,
        instance_id: str | None = None,
        **attributes: Any,
    ) -> str:
        """Queue one instance (and its relation rows); ``flush()`` writes the queue."""
        iid = instance_id or new_id()
        attrs = dict(attributes)
        relations = dict(refs or {})
        if owner is not None:
            relations[OWNER_ATTRIBUTE[entity]] = owner
        attrs.update(relations)
        self._instances.append(
            {
                "id": iid,
                "env_id": self.env_id,
                "entity": entity,
                "state": state,
                "active_attributes": attrs,
                "candidate_attributes": None,
                "rollback_attributes": None,
                "config": {},
                "owner_id": owner,
                "deleted": deleted,
            }
        )
        for attribute, target in relations.items():
            self._refs.append(
                {"env_id": self.env_id, "source_id": iid, "attribute": attribute, "target_id": target}
            )
        return iid

    def flush(self) -> None:
        with self.db.write() as session:
            if self._instances:
                session.execute(
                    sa.insert(InstanceRow), [InstanceRow(**row).model_dump() for row in self._instances]
                )
            if self._refs:
                session.execute(sa.insert(InstanceRefRow), self._refs)
        self._instances, self._refs = [], []

    def router_tree(self, name: str = "r", *, ports: int = 2, deleted: bool = False) -> dict[str, Any]:
        """A router with ``ports`` ports (each with one sub-interface) and one loopback."""
        router = self.add("router", name=name, deleted=deleted)
        port_ids = [self.add("port", owner=router, vlan=10 + i) for i in range(ports)]
        subs = [self.add("sub_interface", owner=p) for p in port_ids]
        loopback = self.add("loopback", owner=router)
        return {"router": router, "ports": port_ids, "subs": subs, "loopback": loopback}

    def view(self, **kwargs: Any) -> InventoryView:
        """A view over the ``Database`` (each query its own read transaction)."""
        return InventoryView(self.db, self.env_id, CATALOG, **kwargs)


def tree_selection(tree: dict[str, Any]) -> dict[str, list[str]]:
    """The full ``run_selector`` answer for exactly one router tree."""
    return {
        "router": [tree["router"]],
        "port": sorted(tree["ports"]),
        "loopback": [tree["loopback"]],
        "sub_interface": sorted(tree["subs"]),
        "tunnel": [],
        "site": [],
    }


@contextmanager
def count_statements(db: Database) -> Iterator[list[str]]:
    """Every statement sent to the database inside the block (``before_cursor_execute``)."""
    statements: list[str] = []

    def _record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engines = {db.read_engine, db.write_engine}
    for engine in engines:
        event.listen(engine, "before_cursor_execute", _record)
    try:
        yield statements
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", _record)
