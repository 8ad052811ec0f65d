"""lsm-engine: a service lifecycle engine in the style of Inmanta LSM.

The public API for model and plugin authors, re-exported here; everything else is private.

    import lsm
    from typing import Annotated

    class Router(lsm.ServiceEntity):
        mgmt_ip: str
        name: Annotated[str, lsm.rw_plus] = "router"

    router = lsm.Binding(Router, lifecycle="simple", identity="mgmt_ip")

    @lsm.implementation(router)
    def router_config(r: lsm.Service[Router]):
        yield RouterResource(agent=r.mgmt_ip, name=r.name)

Why lazy: ``import lsm`` runs for every ``lsm.*`` import, the client's and the CLI's included.
The names below are imported on first use (``lsm.ServiceEntity``, ``from lsm import Binding``),
so that ``import lsm.client`` and ``lsm --help`` do not load the model, selection and SQL layers.
"""

import importlib
from typing import TYPE_CHECKING, Any

from lsm import errors

if TYPE_CHECKING:
    from lsm.catalog import (
        AttributeInfo,
        Binding,
        Catalog,
        Modifier,
        Name,
        Ref,
        Reference,
        ServiceEntity,
        r,
        rw,
        rw_plus,
    )
    from lsm.deploy import (
        Change,
        CRUDHandler,
        DiscoveryHandler,
        GroupMember,
        Handler,
        HandlerContext,
        HandlerError,
        WatchContext,
        handler,
    )
    from lsm.model import (
        CompileContext,
        Meta,
        Model,
        Produced,
        RefineResult,
        Resource,
        ResourceSet,
        Service,
        Shared,
        adopt,
        all,  # noqa: A004  (lsm.all(binding) is the documented name)
        current_compile,
        implementation,
        load_model,
        refine,
        shared,
    )
    from lsm.selection import (
        BaseSelector,
        InstanceRecord,
        InventoryView,
        OwnerTreeSelector,
        PhasedSelector,
        Relation,
        Selector,
        UnionSelector,
        run_selector,
    )

#: public name -> the module that defines it; imported on first use (see the module docstring)
_LAZY = {
    "AttributeInfo": "lsm.catalog",
    "BaseSelector": "lsm.selection",
    "Binding": "lsm.catalog",
    "CRUDHandler": "lsm.deploy",
    "Change": "lsm.deploy",
    "DiscoveryHandler": "lsm.deploy",
    "GroupMember": "lsm.deploy",
    "Handler": "lsm.deploy",
    "HandlerContext": "lsm.deploy",
    "HandlerError": "lsm.deploy",
    "WatchContext": "lsm.deploy",
    "Meta": "lsm.model",
    "handler": "lsm.deploy",
    "Catalog": "lsm.catalog",
    "CompileContext": "lsm.model",
    "InstanceRecord": "lsm.selection",
    "InventoryView": "lsm.selection",
    "Model": "lsm.model",
    "Modifier": "lsm.catalog",
    "Name": "lsm.catalog",
    "OwnerTreeSelector": "lsm.selection",
    "PhasedSelector": "lsm.selection",
    "Produced": "lsm.model",
    "Ref": "lsm.catalog",
    "Reference": "lsm.catalog",
    "RefineResult": "lsm.model",
    "Relation": "lsm.selection",
    "Resource": "lsm.model",
    "ResourceSet": "lsm.model",
    "Selector": "lsm.selection",
    "Service": "lsm.model",
    "ServiceEntity": "lsm.catalog",
    "Shared": "lsm.model",
    "UnionSelector": "lsm.selection",
    "all": "lsm.model",
    "current_compile": "lsm.model",
    "implementation": "lsm.model",
    "adopt": "lsm.model",
    "load_model": "lsm.model",
    "r": "lsm.catalog",
    "refine": "lsm.model",
    "run_selector": "lsm.selection",
    "rw": "lsm.catalog",
    "rw_plus": "lsm.catalog",
    "shared": "lsm.model",
}


def __getattr__(name: str) -> Any:
    """Import the module behind a public name on first use, and keep the name."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lsm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "AttributeInfo",
    "BaseSelector",
    "Binding",
    "CRUDHandler",
    "Catalog",
    "Change",
    "CompileContext",
    "DiscoveryHandler",
    "GroupMember",
    "Handler",
    "HandlerContext",
    "HandlerError",
    "InstanceRecord",
    "InventoryView",
    "Meta",
    "Model",
    "Modifier",
    "Name",
    "OwnerTreeSelector",
    "PhasedSelector",
    "Produced",
    "Ref",
    "Reference",
    "RefineResult",
    "Relation",
    "Resource",
    "ResourceSet",
    "Selector",
    "Service",
    "ServiceEntity",
    "Shared",
    "UnionSelector",
    "WatchContext",
    "__version__",
    "adopt",
    "all",
    "current_compile",
    "errors",
    "handler",
    "implementation",
    "load_model",
    "r",
    "refine",
    "run_selector",
    "rw",
    "rw_plus",
    "shared",
]
