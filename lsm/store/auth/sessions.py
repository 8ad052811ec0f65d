"""Console sessions: opened at sign-in, found by the hash of their id, deleted at sign-out.

Why not the API token in the cookie: a cookie lives in the browser (and in whatever reads its
profile); one that is the token itself is the token's full power for as long as the token
lives, and signing out could not take it back. A session id is random (256 bits), stored only
as its SHA-256 (``lsm.store.auth.tokens.token_hash``, for the reasons given there), expires on its
own, and is deleted by signing out or by revoking the token it was opened with.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, delete, select

from lsm.store.auth.tables import ConsoleSessionRow
from lsm.store.auth.tokens import token_hash

#: what every session id starts with (tells it from an API token in a cookie)
SESSION_PREFIX = "lsms_"


def open_session(
    session: Session,
    *,
    token_id: str | None,
    actor: str,
    roles: dict[str, Any],
    expires_at: datetime,
    now: datetime,
) -> str:
    """Store a new session in the caller's transaction; its id (the cookie's value), shown once.
    Sessions that expired are deleted on the way: signing in is rare, and they are useless."""
    session.exec(delete(ConsoleSessionRow).where(col(ConsoleSessionRow.expires_at) <= now))
    secret = SESSION_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ConsoleSessionRow(
            id_hash=token_hash(secret),
            token_id=token_id,
            actor=actor,
            roles=dict(roles),
            created_at=now,
            expires_at=expires_at,
        )
    )
    session.flush()
    return secret


def find(session: Session, secret: str) -> ConsoleSessionRow | None:
    """The session whose id is ``secret`` (one keyed read), expired or not; ``None`` when unknown."""
    if not secret.startswith(SESSION_PREFIX):
        return None
    return session.get(ConsoleSessionRow, token_hash(secret))


def close(session: Session, secret: str) -> bool:
    """Delete the session ``secret``; whether there was one."""
    row = find(session, secret)
    if row is None:
        return False
    session.delete(row)
    session.flush()
    return True


def close_for_token(session: Session, token_id: str) -> None:
    """Delete every session opened with the token ``token_id`` (it was revoked)."""
    session.exec(delete(ConsoleSessionRow).where(col(ConsoleSessionRow.token_id) == token_id))


def sessions_of(session: Session, token_id: str) -> list[ConsoleSessionRow]:
    return list(session.exec(select(ConsoleSessionRow).where(col(ConsoleSessionRow.token_id) == token_id)))
