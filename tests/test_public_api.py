"""``import lsm`` is lazy: every public name still resolves, to the object its module defines."""

from __future__ import annotations

import importlib

import lsm


def test_every_public_name_resolves_to_its_modules_object() -> None:
    for name in lsm.__all__:
        value = getattr(lsm, name)
        module = lsm._LAZY.get(name)
        if module is not None:
            assert value is getattr(importlib.import_module(module), name), name
    assert set(lsm._LAZY) <= set(lsm.__all__)
