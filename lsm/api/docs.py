"""``/docs``: the Swagger UI over ``/openapi.json``, served from the package, offline.

Why: FastAPI's default page loads swagger-ui from a CDN, so it is blank on a machine without
internet access (a lab, an air-gapped site), which is where an operator needs it. The assets
ship in the ``swagger-ui-bundle`` package (a dependency) and are served under
``/docs/assets``; the page references no other host.
"""

from __future__ import annotations

from pathlib import Path

import swagger_ui_bundle  # type: ignore[import-untyped]
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_URL = "/docs"
ASSETS_URL = "/docs/assets"
#: the directory of swagger-ui's JS and CSS in the installed package
ASSETS_DIR = Path(swagger_ui_bundle.swagger_ui_path)


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and its assets on ``app`` (created with ``docs_url=None``)."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS_DIR), name="docs-assets")

    @app.get(DOCS_URL, include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - API",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        )
