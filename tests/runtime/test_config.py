"""Configuration: lsm.toml and environment variables reach the engine and each environment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsm.errors import ConfigurationError, InvalidSetting
from lsm.facade import RequestContext
from lsm.runtime.config import load_config
from lsm.runtime.wiring import ApiRuntime, build_api

REPO = Path(__file__).resolve().parent.parent.parent


def write_toml(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "lsm.toml"
    path.write_text(body)
    return path


def test_lsm_toml_chooses_model_database_and_selector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LSM_DATABASE_URL", raising=False)
    monkeypatch.delenv("LSM_MODEL", raising=False)
    config_file = write_toml(
        tmp_path,
        f'database_url = "sqlite:///{tmp_path / "x.db"}"\n'
        f'model = "{REPO / "examples" / "tunnel"}"\n'
        "embedded_worker = false\n"
        '[settings]\nselector = "relation_closure"\n',
    )
    engine = build_api(load_config(config_file))
    engine.start()
    try:
        assert engine.context(None).settings.selector == "relation_closure"
        assert (
            engine.facades.environments.get_settings(RequestContext.local())["selector"].value
            == "relation_closure"
        )
        engine.facades.environments.set_setting(
            RequestContext.local(), "selector", "tunnel"
        )  # the environment's own setting wins
        assert engine.context(None).settings.selector == "tunnel"
        assert "tunnel" in engine.context(None).catalog
    finally:
        engine.stop()


def test_environment_variables_override_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_file = write_toml(tmp_path, 'database_url = "sqlite:///from-file.db"\n')
    monkeypatch.setenv("LSM_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert load_config(config_file).database_url == f"sqlite:///{tmp_path / 'env.db'}"


def test_the_access_log_is_on_unless_the_file_the_environment_or_the_command_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LSM_ACCESS_LOG", raising=False)
    assert load_config(write_toml(tmp_path, "")).access_log is True
    assert load_config(write_toml(tmp_path, "access_log = false\n")).access_log is False
    monkeypatch.setenv("LSM_ACCESS_LOG", "0")
    assert load_config(write_toml(tmp_path, "")).access_log is False
    assert load_config(write_toml(tmp_path, ""), access_log=True).access_log is True  # the command wins


def test_bad_configuration_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="colour"):
        load_config(write_toml(tmp_path, 'colour = "blue"\n'))
    with pytest.raises(InvalidSetting, match="partial_compiles"):
        engine = build_api(
            load_config(
                write_toml(
                    tmp_path,
                    f'database_url = "sqlite:///{tmp_path / "y.db"}"\n'
                    '[settings]\npartial_compiles = "sometimes"\n',
                )
            )
        )
        engine.start()


def test_a_setting_changed_by_another_process_reaches_this_one(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    api_process = engine_factory("tests.models.things")
    worker_process = engine_factory("tests.models.things")  # a second engine over the same database
    assert worker_process.context(None).settings.partial_compiles is True
    api_process.facades.environments.set_setting(RequestContext.local(), "partial_compiles", False)
    worker_process.environments.refresh_after = 0.0  # instead of waiting out the 2 s cache
    assert worker_process.context(None).settings.partial_compiles is False
