"""``Engine``: the one facade the API, the CLI and ``lsm.testing`` call.

Why: HTTP routes and CLI commands must stay thin (parse, call, format). Everything they need
(environment resolution, the catalog of the environment's model, the orchestration function,
compile requests, the desired-state store, settings) is reached through this object, so that
the same behaviour is served over HTTP and in-process in tests.

Every method takes ``env``: an environment name or id; ``None`` means the default environment.
Entity-scoped instance methods take ``ref``: an instance id or ``<identity_attr>=<value>``.
"""

from __future__ import annotations

from typing import Any

from lsm.inventory.views import CompileOut, EnvironmentOut, EventOut, InstanceOut
from lsm.runtime.config import ServerConfig


class Engine:
    """The running engine over one database. See ``lsm.runtime.engine`` for the contract.

    ``Engine(config)`` then ``start()``; ``ready`` is true once started (``GET /health``).
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.ready = False

    # -- environments and settings ---------------------------------------------------------
    def list_environments(self) -> list[EnvironmentOut]:
        raise NotImplementedError

    def create_environment(self, name: str, model: str | None = None) -> EnvironmentOut:
        raise NotImplementedError

    def get_environment(self, env: str | None) -> EnvironmentOut:
        raise NotImplementedError

    def get_settings(self, env: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def set_setting(self, env: str | None, key: str, value: Any) -> dict[str, Any]:
        raise NotImplementedError

    # -- catalog and lifecycles ---------------------------------------------------------------
    def catalog(self, env: str | None) -> list[dict[str, Any]]:
        raise NotImplementedError

    def catalog_entity(self, env: str | None, entity: str) -> dict[str, Any]:
        raise NotImplementedError

    def entity_schema(self, env: str | None, entity: str) -> dict[str, Any]:
        raise NotImplementedError

    def lifecycle(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    # -- inventory -----------------------------------------------------------------------------
    def create_instance(
        self,
        env: str | None,
        entity: str,
        attributes: dict[str, Any],
        *,
        instance_id: str | None = None,
        initial_state: str | None = None,
    ) -> InstanceOut:
        raise NotImplementedError

    def list_instances(
        self,
        env: str | None,
        entity: str,
        *,
        states: list[str] | None = None,
        include_deleted: bool = False,
        limit: int = 100,
        offset: int = 0,
        sort: str = "created_at",
    ) -> list[InstanceOut]:
        raise NotImplementedError

    def get_instance(self, env: str | None, entity: str, ref: str) -> InstanceOut:
        raise NotImplementedError

    def update_instance(
        self, env: str | None, entity: str, ref: str, *, current_version: int, attributes: dict[str, Any]
    ) -> InstanceOut:
        raise NotImplementedError

    def set_state(
        self, env: str | None, entity: str, ref: str, *, current_version: int, target_state: str, message: str = ""
    ) -> InstanceOut:
        raise NotImplementedError

    def delete_instance(self, env: str | None, entity: str, ref: str, *, current_version: int) -> InstanceOut:
        raise NotImplementedError

    def instance_log(self, env: str | None, entity: str, ref: str) -> list[EventOut]:
        raise NotImplementedError

    def instance_resources(self, env: str | None, entity: str, ref: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def diagnose(self, env: str | None, entity: str, ref: str) -> dict[str, Any]:
        raise NotImplementedError

    # -- compiles and desired state ---------------------------------------------------------
    def request_compile(
        self,
        env: str | None,
        *,
        kind: str = "full",
        instance_ids: list[str] | None = None,
        service_entities: list[str] | None = None,
        exclude: list[str] | None = None,
        wait: bool = False,
        timeout: float = 300.0,
    ) -> CompileOut:
        raise NotImplementedError

    def list_compiles(self, env: str | None, *, limit: int = 50, offset: int = 0) -> list[CompileOut]:
        raise NotImplementedError

    def get_compile(self, env: str | None, compile_id: str) -> CompileOut:
        raise NotImplementedError

    def list_desired_states(self, env: str | None, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        raise NotImplementedError

    def desired_state(self, env: str | None, version: int) -> dict[str, Any]:
        raise NotImplementedError

    def desired_state_resources(self, env: str | None, version: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    # -- lifecycle of the engine itself -----------------------------------------------------------
    def start(self) -> None:
        """Create the schema, the default environment, and start the embedded workers."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError
