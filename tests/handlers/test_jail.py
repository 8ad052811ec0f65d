"""Issue 31, H3: the bundled handlers act only inside the agent's jail (``lsm.deploy.jail``).

Each step of the reproduction is refused with an error naming the path and the setting: reading
a root-only file outside the roots through a discovery, following a link out of them, writing a
setuid file, deleting a file outside the roots, and a pattern that backtracks without end. The
race between the check and the use is closed too: a folder swapped for a link in between is
refused, not followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from lsm_handlers.discovery import FileDiscovery, FileDiscoveryHandler
from lsm_handlers.files import File, FileHandler
from lsm_handlers.http import HttpDocument, HttpDocumentHandler
from pydantic import ValidationError

from lsm.deploy.handler import HandlerContext, HandlerError
from lsm.deploy.jail import Jail
from lsm.deploy.patterns import user_pattern
from lsm.schemas.limits import MAX_FILE_NAME_BYTES
from tests.handlers import run


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """``(root, outside)``: the agent's state directory and a folder beside it with a secret."""
    root, outside = tmp_path / "state", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    secret = outside / "shadow"
    secret.write_text("root:secret\n")
    secret.chmod(0o600)
    return root, outside


def test_a_discovery_of_a_folder_outside_the_roots_is_refused(places: tuple[Path, Path]) -> None:
    root, outside = places
    finder = FileDiscovery(agent="h1", name="steal", directory=str(outside))
    with pytest.raises(HandlerError, match=r"outside the directories .* handler_roots"):
        run(FileDiscoveryHandler(), finder, root)
    dotted = FileDiscovery(agent="h1", name="dots", directory=f"{root}/../outside")
    with pytest.raises(HandlerError, match="outside the directories"):
        run(FileDiscoveryHandler(), dotted, root)


def test_links_that_lead_out_are_refused_and_links_inside_are_not_followed_out(
    places: tuple[Path, Path],
) -> None:
    root, outside = places
    (root / "escape").symlink_to(outside)
    (root / "shadow").symlink_to(outside / "shadow")
    finder = FileDiscovery(agent="h1", name="link", directory=str(root / "escape"))
    with pytest.raises(HandlerError, match=r"resolves to .*outside"):
        run(FileDiscoveryHandler(), finder, root)
    # a discovery of the root itself lists neither the linked file nor the linked folder's content
    everything = FileDiscovery(agent="h1", name="all", directory=str(root), recursive=True)
    assert run(FileDiscoveryHandler(), everything, root).discovered == {}
    with pytest.raises(HandlerError, match="outside"):
        run(FileHandler(), File(agent="h1", path=str(root / "shadow"), content="pwned"), root)
    assert (outside / "shadow").read_text() == "root:secret\n"


def test_a_setuid_setgid_or_sticky_mode_is_refused_unless_the_agent_allows_it(
    places: tuple[Path, Path],
) -> None:
    root, _ = places
    for mode in (0o4755, 0o2755, 0o1777):
        with pytest.raises(HandlerError, match=r"setuid, setgid or sticky .* handler_special_bits"):
            run(
                FileHandler(),
                File(agent="h1", path=str(root / "tool"), content="#!/bin/sh\n", mode=mode),
                root,
            )
        assert not (root / "tool").exists()
    run(FileHandler(), File(agent="h1", path=str(root / "tool"), content="#!/bin/sh\n", mode=0o755), root)
    with pytest.raises(HandlerError, match="setuid"):  # a chmod alone is checked too
        run(
            FileHandler(), File(agent="h1", path=str(root / "tool"), content="#!/bin/sh\n", mode=0o4755), root
        )
    assert stat.S_IMODE((root / "tool").stat().st_mode) == 0o755
    allowed = HandlerContext("x", state_dir=root, jail=Jail.of([root], special_bits=True))
    resource = File(agent="h1", path=str(root / "tool"), content="#!/bin/sh\n", mode=0o4755)
    FileHandler().deploy(allowed, resource)
    assert stat.S_IMODE((root / "tool").stat().st_mode) == 0o4755


