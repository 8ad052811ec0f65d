"""``enqueue``: the one way a compile request is written, in the caller's transaction.

Why one function: compile requests are written by the orchestration (validation and export
requests committed with the state change that caused them), by the API (operators and CI
asking for compiles) and by the scheduler (``auto_full_compile``). They must all carry the
same typed fields, so that the queue can claim them without guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, event, text
from sqlmodel import Session

from lsm.schemas.compiles import CompileKind, CompileStatus
from lsm.store.row_values import row_values
from lsm.store.tables import CompileRow

#: the PostgreSQL channel a worker LISTENs on (``lsm.services.wakeup``)
NOTIFY_CHANNEL = "lsm_work"


class ValidationParams(BaseModel):
    """What a validation compile needs: the instance version it validates and the transfer it ends."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_version: int
    trigger: Literal["auto", "api_set_state"] = "auto"
    target: str | None = None


@dataclass(frozen=True)
class CompileOrder:
    """A compile request before it is a row. ``validation`` orders name ``instance_id`` and ``params``."""

    env_id: str
    kind: CompileKind
    reason: str
    requested_ids: list[str] = field(default_factory=list)
    service_entities: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    instance_id: str | None = None
    validation: ValidationParams | None = None
    #: the selector this request asks for (``None``: the environment's setting)
    selector: str | dict[str, object] | list[object] | None = None
    #: full compiles: ``False`` refines every tree (``None``: only what changed, when it may)
    incremental: bool | None = None
    actor: str | None = None
    request_id: str | None = None

    def __post_init__(self) -> None:
        if (self.kind is CompileKind.VALIDATION) != (self.validation is not None):
            raise ValueError("validation parameters go with validation compiles, and only with them")


def compile_values(order: CompileOrder) -> dict[str, Any]:
    """The request as the values of its ``lsm_compile`` row (defaults filled in, a new id)."""
    params: dict[str, object] = {}
    if order.validation is not None:
        params.update(order.validation.model_dump())
    if order.selector is not None:
        params["selector"] = order.selector
    if order.incremental is not None:
        params["incremental"] = order.incremental
    return row_values(
        CompileRow,
        env_id=order.env_id,
        kind=order.kind.value,
        status=CompileStatus.QUEUED.value,
        requested_ids=list(order.requested_ids),
        service_entities=list(order.service_entities),
        exclude=list(order.exclude),
        instance_id=order.instance_id,
        reason=order.reason,
        params=params,
        actor=order.actor,
        request_id=order.request_id,
    )


def insert_requests(session: Session, values: list[dict[str, Any]]) -> None:
    """Insert compile requests given as values (``compile_values``), one ``executemany``; the
    caller has sent ``notify_work`` for their environments."""
    if values:
        session.connection().execute(COMPILE_TABLE.insert(), values)


#: the compile request table, for inserts of ``compile_values`` rows (``insert_requests``)
COMPILE_TABLE = CompileRow.metadata.tables["lsm_compile"]


def enqueue(session: Session, order: CompileOrder) -> CompileRow:
    """Add the request to ``session`` (committed with the caller's transaction); returns its row."""
    row = CompileRow(**compile_values(order))
    session.add(row)
    notify_work(session, order.env_id)
    return row


def notify_work(session: Session | Connection, env_id: str) -> None:
    """On PostgreSQL, ``NOTIFY lsm_work`` with ``env_id``, delivered when the caller commits.

    Workers and agents in other processes LISTEN on the channel (``lsm.services.wakeup``) and
    look at once instead of at their next poll. On SQLite (one process) it does nothing.
    Through a ``Session``, one notification per environment is sent just before the commit,
    however many requests the transaction queued (a validation round's automatic transfers
    queue hundreds): one round trip instead of one per request.
    """
    bind = session if isinstance(session, Connection) else session.get_bind()
    if bind.dialect.name != "postgresql":
        return
    if isinstance(session, Connection):
        _notify(session, [env_id])
        return
    pending: set[str] | None = session.info.get(_PENDING_NOTIFY)
    if pending is None:
        pending = session.info[_PENDING_NOTIFY] = set()
        event.listen(session, "before_commit", _notify_before_commit, once=True)
    pending.add(env_id)


_PENDING_NOTIFY = "lsm_pending_notify"


def _notify_before_commit(session: Session) -> None:
    _notify(session, sorted(session.info.pop(_PENDING_NOTIFY, ())))


def _notify(session: Session | Connection, env_ids: list[str]) -> None:
    for env_id in env_ids:
        session.execute(text("SELECT pg_notify(:channel, :env)"), {"channel": NOTIFY_CHANNEL, "env": env_id})


def validation_params(row: CompileRow) -> ValidationParams:
    """The parameters of a queued validation request."""
    return ValidationParams.model_validate(
        {k: v for k, v in row.params.items() if k in ValidationParams.model_fields}
    )
