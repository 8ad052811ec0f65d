"""``CompilePool``: compiles run their model code in processes that can be stopped and measured.

Why processes: a model blocked in C (a regular expression backtracking, a library call without
a timeout) can not be stopped in a thread, and nothing bounds what a thread allocates. So the
refinement, the only stage that runs model implementations, goes to a compile process
(``lsm.compiler.isolated_child``): the runner thread sends the instance dicts it selected and
read (the process reads nothing stored) and waits for the ``RefineResult`` or the error.

* **Time.** The thread waits until the compile's deadline (``CompileClock``: the work's
  ``compile_timeout``, the same clock the service loop keeps). Past it, the process writes
  where it is (``faulthandler``), is killed, and the compile fails with ``CompileTimeout``
  carrying that traceback. While the process holds the limit, the loop does not interrupt the
  waiting thread (``CompileClock.delegated``): one clock, one owner at a time. After a
  kill the clock starts again for the thread's own work of recording the failure, so that the
  loop's interrupt can not land in the middle of it.
* **Memory.** The process runs each job under an address-space limit (``RLIMIT_AS``, setting
  ``compile_memory_limit``): the kernel refuses the allocation that would pass it, at once and
  whatever allocates, and the model's ``MemoryError`` comes back as ``CompileMemoryLimit``.
  Watching the resident size from outside could only react after the fact, between two looks,
  and an allocation of gigabytes in one call is faster than any look.
* **Death.** A process that dies mid-job (killed, crashed) is replaced and the job is sent once
  more to a fresh one; a second death fails the compile with ``CompileCrashed``.
* **Speed.** The processes are started once and kept: each keeps the models it loaded, so a
  compile costs the pickling of its instances and resources and two pipe messages, not a
  process start or a model import. Partial compiles and validations, the frequent ones, carry
  a few instances each way.
* **Start method.** ``forkserver``: the processes fork from a server process that is a fresh
  interpreter with the engine's code imported and no database connection (forking the engine's
  process would copy its pooled connections, threads and locks into every child).

Every failure here is a ``CompileLimitExceeded`` (a ``ModelError``): the runner and the
validation batches fail the request through their ordinary model-error path, so a killed
validation rejects its candidate like any failed validation. Models built in code rather than
loaded from a source (tests, the empty model) have nothing a process could load: they are
refined in the calling thread, as before.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from lsm.compiler.isolated_child import DUMP_SIGNAL, Job, serve
from lsm.errors import CompileCrashed, CompileMemoryLimit, CompileTimeout, LsmError
from lsm.model import RefineResult, refine
from lsm.model.context import InstanceDict
from lsm.model.loader import Model, loadable
from lsm.store.environments.settings import EnvironmentSettings

MIB = 1024 * 1024
#: a process that died mid-job: the job is sent this many times in all before it fails
ATTEMPTS = 2
#: how long a process stopped at its time limit may take to write where it was
DUMP_WAIT = 1.0


class PoolStopped(BaseException):
    """The compile processes were stopped (the engine stops) while a compile waited for one.

    Not a failure of the compile: its work gives the request back, another process runs it. A
    ``BaseException``, like ``TimeLimitExceeded``, so that no model-error handler records it.
    """


class CompileClock:
    """The time limit of one compile work: restarted per compile, read by the loop and the pool."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline: float | None = None
        #: a compile process holds the limit now: the service loop leaves the thread alone
        self.delegated = False

    def restart(self) -> None:
        self.deadline = time.monotonic() + self.timeout

    def stop(self) -> None:
        self.deadline = None

    def loop_deadline(self) -> float | None:
        """The deadline the service loop enforces (``None`` while a compile process holds it)."""
        return None if self.delegated else self.deadline


_local = threading.local()


def current_clock() -> CompileClock | None:
    """The clock of the compile work running in this thread (``clocked``), if any."""
    clock: CompileClock | None = getattr(_local, "clock", None)
    return clock


@contextmanager
def clocked(clock: CompileClock) -> Iterator[CompileClock]:
    """Run a compile work's body with ``clock`` as this thread's ``current_clock``."""
    previous = current_clock()
    _local.clock = clock
    try:
        yield clock
    finally:
        _local.clock = previous