def test_deleting_a_file_outside_the_roots_is_refused(places: tuple[Path, Path]) -> None:
    root, outside = places
    victim = File(agent="h1", path=str(outside / "shadow"), purged=True)
    with pytest.raises(HandlerError, match="outside the directories"):
        run(FileHandler(), victim, root)
    assert (outside / "shadow").exists()


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = places
    (root / "conf").mkdir()
    checked = Jail.resolve

    def swap_after_check(self: Jail, path: str | Path, *, who: str) -> tuple[Path, Path]:
        result = checked(self, path, who=who)
        if (root / "conf").is_dir() and not (root / "conf").is_symlink():
            (root / "conf").rename(root / "conf.old")
            (root / "conf").symlink_to(outside)  # the race: a link where the folder was
        return result

    monkeypatch.setattr(Jail, "resolve", swap_after_check)
    with pytest.raises(HandlerError, match=r"not a directory .*link"):
        run(FileHandler(), File(agent="h1", path=str(root / "conf" / "shadow"), content="pwned"), root)
    assert (outside / "shadow").read_text() == "root:secret\n"


def test_a_catastrophic_pattern_matches_in_linear_time_and_backreferences_are_refused(
    places: tuple[Path, Path],
) -> None:
    root, _ = places
    name = "a" * (MAX_FILE_NAME_BYTES - 1) + "!"  # Python's re would take longer than the universe
    (root / name).write_text("x")
    (root / "aaaa").write_text("y")
    finder = FileDiscovery(agent="h1", name="evil", directory=str(root), pattern="(a+)+$")
    found = run(FileDiscoveryHandler(), finder, root).discovered or {}
    assert [value.path for value in found.values()] == [str(root / "aaaa")]
    assert user_pattern("(a+)+$").fullmatch("a" * 100_000 + "b") is None
    with pytest.raises(ValidationError, match="RE2 syntax, no backreferences"):
        FileDiscovery(agent="h1", name="x", directory=str(root), pattern=r"(a)\1")


def test_a_url_outside_the_allowed_ones_is_refused_before_any_request(tmp_path: Path) -> None:
    jail = Jail.of([tmp_path], urls=["http://127.0.0.1:9/api"])
    ctx = HandlerContext("x", state_dir=tmp_path, jail=jail)
    for url in ("http://169.254.169.254/latest", "http://127.0.0.1:9/apix", "http://127.0.0.1:10/api/a"):
        with pytest.raises(HandlerError, match="handler_url_roots"):
            HttpDocumentHandler().deploy(ctx, HttpDocument(agent="h1", url=url, document={}))
    assert jail.url("http://127.0.0.1:9/api/doc", who="x") == "http://127.0.0.1:9/api/doc"
    default = HandlerContext("x", state_dir=tmp_path)
    with pytest.raises(HandlerError, match="none configured"):
        HttpDocumentHandler().deploy(
            default, HttpDocument(agent="h1", url="http://127.0.0.1:9/", document={})
        )


def test_a_file_name_longer_than_the_file_system_holds_fails_where_the_resource_is_built() -> None:
    with pytest.raises(ValidationError, match=f"at most {MAX_FILE_NAME_BYTES} bytes"):
        File(agent="h1", path="/srv/" + "é" * 128)
    assert File(agent="h1", path="/srv/" + "a" * MAX_FILE_NAME_BYTES).path.endswith("a")


def test_a_fifo_in_the_roots_is_left_out_without_blocking(places: tuple[Path, Path]) -> None:
    root, _ = places
    os.mkfifo(root / "pipe")
    (root / "plain").write_text("p")
    found = run(FileDiscoveryHandler(), FileDiscovery(agent="h1", name="f", directory=str(root)), root)
    assert [v.path for v in (found.discovered or {}).values()] == [str(root / "plain")]
