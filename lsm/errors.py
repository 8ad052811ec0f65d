"""The one exception tree of lsm-engine.

Every error the engine raises on purpose is an ``LsmError``. Each class carries the HTTP
status it maps to and a short ``kind`` used in the API error body
``{"error": kind, "message": ..., **details}``; the API turns them into responses in one place
(``lsm.api.errors``), the client turns such bodies back into the same classes.

::

    LsmError (500 internal)
    ├── NotFound (404 not_found)
    │   ├── UnknownEnvironment, UnknownEntity, UnknownInstance
    │   ├── UnknownVersion, UnknownCompile, UnknownLifecycle, UnknownSelector, UnknownResource,
    │   │   UnknownResourceSet
    ├── Conflict (409 conflict)
    │   ├── VersionConflict          current_version mismatch
    │   ├── TransferNotAllowed       no transfer for that trigger in this state (lists allowed)
    │   ├── IdentityConflict         identity attribute value already taken
    │   └── ExpertModeOff            an expert call while the setting ``expert_mode`` is off
    ├── InvalidInput (422 invalid_input)
    │   ├── InvalidAttributes        names each offending attribute path and why
    │   ├── InvalidSetting           unknown setting key or ill-typed value
    │   ├── InvalidDiscoveryOutput   a discovery handler returned a bad id or unserialisable values
    │   ├── IdempotencyKeyReused     an Idempotency-Key sent again with another request
    │   └── WebhookTargetRefused     a webhook URL on an internal address (names the ``rule``)
    ├── RuleViolation (400 rule_violation)
    │   ├── LifecycleInvalid         a lifecycle definition breaks a consistency rule
    │   ├── ExportRuleViolation      a partial export breaks a rule of docs/semantics.md §4
    │   ├── InvalidMetaparameter     a resource's metaparameters break a rule of §5 (names it)
    │   └── OperationNotPossible     an attribute-set operation lacks its input (promote w/o candidate)
    ├── Unauthenticated (401 unauthenticated)  no token, or one that is unknown, expired or revoked
    ├── Forbidden (403 forbidden)      a role too low for the route (an environment the caller
    │                                  may not see is a 404 instead: no existence leak)
    ├── HostNotAllowed (400 host_not_allowed)  a ``Host`` header the server does not answer to
    ├── TooManyStreams (429 too_many_streams)  an event stream past its cap (``Retry-After``)
    ├── ModelError (400 model_error)  a model, implementation or selector failed during a compile
    │   ├── SelectorError
    │   └── CompileLimitExceeded     the model's process passed a limit or died (lsm.compiler.isolation)
    │       ├── CompileTimeout       compile_timeout (also for code blocked outside Python)
    │       ├── CompileMemoryLimit   compile_memory_limit
    │       └── CompileCrashed       the model's process died (killed, crashed)
    ├── ConfigurationError (400 configuration_error)  bad model path, bad lsm.toml, bad plugin
    └── Unavailable (503 unavailable)  the database connection was lost meanwhile: retry after
                                       the answer's Retry-After

Nothing here imports the rest of the engine: it is the bottom of every layer.
"""

from __future__ import annotations

from typing import Any, ClassVar


class LsmError(Exception):
    """Base of every deliberate engine error: a message for a person plus structured details."""

    status: ClassVar[int] = 500
    kind: ClassVar[str] = "internal"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details

    def to_body(self) -> dict[str, Any]:
        """The API error body: ``{"error", "message", **details}``."""
        return {"error": self.kind, "message": self.message, **self.details}

    def __str__(self) -> str:
        return self.message


class NotFound(LsmError):
    status = 404
    kind = "not_found"


class UnknownEnvironment(NotFound):
    pass


class UnknownEntity(NotFound):
    pass


class UnknownInstance(NotFound):
    pass


class UnknownVersion(NotFound):
    pass


class UnknownCompile(NotFound):
    pass


class UnknownLifecycle(NotFound):
    pass


class UnknownSelector(NotFound):
    pass


class UnknownResourceSet(NotFound):
    """A resource set name that the desired-state version does not hold."""


class UnknownResource(NotFound):
    """A resource id that neither the deploy state nor the newest desired state holds."""


class Conflict(LsmError):
    status = 409
    kind = "conflict"


