"""Reading a console form post: urlencoded fields and the CSRF check, without a multipart library.

Why our own parser: the console's forms are small ``application/x-www-form-urlencoded`` posts
(the body size is already capped by ``lsm.api.limits``); ``urllib.parse`` reads them, and the
``python-multipart`` dependency FastAPI's ``Form`` needs would buy nothing.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import Request

from lsm.api.console.session import CSRF_FIELD, CSRF_HEADER, ConsoleDenied, csrf_ok
from lsm.api.screening import screen_form
from lsm.errors import Forbidden, InvalidInput


async def read_form(request: Request) -> dict[str, str]:
    """The fields of a form post (the last value of a repeated one); refuses a missing CSRF token."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body = await request.body()
    if kind not in ("application/x-www-form-urlencoded", "") and body:
        raise InvalidInput("the console accepts form posts only (application/x-www-form-urlencoded)")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("the form is not UTF-8") from None
    fields = {key: values[-1] for key, values in parse_qs(text, keep_blank_values=True).items()}
    screen_form(fields)  # a %00 is no JSON escape: the app-wide screening did not see it
    sent = fields.pop(CSRF_FIELD, None) or request.headers.get(CSRF_HEADER)
    if not csrf_ok(request, sent):
        raise ConsoleDenied(
            Forbidden("the form's CSRF token is missing or does not match this session: reload the page")
        )
    return fields
