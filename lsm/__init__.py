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
"""

from lsm import errors
from lsm.catalog import (
    AttributeInfo,
    Binding,
    Catalog,
    Modifier,
    Ref,
    Reference,
    ServiceEntity,
    r,
    rw,
    rw_plus,
)
from lsm.model import (
    CompileContext,
    Model,
    Produced,
    RefineResult,
    Resource,
    Service,
    Shared,
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

__version__ = "0.1.0"

__all__ = [
    "AttributeInfo",
    "BaseSelector",
    "Binding",
    "Catalog",
    "CompileContext",
    "InstanceRecord",
    "InventoryView",
    "Model",
    "Modifier",
    "OwnerTreeSelector",
    "PhasedSelector",
    "Produced",
    "Ref",
    "Reference",
    "RefineResult",
    "Relation",
    "Resource",
    "Selector",
    "Service",
    "ServiceEntity",
    "Shared",
    "UnionSelector",
    "__version__",
    "all",
    "current_compile",
    "errors",
    "implementation",
    "load_model",
    "r",
    "refine",
    "run_selector",
    "rw",
    "rw_plus",
    "shared",
]