class _Child:
    """One compile process and the parent's end of its pipe."""

    def __init__(self, context: Any) -> None:
        fd, self.dump_path = tempfile.mkstemp(prefix="lsm-compile-", suffix=".txt")
        os.close(fd)
        self.conn, theirs = context.Pipe(duplex=True)
        self.process = context.Process(
            target=serve, args=(theirs, self.dump_path), name="lsm-compile", daemon=True
        )
        self.process.start()
        theirs.close()
        #: ``kill`` may come from the pool's ``stop`` and from the thread that holds this child
        self._kill_lock = threading.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        pid: int | None = self.process.pid
        return pid

    def where(self) -> str:
        """What the process was running (its threads' tracebacks), asked before it is killed."""
        if self.pid is None or not self.process.is_alive():
            return ""
        path = Path(self.dump_path)
        try:
            os.kill(self.pid, DUMP_SIGNAL)
        except OSError:
            return ""
        deadline, size = time.monotonic() + DUMP_WAIT, -1
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = path.stat().st_size
            if now and now == size:
                break
            size = now
        return self.written()

    def written(self) -> str:
        """What the process wrote of its threads (asked by ``where``, or as it crashed)."""
        return Path(self.dump_path).read_text(errors="replace")

    def kill(self, *, release: bool = True) -> None:
        """Kill the process; with ``release``, also close the pipe and remove the dump file.

        Only the thread that holds the child (or the pool, for an idle one) releases: closing a
        pipe another thread still reads would free its descriptor number for reuse under that
        reader. Safe to call more than once, from any thread."""
        with self._kill_lock:
            if self.process.exitcode is None:
                self.process.kill()
                self.process.join(5)
            if release and not self._closed:
                self._closed = True
                self.conn.close()
                Path(self.dump_path).unlink(missing_ok=True)


