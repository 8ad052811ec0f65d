"""API tokens and the audit trail, as the API serves them; and who a bearer token is.

Why here: tokens and audit lines are rows like any other (``lsm.store.auth.tokens``,
``lsm.store.audit``); the facade turns environment names into ids, writes the audit line
of a token change in the transaction of the change, and leaves out of the audit trail what the
caller may not see. Checking JWTs is the API's business (``lsm.api.auth``): they never touch
the database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lsm.errors import InvalidInput, NotFound
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.schemas.auth import ALL_ENVIRONMENTS, DEFAULT_TOKEN_LIFETIME, AuditOut, Role, TokenCreated, TokenOut
from lsm.store import audit
from lsm.store.audit import AuditFilter
from lsm.store.auth import sessions, tokens
from lsm.store.auth.tables import TokenRow
from lsm.store.instances import repository as repo


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Principal:
    """Who a valid credential is: the actor recorded on changes, and its roles per environment;
    for a console session, the API token it stands for (``token_id``) and when the credential
    stops working (``expires_at``), when known."""

    actor: str
    roles: Mapping[str, Role]
    token_id: str | None = None
    expires_at: datetime | None = None


def token_actor(row: TokenRow) -> str:
    """The actor of a token's requests: its name and the start of its id (names may repeat)."""
    return f"token:{row.name}#{row.id[:8]}"


def token_out(row: TokenRow) -> TokenOut:
    return TokenOut(
        id=row.id,
        name=row.name,
        roles={key: Role(value) for key, value in row.roles.items()},
        created_at=tokens.as_utc(row.created_at),
        expires_at=tokens.as_utc(row.expires_at),
        revoked_at=tokens.as_utc(row.revoked_at) if row.revoked_at else None,
        created_by=row.created_by,
    )


class TokensFacade:
    """Create, list and revoke API tokens; resolve a bearer token to its ``Principal``.

    ``clock`` tells the time expiry is judged by (tests move it instead of sleeping).
    """

    def __init__(self, core: Core, clock: Callable[[], datetime] = utc_now) -> None:
        self.core = core
        self.clock = clock

    def create(
        self,
        ctx: RequestContext,
        name: str,
        roles: Mapping[str, Role | str],
        *,
        expires_at: datetime | None = None,
        expires_in: float | None = None,
    ) -> TokenCreated:
        """A new token; its secret is in the answer and nowhere else."""
        now = self.clock()
        if expires_at is None:
            expires_at = now + timedelta(seconds=expires_in or DEFAULT_TOKEN_LIFETIME)
        expires_at = tokens.as_utc(expires_at)
        if expires_at <= now:
            raise InvalidInput("a token must expire in the future", field="expires_at")
        if not roles:
            raise InvalidInput("a token needs a role in at least one environment", field="roles")
        with self.core.db.write() as session:
            scoped: dict[str, str] = {}
            for key, role in roles.items():
                try:
                    role = Role(role)
                except ValueError:
                    raise InvalidInput(
                        f"unknown role {role!r}; known: {', '.join(r.value for r in Role)}",
                        field=f"roles.{key}",
                    ) from None
                if key == ALL_ENVIRONMENTS:
                    scoped[key] = role.value
                    continue
                env = repo.find_environment(session, key)
                if env is None or not ctx.sees(env.id, env.name):
                    raise InvalidInput(f"unknown environment {key!r}", field=f"roles.{key}")
                scoped[env.id] = role.value
            row, secret = tokens.issue(
                session, name=name, roles=scoped, expires_at=expires_at, created_by=ctx.actor
            )
            audit.record(
                session,
                actor=ctx.actor,
                request_id=ctx.request_id,
                action="token.create",
                target=row.id,
                name=name,
                roles=scoped,
                expires_at=expires_at.isoformat(),
            )
            out = token_out(row)
        return TokenCreated(**out.model_dump(), token=secret)

    def list_tokens(self, ctx: RequestContext) -> list[TokenOut]:
        with self.core.db.read() as session:
            return [token_out(row) for row in tokens.list_tokens(session)]

    def revoke(self, ctx: RequestContext, token_id: str) -> TokenOut:
        """Revoke a token for good (idempotent: revoking it again changes nothing)."""
        with self.core.db.write() as session:
            row = session.get(TokenRow, token_id)
            if row is None:
                raise NotFound(f"unknown token {token_id!r}", token=token_id)
            if row.revoked_at is None:
                row.revoked_at = self.clock()
                session.add(row)
                sessions.close_for_token(session, row.id)  # its console sessions end with it
                audit.record(
                    session,
                    actor=ctx.actor,
                    request_id=ctx.request_id,
                    action="token.revoke",
                    target=row.id,
                    name=row.name,
                )
            session.flush()
            return token_out(row)

    def authenticate(self, secret: str) -> Principal | None:
        """The principal of a valid (known, unexpired, unrevoked) token; ``None`` otherwise."""
        with self.core.db.read() as session:
            row = tokens.find_by_secret(session, secret)
            if row is None or not tokens.is_valid(row, self.clock()):
                return None
            return _token_principal(row)

    # -- console sessions (lsm.store.auth.sessions) ------------------------------------------------
    def open_session(self, principal: Principal, lifetime: float) -> str:
        """A console session for ``principal`` (checked by the caller), ending after ``lifetime``
        seconds or with its credential; its id, for the cookie."""
        now = self.clock()
        expires_at = now + timedelta(seconds=lifetime)
        if principal.expires_at is not None:
            expires_at = min(expires_at, tokens.as_utc(principal.expires_at))
        roles = {key: role.value for key, role in principal.roles.items()}
        with self.core.db.write() as session:
            return sessions.open_session(
                session,
                token_id=principal.token_id,
                actor=principal.actor,
                roles=roles,
                expires_at=expires_at,
                now=now,
            )

    def session_principal(self, secret: str) -> Principal | None:
        """The principal of a live console session: not expired, and its token (if it signed in
        with one) still valid; ``None`` otherwise."""
        now = self.clock()
        with self.core.db.read() as session:
            row = sessions.find(session, secret)
            if row is None or tokens.as_utc(row.expires_at) <= now:
                return None
            if row.token_id is None:
                return Principal(row.actor, {key: Role(value) for key, value in row.roles.items()})
            token = session.get(TokenRow, row.token_id)
            if token is None or not tokens.is_valid(token, now):
                return None
            return _token_principal(token)

    def close_session(self, secret: str) -> None:
        """Sign out: the session is gone (nothing happens for an unknown one)."""
        with self.core.db.write() as session:
            sessions.close(session, secret)


