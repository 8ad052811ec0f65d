"""The lifecycle definition as validated data: states, transfers and their consistency rules.

A lifecycle is data (YAML files, see ``lsm_lifecycles``), so everything that can be wrong with
one must be caught here, when it is loaded, and never half-way through an instance's life. This
module only describes and checks; it runs nothing (``machine`` does) and reads no files
(``loading`` does).

Example::

    spec = LifecycleSpec(
        name="tiny", initial_state="start",
        states=[StateSpec(name="start"), StateSpec(name="up", export_resources=True)],
        transfers=[TransferSpec(source="start", target="up", trigger="auto")],
    )
    spec.transfers_from("start")[0].target  # "up"
"""

from __future__ import annotations

import warnings
from collections import deque
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from lsm.errors import LifecycleInvalid

Label = Literal["info", "success", "warning", "danger"]
AttributeSetName = Literal["candidate", "active"]
Operation = Literal["promote", "rollback", "clear candidate", "clear active", "clear rollback"]
Trigger = Literal["auto", "api_set_state", "on_update", "on_delete", "resource_based", "export_failed"]

#: Triggers whose transfer may run a validation compile first.
VALIDATING_TRIGGERS: frozenset[str] = frozenset({"auto", "api_set_state"})

#: The trigger of a failed exporting compile: it fires in every instance that waited on the
#: export (its desired state was not exported). Its transfer IS the error outcome, so it has a
#: ``target`` and no ``error``.
EXPORT_FAILED: Final = "export_failed"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StateSpec(_Frozen):
    """One state and what being in it means for exports and validation compiles."""

    #: No ``:``: the machine's trigger names (``api_set_state:<target>:error``) use it.
    name: str = Field(min_length=1, pattern=r"^[^:]+$")
    label: Label = "info"
    export_resources: bool = False
    validate_self: AttributeSetName | None = None
    validate_others: AttributeSetName | None = None
    purge_resources: bool = False
    deleted: bool = False
    description: str = ""


# ``validate`` is the field's name in docs/semantics.md §1 and in every YAML file; it shadows the
# deprecated ``BaseModel.validate`` classmethod, which pydantic warns about at class creation.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message='Field name "validate"', category=UserWarning)

    class TransferSpec(_Frozen):
        """One transfer: ``source -> target`` on a trigger, and ``-> error`` when it can fail."""

        source: str
        target: str
        error: str | None = None
        trigger: Trigger
        validate: bool = False  # type: ignore[assignment]  # shadows the deprecated BaseModel.validate
        target_operation: Operation | None = None
        error_operation: Operation | None = None
        config_name: str | None = None
        description: str = ""
        target_same_desired_state: bool = False
        error_same_desired_state: bool = False
        #: ask for an exporting compile on this edge even when the desired state does not change:
        #: the way back from a state a failed export left (``delete_failed -> deleting``), whose
        #: desired state was never exported
        request_export: bool = False

        @property
        def can_fail(self) -> bool:
            """Only a validation compile or a deploy has an outcome that can be a failure."""
            return self.validate or self.trigger == "resource_based"

        def __str__(self) -> str:
            error = f" ({self.error})" if self.error else ""
            return f"{self.source} -> {self.target}{error} [{self.trigger}]"


