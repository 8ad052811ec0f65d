"""``/docs``: the Swagger UI over ``/openapi.json``, served from the package, offline.

Why: FastAPI's default page loads swagger-ui from a CDN, so it is blank on a machine without
internet access (a lab, an air-gapped site), which is where an operator needs it. The assets
ship in the ``swagger-ui-bundle`` package (a dependency) and are served under
``/docs/assets``; the page references no other host.

Who may read them: whoever may use the API. With authentication on, ``/docs`` and
``/openapi.json`` need a viewer role in some environment, by bearer token or by the console's
session cookie (so that a browser signed in to the console reads the docs; without a session
``/docs`` answers the console's login page, ``/openapi.json`` a JSON 401). The assets are
swagger-ui's own files, open to all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import swagger_ui_bundle  # type: ignore[import-untyped]  # the package ships no type hints
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from lsm.api.access import Scope
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import ConsoleAccess, ConsoleDenied, ConsoleUnavailable, console_require
from lsm.schemas.auth import Role

DOCS_URL = "/docs"
OPENAPI_URL = "/openapi.json"
ASSETS_URL = "/docs/assets"
#: the directory of swagger-ui's JS and CSS in the installed package
ASSETS_DIR = Path(swagger_ui_bundle.swagger_ui_path)


@dataclass(frozen=True)
class DocumentAccess(ConsoleAccess):
    """The console's access check (bearer or session cookie) answering as the API does: a JSON
    401/403, not the login page (``/openapi.json`` is read by programs)."""

    def __call__(self, request: Request) -> None:  # type: ignore[override]  # a FastAPI dependency of its own: other parameters, sync
        try:
            super().__call__(request)
        except ConsoleDenied as denied:
            raise denied.error from None
        except ConsoleUnavailable:
            raise HTTPException(503, "the engine is not ready yet") from None


def document_require() -> Any:
    return Depends(DocumentAccess(Role.VIEWER, scope=Scope.SOME))


def install_docs(app: FastAPI) -> None:
    """Serve ``/openapi.json``, ``/docs`` and its assets on ``app`` (created with
    ``openapi_url=None`` and ``docs_url=None``: FastAPI's own routes check no caller)."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS_DIR), name="docs-assets")

    @app.get(OPENAPI_URL, include_in_schema=False, dependencies=[document_require()])
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    # a console route: a browser without a session gets the login form, back to the docs after
    page = APIRouter(include_in_schema=False, route_class=ConsoleRoute)

    @page.get(DOCS_URL, dependencies=[console_require(Role.VIEWER, scope=Scope.SOME)])
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=OPENAPI_URL,
            title=f"{app.title} - API",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        )

    app.include_router(page)
