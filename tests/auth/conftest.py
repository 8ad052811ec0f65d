"""A real engine with authentication on, served on 127.0.0.1, and tokens of every kind.

Environment ``default`` (A, runs the test model ``netmodel``) and ``other`` (B, the same
model). Tokens: ``admin`` (admin over every environment), ``viewer``/``operator``/``env_admin``
(that role in A only) and ``other`` (operator in B only). Tokens are created through the facade,
as ``lsm token create`` does, and used over HTTP only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.schemas.auth import AuthConfig
from lsm.testing import served_url
from tests.api.fixtures import LIFECYCLES, MODEL
from tests.conftest import database_at_head

ROLES_IN_A = {"viewer": "viewer", "operator": "operator", "env_admin": "admin"}


@dataclass
class Secured:
    engine: ApiRuntime
    url: str
    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def token(self, name: str, roles: dict[str, str], **expiry: Any) -> tuple[str, str]:
        created = self.engine.facades.tokens.create(RequestContext.local(), name, roles, **expiry)
        return created.id, created.token


def make_secured(backend: str, tmp_path: Path, auth: AuthConfig | None = None) -> ApiRuntime:
    database = database_at_head(backend, tmp_path)
    config = ServerConfig(
        database_url=database.url,
        model=str(MODEL),
        lifecycle_dirs=[str(LIFECYCLES)],
        embedded_worker=False,
        model_dirs=[str(tmp_path / "allowed")],
        auth=auth or AuthConfig(enabled=True),
    )
    engine = build_api(config, db=database)
    engine.start()
    engine.facades.environments.create_environment(RequestContext.local(), "other", str(MODEL))
    return engine


@pytest.fixture
def secured(backend: str, tmp_path: Path) -> Iterator[Secured]:
    (tmp_path / "allowed").mkdir()
    engine = make_secured(backend, tmp_path)
    try:
        with served_url(engine) as url:
            s = Secured(engine, url)
            for who, roles in {
                "admin": {"*": "admin"},
                **{who: {"default": role} for who, role in ROLES_IN_A.items()},
                "other": {"other": "operator"},
            }.items():
                s.ids[who], s.tokens[who] = s.token(who, roles)
            yield s
    finally:
        engine.stop()
        if not engine.db.is_sqlite:
            engine.db.drop_schema()
        engine.db.dispose()
