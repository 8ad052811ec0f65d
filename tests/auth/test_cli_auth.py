"""The CLI and the client with authentication: the token file's 0600 rule, ``--token`` and
``LSM_TOKEN``, the first admin token written into the database, and ``lsm server`` refusing a
non-loopback address without authentication."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lsm.cli import app
from lsm.client.credentials import read_token_file, resolve_token
from lsm.errors import ConfigurationError
from lsm.runtime.config import ServerConfig, check_listen, is_loopback
from lsm.schemas.auth import AuthConfig
from lsm.testing import served_url
from tests.auth.conftest import make_secured

runner = CliRunner()


def invoke(*args: str, **env: str) -> Result:
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "LSM_TOKEN": "", **env})


def test_a_token_file_readable_by_others_is_refused_with_how_to_fix_it(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("lsm_secret\n")
    file.chmod(0o644)
    with pytest.raises(ConfigurationError, match="chmod 600"):
        read_token_file(file)
    file.chmod(0o640)
    with pytest.raises(ConfigurationError, match="0640"):
        read_token_file(file)
    file.chmod(0o600)
    assert read_token_file(file) == "lsm_secret"
    assert read_token_file(tmp_path / "absent") is None


def test_the_token_is_taken_from_the_option_then_the_variable_then_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "token"
    file.write_text("from-file")
    file.chmod(0o600)
    monkeypatch.setenv("LSM_TOKEN_FILE", str(file))
    monkeypatch.delenv("LSM_TOKEN", raising=False)
    assert resolve_token(None) == "from-file"
    monkeypatch.setenv("LSM_TOKEN", "from-env")
    assert resolve_token(None) == "from-env"
    assert resolve_token("given") == "given"


def test_the_cli_refuses_a_group_readable_token_file(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("lsm_secret")
    file.chmod(0o644)
    result = invoke("environment", "list", "--url", "http://127.0.0.1:9", LSM_TOKEN_FILE=str(file))
    assert result.exit_code == 1
    assert "chmod 600" in result.output


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "example.com"])
def test_lsm_server_refuses_a_non_loopback_address_without_auth(tmp_path: Path, host: str) -> None:
    database = tmp_path / "lsm.db"
    result = invoke("server", "--host", host, "--database", f"sqlite:///{database}")
    assert result.exit_code == 1
    assert f"refusing to listen on {host} without authentication" in result.output
    assert "--insecure" in result.output
    assert not database.exists()  # refused before anything started


def test_loopback_auth_or_insecure_may_listen() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    check_listen(ServerConfig(host="127.0.0.1"))
    check_listen(ServerConfig(host="0.0.0.0", insecure=True))
    check_listen(ServerConfig(host="0.0.0.0", auth=AuthConfig(enabled=True)))
    with pytest.raises(ConfigurationError):
        check_listen(ServerConfig(host="10.1.2.3"))


@pytest.fixture
def sqlite_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    (tmp_path / "allowed").mkdir()
    engine = make_secured("sqlite", tmp_path)
    try:
        with served_url(engine) as url:
            yield url, engine.db.url
    finally:
        engine.stop()
        engine.db.dispose()


def test_the_first_admin_token_is_written_into_the_database_and_works(sqlite_server: tuple[str, str]) -> None:
    url, database = sqlite_server
    created = invoke("token", "create", "--admin", "ops", "--database", database, "--json")
    assert created.exit_code == 0, created.output
    token = json.loads(created.stdout)["token"]

    anonymous = invoke("environment", "list", "--url", url)
    with_option = invoke("--token", token, "environment", "list", "--url", url, "--json")
    with_variable = invoke("environment", "list", "--url", url, "--json", LSM_TOKEN=token)
    made = invoke(
        "--token", token, "token", "create", "ci", "--role", "default=viewer", "--url", url, "--json"
    )
    listed = invoke("--token", token, "token", "list", "--url", url, "--json")

    assert anonymous.exit_code == 1 and "bearer token" in anonymous.output
    assert with_option.exit_code == 0, with_option.output
    assert {e["name"] for e in json.loads(with_option.stdout)} == {"default", "other"}
    assert with_variable.exit_code == 0
    assert made.exit_code == 0, made.output
    ci = json.loads(made.stdout)
    assert ci["roles"] != {} and ci["token"].startswith("lsm_")
    names = [t["name"] for t in json.loads(listed.stdout)]
    assert "ops" in names and "ci" in names
    revoked = invoke("--token", token, "token", "revoke", ci["id"], "--url", url, "--json")
    assert json.loads(revoked.stdout)["revoked_at"]
    audit = invoke("--token", token, "audit", "--action", "token", "--url", url, "--json")
    actions = [line["action"] for line in json.loads(audit.stdout)]
    assert actions[:3] == ["token.revoke", "token.create", "token.create"]
