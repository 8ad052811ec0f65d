"""The error body of every 4xx/5xx answer (docs/api.md §2), as a schema for the OpenAPI document.

The API builds error bodies in ``lsm.api.errors``; these models only describe them, so that
``/openapi.json`` says what a client gets back and generated clients (and schemathesis) can
check it. Details beyond ``error`` and ``message`` vary with the kind, hence ``extra="allow"``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ErrorOut(BaseModel):
    """``{"error": <kind>, "message": <sentence>, ...details}``."""

    model_config = ConfigDict(extra="allow")

    error: str = Field(description="A short machine-readable kind: not_found, version_conflict, ...")
    message: str = Field(description="What went wrong, for a person.")


class FieldErrorOut(BaseModel):
    """One invalid field of a request: where it is and why it was refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    path: str = Field(description="The dotted path of the field (attributes.mtu).")
    reason: str
    in_: str | None = Field(None, alias="in", description="body, query, path or header.")


class InvalidInputOut(ErrorOut):
    """A 422: the request or its attributes are invalid; ``errors`` names each field."""

    errors: list[FieldErrorOut] = Field(default_factory=list)
