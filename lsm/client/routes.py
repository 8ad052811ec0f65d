"""Every API route as one client method, written once for the sync and the async client.

Why generic: the two clients differ only in how a request is sent (``httpx.Client`` vs
``httpx.AsyncClient``, ``tenacity.Retrying`` vs ``AsyncRetrying``). Each method here builds a
``Request`` and hands it to ``_one`` (the answer is a JSON object) or ``_many`` (a JSON list);
``Client`` implements them to return the parsed JSON, ``AsyncClient`` to return an awaitable
of it. The type parameters carry that difference, so that ``Client().catalog()`` is a
``list[dict]`` and ``await AsyncClient().catalog()`` is too, for mypy as well.
"""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from lsm.schemas.compile_reports import MAX_COMPILE_WAIT

if TYPE_CHECKING:  # names for the bulk method's annotations: the models cost an import per command
    from lsm.schemas.bulk import BulkCreate, BulkUpdate

JsonObject = dict[str, Any]
JsonList = list[dict[str, Any]]

#: what a method answering a JSON object returns (``JsonObject`` or an awaitable of it)
ObjT = TypeVar("ObjT")
#: what a method answering a JSON list returns
ListT = TypeVar("ListT")

#: the request header that makes a create idempotent (docs/api.md §4)
IDEMPOTENCY_HEADER = "Idempotency-Key"

#: how much longer than the server's wait the client waits for its answer (seconds)
COMPILE_WAIT_MARGIN = 30.0
#: how long a ``wait=True`` compile request may take before the client gives up (seconds)
COMPILE_WAIT_TIMEOUT = MAX_COMPILE_WAIT + COMPILE_WAIT_MARGIN
#: how long an export may take before the client gives up (seconds): a full export of a large
#: model is one request that writes every changed set
EXPORT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Request:
    """One HTTP request of the API, independent of how it is sent."""

    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    #: overrides the client's timeout (``None``: the client's)
    timeout: float | None = None
    #: headers of this request only (the ``Idempotency-Key`` of a create)
    headers: dict[str, str] | None = None

    @property
    def idempotent(self) -> bool:
        """Whether repeating the request can not apply it twice (a create with its key)."""
        return bool(self.headers and IDEMPOTENCY_HEADER in self.headers)


def _seg(value: str | int) -> str:
    """One path segment, percent-encoded (``=`` kept: ``mgmt_ip=10.0.0.1`` is a valid reference)."""
    return quote(str(value), safe="=:@")


def _plain(item: dict[str, Any] | BaseModel) -> dict[str, Any]:
    """A request item as JSON-ready data: the typed models of ``lsm.schemas`` or plain dicts."""
    return item.model_dump(mode="json", exclude_none=True) if isinstance(item, BaseModel) else item


def _drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


