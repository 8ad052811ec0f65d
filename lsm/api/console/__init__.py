"""The web console: server-rendered pages at ``/`` over the same facades, tokens and roles as the API.

Why in the api layer: a console page is an HTTP edge like a route -- it parses a request, calls
a facade, formats the answer (as HTML). It holds no rule: what an action may do is decided by
the facades and the orchestration below, exactly as for the API (docs/console.md).

``install_console(app)`` adds the console routers to an app built by ``create_app``; every
console route declares its role (``lsm.api.console.session.console_require`` or ``public()``),
checked at start like the API's.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from lsm.api.access import check_declared
from lsm.api.console import (
    catalog,
    compiles_pages,
    compliance_pages,
    desired_state_pages,
    discovered_pages,
    expert,
    instance,
    inventory,
    live,
    login,
    resources_pages,
)
from lsm.api.console.session import new_secret

#: every console router, in the order they are included
CONSOLE_ROUTERS: tuple[APIRouter, ...] = (
    login.router,
    catalog.router,
    live.router,
    inventory.router,
    instance.router,
    expert.router,  # the instance page's danger zone
    # the operations pages (lsm.api.console.operations)
    compiles_pages.router,
    desired_state_pages.router,
    resources_pages.router,
    compliance_pages.router,
    discovered_pages.router,
)


def install_console(app: FastAPI) -> None:
    """Serve the console on ``app`` (a per-app CSRF key; every route's role checked)."""
    app.state.console_secret = new_secret()
    check_declared(CONSOLE_ROUTERS)
    for router in CONSOLE_ROUTERS:
        app.include_router(router)


__all__ = ["CONSOLE_ROUTERS", "install_console"]
