"""Tables of authentication and the audit trail: API tokens and audit lines.

Why these shapes:

* ``lsm_token``: one row per API token, found by ``token_hash`` (a unique index: the lookup
  that authenticates every request is one keyed read). The secret itself is never stored,
  only its SHA-256 (``lsm.store.auth.tokens`` says why that hash). ``roles`` maps an
  environment id (or ``*``) to a role. A revoked token keeps its row (``revoked_at``) so that
  the audit trail can still name it.
* ``lsm_console_session``: one row per console sign-in (``lsm.store.auth.sessions``), found by
  the SHA-256 of the random session id the browser's cookie carries, bound to the token it
  signed in with (``token_id``, indexed: revoking a token deletes its sessions) or, for a JWT,
  to the actor and roles it had; ``expires_at`` ends it. Logging out deletes the row.
* ``lsm_audit``: who changed what outside the instance event log and the compile queue
  (environments, settings, tokens), with the actor and the request id; ``GET /api/v1/audit``
  lists it together with those two (``lsm.store.audit``). Indexed for its filters: by
  time, by actor, by environment.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index
from sqlmodel import Field, SQLModel

from lsm.store.database import JsonType
from lsm.store.tables import new_id, utcnow


class TokenRow(SQLModel, table=True):
    """An API token: its hash, name, roles per environment, expiry and revocation."""

    __tablename__ = "lsm_token"
    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    name: str = Field(max_length=200)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    roles: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    revoked_at: datetime | None = None
    created_by: str | None = Field(default=None, max_length=200)


class ConsoleSessionRow(SQLModel, table=True):
    """A console sign-in: the hash of its session id, who it is, and until when."""

    __tablename__ = "lsm_console_session"
    id_hash: str = Field(primary_key=True, max_length=64)
    token_id: str | None = Field(default=None, max_length=36, index=True)
    actor: str = Field(max_length=200)
    roles: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime


class AuditRow(SQLModel, table=True):
    """One audited change: an environment created, a setting set, a token created or revoked."""

    __tablename__ = "lsm_audit"
    __table_args__ = (
        Index("ix_lsm_audit_time", "created_at"),
        Index("ix_lsm_audit_actor", "actor", "created_at"),
        Index("ix_lsm_audit_env", "env_id", "created_at"),
    )
    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow)
    actor: str | None = Field(default=None, max_length=200)
    request_id: str | None = Field(default=None, max_length=100)
    action: str = Field(max_length=50)
    target: str | None = Field(default=None, max_length=200)
    env_id: str | None = Field(default=None, max_length=36)
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
