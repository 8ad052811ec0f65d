"""API tokens: minted, hashed, found by their hash, revoked.

Why SHA-256 and not argon2/bcrypt: a token is 32 random bytes (``secrets.token_urlsafe(32)``,
256 bits), not a password a person chose. Slow, salted password hashes exist to make guessing
low-entropy secrets expensive; nobody can enumerate 2^256 candidates however fast the hash is.
A plain SHA-256 of a high-entropy token is what GitHub and Stripe store, it is computed per
request in microseconds, and it is deterministic, so the token is found by a keyed lookup on
its hash (a salted hash would need a scan). A stolen database gives no usable token.

Tokens carry the ``lsm_`` prefix so that the API tells them from JWTs, and secret scanners
recognise them.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from lsm.schemas.auth import TOKEN_PREFIX
from lsm.store.auth.tables import TokenRow


def mint() -> str:
    """A new secret token: the prefix and 32 random bytes, URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What is stored of a token (see the module docstring)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def as_utc(moment: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite hands back naive ones)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def find_by_secret(session: Session, token: str) -> TokenRow | None:
    """The row of ``token`` (one keyed read), whatever its state; ``None`` when unknown."""
    return session.exec(select(TokenRow).where(TokenRow.token_hash == token_hash(token))).first()


def is_valid(row: TokenRow, now: datetime) -> bool:
    """Not revoked and not expired at ``now``."""
    return row.revoked_at is None and as_utc(row.expires_at) > now


def list_tokens(session: Session) -> list[TokenRow]:
    return list(session.exec(select(TokenRow).order_by(col(TokenRow.created_at), col(TokenRow.id))))


def issue(
    session: Session,
    *,
    name: str,
    roles: dict[str, str],
    expires_at: datetime,
    created_by: str | None,
) -> tuple[TokenRow, str]:
    """Store a new token in the caller's transaction; the row and the secret (shown once)."""
    secret = mint()
    row = TokenRow(
        name=name,
        token_hash=token_hash(secret),
        roles=dict(roles),
        expires_at=expires_at,
        created_by=created_by,
    )
    session.add(row)
    session.flush()
    return row, secret
