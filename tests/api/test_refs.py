"""Identity values holding ``/`` or ``%`` work as instance references, through the API, the
client and the CLI (lsm.api.refs)."""

from __future__ import annotations

import json
from typing import Literal
from urllib.parse import quote

import httpx
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from lsm.api.refs import decode_ref, keep_encoded_slashes
from lsm.cli import app
from lsm.client import Client

INVENTORY = "/lsm/v1/service_inventory"
#: hypothesis draws no lone surrogates: a URL cannot carry them
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
AWKWARD = ["/srv/a.txt", "a%2Fb", "50%", "a/b%25c/", "//", "x y/ü"]


def test_a_value_with_slashes_is_one_reference_on_every_instance_route(http: httpx.Client) -> None:
    made = {}
    for title in AWKWARD:
        answer = http.post(f"{INVENTORY}/note", json={"attributes": {"title": title}})
        assert answer.status_code == 200, answer.text
        made[title] = answer.json()
    for title, note in made.items():
        ref = quote(f"title={title}", safe="=")
        found = http.get(f"{INVENTORY}/note/{ref}")
        assert found.status_code == 200, (title, found.text)
        assert found.json()["id"] == note["id"]
        assert http.get(f"{INVENTORY}/note/{ref}/log").json()[0]["trigger"] == "create"
        changed = http.patch(
            f"{INVENTORY}/note/{ref}", json={"current_version": 1, "attributes": {"text": "x"}}
        )
        assert changed.status_code == 200 and changed.json()["id"] == note["id"]
    missing = http.get(f"{INVENTORY}/note/{quote('title=/srv/none', safe='=')}")
    assert missing.status_code == 404 and "/srv/none" in missing.json()["message"]
    unencoded = http.get(f"{INVENTORY}/note/title=/srv/a.txt")  # a plain slash still splits the path
    assert unencoded.status_code == 404


def test_the_client_and_the_cli_encode_the_reference(url: str) -> None:
    with Client(url) as client:
        note = client.create_instance("note", {"title": "/srv/a.txt"})
        assert client.get_instance("note", "title=/srv/a.txt")["id"] == note["id"]
        assert (
            client.set_state("note", "title=/srv/a.txt", current_version=1, target_state="published")["state"]
            == "published"
        )
    shown = CliRunner().invoke(app, ["instance", "show", "note", "title=/srv/a.txt", "--json", "--url", url])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["id"] == note["id"]


@given(st.text(alphabet=st.characters(exclude_categories=SURROGATES), max_size=30))
def test_routing_keeps_a_segment_whole_and_decode_gives_it_back(value: str) -> None:
    raw = "/lsm/v1/service_inventory/note/" + quote(value, safe="")
    routed = keep_encoded_slashes(raw)
    segments = routed.split("/")
    assert len(segments) == 6
    assert decode_ref(segments[-1]) == value
