"""Automatic edges are marked as such wherever requires are shown (docs/semantics.md §5,
``autoedge``): the desired-state and resource responses of the API (``auto_requires``), the
requires graph (a dashed edge labelled ``auto``) and the console pages ("auto")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from lsm_handlers.files import Directory, File

from lsm.desired_state.records import ExportRequest, ResourceRecord
from lsm.runtime.wiring import ApiRuntime
from tests.console.ops_fixtures import Pages


def record(resource: Directory | File) -> ResourceRecord:
    data = resource.to_data()
    return ResourceRecord(data.id, data.attributes, data.requires, data.autoedges)


def test_an_automatic_edge_is_marked_in_the_api_the_graph_and_the_console(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    engine = engine_factory(None)
    folder = Directory(agent="host", path=str(tmp_path / "etc"))
    motd = File(agent="host", path=str(tmp_path / "etc" / "motd"), content="hi")
    written = File(agent="host", path=str(tmp_path / "etc" / "issue"), content="hi", requires=[folder])
    env_id = engine.context(None).env_id
    engine.store.export(
        env_id, ExportRequest("full", sets={"site": [record(r) for r in (folder, motd, written)]})
    )
    pages = Pages(engine)

    resources = {r["id"]: r for r in pages.get("/api/v1/desired_state/1/resources").json()}
    assert resources[motd.id]["requires"] == [folder.id] and resources[motd.id]["auto_requires"] == [
        folder.id
    ]
    assert resources[written.id]["requires"] == [folder.id] and resources[written.id]["auto_requires"] == []

    one = pages.get(f"/api/v1/resources/{quote(motd.id, safe='')}").json()
    assert one["auto_requires"] == [folder.id]

    graph = pages.get("/api/v1/graph/requires", params={"set": "site", "format": "json"}).json()
    edges = {(e["source"], e["target"]): e for e in graph["edges"]}
    assert (edges[(folder.id, motd.id)]["style"], edges[(folder.id, motd.id)]["label"]) == ("dashed", "auto")
    assert edges[(folder.id, written.id)]["style"] == "solid"

    page = pages.get("/desired-state/1", params={"set": "site"}).text
    assert 'title="added by the engine (autoedge)">auto</span>' in page
    assert pages.get(f"/resources/{quote(motd.id, safe='')}").text.count(">auto</span>") == 1
