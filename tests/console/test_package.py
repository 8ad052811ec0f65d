"""The console's templates and static files are package data: found through ``importlib.resources``
(as in a wheel install) and served from there, never from a CDN."""

from __future__ import annotations

import re
from importlib.resources import files

from lsm.api.console.login import STATIC
from lsm.api.console.render import templates


def test_every_static_file_and_template_is_found_through_importlib_resources() -> None:
    package = files("lsm.api.console")
    for name in STATIC:
        assert package.joinpath("static", name).is_file(), name
        assert package.joinpath("static", name).read_bytes()
    for name in ("base.html", "login.html", "error.html", "catalog.html", "entity.html", "overview.html"):
        assert templates().get_template(name) is not None
        assert package.joinpath("templates", name).is_file()


def test_no_page_loads_anything_from_another_site() -> None:
    package = files("lsm.api.console")
    for folder in ("templates", "static"):
        for item in package.joinpath(folder).iterdir():
            text = item.read_text(encoding="utf-8")
            assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), item.name
            assert "cdn" not in text.lower(), item.name