def _token_principal(row: TokenRow) -> Principal:
    roles = {key: Role(value) for key, value in row.roles.items()}
    return Principal(token_actor(row), roles, token_id=row.id, expires_at=tokens.as_utc(row.expires_at))


class AuditFacade:
    """The audit trail, limited to the environments where the caller is an admin."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def list_audit(
        self,
        ctx: RequestContext,
        *,
        actor: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        environment: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[AuditOut]:
        """Newest first. A global admin sees everything (tokens included); an environment admin
        sees the lines of the environments it administers."""
        with self.core.db.read() as session:
            envs = {row.id: row.name for row in repo.list_environments(session)}
            admin_of = [
                env_id
                for env_id, name in envs.items()
                if (role := ctx.role_in(env_id, name)) is not None and role.allows(Role.ADMIN)
            ]
            everywhere = ctx.role_everywhere()
            env_ids: list[str] | None = (
                None if everywhere is not None and everywhere.allows(Role.ADMIN) else admin_of
            )
            if environment is not None:
                row = repo.find_environment(session, environment)
                if row is None or (env_ids is not None and row.id not in env_ids):
                    raise NotFound(f"unknown environment {environment!r}", environment=environment)
                env_ids = [row.id]
            flt = AuditFilter(
                actor=actor,
                action=action,
                since=tokens.as_utc(since) if since is not None else None,
                env_ids=env_ids,
                limit=limit,
                offset=offset,
            )
            lines = audit.list_audit(session, flt)
        return [
            AuditOut(
                time=tokens.as_utc(line["time"]),
                actor=line["actor"],
                request_id=line["request_id"],
                action=line["action"],
                target=line["target"],
                environment=envs.get(line["env_id"], line["env_id"]),
                details=line["details"],
            )
            for line in lines
        ]
