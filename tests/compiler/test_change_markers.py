"""Change markers: the database marks every written instance row; full compiles clear what they sync."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select
from sqlmodel import col

from lsm.compiler import incremental
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from lsm.store.tables import InstanceChangeRow, InstanceRow
from tests.compiler.test_incremental_full import bump, full

NETWORKS = str(Path(__file__).resolve().parent.parent.parent / "examples" / "networks")


def markers(db: Database, env_id: str) -> dict[str, int]:
    with db.read() as session:
        rows = session.execute(
            select(col(InstanceChangeRow.instance_id), col(InstanceChangeRow.version)).where(
                col(InstanceChangeRow.env_id) == env_id
            )
        )
        return {instance_id: version for instance_id, version in rows}


def test_every_insert_update_and_delete_of_an_instance_leaves_a_marker(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    env_id = engine.context(None).env_id
    [net] = engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": "n", "hosts": 1}]
    )
    assert markers(engine.db, env_id) == {net: 1}
    bump(engine, net, hosts=2)
    assert markers(engine.db, env_id) == {net: 2}
    with engine.db.write() as session:
        row = session.get(InstanceRow, net)
        session.delete(row)
    assert markers(engine.db, env_id) == {net: 3}  # a version the row never had


def test_full_compiles_clear_the_markers_they_leave_in_sync(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    env_id = engine.context(None).env_id
    ids = engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": f"n{i}", "hosts": 1} for i in range(5)]
    )
    full(engine)  # complete: every record rewritten covers every marker
    assert markers(engine.db, env_id) == {}
    bump(engine, ids[1], hosts=2)
    bump(engine, ids[2], hosts=2)
    report = full(engine)
    assert report["incremental"]["changed_instances"] == 2
    assert markers(engine.db, env_id) == {}


def test_a_change_committed_after_the_markers_were_read_keeps_its_marker(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    ctx = engine.context(None)
    [net] = engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": "n", "hosts": 1}]
    )
    full(engine)
    bump(engine, net, hosts=2)
    with engine.db.read() as session:
        changes = incremental.find_changes(session, ctx)
    assert changes.requested == [net] and changes.seen == {net: 2}
    bump(engine, net, hosts=3)  # commits between the compile's read and its clear
    with engine.db.write() as session:
        # even if the compile believed the instance in sync, the moved marker stays
        changes.live[net] = changes.recorded[net][0]
        incremental.clear_markers(session, ctx.env_id, changes, compiled={}, touched=())
    assert markers(engine.db, ctx.env_id) == {net: 3}
    report = full(engine)
    assert report["incremental"]["trees_refined"] == 1
    assert markers(engine.db, ctx.env_id) == {}


def test_a_marked_instance_that_exports_nothing_is_looked_at_once(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    env_id = engine.context(None).env_id
    engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": "n", "hosts": 1}]
    )
    full(engine)
    engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "start", [{"name": "waiting", "hosts": 1}]
    )
    report = full(engine)
    assert report["incremental"] == {
        "changed_instances": 0,
        "trees_refined": 0,
        "sets_deleted": 0,
        "sets_kept": 1,
    }
    assert markers(engine.db, env_id) == {}