class CompilePool:
    """Compile processes, started on demand up to ``size`` and kept (see the module docstring).

    ``size``: the most compiles that run at once (the compile threads of the process). The
    composition root starts and stops the pool; a pool never started starts its processes when
    the first compile asks (``drain`` in tests and benchmarks).
    """

    def __init__(self, size: int, *, warm: int = 1) -> None:
        self.size = max(1, size)
        self.warm = min(warm, self.size)
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["lsm.compiler.isolated_child"])
        self._idle: list[_Child] = []
        self._children: set[_Child] = set()
        self._cond = threading.Condition()
        self._stopped = False
        self._warming: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start ``warm`` processes in the background, so that the first compile does not wait
        for one and the engine's start does not wait for the forkserver either."""
        with self._cond:
            self._stopped = False
        self._warming = threading.Thread(target=self._warm, name="lsm-compile-pool", daemon=True)
        self._warming.start()

    def _warm(self) -> None:
        with self._cond:
            while not self._stopped and len(self._children) < self.warm:
                self._idle.append(self._spawn())
                self._cond.notify()

    def stop(self) -> None:
        """Kill every process (none holds anything but a job in progress, which then fails)."""
        if self._warming is not None:
            self._warming.join()
        with self._cond:
            self._stopped = True
            idle = set(self._idle)
            children = list(self._children)
            self._children.clear()
            self._idle.clear()
            self._cond.notify_all()
        for child in children:  # a busy one's thread sees it die and releases it (``_checkin``)
            child.kill(release=child in idle)

    def pids(self) -> list[int]:
        """The process ids of the compile processes alive now."""
        with self._cond:
            return [c.pid for c in self._children if c.pid is not None and c.process.is_alive()]

    def busy_pids(self) -> list[int]:
        """The process ids of the compile processes running a compile now."""
        with self._cond:
            idle = set(self._idle)
            return [c.pid for c in self._children if c not in idle and c.pid is not None]

    # -- one refinement -------------------------------------------------------------------------
    def refine(
        self,
        model: Model,
        instances: Mapping[str, Sequence[InstanceDict]],
        settings: EnvironmentSettings,
        *,
        validation: bool = False,
    ) -> RefineResult:
        """``lsm.model.refine`` of ``instances``, run in a compile process under the limits."""
        if not loadable(model):
            return refine(model, instances, validation=validation)
        clock = current_clock()
        timeout = clock.timeout if clock is not None else settings.compile_timeout
        deadline = clock.deadline if clock is not None and clock.deadline is not None else None
        if deadline is None:
            deadline = time.monotonic() + timeout
        job = Job(
            model=_spec(model.source),
            fingerprint=model.fingerprint,
            instances={name: list(dicts) for name, dicts in instances.items()},
            validation=validation,
            memory_limit=settings.compile_memory_limit * MIB,
        )
        for attempt in range(1, ATTEMPTS + 1):
            answer = self._run(job, deadline, timeout, clock, last=attempt == ATTEMPTS)
            if answer is not None:
                return _unpack(answer, settings)
        raise AssertionError("unreachable: the last attempt raises")

    def _run(
        self, job: Job, deadline: float, timeout: float, clock: CompileClock | None, *, last: bool
    ) -> tuple[Any, ...] | None:
        """Send ``job`` to a process and wait for its answer; ``None``: the process died, try again."""
        child = self._checkout()
        healthy = False
        if clock is not None:
            clock.delegated = True
        try:
            try:
                child.conn.send(job)
            except OSError:  # it died before it took the job (or the pool stops)
                self._died(child, last=last)
                return None
            if not wait([child.conn], timeout=max(0.0, deadline - time.monotonic())):
                if clock is not None:  # the limit was the model's; recording its failure gets its own
                    clock.restart()
                where = child.where()
                raise CompileTimeout(
                    f"the model did not finish within {timeout:g} s (setting compile_timeout); "
                    "its compile process was stopped",
                    limit=timeout,
                    traceback=where or "(the compile process did not say where it was)",
                )
            try:
                answer: tuple[Any, ...] = child.conn.recv()
            except (EOFError, OSError):
                self._died(child, last=last)
                return None
            healthy = answer[0] != "memory"  # after a refused allocation: a fresh process
            return answer
        finally:
            if clock is not None:
                clock.delegated = False
            self._checkin(child, healthy)

    def _died(self, child: _Child, *, last: bool) -> None:
        """``child`` died holding a job: return to send the job again, else raise why not."""
        child.process.join(5)
        code = child.process.exitcode
        if self._stopped:
            raise PoolStopped("the compile processes were stopped") from None
        if not last:
            return None
        raise CompileCrashed(
            f"the compile process died (exit code {code}) before it answered",
            exit_code=code,
            traceback=child.written() or "(the compile process did not say where it was)",
        ) from None

    def _checkout(self) -> _Child:
        with self._cond:
            while True:
                if self._stopped:
                    raise PoolStopped("the compile processes are stopped")
                if self._idle:
                    return self._idle.pop()
                if len(self._children) < self.size:
                    return self._spawn()
                self._cond.wait()

    def _checkin(self, child: _Child, healthy: bool) -> None:
        """Give ``child`` back; an unhealthy one (stopped, died, out of memory) is replaced."""
        with self._cond:
            if healthy and child in self._children:
                self._idle.append(child)
                self._cond.notify()
                return
            self._children.discard(child)
            if not self._stopped and len(self._children) < self.warm:
                self._idle.append(self._spawn())
            self._cond.notify()
        child.kill()

    def _spawn(self) -> _Child:
        """A new process, counted (call with ``_cond`` held)."""
        child = _Child(self._context)
        self._children.add(child)
        return child


def _unpack(answer: tuple[Any, ...], settings: EnvironmentSettings) -> RefineResult:
    """The compile process's answer as a result, or the error it reported raised here."""
    kind = answer[0]
    if kind == "ok":
        result: RefineResult = answer[1]
        return result
    if kind == "memory":
        limit = settings.compile_memory_limit
        raise CompileMemoryLimit(
            f"the model went past the memory limit of {limit} MiB (setting compile_memory_limit); "
            "its compile process refused the allocation",
            limit_mib=limit,
            traceback=answer[1],
        )
    cls, message, details = answer[1], answer[2], answer[3]
    error: LsmError = cls.__new__(cls)
    LsmError.__init__(error, message, **details)
    raise error


def _spec(source: str) -> str:
    """The model's spec as the compile process must load it: a path made absolute (the process
    may not share the working directory), a module path as it is."""
    path = Path(source)
    return str(path.resolve()) if path.exists() else source
