"""Compiles as durable jobs: the queue, per-environment locks, the runner, batched validations,
and the compile queue as a work source for the service loop (``lsm.services``)."""

from lsm.compiler.export_failure import ExportFailures
from lsm.compiler.locks import EnvironmentLocks
from lsm.compiler.queue import Batch, CompileQueue, LeaseLost
from lsm.compiler.runner import CompileRunner
from lsm.compiler.service import CompileService
from lsm.compiler.validation import ValidationBatches

__all__ = [
    "Batch",
    "CompileQueue",
    "CompileRunner",
    "CompileService",
    "EnvironmentLocks",
    "ExportFailures",
    "LeaseLost",
    "ValidationBatches",
]
