"""``PUT /api/v1/desired_state``: an export made outside the engine's compiles, through the served
app and the client, on both backends.

What it must do: store a full or partial version under the export rules (a broken rule is a 400
naming the rule, the resources and the sets, and nothing is written), refuse malformed input
with a 422 naming the field, and deploy the version like a compile's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from lsm.errors import ExportRuleViolation, InvalidInput
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import serve, served_url
from tests.waiting import wait_until

ROUTE = "/api/v1/desired_state"


def null(name: str, data: Any = None, requires: tuple[str, ...] = ()) -> dict[str, Any]:
    """A ``std::Null`` resource (the bundled handler that does nothing) on agent ``a``."""
    return {
        "id": f"std::Null[a,name={name}]",
        "attributes": {"agent": "a", "purged": False, "name": name, "data": data},
        "requires": list(requires),
    }


def content(engine: ApiRuntime, version: int) -> tuple[dict[str, list[str]], list[str]]:
    found = engine.store.content(engine.context(None).env_id, version)
    return found.sets, found.shared


def test_full_partial_deletion_and_soft_delete_through_the_client(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory()
    with serve(engine) as client:
        first = client.export_desired_state(
            {"net-1": [null("h1"), null("h2")], "net-2": [null("h3")], "net-3": [null("h4")]}, [null("cfg")]
        )
        second = client.export_desired_state(
            {"net-1": [null("h1", data=2)], "net-2": []}, [null("cfg")], partial=True, deleted_sets=["gone"]
        )
        third = client.export_desired_state(
            {"net-1": [null("h1", data=2)]}, partial=True, deleted_sets=["net-1", "net-3"], soft_delete=True
        )
        listed = client.desired_states()
    assert (first["version"], first["kind"], first["resource_count"]) == (1, "full", 5)
    assert (second["version"], second["kind"]) == (2, "partial")
    assert second["sets_replaced"] == ["net-1"] and second["sets_deleted"] == ["net-2"]  # empty: deleted
    assert content(engine, 2) == (
        {"net-1": ["std::Null[a,name=h1]"], "net-3": ["std::Null[a,name=h4]"]},
        ["std::Null[a,name=cfg]"],
    )
    # soft delete: the deletion of net-1, which the export still fills, is dropped
    assert third["sets_deleted"] == ["net-3"] and third["sets_replaced"] == []
    assert content(engine, 3) == ({"net-1": ["std::Null[a,name=h1]"]}, ["std::Null[a,name=cfg]"])
    assert [v["version"] for v in listed] == [3, 2, 1]


def test_a_broken_rule_names_it_and_writes_nothing(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    with serve(engine) as client:
        client.export_desired_state({"net-1": [null("h1")]}, [null("cfg", data=1)])
        refused: dict[int, ExportRuleViolation] = {}
        calls: dict[int, Callable[[], object]] = {
            3: lambda: client.export_desired_state(
                {"net-1": [null("h1")]}, partial=True, deleted_sets=["net-1"]
            ),
            4: lambda: client.export_desired_state({}, [null("cfg", data=2)], partial=True),
            5: lambda: client.export_desired_state({}, [null("h1")], partial=True, deleted_sets=["net-1"]),
            6: lambda: client.export_desired_state(
                {"net-2": [null("h2", requires=("std::Null[a,name=h1]",))]}, partial=True
            ),
        }
        for rule, call in calls.items():
            with pytest.raises(ExportRuleViolation) as caught:
                call()
            refused[rule] = caught.value
        after = client.desired_states()
    assert {rule: error.details["rule"] for rule, error in refused.items()} == {3: 3, 4: 4, 5: 5, 6: 6}
    assert refused[4].details["resources"] == ["std::Null[a,name=cfg]"]
    assert refused[4].details["sets"] == ["shared"]
    assert refused[5].details == {
        "rule": 5,
        "resources": ["std::Null[a,name=h1]"],
        "sets": ["net-1", "shared"],
    }
    assert refused[6].details["sets"] == ["net-1", "net-2"]
    assert [v["version"] for v in after] == [1]


def test_bad_bodies_are_422_naming_the_field_and_write_nothing(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory()
    good = null("h1")
    cases: dict[str, tuple[dict[str, Any], str]] = {
        "not a resource id": ({"sets": {"s": [{**good, "id": "h1"}]}}, "sets.s[0].id"),
        "a required id that is not one": (
            {"sets": {"s": [{**good, "requires": ["x"]}]}},
            "sets.s[0].requires[0]",
        ),
        "a shared id that is not one": ({"shared": [{**good, "id": "Null[a]"}]}, "shared[0].id"),
        "deleting in a full export": ({"sets": {"s": [good]}, "deleted_sets": ["t"]}, "deleted_sets"),
        "soft delete in a full export": ({"sets": {"s": [good]}, "soft_delete": True}, "soft_delete"),
        "a set name too long": ({"sets": {"s" * 256: [good]}}, "sets"),
        "a set name with a newline": ({"sets": {"a\nb": [good]}}, "sets"),
        "an empty set name": ({"sets": {"": [good]}}, "sets"),
        "an unknown field": ({"sets": {"s": [good]}, "merge": True}, "merge"),
        "a string for a flag": ({"sets": {"s": [good]}, "partial": "yes"}, "partial"),
        "a resource with an extra key": ({"sets": {"s": [{**good, "set": "s"}]}}, "sets.s.0.set"),
        "another agent than the id's": (
            {"sets": {"s": [{**good, "attributes": {"agent": "b"}}]}},
            "sets.s[0].attributes.agent",
        ),
        "a NUL in an attribute": (
            {"sets": {"s": [{**good, "attributes": {"x": "a\x00"}}]}},
            "sets.s.0.attributes.x",
        ),
    }
    answers = {}
    with served_url(engine) as base, httpx.Client(base_url=base, timeout=30) as http:
        for what, (body, _) in cases.items():
            answers[what] = http.put(ROUTE, json=body)
        listed = http.get(ROUTE).json()
    for what, (_, field) in cases.items():
        answer = answers[what]
        assert answer.status_code == 422, (what, answer.text)
        data = answer.json()
        named = [data.get("field")] + [e.get("path") for e in data.get("errors", [])]
        assert any(isinstance(n, str) and n.startswith(field) for n in named), (what, data)
    assert listed == []


def test_a_missing_agent_attribute_is_taken_from_the_id(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    with serve(engine) as client:
        client.export_desired_state({"s": [{"id": "std::Null[a,name=h1]", "attributes": {"name": "h1"}}]})
    [(name, record)] = engine.store.resources(engine.context(None).env_id, 1)
    assert (name, record.attributes) == ("s", {"name": "h1", "agent": "a"})


def test_the_reserved_shared_name_is_refused(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    with serve(engine) as client, pytest.raises(InvalidInput) as caught:
        client.export_desired_state({"shared": [null("h1")]})
    assert caught.value.details["sets"] == ["shared"]


def test_an_exported_version_is_deployed_like_any_other(engine_factory: Callable[..., ApiRuntime]) -> None:
    """The bundled ``std::Null`` handler deploys it; a partial export then deploys its set's change."""
    engine = engine_factory(embedded_worker=True, embedded_agent=True)
    with serve(engine) as client:
        client.export_desired_state({"net-1": [null("h1"), null("h2")]}, [null("cfg")])

        def deployed(version: int, total: int) -> bool:
            status = client.deploy_status()
            return bool(
                status["planned_version"] == version
                and status["total"] == total
                and status["counts"].get("deployed", 0) == total
            )

        wait_until(lambda: deployed(1, 3), "version 1 deployed")
        client.export_desired_state({"net-1": [null("h1", data="new")]}, partial=True)
        wait_until(lambda: deployed(2, 2), "version 2 planned and deployed")
        actions = client.resource_actions("std::Null[a,name=h1]")
    assert len([a for a in actions if a.get("version") == 2]) >= 1, actions
