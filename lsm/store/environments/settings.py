"""Environment settings: the keys an operator may set per environment, their types and defaults.

Why a pydantic model: unknown keys and ill-typed values must be refused with a 422 naming the
key, and every reader must get a typed value with its default, from one definition.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lsm.errors import InvalidInput, InvalidSetting

#: A selector name, a name with parameters, or a union of those (``lsm.selection.specs``).
SelectorSpec = str | dict[str, Any] | list[str | dict[str, Any]]


def selector_parts(spec: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(name, params)`` of every selector a spec names; ``InvalidInput`` for a malformed one.

    Only the shape is checked here (the store knows no selectors): a non-empty name, a
    ``{"name", "params"}`` object with a parameter object, or a non-empty list of those.
    """
    items = spec if isinstance(spec, list) else [spec]
    if not items:
        raise InvalidInput("a selector union needs at least one selector", selector=spec)
    parts: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        if isinstance(item, str) and item.strip():
            parts.append((item.strip(), {}))
        elif (
            isinstance(item, dict)
            and set(item) <= {"name", "params"}
            and isinstance(item.get("name"), str)
            and item["name"].strip()
            and isinstance(item.get("params", {}), dict)
        ):
            parts.append((item["name"].strip(), dict(item.get("params", {}))))
        else:
            raise InvalidInput(
                f"not a selector: {item!r} (a name, {{'name': ..., 'params': {{...}}}}, or a list of those)",
                selector=item,
            )
    return parts


class EnvironmentSettings(BaseModel):
    """Settings of one environment (``GET/PUT /api/v1/environments/{env}/settings``)."""

    #: strict: ``"partial_compiles": 0`` is refused, not read as false
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)

    partial_compiles: bool = Field(True, description="Lifecycle-triggered exporting compiles are partial.")
    batched_partial_compiles: bool = Field(True, description="Pending partial compiles merge into one.")
    recompile_backoff: float = Field(
        0.0, ge=0, description="Seconds to wait for more requests before a compile."
    )
    selector: SelectorSpec = Field(
        "owner_tree",
        description="The selector of partial compiles: a name, {name, params}, or a list of those (union).",
    )
    auto_full_compile: str = Field(
        "", description="Cron expression (UTC) for periodic full compiles; empty = off."
    )
    desired_state_retention: int = Field(100, ge=1, description="Desired-state versions kept.")
    deploy_repair_interval: float = Field(600.0, ge=0, description="Seconds between repair deploys.")
    deploy_noop: bool = Field(
        False, description="Global noop: agents only read and report changes; no resource can undo it."
    )
    deploy_timeout: float = Field(
        300.0, gt=0, le=86_400, description="Seconds one resource's handler may run before its deploy fails."
    )
    compile_timeout: float = Field(
        300.0, gt=0, le=86_400, description="Seconds a compile may run before it is stopped and failed."
    )
    compile_memory_limit: int = Field(
        4096,
        ge=256,
        le=1_048_576,
        description="MiB of address space the process that runs a compile's model may use (RLIMIT_AS).",
    )
    validation_batch: int = Field(
        100,
        ge=1,
        le=10_000,
        description="Validation compiles of different trees run together, up to this many.",
    )
    max_order_items: int = Field(
        5_000,
        ge=1,
        le=10_000,
        description="The most items one order (POST /lsm/v1/order) may hold; a bigger one is refused whole.",
    )

    expert_mode: bool = Field(
        False,
        description="Expert calls (force state, attributes, destroy) are allowed, to admins, with a reason.",
    )

    @field_validator("selector")
    @classmethod
    def _selector(cls, value: SelectorSpec) -> SelectorSpec:
        try:
            selector_parts(value)
        except InvalidInput as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator("auto_full_compile")
    @classmethod
    def _cron(cls, value: str) -> str:
        if value.strip():
            from croniter import croniter

            if not croniter.is_valid(value):
                raise ValueError(f"not a valid cron expression: {value!r}")
        return value.strip()


def parse_settings(stored: dict[str, Any]) -> EnvironmentSettings:
    """Stored settings (already validated when written) with defaults filled in."""
    known = {k: v for k, v in stored.items() if k in EnvironmentSettings.model_fields}
    return EnvironmentSettings.model_validate(known)


def validate_setting(key: str, value: Any) -> Any:
    """Check one ``key = value``; return the typed value or raise ``InvalidSetting`` naming the key."""
    if key not in EnvironmentSettings.model_fields:
        raise InvalidSetting(
            f"unknown setting {key!r}; known: {', '.join(sorted(EnvironmentSettings.model_fields))}", key=key
        )
    try:
        checked = EnvironmentSettings.model_validate({key: value})
    except ValidationError as exc:
        reason = "; ".join(e["msg"] for e in exc.errors())
        raise InvalidSetting(f"setting {key!r}: {reason}", key=key, value=value) from None
    return getattr(checked, key)


def describe_settings() -> dict[str, dict[str, Any]]:
    return {
        name: {"default": field.default, "description": field.description or ""}
        for name, field in EnvironmentSettings.model_fields.items()
    }
