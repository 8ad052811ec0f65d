"""Who a request is from: bearer API tokens, JWTs of an external identity provider, or nobody.

Why one class: ``lsm.api.deps.request_context`` asks one question of every request ("which
principal sent this?") and must not care how it is answered. With authentication off (the
embedded default, on loopback) every caller is ``local`` with every right, as before tokens
existed. With it on, a request without a valid credential is a 401:

* an API token (``lsm_...``) is looked up by its hash (``TokensFacade.authenticate``): unknown,
  expired and revoked tokens are refused alike;
* a JWT is checked with PyJWT (signature with the configured key, ``exp``, issuer and
  audience all required) and its roles claim maps environments to roles.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lsm.errors import ConfigurationError, Unauthenticated
from lsm.facade import LOCAL_ACTOR, Principal, TokensFacade
from lsm.facade.context import EVERYTHING
from lsm.schemas.auth import TOKEN_PREFIX, AuthConfig, Role

#: the principal of every request while authentication is off
LOCAL = Principal(LOCAL_ACTOR, EVERYTHING)


class Authenticator:
    """Resolves the ``Authorization`` credential of a request to a ``Principal``."""

    def __init__(self, config: AuthConfig, tokens: TokensFacade) -> None:
        self.config = config
        self.tokens = tokens
        self._jwt_key: str | None = None
        if config.enabled and config.jwt_enabled:
            try:
                import jwt  # noqa: F401  (the optional extra "jwt")
            except ImportError:
                raise ConfigurationError(
                    "JWT authentication is configured but PyJWT is not installed: "
                    "pip install 'lsm-engine[jwt]'"
                ) from None
            if config.jwt_key is not None:
                self._jwt_key = config.jwt_key
            else:
                assert config.jwt_key_file is not None
                try:
                    self._jwt_key = Path(config.jwt_key_file).read_text()
                except OSError as exc:
                    raise ConfigurationError(
                        f"can not read auth.jwt_key_file: {exc}", field="auth.jwt_key_file"
                    ) from None

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def principal(self, credential: str | None) -> Principal:
        """The principal of a bearer ``credential`` (``None``: none was sent); ``Unauthenticated``."""
        if not self.config.enabled:
            return LOCAL
        if not credential:
            raise Unauthenticated("this server needs a bearer token (Authorization: Bearer <token>)")
        if credential.startswith(TOKEN_PREFIX):
            found = self.tokens.authenticate(credential)
            if found is None:
                raise Unauthenticated("the token is unknown, expired or revoked")
            return found
        if self._jwt_key is not None and credential.count(".") == 2:
            return self._from_jwt(credential)
        raise Unauthenticated("not a token this server accepts")

    def open_session(self, credential: str) -> str:
        """Sign in to the console with ``credential`` (checked like a bearer one): a new
        session's id (``lsm.store.auth.sessions``); ``Unauthenticated`` for a bad credential."""
        principal = self.principal(credential or None)
        return self.tokens.open_session(principal, self.config.session_lifetime)

    def session(self, secret: str | None) -> Principal:
        """The principal of a console session id (``LOCAL`` with authentication off)."""
        if not self.config.enabled:
            return LOCAL
        found = self.tokens.session_principal(secret) if secret else None
        if found is None:
            raise Unauthenticated("the console session is unknown, expired or ended: log in again")
        return found

    def close_session(self, secret: str) -> None:
        self.tokens.close_session(secret)

    def _from_jwt(self, credential: str) -> Principal:
        import jwt

        assert self._jwt_key is not None
        try:
            claims: dict[str, Any] = jwt.decode(
                credential,
                self._jwt_key,
                algorithms=self.config.jwt_algorithms,
                audience=self.config.jwt_audience,
                issuer=self.config.jwt_issuer,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"the token is not valid: {exc}") from None
        actor = claims.get(self.config.jwt_actor_claim)
        if not isinstance(actor, str) or not actor:
            raise Unauthenticated(f"the token has no {self.config.jwt_actor_claim!r} claim")
        expires_at = datetime.fromtimestamp(int(claims["exp"]), UTC)
        roles = roles_from_claim(claims.get(self.config.jwt_roles_claim))
        return Principal(f"jwt:{actor}"[:200], roles, expires_at=expires_at)


def roles_from_claim(value: Any) -> dict[str, Role]:
    """``{environment: role}`` or ``["environment:role", ...]`` -> roles; unknown roles are ignored."""
    pairs: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str) and ":" in item:
                env, _, role = item.rpartition(":")
                pairs.append((env, role))
    roles: dict[str, Role] = {}
    for env, role in pairs:
        if isinstance(env, str) and role in Role._value2member_map_:
            roles[env] = Role(role)
    return roles
