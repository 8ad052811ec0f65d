"""Instance references that hold a ``/``: ``path=/srv/a.txt`` as one path segment.

Why: an identity value may contain a slash, and the reference ``<attr>=<value>`` is one
segment of ``/lsm/v1/service_inventory/{entity}/{ref}``. The client sends it percent-encoded
(``path=%2Fsrv%2Fa.txt``), but the server decodes the whole path before routing, so the
segment split in three and routing answered a bare 404. A route converter that matches
slashes (``{ref:path}``) would make ``.../{ref}/state`` ambiguous with an identity value
ending in ``/state``; keeping the encoded slash inside its segment is not.

``KeepEncodedSlashes`` rebuilds the routed path of the inventory routes from the raw one,
decoding every escape except ``%2F`` (a slash inside a segment) and ``%25`` (a percent sign,
so that the two stay apart); ``decode_ref`` (on ``lsm.api.params.InstanceRef``) turns those
two back into ``/`` and ``%``, exactly once.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

#: the escapes kept while routing, and what each stands for
_KEPT = re.compile(r"%2[fF]|%25")


def keep_encoded_slashes(raw: str) -> str:
    """``raw`` (a request's raw path) decoded except ``%2F`` and ``%25`` (upper-cased)."""
    parts = _KEPT.split(raw)
    kept = [m.group().upper() for m in _KEPT.finditer(raw)]
    out = [unquote(parts[0])]
    for escape, part in zip(kept, parts[1:], strict=True):
        out += [escape, unquote(part)]
    return "".join(out)


def decode_ref(value: str) -> str:
    """A reference routed by ``KeepEncodedSlashes`` as the caller wrote it."""
    return _KEPT.sub(lambda m: "/" if m.group().upper() == "%2F" else "%", value)


class KeepEncodedSlashes:
    """Route the paths under ``prefix`` with their encoded slashes kept (see the module doc)."""

    def __init__(self, app: ASGIApp, *, prefix: str) -> None:
        self.app = app
        self.prefix = prefix.rstrip("/") + "/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.prefix):
            raw = scope.get("raw_path")
            if raw is None:  # no raw path: slashes are lost, but a percent sign must survive decode_ref
                scope = {**scope, "path": scope["path"].replace("%", "%25")}
            elif _KEPT.search(text := raw.decode("latin-1").split("?", 1)[0]):
                scope = {**scope, "path": keep_encoded_slashes(text)}
            # else: nothing kept; the decoded path holds no escape that decode_ref would read
        await self.app(scope, receive, send)
