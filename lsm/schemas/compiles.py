"""Compile kinds and statuses: the vocabulary of compile requests, reports and the queue."""

from __future__ import annotations

from enum import StrEnum


class CompileKind(StrEnum):
    """What a compile does.

    ``full`` and ``partial`` export desired state (*exporting* compiles, serialized per
    environment); ``validation`` checks one instance's candidate and exports nothing.
    """

    FULL = "full"
    PARTIAL = "partial"
    VALIDATION = "validation"

    @property
    def exporting(self) -> bool:
        return self is not CompileKind.VALIDATION


class CompileStatus(StrEnum):
    """Where a compile request stands: ``queued`` -> ``running`` -> ``success`` | ``failed``."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (CompileStatus.SUCCESS, CompileStatus.FAILED)
