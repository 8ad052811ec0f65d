"""``lsm graph ...`` against a served engine: SVG and DOT, to stdout and to a file, errors in red."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from lsm.cli import app
from tests.api.fixtures import engine, url
from tests.graph.dot_parse import parse

__all__ = ["engine", "url"]


@pytest.fixture
def lsm(url: str) -> Iterator[Any]:
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(app, [*args, "--url", url], env={"COLUMNS": "200"})

    yield run


def test_owner_tree_as_dot_and_svg_file(lsm: Any, url: str, tmp_path: Path) -> None:
    with httpx.Client(base_url=url) as http:
        router = http.post(
            "/lsm/v1/service_inventory/router", json={"attributes": {"mgmt_ip": "10.0.0.1", "name": "r1"}}
        ).json()["id"]
        port = http.post(
            "/lsm/v1/service_inventory/port", json={"attributes": {"router": router, "name": "eth0"}}
        ).json()["id"]

    dot = lsm("graph", "owners", "--entity", "router", "--id", "mgmt_ip=10.0.0.1", "--format", "dot")
    assert dot.exit_code == 0, dot.output
    parsed = parse(dot.stdout)
    assert set(parsed.nodes) == {router, port} and [(s, t) for s, t, _ in parsed.edges] == [(router, port)]

    target = tmp_path / "tree.svg"
    written = lsm("graph", "owners", "-o", str(target))
    assert written.exit_code == 0, written.output
    root = ET.parse(target).getroot()
    assert {g.get("data-id") for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("data-id")} == {
        router,
        port,
    }
    assert "2 nodes, 1 edges" in written.stderr


def test_lifecycle_and_errors(lsm: Any) -> None:
    svg = lsm("graph", "lifecycle", "notebook")
    assert svg.exit_code == 0 and ET.fromstring(svg.stdout).get("aria-label") == "notebook"
    unknown = lsm("graph", "lifecycle", "nope")
    assert unknown.exit_code == 1 and "unknown lifecycle 'nope'" in unknown.stderr
    no_set = lsm("graph", "requires", "tree-z")
    assert no_set.exit_code == 1 and "desired-state version" in no_set.stderr
    assert lsm("graph", "sets", "--format", "png").exit_code == 2
