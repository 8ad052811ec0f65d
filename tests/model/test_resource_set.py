"""``lsm.ResourceSet`` and what ``lsm export`` reads from a model (``lsm.model.resource_set``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import lsm
from lsm.errors import ConfigurationError, InvalidInput
from lsm.model import declared_model
from lsm.model.resource_set import collecting, model_of


class Box(lsm.Resource, type="test::Box", id_attribute="name"):
    name: str
    size: int = 1


MODEL = """
import lsm

class Box(lsm.Resource, type="test::Box", id_attribute="name"):
    name: str
    size: int = 1

base = Box(agent="a", name="base")
lsm.shared(Box(agent="a", name="cfg"))
for i in range(3):
    lsm.ResourceSet(name=f"set-{i}", resources=[Box(agent="a", name=f"b{i}", requires=[base])])
kept = lsm.ResourceSet(name="set-0")  # the same name again: one set
kept.resources += [Box(agent="a", name="b0-extra")]
lsm.ResourceSet(name="emptied")
"""


def test_a_model_file_declares_its_sets_shared_resources_and_what_members_require(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    found = declared_model(str(path))
    assert {name: [r.id for r in rs] for name, rs in found.sets.items()} == {
        "set-0": ["test::Box[a,name=b0]", "test::Box[a,name=b0-extra]"],
        "set-1": ["test::Box[a,name=b1]"],
        "set-2": ["test::Box[a,name=b2]"],
        "emptied": [],
    }
    # lsm.shared(...) made while loading, then what a member requires and no set holds
    assert [r.id for r in found.shared] == ["test::Box[a,name=cfg]", "test::Box[a,name=base]"]
    assert found.sets["set-1"][0].requires == ("test::Box[a,name=base]",)
    assert found.resource_count == 6
    # loaded afresh every time: the top level runs again (no set is collected twice or lost)
    assert declared_model(str(path)) == found


def test_one_id_built_twice_differently_is_refused_naming_it() -> None:
    with collecting():
        one = lsm.ResourceSet(name="s", resources=[Box(agent="a", name="x", size=1)])
        two = lsm.ResourceSet(name="s", resources=[Box(agent="a", name="x", size=2)])
    with pytest.raises(InvalidInput) as caught:
        model_of([one, two])
    assert caught.value.details == {"resources": ["test::Box[a,name=x]"], "sets": ["s"]}
    same = model_of([lsm.ResourceSet(name="s", resources=[Box(agent="a", name="x")] * 2)])
    assert [r.id for r in same.sets["s"]] == ["test::Box[a,name=x]"]


def test_a_resource_in_a_set_and_shared_is_left_to_the_export_rules() -> None:
    """Rule 1 is the store's: the declaration keeps both placements, so the server names them."""
    box = Box(agent="a", name="x")
    found = model_of([lsm.ResourceSet(name="s", resources=[box])], [lsm.shared(box)])
    assert [r.id for r in found.sets["s"]] == [r.id for r in found.shared] == ["test::Box[a,name=x]"]


def test_bad_declarations(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        lsm.ResourceSet(name="")
    with pytest.raises(InvalidInput):
        model_of([lsm.ResourceSet(name="s", resources=["not a resource"])])  # type: ignore[list-item]  # the wrong value under test
    nothing = tmp_path / "nothing.py"
    nothing.write_text("import lsm\nBox = 1\n")
    with pytest.raises(ConfigurationError, match=r"declares no lsm\.ResourceSet"):
        declared_model(str(nothing))
    with pytest.raises(ConfigurationError, match=r"can not be imported|not a Python file"):
        declared_model(str(tmp_path / "missing.py"))


def test_outside_a_load_nothing_is_collected() -> None:
    """In a compile, ``lsm.shared`` and sets built by an implementation are not kept anywhere."""
    with collecting() as inside:
        lsm.shared(Box(agent="a", name="in"))
    lsm.shared(Box(agent="a", name="out"))
    lsm.ResourceSet(name="out")
    assert [m.resource.id for m in inside.shared] == ["test::Box[a,name=in]"]
    assert inside.sets == []
