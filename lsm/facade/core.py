"""``Core``: the pieces of the engine every facade reaches, handed over by the composition root.

Why a protocol for the environments: the context cache (``lsm.runtime.environments``) loads
models and lives with the runtime, above this layer; the facades only need to resolve an
environment to its ``EnvironmentContext`` and to create or refresh one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from lsm.desired_state import DesiredStateStore
from lsm.facade.signal import ChangeSignal
from lsm.lifecycle import LifecycleRegistry
from lsm.orchestration import EnvironmentContext, Orchestrator
from lsm.store.database import Database
from lsm.store.environments.settings import EnvironmentSettings
from lsm.store.tables import EnvironmentRow


class EnvironmentContexts(Protocol):
    """Resolves environments (name or id, ``None`` = default) to their cached context."""

    default: str

    def context(self, env: str | None) -> EnvironmentContext: ...

    def fresh_context(self, env: str | None) -> EnvironmentContext | None: ...

    def ensure(self, name: str, model: str | None) -> EnvironmentRow: ...

    def create(
        self, name: str, choice: str | None, *, actor: str | None = None, request_id: str | None = None
    ) -> EnvironmentRow: ...

    def change_model(
        self, env: str, choice: str, *, actor: str | None = None, request_id: str | None = None
    ) -> EnvironmentRow: ...

    def effective_settings(self, stored: dict[str, object]) -> EnvironmentSettings: ...

    def invalidate(self, env_id: str) -> None: ...


def _no_runner(*_args: Any, **_kwargs: Any) -> dict[str, Any]:
    raise RuntimeError("this runtime has no compile runner to explain a selection with")


@dataclass(frozen=True)
class Core:
    """The engine's parts over one database; built once by ``lsm.runtime.wiring``."""

    db: Database
    environments: EnvironmentContexts
    lifecycles: LifecycleRegistry
    orchestrator: Orchestrator
    store: DesiredStateStore
    #: wakes waiters of this process when instances or compiles changed
    changes: ChangeSignal
    #: the runner's dry run of a partial compile's selection (``CompileRunner.explain``)
    explain: Callable[..., dict[str, Any]] = _no_runner
