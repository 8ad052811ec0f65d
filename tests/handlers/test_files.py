"""std::File: create, no-op without a write, update only what changed, delete on purge, dry-run reads only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsm_handlers.files import File, FileHandler
from pydantic import ValidationError

from lsm.deploy.handler import Change, HandlerError
from lsm.deploy.materialize import materialize
from lsm.errors import ConfigurationError
from tests.handlers import run


def file(path: Path, content: str = "hello\n", mode: int = 0o644, *, purged: bool = False) -> File:
    return File(agent="files", path=str(path), content=content, mode=mode, purged=purged)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_missing_file_is_created_with_its_content_and_mode(tmp_path: Path) -> None:
    target = tmp_path / "motd"
    ctx = run(FileHandler(), file(target, "hi\n", 0o600), tmp_path)
    assert ctx.action == "create"
    assert ctx.changes["content"] == Change(None, "hi\n")
    assert target.read_text() == "hi\n"
    assert mode_of(target) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["motd"]  # no temporary file left behind


def test_a_file_in_its_desired_state_is_not_written_again(tmp_path: Path) -> None:
    target = tmp_path / "motd"
    run(FileHandler(), file(target), tmp_path)
    before = target.stat()
    ctx = run(FileHandler(), file(target), tmp_path)
    after = target.stat()
    assert ctx.action == "none" and ctx.changes == {}
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_ctime_ns,
    )


def test_a_content_change_rewrites_the_file_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "motd"
    run(FileHandler(), file(target, "one", 0o640), tmp_path)
    ctx = run(FileHandler(), file(target, "two", 0o640), tmp_path)
    assert ctx.action == "update"
    assert ctx.changes == {"content": Change("one", "two")}
    assert target.read_text() == "two"
    assert mode_of(target) == 0o640


def test_a_mode_change_is_a_chmod_not_a_rewrite(tmp_path: Path) -> None:
    target = tmp_path / "motd"
    run(FileHandler(), file(target, "same", 0o644), tmp_path)
    inode = target.stat().st_ino
    ctx = run(FileHandler(), file(target, "same", 0o600), tmp_path)
    assert ctx.action == "update"
    assert ctx.changes == {"mode": Change(0o644, 0o600)}
    assert mode_of(target) == 0o600
    assert target.stat().st_ino == inode


def test_drift_on_disk_is_repaired(tmp_path: Path) -> None:
    target = tmp_path / "motd"
    run(FileHandler(), file(target, "desired"), tmp_path)
    target.write_text("edited by hand")
    ctx = run(FileHandler(), file(target, "desired"), tmp_path)
    assert ctx.changes == {"content": Change("edited by hand", "desired")}
    assert target.read_text() == "desired"


def test_a_file_that_is_not_utf8_counts_as_changed_and_is_rewritten(tmp_path: Path) -> None:
    target = tmp_path / "blob"
    target.write_bytes(b"\xff\xfe")
    target.chmod(0o644)
    ctx = run(FileHandler(), file(target, "text"), tmp_path)
    assert ctx.action == "update" and ctx.changes == {"content": Change(None, "text")}
    assert target.read_text() == "text"


def test_purge_removes_the_file_and_purging_a_missing_file_does_nothing(tmp_path: Path) -> None:
    target = tmp_path / "motd"
    run(FileHandler(), file(target), tmp_path)
    ctx = run(FileHandler(), file(target, purged=True), tmp_path)
    assert ctx.action == "delete" and ctx.changes == {"purged": Change(False, True)}
    assert not target.exists()
    again = run(FileHandler(), file(target, purged=True), tmp_path)
    assert again.action == "none"


def test_dry_run_reports_the_changes_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "motd"
    ctx = run(FileHandler(), file(target, "new"), tmp_path, dry_run=True)
    assert ctx.action == "create" and ctx.changes["content"] == Change(None, "new")
    assert not target.exists()
    target.write_text("old")
    before = target.stat()
    ctx = run(FileHandler(), file(target, "new", 0o600), tmp_path, dry_run=True)
    assert ctx.action == "update"
    assert set(ctx.changes) == {"content", "mode"}
    assert target.read_text() == "old"
    assert target.stat().st_mtime_ns == before.st_mtime_ns
    ctx = run(FileHandler(), file(target, purged=True), tmp_path, dry_run=True)
    assert ctx.action == "delete" and target.exists()


def test_a_relative_path_is_refused_where_the_resource_is_built() -> None:
    with pytest.raises(ValidationError, match="relative: give an absolute path"):
        File(agent="files", path="etc/motd", content="")


def test_a_stored_relative_path_fails_naming_the_resource() -> None:
    with pytest.raises(ConfigurationError, match=r"std::File\[files,path=etc/motd\].*relative"):
        materialize(FileHandler(), "std::File[files,path=etc/motd]", {"agent": "files", "path": "etc/motd"})


def test_errors_name_the_resource_and_the_path(tmp_path: Path) -> None:
    missing_dir = tmp_path / "nope" / "motd"
    with pytest.raises(HandlerError, match=rf"std::File\[files,path={missing_dir}\].*{tmp_path / 'nope'}"):
        run(FileHandler(), file(missing_dir), tmp_path)
    a_dir = tmp_path / "adir"
    a_dir.mkdir()
    with pytest.raises(HandlerError, match=rf"{a_dir} exists and is not a regular file"):
        run(FileHandler(), file(a_dir), tmp_path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.text(st.characters(exclude_categories=["Cs"]), max_size=200),
    mode=st.integers(min_value=0o400, max_value=0o777),
    then=st.text(st.characters(exclude_categories=["Cs"]), max_size=50),
)
def test_any_content_and_mode_converge_in_one_deploy(
    tmp_path: Path, content: str, mode: int, then: str
) -> None:
    """After one deploy the next is a no-op, whatever the content, mode and previous content."""
    target = tmp_path / "prop"
    target.unlink(missing_ok=True)
    run(FileHandler(), file(target, then, 0o644), tmp_path)
    run(FileHandler(), file(target, content, mode), tmp_path)
    assert target.read_bytes() == content.encode("utf-8")
    assert mode_of(target) == mode
    assert run(FileHandler(), file(target, content, mode), tmp_path).action == "none"
