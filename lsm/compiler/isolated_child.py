"""The compile process: where a compile's model code runs (``lsm.compiler.isolation`` starts it).

Why a process of its own: a model is code the engine does not control. In a thread of the
engine's process, code blocked in C can not be stopped, and nothing bounds what it allocates.
Here the parent can kill it at the time limit, and the kernel refuses it memory past the limit.

The process holds no database connection and reads nothing stored: it is forked from the
forkserver (a fresh interpreter that imported the engine's code, never its connections), and
each request brings everything the model reads, the instance dicts ``lsm.all`` answers from.
It loads each environment's model once (``load_model``'s cache) and keeps it for the next
request, reloaded when the parent's copy has another fingerprint (the source was edited).

One request at a time over a pipe: ``Job`` in, ``("ok", RefineResult)`` or an error out. A
``MemoryError`` anywhere (the address-space limit, ``RLIMIT_AS``, refused an allocation) is
answered as such; the parent then retires this process, as it does after a time limit.
"""

from __future__ import annotations

import faulthandler
import gc
import resource
import signal
import traceback
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any, cast

from lsm.errors import LsmError
from lsm.model import RefineResult, Resource, load_model, refine
from lsm.model.context import InstanceDict
from lsm.model.loader import Model
from lsm.model.report import located

#: the signal the parent sends before a kill: the process writes where it is (``faulthandler``)
DUMP_SIGNAL = signal.SIGUSR1


@dataclass(frozen=True)
class Job:
    """One refinement: the model (by its spec and fingerprint) and the instances it reads."""

    model: str
    fingerprint: str | None
    instances: dict[str, list[InstanceDict]]
    validation: bool
    #: the address-space limit for this job, in bytes
    memory_limit: int


def serve(conn: Connection, dump_path: str) -> None:
    """The process's main loop: answer jobs until the pipe closes (the parent stopped)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _die_with_parent()
    with open(dump_path, "w") as dump:
        faulthandler.register(DUMP_SIGNAL, file=dump, all_threads=True)
        faulthandler.enable(file=dump, all_threads=True)  # a crash in C says where, too
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                return
            if job is None:
                return
            _limit_memory(job.memory_limit)
            try:
                answer = _answer(run(job))
            finally:
                _limit_memory(resource.RLIM_INFINITY)
            conn.send_bytes(answer)
            del job, answer
            gc.collect(0)


def _answer(answer: tuple[Any, ...]) -> bytes:
    """``answer`` pickled; a result too large for the memory limit, or one that can not be
    pickled, is answered with that error instead (the parent never waits for a lost answer)."""
    try:
        return bytes(ForkingPickler.dumps(answer))
    except MemoryError:
        del answer
        return bytes(ForkingPickler.dumps(("memory", _traceback())))
    except Exception as exc:
        message = f"the compile's result can not be sent back: {type(exc).__name__}: {exc}"
        return bytes(ForkingPickler.dumps(("error", LsmError, message, {"traceback": _traceback()})))


def run(job: Job) -> tuple[Any, ...]:
    """Refine ``job``; the answer the parent reads."""
    model: Model | None = None
    try:
        model = _model(job.model, job.fingerprint)
        return ("ok", as_data(refine(model, job.instances, validation=job.validation)))
    except MemoryError:
        return ("memory", _traceback())
    except LsmError as exc:
        details = dict(exc.details)
        details.setdefault("traceback", _traceback())
        details.update(located(exc, _files(model)))
        return ("error", type(exc), exc.message, details)
    except Exception as exc:  # a bug that escaped the model's error handling: as an internal error
        details = {"traceback": _traceback(), **located(exc, _files(model))}
        return ("error", LsmError, f"{type(exc).__name__}: {exc}", details)


def as_data(result: RefineResult) -> RefineResult:
    """``result`` with each resource as its ``ResourceData``: all the compiler reads of a resource
    (its id, and the data it stores), and a tuple of plain values is far cheaper to pickle
    than the resource object. Shared lists and resources stay shared (the sets reuse the lists
    of single-instance trees), so nothing is sent twice."""
    data: dict[int, Any] = {}
    lists: dict[int, list[Any]] = {}

    def convert(resources: list[Resource]) -> list[Resource]:
        out = lists.get(id(resources))
        if out is None:
            out = lists[id(resources)] = []
            for resource in resources:
                item = data.get(id(resource))
                if item is None:
                    item = data[id(resource)] = resource.to_data()
                out.append(item)
        return cast(list[Resource], out)  # read only through ``id`` and ``to_data()``

    return replace(
        result,
        owned={iid: convert(rs) for iid, rs in result.owned.items()},
        sets={root: convert(rs) for root, rs in result.sets.items()},
        shared=convert(result.shared),
    )


def _model(spec: str, fingerprint: str | None) -> Model:
    model = load_model(spec)
    if fingerprint is not None and model.fingerprint != fingerprint:
        model = load_model(spec, reload=True)  # the parent loaded an edited source
    return model


def _files(model: Model | None) -> list[str]:
    return list(model.files) if model is not None else []


def _limit_memory(limit: int) -> None:
    """The soft address-space limit (the hard one stays open, so the next job may raise it)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent (the single-threaded forkserver, which
    ends with the engine's process) ends: no compile outlives the engine, even one blocked in C."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the closed pipe still ends an idle process
        pass


def _traceback() -> str:
    return traceback.format_exc()
