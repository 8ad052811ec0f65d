"""The config-file handler: one canonical JSON file per resource under the agent's state directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsm_handlers.config import ConfigFileHandler, config_handlers, config_path

import lsm
from lsm.deploy.handler import Change, HandlerError
from lsm.deploy.materialize import StoredResource, materialize
from lsm.model.meta import Meta
from tests.handlers import run


class Router(lsm.Resource, type="net::Router", id_attribute="name"):
    name: str
    mgmt_ip: str
    vlan: int | None = None


def router(name: str = "r1", mgmt_ip: str = "10.0.0.1", **kw: object) -> Router:
    return Router(agent="10.0.0.1", name=name, mgmt_ip=mgmt_ip, **kw)


def test_the_handler_gets_a_stored_resource() -> None:
    data = router().to_data()
    assert isinstance(materialize(ConfigFileHandler(), data.id, data.attributes), StoredResource)


def test_a_resource_is_written_as_canonical_json_without_engine_attributes(tmp_path: Path) -> None:
    ctx = run(ConfigFileHandler(), router(meta=Meta(retry=2), requires=["net::X[a,name=b]"]), tmp_path)
    path = tmp_path / "10.0.0.1" / "net" / "Router" / "r1.json"
    assert ctx.action == "create"
    assert path.read_bytes() == b'{"mgmt_ip":"10.0.0.1","name":"r1","vlan":null}\n'
    assert set(ctx.changes) == {"name", "mgmt_ip", "vlan"}


def test_no_write_when_the_file_holds_the_desired_attributes(tmp_path: Path) -> None:
    run(ConfigFileHandler(), router(), tmp_path)
    path = config_path(tmp_path, router().id, "10.0.0.1")
    before = path.stat()
    ctx = run(ConfigFileHandler(), router(), tmp_path)
    assert ctx.action == "none"
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_an_update_reports_only_the_changed_attributes(tmp_path: Path) -> None:
    run(ConfigFileHandler(), router(vlan=None), tmp_path)
    ctx = run(ConfigFileHandler(), router(vlan=7), tmp_path)
    assert ctx.action == "update" and ctx.changes == {"vlan": Change(None, 7)}
    path = config_path(tmp_path, router().id, "10.0.0.1")
    assert json.loads(path.read_text())["vlan"] == 7


def test_a_key_the_resource_no_longer_has_is_a_change(tmp_path: Path) -> None:
    path = config_path(tmp_path, router().id, "10.0.0.1")
    path.parent.mkdir(parents=True)
    path.write_text('{"mgmt_ip":"10.0.0.1","name":"r1","vlan":null,"old":1}')
    ctx = run(ConfigFileHandler(), router(), tmp_path)
    assert ctx.changes == {"old": Change(1, None)}
    assert "old" not in json.loads(path.read_text())


def test_a_corrupt_file_is_rewritten_with_a_warning(tmp_path: Path) -> None:
    path = config_path(tmp_path, router().id, "10.0.0.1")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    ctx = run(ConfigFileHandler(), router(), tmp_path)
    assert ctx.action == "update" and any(line.level == "warning" for line in ctx.logs)
    assert json.loads(path.read_text())["name"] == "r1"


def test_purge_removes_the_file_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = config_path(tmp_path, router().id, "10.0.0.1")
    assert run(ConfigFileHandler(), router(), tmp_path, dry_run=True).action == "create"
    assert not path.exists()
    run(ConfigFileHandler(), router(), tmp_path)
    assert run(ConfigFileHandler(), router(purged=True), tmp_path, dry_run=True).action == "delete"
    assert path.exists()
    assert run(ConfigFileHandler(), router(purged=True), tmp_path).action == "delete"
    assert not path.exists()
    assert run(ConfigFileHandler(), router(purged=True), tmp_path).action == "none"


def test_a_write_error_names_the_resource_and_the_path(tmp_path: Path) -> None:
    (tmp_path / "10.0.0.1").write_text("a file where the agent's directory should be")
    with pytest.raises(HandlerError, match=r"net::Router\[10\.0\.0\.1,name=r1\]: can not write .*r1\.json"):
        run(ConfigFileHandler(), router(), tmp_path)


def test_config_handlers_maps_each_type_to_the_handler() -> None:
    assert config_handlers(Router, "net::Other") == {
        "net::Router": ConfigFileHandler,
        "net::Other": ConfigFileHandler,
    }
    with pytest.raises(TypeError, match="names no resource type"):
        config_handlers(lsm.Resource)


names = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(agent=names, value=names, other_agent=names, other_value=names)
def test_any_agent_and_value_stay_inside_the_state_dir_and_never_collide(
    agent: str, value: str, other_agent: str, other_value: str
) -> None:
    state = Path("/srv/state")
    path = config_path(state, f"net::Router[{agent},name={value}]", agent)
    assert path.parent.parent.parent.parent == state
    assert ".." not in path.parts and not any(p.startswith(".") for p in path.parts[3:])
    other = config_path(state, f"net::Router[{other_agent},name={other_value}]", other_agent)
    assert (path == other) == ((agent, value) == (other_agent, other_value))


def test_an_agent_name_or_id_value_longer_than_a_file_name_still_deploys_to_its_own_file(
    tmp_path: Path,
) -> None:
    """Issue 31, L5: a 250-byte name used to be accepted and then fail "File name too long"."""
    from lsm_handlers.config import ConfigFileHandler, config_path

    from lsm.deploy.handler import HandlerContext
    from lsm.deploy.materialize import materialize
    from lsm.schemas.limits import MAX_FILE_NAME_BYTES

    ids = [f"net::Host[{'é' * 200},name={'n' * 250}{i}]" for i in range(2)]
    paths = [config_path(tmp_path, rid, "é" * 200) for rid in ids]
    assert len(set(paths)) == 2
    for rid, path in zip(ids, paths, strict=True):
        assert all(len(part.encode()) <= MAX_FILE_NAME_BYTES for part in path.parts)
        handler = ConfigFileHandler()
        target = materialize(handler, rid, {"agent": "é" * 200, "purged": False, "name": "x"}, ())
        ctx = HandlerContext(rid, state_dir=tmp_path)
        handler.deploy(ctx, target)
        assert ctx.action == "create" and path.is_file()
