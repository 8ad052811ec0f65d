"""Discovery and adoption: files that already exist become ``managed_file`` instances.

Load it by path (``lsm.load_model("examples/discovery")``) with this directory as a lifecycle
directory (it holds ``adoptable.yaml``): ``lifecycle_dirs`` in ``lsm.toml``, as examples/README.md
shows. What it shows:

* a **discovery resource** in the model (``std::FileDiscovery``, bundled handler
  ``lsm_handlers.discovery``): a ``discovery`` instance produces one, and the agent's runs fill
  the discovered-resources inventory (``GET /api/v1/discovered``, ``lsm discovered``);
* the bundled ``linux::InterfaceDiscovery`` the same way (``interface_discovery``): the
  interfaces of a network namespace; ``poll`` on either makes the discovery periodic;
* an **adoption** (``@lsm.adopt("std::File", managed_file)``): a discovered file becomes a
  ``managed_file`` instance with the same path, content and mode, so the ``std::File`` resource
  it refines into equals what is on disk and its first deploy writes nothing
  (``POST /lsm/v1/service_inventory/managed_file/adopt``, ``lsm adopt managed_file ID...``);
* the **shared-base-class pattern** of ``handlers.py``: a discovery handler and a CRUD handler
  that share credentials and connection code through ordinary base classes.

``File`` is the bundled ``std::File`` (``lsm_handlers.files.File``), deployed by the bundled
file handler, whose read of an adopted file sees no change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any

from lsm_handlers.discovery import FileDiscovery, InterfaceDiscovery
from lsm_handlers.files import File
from pydantic import Field

import lsm
from lsm.model.resource_id import ResourceIdParts
from lsm.schemas.limits import MAX_PATH_BYTES

from .handlers import HANDLERS  # noqa: F401  (the model's handlers: the Credentials/InterfaceBase pattern)

#: the agent that deploys: a host name (at most 253 characters, as DNS), so that an order with a
#: longer one is refused with a 422 naming ``host`` instead of making resource ids no store holds
Host = Annotated[str, Field(min_length=1, max_length=253)]


class ManagedFile(lsm.ServiceEntity):
    """A file on a host, with its content and permission bits."""

    host: Host
    path: str
    content: Annotated[str, lsm.rw_plus] = ""
    mode: Annotated[int, lsm.rw_plus] = 0o644


managed_file = lsm.Binding(ManagedFile, lifecycle="adoptable", name="managed_file", identity="path")


class FileDiscoveryService(lsm.ServiceEntity):
    """The intent to find the files under ``directory`` whose names match ``pattern`` on ``host``,
    again every ``poll`` seconds (``0``: on a change or a repair only)."""

    name: str
    host: Host
    directory: Annotated[str, Field(max_length=MAX_PATH_BYTES)]
    pattern: Annotated[str, lsm.rw_plus] = ".*"
    poll: Annotated[float, lsm.rw_plus] = 0.0


discovery = lsm.Binding(FileDiscoveryService, lifecycle="adoptable", name="file_discovery", identity="name")


class InterfaceDiscoveryService(lsm.ServiceEntity):
    """The intent to find the interfaces of network namespace ``namespace`` of ``host`` whose
    names match ``name_filter`` (all when empty), again every ``poll`` seconds."""

    name: str
    host: Host
    namespace: str = ""
    name_filter: Annotated[str | None, lsm.rw_plus] = None
    poll: Annotated[float, lsm.rw_plus] = 0.0


interface_discovery = lsm.Binding(
    InterfaceDiscoveryService, lifecycle="adoptable", name="interface_discovery", identity="name"
)


@lsm.implementation(managed_file)
def file_resource(f: lsm.Service[ManagedFile]) -> Iterator[lsm.Resource]:
    yield File(agent=f.host, path=f.path, content=f.content, mode=f.mode, purged=f.purge_resources)


@lsm.implementation(discovery)
def discovery_resource(d: lsm.Service[FileDiscoveryService]) -> Iterator[lsm.Resource]:
    yield FileDiscovery(
        agent=d.host,
        name=d.name,
        directory=d.directory,
        pattern=d.pattern,
        purged=d.purge_resources,
        meta=lsm.Meta(poll=d.poll),
    )


@lsm.implementation(interface_discovery)
def interface_discovery_resource(d: lsm.Service[InterfaceDiscoveryService]) -> Iterator[lsm.Resource]:
    yield InterfaceDiscovery(
        agent=d.host,
        name=d.name,
        namespace=d.namespace,
        name_filter=d.name_filter,
        purged=d.purge_resources,
        meta=lsm.Meta(poll=d.poll),
    )


@lsm.adopt("std::File", managed_file)
def file_to_instance(attributes: Mapping[str, Any], ref: ResourceIdParts) -> dict[str, Any]:
    """A discovered ``std::File`` as ``managed_file`` attributes: the same file, as it is."""
    return {
        "host": ref.agent,
        "path": attributes["path"],
        "content": attributes["content"],
        "mode": attributes["mode"],
    }
