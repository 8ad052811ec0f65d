"""Lifting the global noop (setting ``deploy_noop`` from true to false) deploys what it held back
at once: its ``noop_pending`` resources go back to ``pending`` in the transaction that changes the
setting, instead of waiting for ``lsm deploy`` or the repair run. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select

from lsm.runtime.wiring import ApiRuntime
from lsm.store.deploy.tables import lsm_resource_state
from tests.deploy.conftest import LOCAL, get, order


def statuses(engine: ApiRuntime) -> set[str]:
    with engine.db.read() as session:
        return {r[0] for r in session.connection().execute(select(lsm_resource_state.c.status))}


def test_lifting_the_global_noop_deploys_what_it_held_back(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = deploying(deploy_noop=True)  # the configured default, not a stored setting
    router = order(engine, "router", {"name": "r1"})
    engine.processing.drain()
    assert get(engine, "router", router.id).state == "creating"
    assert statuses(engine) == {"noop_pending"}
    assert not (state_dir / "routers/r1.conf").exists()

    settings = engine.facades.environments
    settings.set_setting(LOCAL, "deploy_noop", True)  # still noop: nothing is requeued
    assert statuses(engine) == {"noop_pending"}

    settings.set_setting(LOCAL, "deploy_noop", False)
    assert statuses(engine) == {"pending"}  # in the setting's own transaction
    engine.processing.drain()
    assert get(engine, "router", router.id).state == "up"
    assert (state_dir / "routers/r1.conf").read_text() == "motd=hello"


def test_setting_noop_off_again_or_other_settings_requeue_nothing(
    deploying: Callable[..., ApiRuntime],
) -> None:
    engine = deploying()
    settings = engine.facades.environments
    settings.set_setting(LOCAL, "deploy_noop", True)
    router = order(engine, "router", {"name": "r1"})
    engine.processing.drain()
    assert statuses(engine) == {"noop_pending"}
    settings.set_setting(LOCAL, "deploy_repair_interval", 900.0)
    assert statuses(engine) == {"noop_pending"}

    settings.set_setting(LOCAL, "deploy_noop", False)  # the stored true is lifted
    engine.processing.drain()
    assert get(engine, "router", router.id).state == "up"
    settings.set_setting(LOCAL, "deploy_noop", False)  # false to false: nothing to do
    assert statuses(engine) == {"deployed"}


def test_an_agent_whose_cached_settings_still_say_noop_deploys_what_was_requeued(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    """The agent of another process caches the environment's settings: one whose cache is from
    before the setting went off claims the requeued resources and deploys them, because the
    claim reads ``deploy_noop`` as committed, not from the cache."""
    first = deploying()
    first.facades.environments.set_setting(LOCAL, "deploy_noop", True)
    router = order(first, "router", {"name": "r1"})
    first.processing.drain()
    assert statuses(first) == {"noop_pending"}

    other = deploying()  # another agent process over the same database
    other.environments.refresh_after = 3600.0  # its cache stays as it is now: noop on
    assert other.environments.context(None).settings.deploy_noop is True
    first.facades.environments.set_setting(LOCAL, "deploy_noop", False)
    first.stop()  # gives its agent names back: the other agent claims the requeued resources
    assert statuses(other) == {"pending"}
    assert other.environments.context(None).settings.deploy_noop is True  # still stale

    other.processing.drain()
    assert statuses(other) == {"deployed"}
    assert get(other, "router", router.id).state == "up"
    assert (state_dir / "routers/r1.conf").read_text() == "motd=hello"
