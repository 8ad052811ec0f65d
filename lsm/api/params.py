"""Path and query parameters with their bounds, declared once and used by every router.

Why: every number and name that reaches a query must fit the column it is compared with
(``lsm.schemas.limits``): an ``offset`` of 2**70 or a 10 kB entity name used to be a 500 from
the database driver. Declared here, the bounds are checked by FastAPI (a 422 naming the
parameter) and published in ``/openapi.json``. A route that declares its own integer
parameter must bound it too: ``tests/api/test_param_bounds.py`` walks every route's.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Path, Query
from pydantic import AfterValidator

from lsm.api.refs import decode_ref
from lsm.schemas.limits import (
    MAX_ID_LENGTH,
    MAX_IDEMPOTENCY_KEY_LENGTH,
    MAX_INT,
    MAX_NAME_LENGTH,
    MAX_REF_LENGTH,
)

IDEMPOTENCY_HEADER = "Idempotency-Key"

EntityName = Annotated[
    str, Path(min_length=1, max_length=MAX_NAME_LENGTH, description="A service entity's API name.")
]
Name = Annotated[str, Path(min_length=1, max_length=MAX_NAME_LENGTH, description="A name.")]
EnvironmentRef = Annotated[
    str, Path(min_length=1, max_length=MAX_NAME_LENGTH, description="An environment's name or id.")
]
InstanceRef = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_REF_LENGTH,
        description="An instance id, or <identity_attr>=<value> (a `/` in the value sent as %2F).",
    ),
    AfterValidator(decode_ref),
]
Id = Annotated[str, Path(min_length=1, max_length=MAX_ID_LENGTH, description="An id (a UUID).")]
Version = Annotated[int, Path(ge=0, le=MAX_INT, description="A desired-state version.")]
Offset = Annotated[int, Query(ge=0, le=MAX_INT, description="How many items to skip.")]
CurrentVersion = Annotated[
    int, Query(ge=0, le=MAX_INT, description="The version the change is based on; 409 if it is not current.")
]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_HEADER,
        min_length=1,
        max_length=MAX_IDEMPOTENCY_KEY_LENGTH,
        description="Your key for this create (a fresh UUID per create): a retry with the same key and "
        "body answers the first answer instead of creating twice; the same key with another body is 422. "
        "Kept for a day, per environment.",
    ),
]
QueryName = Annotated[str, Query(min_length=1, max_length=MAX_NAME_LENGTH)]
