"""The model of the API, client and CLI tests: routers owning ports, and notes.

``router``/``port`` follow the bundled lifecycles (the real thing). ``note`` follows the test
lifecycle ``notebook`` (tests/api/lifecycles), which allows updates, set-state and deletes
without any compile or deploy, so that request/answer behaviour can be tested deterministically.
"""

from __future__ import annotations

from typing import Annotated

import lsm.catalog as c


class Router(c.ServiceEntity):
    """A router, known by its management address."""

    mgmt_ip: str
    name: str
    mtu: Annotated[int, c.rw_plus] = 1500


class Port(c.ServiceEntity):
    """A port of a router."""

    router: c.Ref[Router]
    name: str
    vlan: Annotated[int | None, c.rw_plus] = None


class Note(c.ServiceEntity):
    """A note with an identity (``title``, rw) and an editable text (rw+)."""

    title: str
    text: Annotated[str, c.rw_plus] = ""
    priority: Annotated[int, c.rw_plus] = 0


router = c.Binding(Router, lifecycle="simple", identity="mgmt_ip")
port = c.Binding(Port, lifecycle="simple_with_delete_validate", owner=router, relation_to_owner="router")
note = c.Binding(Note, lifecycle="notebook", identity="title")
