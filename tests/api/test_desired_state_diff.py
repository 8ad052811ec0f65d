"""``GET /api/v1/desired_state/{version}/diff/{other}`` through the served app, the client and the CLI.

On both backends (``engine_factory`` rides on the ``db`` fixture): the versions are exported
straight into the engine's store, then read back over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
from typer.testing import CliRunner

from lsm.cli import app
from lsm.desired_state import ExportRequest, ResourceRecord
from lsm.errors import NotFound
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import serve, served_url

DIFF = "/api/v1/desired_state/{}/diff/{}"


def two_versions(engine: ApiRuntime) -> None:
    env_id = engine.context(None).env_id
    engine.store.export(
        env_id,
        ExportRequest(
            "full",
            sets={
                "a": [ResourceRecord("R[x,k=a]", {"v": 1})],
                "b": [ResourceRecord("R[x,k=b]", {"v": 1})],
            },
        ),
    )
    engine.store.export(
        env_id,
        ExportRequest(
            "partial",
            sets={"a": [ResourceRecord("R[x,k=a]", {"v": 2}), ResourceRecord("R[x,k=a2]", {})]},
            deleted_sets=["b"],
        ),
    )


def test_the_diff_over_http_and_the_client(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    two_versions(engine)
    with serve(engine) as client:
        diff = client.desired_state_diff(1, 2)
        back = client.desired_state_diff(2, 1)
        same = client.desired_state_diff(2, 2)
        try:
            client.desired_state_diff(1, 5)
        except NotFound as error:
            missing = error
        else:
            raise AssertionError("an unknown version was answered")
    assert (diff["from_version"], diff["to_version"]) == (1, 2)
    assert [(s["name"], s["change"], s["before_count"], s["after_count"]) for s in diff["sets"]] == [
        ("a", "changed", 1, 2),
        ("b", "removed", 1, 0),
    ]
    assert [(r["id"], r["change"], r["fields"]) for r in diff["resources"]] == [
        ("R[x,k=a2]", "added", []),
        ("R[x,k=a]", "changed", ["v"]),
        ("R[x,k=b]", "removed", []),
    ]
    changed = diff["resources"][1]
    assert changed["before"] == {"set": "a", "attributes": {"v": 1}, "requires": [], "set_name": None}
    assert changed["after"] == {"set": "a", "attributes": {"v": 2}, "requires": [], "set_name": None}
    assert [(s["name"], s["change"]) for s in back["sets"]] == [("a", "changed"), ("b", "added")]
    assert same["sets"] == [] and same["resources"] == []
    assert missing.details["version"] == 5 and "version 5" in missing.message


def test_bad_versions_are_422_and_missing_ones_404(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    two_versions(engine)
    with served_url(engine) as base, httpx.Client(base_url=base) as http:
        missing = http.get(DIFF.format(7, 1))
        answers = {
            path: http.get(path)
            for path in (
                DIFF.format("x", 1),
                DIFF.format(1, -1),
                DIFF.format(1, 2**70),
                DIFF.format(2**63, 1),
            )
        }
    assert missing.status_code == 404
    assert missing.json()["version"] == 7 and "version 7" in missing.json()["message"]
    for path, answer in answers.items():
        assert answer.status_code == 422, (path, answer.text)
        named = [(e["path"], e["in"]) for e in answer.json()["errors"]]
        assert named and all(where == "path" for _, where in named), (path, named)


def test_the_cli_diff(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    two_versions(engine)
    runner = CliRunner()
    with served_url(engine) as base:
        table = runner.invoke(app, ["desired-state", "diff", "1", "2", "--url", base], env={"COLUMNS": "200"})
        raw = runner.invoke(app, ["desired-state", "diff", "2", "1", "--url", base, "--json"])
        none = runner.invoke(app, ["desired-state", "diff", "2", "2", "--url", base])
        missing = runner.invoke(app, ["desired-state", "diff", "1", "9", "--url", base])
        listed = runner.invoke(app, ["desired-state", "--url", base, "--json"])
        shown = runner.invoke(app, ["desired-state", "2", "--url", base, "--json"])
    bad = runner.invoke(app, ["desired-state", "diff", "one", "2"])
    assert table.exit_code == 0, table.output
    assert "changed" in table.stdout and "removed" in table.stdout and "R[x,k=a2]" in table.stdout
    assert json.loads(raw.stdout)["sets"][1] == {
        "name": "b",
        "change": "added",
        "before_count": 0,
        "after_count": 1,
        "set_name": None,  # "b" names no instance
    }
    assert none.exit_code == 0 and "no difference" in none.stdout
    assert missing.exit_code == 1 and "version 9" in missing.output
    assert [v["version"] for v in json.loads(listed.stdout)] == [2, 1]
    assert json.loads(shown.stdout)["sets"] == {"a": ["R[x,k=a2]", "R[x,k=a]"]}
    assert bad.exit_code == 2