class LifecycleSpec(_Frozen):
    """A whole lifecycle; constructing one checks every consistency rule (see ``check``)."""

    name: str
    description: str = ""
    initial_state: str
    alternative_initial_states: list[str] = []
    states: list[StateSpec]
    transfers: list[TransferSpec]

    _by_name: dict[str, StateSpec] = PrivateAttr(default_factory=dict)
    _outgoing: dict[str, list[TransferSpec]] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_data(cls, data: Any, *, source: str | None = None) -> LifecycleSpec:
        """Validate raw data (parsed YAML); every problem, field or rule, is a LifecycleInvalid.

        ``source`` (a file name) is put in front of the message and in the details, so that an
        operator with twenty lifecycle files knows which one to fix.
        """
        prefix = f"{source}: " if source else ""
        extra: dict[str, Any] = {"file": source} if source else {}
        if not isinstance(data, dict):
            raise LifecycleInvalid(
                f"{prefix}a lifecycle must be a mapping, got {type(data).__name__}", rule="schema", **extra
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            errors = [
                {"path": ".".join(str(p) for p in err["loc"]) or "<root>", "reason": err["msg"]}
                for err in exc.errors()
            ]
            listing = "; ".join(f"{e['path']}: {e['reason']}" for e in errors)
            name = data.get("name", "?")
            raise LifecycleInvalid(
                f"{prefix}lifecycle {name!r} is not valid: {listing}",
                rule="schema",
                lifecycle=name,
                errors=errors,
                **extra,
            ) from exc
        except LifecycleInvalid as exc:
            if not source:
                raise
            raise LifecycleInvalid(prefix + exc.message, **{**exc.details, **extra}) from exc

    @model_validator(mode="after")
    def _check_and_index(self) -> LifecycleSpec:
        self.check()
        self._by_name = {s.name: s for s in self.states}
        outgoing: dict[str, list[TransferSpec]] = {s.name: [] for s in self.states}
        for transfer in self.transfers:
            outgoing[transfer.source].append(transfer)
        self._outgoing = outgoing
        return self

    @property
    def initial_states(self) -> list[str]:
        """The states a create request may start in: the initial one first."""
        return [self.initial_state, *self.alternative_initial_states]

    def state(self, name: str) -> StateSpec:
        """The state called ``name``; a KeyError naming the lifecycle if there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"lifecycle {self.name!r} has no state {name!r}") from None

    def has_state(self, name: str) -> bool:
        return name in self._by_name

    def transfers_from(self, state: str) -> list[TransferSpec]:
        """The transfers leaving ``state``, in definition order (empty for an unknown state)."""
        return list(self._outgoing.get(state, ()))

    def check(self) -> None:
        """Raise LifecycleInvalid for the first broken consistency rule.

        The details name the ``rule``, the ``lifecycle`` and the offending ``state`` or
        ``transfer``, so that the API body and the CLI say exactly what to fix.
        """
        _Checker(self).run()


class _Checker:
    """The consistency rules, one method each, in the order an author would want them."""

    def __init__(self, spec: LifecycleSpec) -> None:
        self.spec = spec
        self.names = {s.name for s in spec.states}

    def fail(self, rule: str, message: str, **details: Any) -> None:
        raise LifecycleInvalid(
            f"lifecycle {self.spec.name!r}: {message} (rule {rule})",
            rule=rule,
            lifecycle=self.spec.name,
            **details,
        )

    def run(self) -> None:
        self.duplicate_states()
        self.unknown_states()
        self.transfer_rules()
        self.trigger_rules()
        self.unreachable_states()

    def duplicate_states(self) -> None:
        seen: set[str] = set()
        for state in self.spec.states:
            if state.name in seen:
                self.fail("duplicate_state", f"state {state.name!r} is defined twice", state=state.name)
            seen.add(state.name)

    def unknown_states(self) -> None:
        for field, name in [("initial_state", self.spec.initial_state)] + [
            ("alternative_initial_states", n) for n in self.spec.alternative_initial_states
        ]:
            if name not in self.names:
                self.fail("unknown_state", f"{field} {name!r} is not a state", state=name, field=field)
        for transfer in self.spec.transfers:
            for field in ("source", "target", "error"):
                name = getattr(transfer, field)
                if name is not None and name not in self.names:
                    self.fail(
                        "unknown_state",
                        f"transfer {transfer} has unknown {field} state {name!r}",
                        state=name,
                        field=field,
                        transfer=str(transfer),
                    )

    def transfer_rules(self) -> None:
        deleted = {s.name for s in self.spec.states if s.deleted}
        for transfer in self.spec.transfers:
            details = {"transfer": str(transfer), "state": transfer.source}
            if transfer.source in deleted:
                self.fail(
                    "transfer_from_deleted",
                    f"transfer {transfer} leaves deleted state {transfer.source!r}",
                    **details,
                )
            if transfer.validate and transfer.trigger not in VALIDATING_TRIGGERS:
                self.fail(
                    "validate_trigger",
                    f"transfer {transfer} validates, which only auto and api_set_state transfers can",
                    **details,
                )
            if transfer.error is not None and not transfer.can_fail:
                self.fail(
                    "error_cannot_fail",
                    f"transfer {transfer} has an error state but cannot fail "
                    "(only validate and resource_based transfers can)",
                    **details,
                )
            if transfer.error_operation is not None and transfer.error is None:
                self.fail(
                    "error_operation_without_error",
                    f"transfer {transfer} has an error_operation but no error state",
                    **details,
                )
            if transfer.trigger == EXPORT_FAILED and not self.exports(transfer.source):
                self.fail(
                    "export_failed_source",
                    f"transfer {transfer} fires on a failed export, but state {transfer.source!r} "
                    "exports nothing (only states with export_resources wait on an export)",
                    **details,
                )
            if transfer.request_export and not self.exports(transfer.target):
                self.fail(
                    "request_export_target",
                    f"transfer {transfer} requests an export, but state {transfer.target!r} exports nothing",
                    **details,
                )
            if transfer.config_name is not None and transfer.trigger != "auto":
                self.fail(
                    "config_name_not_auto",
                    f"transfer {transfer} has a config_name, which only switches auto transfers",
                    **details,
                )

    def exports(self, state: str) -> bool:
        return any(s.export_resources for s in self.spec.states if s.name == state)

    def trigger_rules(self) -> None:
        autos: dict[str, TransferSpec] = {}
        seen: dict[tuple[str, str, str], TransferSpec] = {}
        for transfer in self.spec.transfers:
            details = {"transfer": str(transfer), "state": transfer.source}
            if transfer.trigger == "auto":
                if transfer.source in autos:
                    self.fail(
                        "multiple_auto",
                        f"state {transfer.source!r} has more than one auto transfer: "
                        f"{autos[transfer.source]} and {transfer}",
                        **details,
                    )
                autos[transfer.source] = transfer
            target = transfer.target if transfer.trigger == "api_set_state" else ""
            key = (transfer.source, transfer.trigger, target)
            if key in seen:
                self.fail(
                    "duplicate_trigger",
                    f"state {transfer.source!r} has two {transfer.trigger} transfers: "
                    f"{seen[key]} and {transfer}",
                    **details,
                )
            seen[key] = transfer

    def unreachable_states(self) -> None:
        edges: dict[str, set[str]] = {name: set() for name in self.names}
        for transfer in self.spec.transfers:
            edges[transfer.source].add(transfer.target)
            if transfer.error is not None:
                edges[transfer.source].add(transfer.error)
        reached = set(self.spec.initial_states)
        todo = deque(reached)
        while todo:
            for nxt in edges[todo.popleft()] - reached:
                reached.add(nxt)
                todo.append(nxt)
        for state in self.spec.states:
            if state.name not in reached:
                self.fail(
                    "unreachable_state",
                    f"state {state.name!r} cannot be reached from the initial states",
                    state=state.name,
                )
