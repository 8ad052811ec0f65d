"""Compiles as durable jobs: the queue, per-environment locks, the runner and the worker."""

from lsm.compiler.locks import EnvironmentLocks
from lsm.compiler.queue import Batch, CompileQueue
from lsm.compiler.runner import CompileRunner
from lsm.compiler.worker import CompileWorker

__all__ = ["Batch", "CompileQueue", "CompileRunner", "CompileWorker", "EnvironmentLocks"]
