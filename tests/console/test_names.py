"""Inventory columns: the binding's ``summary`` and references named by identity."""

from __future__ import annotations

import pytest

import lsm
from lsm.catalog.binding import SUMMARY_DEFAULT
from lsm.catalog.catalog import Catalog
from lsm.errors import ConfigurationError


class Box(lsm.ServiceEntity):
    label: str
    a: int = 0
    b: int = 0
    c: int = 0
    d: int = 0


def test_the_summary_is_the_identity_and_the_first_few_by_default_or_what_the_binding_names() -> None:
    assert lsm.Binding(Box, name="box", identity="label").summary_attributes() == ["label", "a", "b", "c"]
    assert len(lsm.Binding(Box, name="box").summary_attributes()) == SUMMARY_DEFAULT
    assert lsm.Binding(Box, name="box", summary=("d", "a")).summary_attributes() == ["d", "a"]
    assert lsm.Binding(Box, name="box", summary=("d",)).describe()["summary"] == ["d"]


def test_a_summary_naming_no_attribute_is_refused_when_the_catalog_is_built() -> None:
    with pytest.raises(ConfigurationError, match="summary names \\['nope'\\]"):
        Catalog([lsm.Binding(Box, name="box", summary=("a", "nope"))])
