"""The service catalog and lifecycles: the bodies of ``/lsm/v1/service_catalog`` and ``/lsm/v1/lifecycles``.

These mirror ``lsm.catalog`` and ``lsm.lifecycle`` (docs/semantics.md §1) with plain types,
so that a client can read them without importing the engine's model layer.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class RelationTarget(BaseModel):
    target: str
    many: bool


class AttributeOut(BaseModel):
    """One attribute of an entity: its type, modifier (``r``, ``rw``, ``rw+``) and default."""

    name: str
    type: str
    modifier: str
    required: bool
    default: Any = None
    description: str = ""
    #: the entity this attribute refers to, for an inter-service relation
    relation: RelationTarget | None = None


class RelationOut(BaseModel):
    attribute: str
    target: str
    many: bool


class StateOut(BaseModel):
    name: str
    label: str = "info"
    export_resources: bool = False
    validate_self: str | None = None
    validate_others: str | None = None
    purge_resources: bool = False
    deleted: bool = False
    description: str = ""


class TransferOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    source: str
    target: str
    error: str | None = None
    trigger: str
    #: ``validate`` on the wire (the name of docs/semantics.md §1); it would shadow ``BaseModel.validate``
    validates: bool = Field(False, alias="validate")
    target_operation: str | None = None
    error_operation: str | None = None
    config_name: str | None = None
    description: str = ""
    target_same_desired_state: bool = False
    error_same_desired_state: bool = False


class LifecycleOut(BaseModel):
    """A lifecycle: its states and transfers."""

    name: str
    description: str = ""
    initial_state: str
    alternative_initial_states: list[str] = []
    states: list[StateOut]
    transfers: list[TransferOut]


class EntityOut(BaseModel):
    """A service entity of the catalog, with its lifecycle and how many instances are in each state."""

    name: str
    entity: str
    description: str = ""
    identity: str | None
    owner: str | None
    relation_to_owner: str | None
    #: the attributes an inventory lists per instance (the binding's ``summary``, or the identity
    #: and the first few others)
    summary: list[str] = []
    attributes: list[AttributeOut]
    relations: list[RelationOut]
    lifecycle: LifecycleOut
    instance_summary: dict[str, int]
