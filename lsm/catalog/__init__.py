"""The service catalog: typed entities, attribute modifiers, inter-service relations, bindings."""

from lsm.catalog.binding import Binding
from lsm.catalog.catalog import Catalog
from lsm.catalog.entity import AttributeInfo, ServiceEntity
from lsm.catalog.modifiers import Modifier, r, rw, rw_plus
from lsm.catalog.names import Name
from lsm.catalog.references import Ref, Reference
from lsm.catalog.validation import (
    identity_value,
    validate_attributes,
    validate_create,
    validate_server_write,
    validate_update,
)

__all__ = [
    "AttributeInfo",
    "Binding",
    "Catalog",
    "Modifier",
    "Name",
    "Ref",
    "Reference",
    "ServiceEntity",
    "identity_value",
    "r",
    "rw",
    "rw_plus",
    "validate_attributes",
    "validate_create",
    "validate_server_write",
    "validate_update",
]
