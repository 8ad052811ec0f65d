"""The desired state: versions of resource sets, stored copy-on-write, and the export rules.

The compiler hands each compile's resources to ``DesiredStateStore.export`` as an
``ExportRequest`` (named sets, one per ownership tree, plus the shared set); the API and the
deploy engine read versions back. See ``store`` for the storage design and ``merge`` for the
rules of docs/semantics.md §4.
"""

from lsm.desired_state.diff import ResourceChange, SetChange, VersionDiff
from lsm.desired_state.records import (
    ExportKind,
    ExportRequest,
    ResourceRecord,
    VersionContent,
    VersionInfo,
    resource_set_hash,
)
from lsm.desired_state.store import DesiredStateStore

__all__ = [
    "DesiredStateStore",
    "ExportKind",
    "ExportRequest",
    "ResourceChange",
    "ResourceRecord",
    "SetChange",
    "VersionContent",
    "VersionDiff",
    "VersionInfo",
    "resource_set_hash",
]
