"""``ModelChoices``: whatever text names a model, the answer is a named model or a path under an
allowed directory (after ``..`` and symbolic links), or a refusal naming ``model``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsm.errors import InvalidInput
from lsm.model.policy import ModelChoices, model_name, parse_model_option

SEGMENTS = st.sampled_from(["..", ".", "allowed", "outside", "ok.py", "evil.py", "link.py", "pkg", "", "os"])


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("policy")
    (root / "allowed" / "pkg").mkdir(parents=True)
    (root / "allowed" / "pkg" / "__init__.py").write_text("")
    (root / "allowed" / "ok.py").write_text("")
    (root / "outside").mkdir()
    (root / "outside" / "evil.py").write_text("")
    (root / "allowed" / "link.py").symlink_to(root / "outside" / "evil.py")
    (root / "allowed" / "outside").symlink_to(root / "outside")
    return root


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=6), absolute=st.booleans())
def test_a_choice_resolves_inside_the_allowed_directory_or_is_refused(
    tree: Path, parts: list[str], absolute: bool
) -> None:
    choices = ModelChoices({"named": "some.module"}, [tree / "allowed"])
    choice = "/".join(parts)
    if absolute:
        choice = str(tree / choice)
    try:
        resolved = choices.resolve(choice)
    except InvalidInput as exc:
        assert exc.details["field"] == "model"
        return
    if resolved == "some.module":
        return
    real = Path(resolved).resolve()
    assert real.is_relative_to((tree / "allowed").resolve()), (choice, resolved)
    assert not real.is_relative_to((tree / "outside").resolve())


def test_names_and_options() -> None:
    assert model_name("examples/router_port") == "router_port"
    assert model_name("tests/api/netmodel.py") == "netmodel"
    assert model_name("tests.models.things") == "things"
    assert parse_model_option("lab=examples/router_port") == ("lab", "examples/router_port")
    assert parse_model_option("examples/router_port") == ("router_port", "examples/router_port")
    choices = ModelChoices({"lab": "x.y"})
    assert choices.resolve("lab") == "x.y" and choices.resolve("x.y") == "x.y"
    with pytest.raises(InvalidInput, match="lab"):
        choices.resolve("os")