class Routes(ABC, Generic[ObjT, ListT]):
    """The API of docs/api.md, one method per route. Subclasses say how a ``Request`` is sent."""

    #: the environment (name or id) sent in ``X-LSM-Environment``; ``None``: the server's default
    environment: str | None

    @abstractmethod
    def _one(self, request: Request) -> ObjT:
        """Send ``request``; its answer is a JSON object."""

    @abstractmethod
    def _many(self, request: Request) -> ListT:
        """Send ``request``; its answer is a JSON list."""

    # -- health and lifecycles -------------------------------------------------------------------
    def health(self) -> ObjT:
        """``GET /health``: ``{"status": "ok"}`` once the engine is ready."""
        return self._one(Request("GET", "/health"))

    def lifecycle(self, name: str) -> ObjT:
        """A lifecycle's states and transfers."""
        return self._one(Request("GET", f"/lsm/v1/lifecycles/{_seg(name)}"))

    # -- service catalog --------------------------------------------------------------------------
    def catalog(self) -> ListT:
        """Every service entity of the environment's model."""
        return self._many(Request("GET", "/lsm/v1/service_catalog"))

    def entity(self, name: str) -> ObjT:
        """One service entity."""
        return self._one(Request("GET", f"/lsm/v1/service_catalog/{_seg(name)}"))

    def schema(self, name: str) -> ObjT:
        """The JSON schema of an entity's attributes."""
        return self._one(Request("GET", f"/lsm/v1/service_catalog/{_seg(name)}/schema"))

    # -- service inventory --------------------------------------------------------------------------
    def create_instance(
        self,
        entity: str,
        attributes: dict[str, Any],
        *,
        instance_id: str | None = None,
        initial_state: str | None = None,
        idempotency_key: str | None = None,
    ) -> ObjT:
        """Order an instance; the answer is the instance at version 1.

        Every create carries an ``Idempotency-Key`` (``idempotency_key``, or a fresh one), the
        same on every automatic retry: a retry after a lost answer gets the first answer, never
        a second instance.
        """
        body = _drop_none(
            {"attributes": attributes, "service_instance_id": instance_id, "initial_state": initial_state}
        )
        headers = {IDEMPOTENCY_HEADER: idempotency_key or uuid.uuid4().hex}
        return self._one(
            Request("POST", f"/lsm/v1/service_inventory/{_seg(entity)}", json=body, headers=headers)
        )

    def bulk(
        self,
        entity: str,
        *,
        create: list[dict[str, Any] | BulkCreate] | None = None,
        update: list[dict[str, Any] | BulkUpdate] | None = None,
    ) -> ObjT:
        """Create (``{attributes, service_instance_id?}``) and update (``{id, current_version,
        attributes}``) many instances in one transaction: all of them or none.

        The answer is ``{"created": [...], "updated": [...]}``; a refusal raises the error of
        the worst item with ``items`` listing every refused one (``index``, ``op``, ``message``).
        """
        body = {
            "create": [_plain(item) for item in create or []],
            "update": [_plain(item) for item in update or []],
        }
        return self._one(Request("POST", f"/lsm/v1/service_inventory/{_seg(entity)}/bulk", json=body))

    def list_instances(
        self,
        entity: str,
        *,
        states: list[str] | None = None,
        include_deleted: bool = False,
        limit: int = 100,
        offset: int = 0,
        sort: str = "created_at",
        identity: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> ListT:
        """The entity's instances, optionally only those in ``states``, whose identity contains
        ``identity`` (any case) and whose attributes equal every value of ``attributes``
        (a value that is not a string is sent as JSON: ``{"mtu": 1500}``)."""
        params: dict[str, Any] = {"limit": limit, "offset": offset, "sort": sort}
        if states:
            params["state"] = list(states)
        if identity:
            params["identity"] = identity
        if attributes:
            params["attribute"] = [
                f"{name}={value if isinstance(value, str) else json.dumps(value)}"
                for name, value in attributes.items()
            ]
        if include_deleted:
            params["include_deleted"] = "true"
        return self._many(Request("GET", f"/lsm/v1/service_inventory/{_seg(entity)}", params=params))

    def get_instance(self, entity: str, ref: str) -> ObjT:
        """One instance, by id or ``<identity_attr>=<value>``."""
        return self._one(Request("GET", _instance_path(entity, ref)))

    def update_instance(
        self, entity: str, ref: str, *, current_version: int, attributes: dict[str, Any]
    ) -> ObjT:
        """Merge ``attributes`` into the candidate set (the state's ``on_update`` transfer)."""
        body = {"current_version": current_version, "attributes": attributes}
        return self._one(Request("PATCH", _instance_path(entity, ref), json=body))

    def set_state(
        self, entity: str, ref: str, *, current_version: int, target_state: str, message: str | None = None
    ) -> ObjT:
        """Fire the ``api_set_state`` transfer to ``target_state``."""
        body = _drop_none(
            {"current_version": current_version, "target_state": target_state, "message": message}
        )
        return self._one(Request("POST", _instance_path(entity, ref) + "/state", json=body))

    def delete_instance(self, entity: str, ref: str, *, current_version: int) -> ObjT:
        """Fire the state's ``on_delete`` transfer."""
        params = {"current_version": current_version}
        return self._one(Request("DELETE", _instance_path(entity, ref), params=params))

    def instance_log(self, entity: str, ref: str) -> ListT:
        """The instance's event log, oldest first."""
        return self._many(Request("GET", _instance_path(entity, ref) + "/log"))

    def instance_resources(self, entity: str, ref: str) -> ListT:
        """The instance's resources and their deploy state."""
        return self._many(Request("GET", _instance_path(entity, ref) + "/resources"))

    def diagnose(self, entity: str, ref: str) -> ObjT:
        """Why the instance is where it is."""
        return self._one(Request("GET", _instance_path(entity, ref) + "/diagnose"))

    def adopt(self, entity: str, discovered_ids: list[str], *, initial_state: str | None = None) -> ListT:
        """Adopt discovered resources as instances of ``entity``: all of them or none (409 naming
        an id that is managed or adopted already); the answer is the created instances."""
        body = _drop_none({"discovered_ids": list(discovered_ids), "initial_state": initial_state})
        return self._many(Request("POST", f"/lsm/v1/service_inventory/{_seg(entity)}/adopt", json=body))

    # -- discovered resources ---------------------------------------------------------------------------
    def discovered(
        self,
        *,
        resource_type: str | None = None,
        agent: str | None = None,
        managed: bool | None = None,
        discovered_by: str | None = None,
        adopted: bool | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> ListT:
        """Discovered resources of the environment, in id order, filtered."""
        params = _drop_none(
            {
                "type": resource_type,
                "agent": agent,
                "managed": None if managed is None else str(managed).lower(),
                "discovered_by": discovered_by,
                "adopted": None if adopted is None else str(adopted).lower(),
                "limit": limit,
                "offset": offset,
            }
        )
        return self._many(Request("GET", "/api/v1/discovered", params=params))

    def discovered_resource(self, resource_id: str) -> ObjT:
        """One discovered resource by its id (``Type[agent,attr=value]``)."""
        return self._one(Request("GET", f"/api/v1/discovered/{_seg(resource_id)}"))

    # -- compiles -------------------------------------------------------------------------------------
    def request_compile(
        self,
        *,
        kind: str = "full",
        instance_ids: list[str] | None = None,
        service_entities: list[str] | None = None,
        exclude: list[str] | None = None,
        wait: bool = False,
        timeout: float | None = None,
        incremental: bool | None = None,
        selector: Any = None,
    ) -> ObjT:
        """Request a compile; with ``wait`` the answer comes when it finished, or after ``timeout``
        seconds (at most ``MAX_COMPILE_WAIT``) with the report as it stands.

        ``incremental=False`` makes a full compile refine every tree (by default it refines only
        the trees whose instances changed).
        """
        body = _drop_none(
            {
                "kind": kind,
                "instance_ids": instance_ids,
                "service_entities": service_entities,
                "exclude": exclude,
                "wait": wait,
                "timeout": timeout,
                "incremental": incremental,
                "selector": selector,
            }
        )
        waited = min(timeout, MAX_COMPILE_WAIT) + COMPILE_WAIT_MARGIN if timeout else COMPILE_WAIT_TIMEOUT
        return self._one(Request("POST", "/api/v1/compiles", json=body, timeout=waited if wait else None))

    def explain_compile(
        self,
        *,
        instance_ids: list[str] | None = None,
        service_entities: list[str] | None = None,
        exclude: list[str] | None = None,
        selector: Any = None,
    ) -> ObjT:
        """What a partial compile would select and why; nothing is queued (dry run)."""
        body = _drop_none(
            {
                "kind": "partial",
                "instance_ids": instance_ids,
                "service_entities": service_entities,
                "exclude": exclude,
                "selector": selector,
                "explain": True,
            }
        )
        return self._one(Request("POST", "/api/v1/compiles", json=body))

    def list_selectors(self) -> ListT:
        """The selectors the environment can name, with their parameters."""
        return self._many(Request("GET", "/api/v1/compiles/selectors"))

    def list_compiles(
        self, *, limit: int = 50, offset: int = 0, kind: str | None = None, status: str | None = None
    ) -> ListT:
        """The compile queue and history, newest first; only of ``kind`` / with ``status`` when given."""
        params = _drop_none({"limit": limit, "offset": offset, "kind": kind, "status": status})
        return self._many(Request("GET", "/api/v1/compiles", params=params))

    def get_compile(self, compile_id: str) -> ObjT:
        """One compile report."""
        return self._one(Request("GET", f"/api/v1/compiles/{_seg(compile_id)}"))

    def retry_compile(self, compile_id: str) -> ObjT:
        """Queue a failed exporting compile again (same kind, ids, entities, selector); the new
        request. ``NotFound`` for an unknown compile, ``Conflict`` for one that did not fail or
        a validation compile."""
        return self._one(Request("POST", f"/api/v1/compiles/{_seg(compile_id)}/retry"))

    # -- desired state -------------------------------------------------------------------------------
    def desired_states(self, *, limit: int = 50, offset: int = 0) -> ListT:
        """Desired-state versions, newest first."""
        return self._many(Request("GET", "/api/v1/desired_state", params={"limit": limit, "offset": offset}))

    def desired_state(self, version: int) -> ObjT:
        """One version: its resource sets and shared resource ids."""
        return self._one(Request("GET", f"/api/v1/desired_state/{_seg(version)}"))

    def desired_state_resources(self, version: int) -> ListT:
        """The resources of one version."""
        return self._many(Request("GET", f"/api/v1/desired_state/{_seg(version)}/resources"))

    def desired_state_diff(self, version: int, other: int) -> ObjT:
        """What turns ``version`` into ``other``: sets, then resources with their changed fields."""
        return self._one(Request("GET", f"/api/v1/desired_state/{_seg(version)}/diff/{_seg(other)}"))

    def export_desired_state(
        self,
        sets: dict[str, list[dict[str, Any]]],
        shared: list[dict[str, Any]] | None = None,
        *,
        partial: bool = False,
        deleted_sets: list[str] | None = None,
        soft_delete: bool = False,
    ) -> ObjT:
        """Store an export as the next version (``PUT /api/v1/desired_state``); the version header.

        ``sets``: set name -> resources ``{"id", "attributes", "requires"}`` (an empty list deletes
        the set in a partial export); ``shared``: resources in no set. A broken export rule is an
        ``ExportRuleViolation`` naming the rule, the resources and the sets; nothing is written.
        Repeating an export stores the same state again, so a retried PUT is harmless.
        """
        body = {
            "partial": partial,
            "sets": sets,
            "shared": shared or [],
            "deleted_sets": deleted_sets or [],
            "soft_delete": soft_delete,
        }
        return self._one(Request("PUT", "/api/v1/desired_state", json=body, timeout=EXPORT_TIMEOUT))

    # -- graphs ---------------------------------------------------------------------------------------
    def graph(self, kind: str, name: str | None = None, **params: Any) -> ObjT:
        """A picture as graph data (``{title, direction, nodes, edges}``): ``kind`` is ``lifecycle``
        (with ``name``), ``owners`` (``entity``, ``id``), ``sets`` (``version``) or ``requires``
        (``set``, ``version``); ``lsm.graph.Graph.from_json`` reads it, its ``to_dot``/``to_svg`` draw it."""
        path = f"/api/v1/graph/{_seg(kind)}" + (f"/{_seg(name)}" if name is not None else "")
        return self._one(Request("GET", path, params={**_drop_none(params), "format": "json"}))

    # -- resources and deploy ------------------------------------------------------------------------
    def resources(
        self,
        *,
        agent: str | None = None,
        status: str | None = None,
        resource_type: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> ListT:
        """The newest version's resources and their deploy status, in id order (one page)."""
        params = _drop_none(
            {"agent": agent, "status": status, "type": resource_type, "limit": limit, "offset": offset}
        )
        return self._many(Request("GET", "/api/v1/resources", params=params))

    def resource(self, resource_id: str) -> ObjT:
        """One resource (any id: ``std::File[h1,path=/etc/motd]``) with its desired attributes."""
        return self._one(Request("GET", f"/api/v1/resources/{_seg(resource_id)}"))

    def resource_actions(self, resource_id: str, *, limit: int = 50, offset: int = 0) -> ListT:
        """The resource's action log, newest first."""
        params = {"limit": limit, "offset": offset}
        return self._many(Request("GET", f"/api/v1/resources/{_seg(resource_id)}/actions", params=params))

    def deploy(
        self,
        *,
        dry_run: bool = False,
        agents: list[str] | None = None,
        repair: bool = False,
        timeout: float | None = None,
        types: list[str] | None = None,
        sets: list[str] | None = None,
        instances: list[str] | None = None,
    ) -> ObjT:
        """Deploy the newest version again (failed and skipped resources; all with ``repair``), or
        with ``dry_run`` get per resource the changes a deploy would make; over the selection
        (``agents``, ``types``, ``sets``, ``instances``; none: everything). ``timeout``: for long
        dry runs (the client's timeout otherwise)."""
        scope = {"agents": agents, "types": types, "sets": sets, "instances": instances}
        body = _drop_none({"dry_run": dry_run, "repair": repair, **scope})
        return self._one(Request("POST", "/api/v1/deploy", json=body, timeout=timeout))

    def deploy_status(self, *, agents: list[str] | None = None) -> ObjT:
        """Where the deploy stands: ``{version, planned_version, total, counts: {status: n}}``."""
        params = {"agent": list(agents)} if agents else None
        return self._one(Request("GET", "/api/v1/deploy", params=params))

    # -- environments and settings -------------------------------------------------------------------
    def environments(self) -> ListT:
        """Every environment."""
        return self._many(Request("GET", "/api/v1/environments"))

    def get_environment(self, name: str | None = None) -> ObjT:
        """One environment (this client's when ``name`` is not given)."""
        return self._one(Request("GET", f"/api/v1/environments/{_seg(self._env(name))}"))

    def create_environment(self, name: str, model: str | None = None) -> ObjT:
        """A new environment, with its own model (the server's when not given)."""
        body = _drop_none({"name": name, "model": model})
        return self._one(Request("POST", "/api/v1/environments", json=body))

    def set_model(self, model: str, *, environment: str | None = None) -> ObjT:
        """Give an environment (this client's when not given) another model the server offers."""
        path = f"/api/v1/environments/{_seg(self._env(environment))}/model"
        return self._one(Request("PUT", path, json={"model": model}))

    def settings(self, environment: str | None = None) -> ObjT:
        """The settings of an environment (this client's when not given)."""
        return self._one(Request("GET", f"/api/v1/environments/{_seg(self._env(environment))}/settings"))

    def set_setting(self, key: str, value: Any, *, environment: str | None = None) -> ObjT:
        """Set one setting of an environment (this client's when not given)."""
        path = f"/api/v1/environments/{_seg(self._env(environment))}/settings/{_seg(key)}"
        return self._one(Request("PUT", path, json={"value": value}))

    # -- halt and resume, pause and unpause (admins) ----------------------------------------------------
    def halt(self, *, environment: str | None = None) -> ObjT:
        """Halt an environment (this client's when not given): orders still queue, nothing runs."""
        return self._one(Request("POST", f"/api/v1/environments/{_seg(self._env(environment))}/halt"))

    def resume(self, *, environment: str | None = None) -> ObjT:
        """Resume a halted environment: what queued runs, in order."""
        return self._one(Request("POST", f"/api/v1/environments/{_seg(self._env(environment))}/resume"))

    def pause_agent(self, name: str, *, stay_paused: bool = False, environment: str | None = None) -> ObjT:
        """Pause one agent name (``stay_paused``: also once the environment resumes from a halt)."""
        path = f"/api/v1/environments/{_seg(self._env(environment))}/agents/{_seg(name)}/pause"
        return self._one(Request("POST", path, json={"stay_paused": stay_paused}))

    def unpause_agent(self, name: str, *, environment: str | None = None) -> ObjT:
        """Lift an agent name's pause."""
        path = f"/api/v1/environments/{_seg(self._env(environment))}/agents/{_seg(name)}/unpause"
        return self._one(Request("POST", path))

    # -- tokens and audit (admins) ----------------------------------------------------------------------
    def create_token(
        self,
        name: str,
        roles: dict[str, str],
        *,
        expires_in: int | None = None,
        expires_at: str | None = None,
    ) -> ObjT:
        """A new API token (``roles``: environment name, id or ``*`` -> role); its secret is in
        the answer's ``token``, and only there."""
        body = _drop_none({"name": name, "roles": roles, "expires_in": expires_in, "expires_at": expires_at})
        return self._one(Request("POST", "/api/v1/tokens", json=body))

    def tokens(self) -> ListT:
        """Every token (never a secret)."""
        return self._many(Request("GET", "/api/v1/tokens"))

    def revoke_token(self, token_id: str) -> ObjT:
        """Revoke a token for good."""
        return self._one(Request("DELETE", f"/api/v1/tokens/{_seg(token_id)}"))

    def audit(
        self,
        *,
        actor: str | None = None,
        action: str | None = None,
        since: str | None = None,
        environment: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> ListT:
        """Who did what, when: newest first, with filters."""
        params = _drop_none(
            {
                "actor": actor,
                "action": action,
                "since": since,
                "environment": environment,
                "limit": limit,
                "offset": offset,
            }
        )
        return self._many(Request("GET", "/api/v1/audit", params=params))

    def _env(self, name: str | None) -> str:
        """Routes that name the environment in the path need a name: given, this client's, or
        ``default`` (the name of the server's default environment unless configured otherwise)."""
        return name or self.environment or "default"


def _instance_path(entity: str, ref: str) -> str:
    return f"/lsm/v1/service_inventory/{_seg(entity)}/{_seg(ref)}"
