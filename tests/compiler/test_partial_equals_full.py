"""Partial == full: after every change, applied as partial compiles, the stored desired state
equals what a full compile produces from the same inventory, set by set, resource by resource.

The one documented difference: a partial export never removes a shared resource (docs/semantics.md
§4, rule 4), so shared resources that no instance produces any more stay until the
next full compile garbage-collects them. The stored shared set must therefore contain the full
compile's shared set, identical resource by resource, and nothing else may differ.

The sequences also run full compiles, incremental (the default: only the trees that changed
are refined) and complete (``incremental: false``); right after either, the stored desired
state must equal the complete full compile exactly, shared set included.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsm.desired_state import ResourceRecord
from lsm.errors import LsmError, ModelError
from lsm.facade import RequestContext
from lsm.orchestration import ResourceOutcome
from lsm.runtime.wiring import ApiRuntime
from tests.compiler.partial_selectors import RandomSubset

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
#: raise for a thorough run: LSM_PROPERTY_EXAMPLES=300 python -m pytest tests/compiler
EXAMPLES_PER_TEST = int(os.environ.get("LSM_PROPERTY_EXAMPLES", "15"))
#: examples/router_port with the partial selectors of tests/compiler/partial_selectors.py
PARTIAL_SELECTORS_MODEL = "tests.compiler.router_port_partial_model"


def assert_partial_equals_full(engine: ApiRuntime, env: str | None, *, exact_shared: bool = False) -> None:
    """``exact_shared``: after a full compile, stale shared resources must be gone too."""
    ctx = engine.context(env)
    latest = engine.store.latest_version(ctx.env_id)
    try:
        expected = engine.processing.runner.compute_full(ctx)
    except ModelError:
        # the inventory itself breaks the model (e.g. a port whose router was terminated while
        # it was being created): then the partial compile that ran last must have failed too
        last = next(
            c
            for c in engine.facades.compiles.list_compiles(RequestContext.local(env), limit=1000)
            if c.kind != "validation"
        )
        assert last.status == "failed" and last.report["error"]["error"] == "model_error"
        return
    if latest is None:
        assert not expected.sets and not expected.shared
        return
    stored: dict[str | None, dict[str, ResourceRecord]] = {}
    for set_name, record in engine.store.resources(ctx.env_id, latest):
        stored.setdefault(set_name, {})[record.id] = record
    stored_shared = stored.pop(None, {})
    assert {name: sorted(stored[name]) for name in stored} == {
        name: sorted(r.id for r in records) for name, records in expected.sets.items()
    }
    for name, records in expected.sets.items():
        for record in records:
            assert stored[name][record.id] == record, f"{record.id} in set {name}"
    for record in expected.shared:
        assert stored_shared.get(record.id) == record, f"shared {record.id}"
    if exact_shared:
        assert sorted(stored_shared) == sorted(r.id for r in expected.shared)


class World:
    """Applies operator and deploy operations in a fresh environment; skips what is refused."""

    def __init__(self, engine: ApiRuntime, model: str, *, partial_compiles: bool = True) -> None:
        self.engine = engine
        self.env = f"prop-{uuid.uuid4().hex[:12]}"
        engine.facades.environments.create_environment(RequestContext.local(), self.env, model)
        if not partial_compiles:  # every state change then requests an (incremental) full compile
            engine.facades.environments.set_setting(RequestContext.local(self.env), "partial_compiles", False)
        self.ctx = engine.context(self.env)
        self.instances: list[tuple[str, str]] = []

    def settle(self) -> None:
        self.engine.processing.drain()

    def pick(self, index: int, entity: str | None = None) -> Any:
        pool = [(e, i) for e, i in self.instances if entity is None or e == entity]
        if not pool:
            return None
        entity_name, instance_id = pool[index % len(pool)]
        return self.engine.facades.inventory.get_instance(
            RequestContext.local(self.env), entity_name, instance_id
        )

    def attempt(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except LsmError:
            pass  # refused in this state or invalid: the operation is a no-op, as for an operator

    def create(self, entity: str, attributes: dict[str, Any]) -> None:
        def run() -> None:
            created = self.engine.facades.inventory.create_instance(
                RequestContext.local(self.env), entity, attributes
            )
            self.instances.append((entity, created.id))

        self.attempt(run)

    def update(self, index: int, entity: str, attributes: dict[str, Any]) -> None:
        instance = self.pick(index, entity)
        if instance is not None:
            self.attempt(
                lambda: self.engine.facades.inventory.update_instance(
                    RequestContext.local(self.env),
                    entity,
                    instance.id,
                    current_version=instance.version,
                    attributes=attributes,
                )
            )

    def delete(self, index: int) -> None:
        instance = self.pick(index)
        if instance is not None:
            self.attempt(
                lambda: self.engine.facades.inventory.delete_instance(
                    RequestContext.local(self.env),
                    instance.service_entity,
                    instance.id,
                    current_version=instance.version,
                )
            )

    def full_compile(self, *, incremental: bool) -> None:
        """A full compile (incremental unless asked otherwise), run to the end, then the check."""
        requested = self.engine.facades.compiles.request_compile(
            RequestContext.local(self.env), kind="full", incremental=None if incremental else False
        )
        self.settle()
        done = self.engine.facades.compiles.get_compile(RequestContext.local(self.env), requested.id)
        if incremental and done.status == "success":
            # the first compile of an environment is complete; any other may be incremental
            first = (
                self.engine.store.get_version(self.ctx.env_id, done.desired_state_version or 0).base is None
            )
            assert first or "complete" not in done.report, done.report
        assert_partial_equals_full(self.engine, self.env, exact_shared=done.status == "success")

    def deploy(self, index: int, ok: bool) -> None:
        instance = self.pick(index)
        if instance is not None:
            outcome = ResourceOutcome(instance.id, instance.desired_state_version, ok)
            self.attempt(lambda: self.engine.orchestrator.execute(self.ctx, outcome))


#: each example runs in a new environment of one engine (per test), so the fixture is shared on purpose
PROPERTY = settings(
    max_examples=EXAMPLES_PER_TEST, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def new_world(
    engine_factory: Callable[..., ApiRuntime], example: str, *, partial_compiles: bool = True
) -> World:
    """A fresh environment for one hypothesis example, on the one engine this test function built."""
    engine: ApiRuntime | None = getattr(engine_factory, "engine", None)
    if engine is None:
        engine = engine_factory(str(EXAMPLES / example))
        engine_factory.engine = engine  # type: ignore[attr-defined]  # the engine kept on the fixture for the next example
    return World(engine, str(EXAMPLES / example), partial_compiles=partial_compiles)


network_ops = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.integers(0, 6), st.integers(0, 4)),
        st.tuples(st.just("update"), st.integers(0, 20), st.integers(0, 4)),
        st.tuples(st.just("delete"), st.integers(0, 20), st.just(0)),
        st.tuples(st.just("deploy"), st.integers(0, 20), st.booleans()),
        st.tuples(st.just("full"), st.just(0), st.booleans()),
    ),
    min_size=1,
    max_size=12,
)


@PROPERTY
@given(ops=network_ops, partial_compiles=st.booleans())
def test_networks_partial_equals_full(
    engine_factory: Callable[..., ApiRuntime], ops: list[tuple[str, int, Any]], partial_compiles: bool
) -> None:
    world = new_world(engine_factory, "networks", partial_compiles=partial_compiles)
    for op, a, b in ops:
        if op == "create":
            world.create("network", {"name": f"n{a}", "hosts": b})
        elif op == "update":
            world.update(a, "network", {"hosts": b})
        elif op == "delete":
            world.delete(a)
        elif op == "full":
            world.full_compile(incremental=bool(b))
            continue
        else:
            world.deploy(a, bool(b))
        world.settle()
        assert_partial_equals_full(world.engine, world.env)


router_ops = st.lists(
    st.one_of(
        st.tuples(st.just("router"), st.integers(0, 3), st.integers(0, 2)),
        st.tuples(
            st.just("port"),
            st.integers(0, 10),
            st.tuples(st.integers(0, 2), st.sampled_from([10, 1500, 9000])),
        ),
        st.tuples(st.just("mtu"), st.integers(0, 10), st.sampled_from([10, 1400, 9000])),
        st.tuples(st.just("rename"), st.integers(0, 10), st.integers(0, 2)),
        st.tuples(st.just("delete"), st.integers(0, 10), st.just(0)),
        st.tuples(st.just("deploy"), st.integers(0, 10), st.booleans()),
        st.tuples(st.just("full"), st.just(0), st.booleans()),
    ),
    min_size=1,
    max_size=14,
)


@PROPERTY
@given(ops=router_ops, partial_compiles=st.booleans())
def test_router_port_partial_equals_full(
    engine_factory: Callable[..., ApiRuntime], ops: list[tuple[str, int, Any]], partial_compiles: bool
) -> None:
    world = new_world(engine_factory, "router_port", partial_compiles=partial_compiles)
    for op, a, b in ops:
        if op == "router":
            world.create("router", {"mgmt_ip": f"10.0.0.{a}", "name": f"r{b}"})
        elif op == "port":
            router = world.pick(a, "router")
            if router is not None:
                world.create("port", {"router": router.id, "name": f"eth{b[0]}", "mtu": b[1]})
        elif op == "mtu":
            world.update(a, "port", {"mtu": b})
        elif op == "rename":
            world.update(a, "router", {"name": f"r{b}"})
        elif op == "delete":
            world.delete(a)
        elif op == "full":
            world.full_compile(incremental=bool(b))
            continue
        else:
            world.deploy(a, bool(b))
        world.settle()
        assert_partial_equals_full(world.engine, world.env)


@PROPERTY
@given(ops=router_ops, seed=st.integers(0, 2**32))
def test_router_port_partial_equals_full_whatever_subset_a_selector_returns(
    engine_factory: Callable[..., ApiRuntime], ops: list[tuple[str, int, Any]], seed: int
) -> None:
    """A custom selector answering arbitrary subsets of the trees (parts of requested trees,
    other trees, nothing at all) never makes the stored desired state differ from a full
    compile: the engine compiles every tree it touches whole (docs/semantics.md §3, "Completeness")."""
    RandomSubset.seed, RandomSubset.calls = seed, 0
    engine: ApiRuntime | None = getattr(engine_factory, "engine", None)
    if engine is None:
        engine = engine_factory(PARTIAL_SELECTORS_MODEL)
        engine_factory.engine = engine  # type: ignore[attr-defined]  # the engine kept on the fixture for the next example
    world = World(engine, PARTIAL_SELECTORS_MODEL)
    engine.facades.environments.set_setting(RequestContext.local(world.env), "selector", "random_subset")
    for op, a, b in ops:
        if op == "router":
            world.create("router", {"mgmt_ip": f"10.0.0.{a}", "name": f"r{b}"})
        elif op == "port":
            router = world.pick(a, "router")
            if router is not None:
                world.create("port", {"router": router.id, "name": f"eth{b[0]}", "mtu": b[1]})
        elif op == "mtu":
            world.update(a, "port", {"mtu": b})
        elif op == "rename":
            world.update(a, "router", {"name": f"r{b}"})
        elif op == "delete":
            world.delete(a)
        else:
            world.deploy(a, bool(b))
        world.settle()
        assert_partial_equals_full(world.engine, world.env)
