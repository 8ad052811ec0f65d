"""``/api/v1/tokens``: API tokens, created, listed and revoked by an admin over every environment.

The secret is in the answer of the creation only: it is stored hashed (``lsm.store.auth.tokens``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from lsm.api.access import Scope, require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.responses import CHANGE, errors
from lsm.schemas.auth import CreateToken, Role, TokenCreated, TokenOut

router = APIRouter(
    prefix="/api/v1/tokens",
    tags=["tokens"],
    dependencies=[require(Role.ADMIN, scope=Scope.GLOBAL)],
    responses=errors(*CHANGE),
)


@router.post("")
def create_token(body: CreateToken, facades: FacadesDep, ctx: ContextDep) -> TokenCreated:
    """A new token with roles per environment (names or ids, ``*`` for all) and an expiry."""
    return facades.tokens.create(
        ctx, body.name, body.roles, expires_at=body.expires_at, expires_in=body.expires_in
    )


@router.get("")
def list_tokens(facades: FacadesDep, ctx: ContextDep) -> list[TokenOut]:
    """Every token, revoked and expired ones included; never a secret."""
    return facades.tokens.list_tokens(ctx)


@router.delete("/{token_id}")
def revoke_token(
    token_id: Annotated[str, Path(max_length=36, pattern=r"^[0-9a-fA-F-]+$")],
    facades: FacadesDep,
    ctx: ContextDep,
) -> TokenOut:
    """Revoke a token: it is refused from the next request on."""
    return facades.tokens.revoke(ctx, token_id)
