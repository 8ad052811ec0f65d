"""The HTTP API: ``create_app(facades)`` and one router per resource family.

An edge of the layering: it calls the facades (``lsm.facade``) only, and maps ``lsm.errors`` to
responses in exactly one place (``lsm.api.errors``).
"""

from lsm.api.app import create_app

__all__ = ["create_app"]
