"""The model-author API: resources, implementations, service objects, ``lsm.all``, refinement.

Pure Python, no I/O; imports only ``lsm.catalog``, ``lsm.errors``, ``lsm.schemas`` (size limits)
and ``lsm.gc_pause``.

* ``resource``: ``Resource`` (``class Host(Resource, type="net::Host", id_attribute="name")``),
  ``shared(...)``, ``ResourceData``;
* ``implementation``: ``@implementation(binding)``;
* ``service``: ``Service``, one instance as an implementation sees it;
* ``context``: ``all`` (``lsm.all``), the running compile;
* ``refinement``: ``refine`` / ``validate``, the pure compile core, and ``RefineResult``;
* ``loader``: ``Model`` and ``load_model``;
* ``resource_set``: ``ResourceSet`` (``lsm.ResourceSet``), sets a model declares by name for
  ``lsm export``, and ``declared_model``, what such a model declares;
* ``adoption``: ``@adopt(resource_type, binding)`` (``lsm.adopt``), how a discovered resource
  becomes an instance; ``resource_id``: parsing ``Type[agent,attr=value]``.
"""

from lsm.model.adoption import Adopter, adopt
from lsm.model.context import CompileContext, all_instances, current_compile
from lsm.model.implementation import Implementation, Produced, bindings_of, implementation
from lsm.model.loader import IMPLEMENTATION_MARK, Model, load_model, model_from_module
from lsm.model.meta import Meta
from lsm.model.refinement import RefineResult, refine, validate
from lsm.model.resource import Resource, ResourceData, Shared, shared
from lsm.model.resource_set import DeclaredModel, ResourceSet, declared_model
from lsm.model.service import Service

#: ``lsm.all(binding)``: the instance dicts of ``binding`` in the running compile
all = all_instances  # noqa: A001  # `lsm.all`: the name model authors know from Inmanta

__all__ = [
    "IMPLEMENTATION_MARK",
    "Adopter",
    "CompileContext",
    "DeclaredModel",
    "Implementation",
    "Meta",
    "Model",
    "Produced",
    "RefineResult",
    "Resource",
    "ResourceData",
    "ResourceSet",
    "Service",
    "Shared",
    "adopt",
    "all",
    "all_instances",
    "bindings_of",
    "current_compile",
    "declared_model",
    "implementation",
    "load_model",
    "model_from_module",
    "refine",
    "shared",
    "validate",
]
