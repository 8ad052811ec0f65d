"""Authentication and authorization: roles, the auth configuration, tokens and audit entries.

Why in ``lsm.schemas`` (the bottom layer): the role a route needs is declared in the API, the
roles a caller holds travel in the facades' ``RequestContext``, and the server configuration
(``lsm.runtime.config``) carries the auth settings; all three must share one definition.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

#: what every API token starts with: tells it from a JWT, and lets secret scanners find it
TOKEN_PREFIX = "lsm_"
#: the scope of a grant over every environment (``{"*": "admin"}``: the first admin token)
ALL_ENVIRONMENTS = "*"
#: the longest token lifetime one may ask for (seconds): ten years
MAX_TOKEN_LIFETIME = 10 * 365 * 24 * 3600
#: the lifetime of a token created without one (seconds): 90 days
DEFAULT_TOKEN_LIFETIME = 90 * 24 * 3600
#: the lifetime of a console session (seconds): a working day
DEFAULT_SESSION_LIFETIME = 12 * 3600


class Role(StrEnum):
    """What a caller may do in an environment; each role includes the ones before it."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def allows(self, needed: Role) -> bool:
        """Whether holding this role is enough for ``needed``."""
        return self.rank >= needed.rank


_RANKS = {Role.VIEWER: 1, Role.OPERATOR: 2, Role.ADMIN: 3}


class AuthConfig(BaseModel):
    """``[auth]`` of lsm.toml. Off by default: every caller is ``local`` with every right.

    Example::

        [auth]
        enabled = true
        jwt_issuer = "https://idp.example.com/"
        jwt_audience = "lsm"
        jwt_key_file = "/etc/lsm/idp-public.pem"   # or jwt_key = "<PEM or HS secret>"
        jwt_algorithms = ["RS256"]
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    #: JWTs from an external identity provider are accepted when issuer, audience and a key are set
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_key: str | None = Field(default=None, repr=False)
    jwt_key_file: str | None = None
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256"])
    #: the claim holding ``{environment: role}`` (or a list of ``"environment:role"``)
    jwt_roles_claim: str = "lsm_roles"
    #: the claim naming the caller (the actor is ``jwt:<value>``)
    jwt_actor_claim: str = "sub"
    #: seconds a console session lasts (it ends sooner with its token or JWT, or at sign-out)
    session_lifetime: float = Field(DEFAULT_SESSION_LIFETIME, gt=0, le=MAX_TOKEN_LIFETIME)

    @property
    def jwt_enabled(self) -> bool:
        return bool(self.jwt_issuer and self.jwt_audience and (self.jwt_key or self.jwt_key_file))


def _plain(value: str) -> str:
    """Refuse what no backend stores: NUL, and lone surrogates (not encodable as UTF-8)."""
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("lone surrogates are not allowed") from None
    return value


#: text every backend stores as it is
PlainText = Annotated[str, AfterValidator(_plain)]
#: an environment name or id, or ``*``, as a key of a token's roles
EnvironmentKey = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_plain)]


class CreateToken(BaseModel):
    """``POST /api/v1/tokens``: a name, roles per environment, and an expiry."""

    model_config = ConfigDict(extra="forbid")

    name: PlainText = Field(min_length=1, max_length=100, description="Who or what the token is for.")
    roles: dict[EnvironmentKey, Role] = Field(
        min_length=1,
        description='Environment name or id (or "*" for every environment) -> role.',
    )
    expires_at: datetime | None = Field(None, description="When the token stops working (UTC).")
    expires_in: int | None = Field(
        None,
        ge=1,
        le=MAX_TOKEN_LIFETIME,
        strict=True,  # "3600" is not a number of seconds (the roles' enum can not be strict)
        description="Seconds from now until it stops working.",
    )

    @model_validator(mode="after")
    def _one_expiry(self) -> CreateToken:
        if self.expires_at is not None and self.expires_in is not None:
            raise ValueError("give expires_at or expires_in, not both")
        return self


class TokenOut(BaseModel):
    """A token as listed: never its secret, which is shown once, at creation."""

    id: str
    name: str
    roles: dict[str, Role]
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None
    created_by: str | None = None


class TokenCreated(TokenOut):
    """The answer of a creation: the only time ``token`` is shown."""

    token: str = Field(description="The bearer token; store it now: it is not shown again.")


class AuditOut(BaseModel):
    """One line of the audit trail: who did what, when, under which request."""

    time: datetime
    actor: str | None
    request_id: str | None
    action: str
    target: str | None
    environment: str | None
    details: dict[str, Any] = Field(default_factory=dict)
