"""Bodies say what they mean (issue 31, L7): a number is not a string, and a compile of
instances that do not exist is refused naming them, not answered ``success``."""

from __future__ import annotations

import types
import typing
import uuid
from typing import Any

import httpx
from fastapi.routing import APIRoute
from pydantic import BaseModel

from lsm.api.app import ROUTERS

SCALARS = (int, float, bool)


def _scalar_fields(model: type[BaseModel], seen: set[type]) -> list[tuple[str, str, bool]]:
    """``(model, field, strict)`` of every int/float/bool field of a body model, nested too."""
    if model in seen:
        return []
    seen.add(model)
    found = []
    for name, field in model.model_fields.items():
        args = [field.annotation]
        while args:
            tp = args.pop()
            origin = typing.get_origin(tp)
            if origin in (typing.Union, types.UnionType, list, dict):
                args.extend(typing.get_args(tp))
            elif isinstance(tp, type) and issubclass(tp, BaseModel):
                found += _scalar_fields(tp, seen)
            elif tp in SCALARS:
                strict = bool(model.model_config.get("strict")) or any(
                    getattr(m, "strict", False) for m in field.metadata
                )
                found.append((model.__name__, name, strict))
    return found


def test_every_number_and_boolean_of_a_request_body_is_strict() -> None:
    fields: list[tuple[str, str, bool]] = []
    seen: set[type] = set()
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.body_field is not None:
                annotation = route.body_field.field_info.annotation
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    fields += _scalar_fields(annotation, seen)
    assert ("UpdateInstance", "current_version", True) in fields
    assert [(m, n) for m, n, strict in fields if not strict] == []


def test_numeric_strings_are_refused_where_a_number_or_a_flag_is_expected(http: httpx.Client) -> None:
    note = http.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "strict"}}).json()
    refused: dict[str, tuple[str, str, Any]] = {
        "current_version": (
            "PATCH",
            f"/lsm/v1/service_inventory/note/{note['id']}",
            {"current_version": "1", "attributes": {"text": "x"}},
        ),
        "dry_run": ("POST", "/api/v1/deploy", {"dry_run": "true"}),
        "expires_in": ("POST", "/api/v1/tokens", {"name": "t", "roles": {"*": "viewer"}, "expires_in": "60"}),
    }
    for field, (method, path, body) in refused.items():
        answer = http.request(method, path, json=body)
        assert answer.status_code == 422, (field, answer.text)
        assert field in answer.text
    assert http.get("/api/v1/tokens").json() == []


def test_a_partial_compile_of_unknown_ids_is_a_404_naming_them(http: httpx.Client) -> None:
    note = http.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "known"}}).json()
    missing = [str(uuid.uuid4()), "not-an-id"]
    before = http.get("/api/v1/compiles").json()
    for body in (
        {"kind": "partial", "instance_ids": [note["id"], *missing]},
        {"kind": "partial", "instance_ids": missing, "explain": True},
    ):
        answer = http.post("/api/v1/compiles", json=body)
        assert answer.status_code == 404, answer.text
        assert answer.json()["instances"] == missing and answer.json()["field"] == "instance_ids"
    assert http.get("/api/v1/compiles").json() == before  # nothing queued
    known = http.post("/api/v1/compiles", json={"kind": "partial", "instance_ids": [note["id"]]})
    assert known.status_code == 200, known.text