class VersionConflict(Conflict):
    kind = "version_conflict"


class TransferNotAllowed(Conflict):
    kind = "transfer_not_allowed"


class IdentityConflict(Conflict):
    kind = "identity_conflict"


class ExpertModeOff(Conflict):
    """An expert call (force state, attributes, destroy) while ``expert_mode`` is off; names it."""

    kind = "expert_mode_off"


class InvalidInput(LsmError):
    status = 422
    kind = "invalid_input"


class InvalidAttributes(InvalidInput):
    """Attributes that fail their schema or modifier; ``errors`` is ``[{"path", "reason"}]``."""

    kind = "invalid_attributes"

    def __init__(self, errors: list[dict[str, str]], message: str | None = None, **details: Any) -> None:
        if message is None:
            message = "invalid attributes: " + "; ".join(f"{e['path']}: {e['reason']}" for e in errors)
        super().__init__(message, errors=errors, **details)
        self.errors = errors


class InvalidSetting(InvalidInput):
    kind = "invalid_setting"


class InvalidDiscoveryOutput(InvalidInput):
    """A discovery run's output can not be stored; ``resource_id`` names the bad entry."""

    kind = "invalid_discovery_output"


class IdempotencyKeyReused(InvalidInput):
    """The ``Idempotency-Key`` of this create was used for another request (another body)."""

    kind = "idempotency_key_reused"


class WebhookTargetRefused(InvalidInput):
    """A webhook URL whose host is (or resolves to) an internal address; ``rule`` names the range."""

    kind = "webhook_target_refused"


class RuleViolation(LsmError):
    status = 400
    kind = "rule_violation"


class LifecycleInvalid(RuleViolation):
    kind = "lifecycle_invalid"


class ExportRuleViolation(RuleViolation):
    """A partial (or full) export broke a rule; ``rule`` is its number in docs/semantics.md §4."""

    kind = "export_rule_violation"


class InvalidMetaparameter(RuleViolation):
    """A resource's deploy metaparameters break a rule of docs/semantics.md §5 (``resource``, ``field``).

    Checked when a version is stored, so nothing that produced the record (a model, an import)
    can put a value the deploy engine could not honour into the desired state.
    """

    kind = "invalid_metaparameter"


class OperationNotPossible(RuleViolation):
    kind = "operation_not_possible"


class Unauthenticated(LsmError):
    status = 401
    kind = "unauthenticated"


class Forbidden(LsmError):
    status = 403
    kind = "forbidden"


class HostNotAllowed(LsmError):
    """The request's ``Host`` is not a name the server answers to (DNS rebinding, docs/api.md §1)."""

    status = 400
    kind = "host_not_allowed"


class TooManyStreams(LsmError):
    """An event stream past the caller's or the server's cap; ``retry_after`` seconds."""

    status = 429
    kind = "too_many_streams"


class ModelError(LsmError):
    status = 400
    kind = "model_error"


class SelectorError(ModelError):
    kind = "selector_error"


class CompileLimitExceeded(ModelError):
    """The process that ran the model was stopped: a limit, or it died. The request fails."""

    kind = "compile_limit"


class CompileTimeout(CompileLimitExceeded):
    kind = "compile_timeout"


class CompileMemoryLimit(CompileLimitExceeded):
    kind = "compile_memory_limit"


class CompileCrashed(CompileLimitExceeded):
    kind = "compile_crashed"


class ConfigurationError(LsmError):
    status = 400
    kind = "configuration_error"


class Unavailable(LsmError):
    """The request met the database at a bad moment (a lost connection, a server restarting):
    nothing is wrong with it, and the same request is answered after ``retry_after`` seconds."""

    status = 503
    kind = "unavailable"


#: kind -> class, so that the client can raise the same class the server raised.
ERRORS_BY_KIND: dict[str, type[LsmError]] = {}


def _register(cls: type[LsmError]) -> None:
    ERRORS_BY_KIND.setdefault(cls.kind, cls)
    for sub in cls.__subclasses__():
        _register(sub)


_register(LsmError)


class TimeLimitExceeded(BaseException):
    """Raised inside a thread whose work (a compile) overran its time limit.

    A ``BaseException``, not an ``LsmError``: a model's ``except Exception`` must not swallow it.
    """
