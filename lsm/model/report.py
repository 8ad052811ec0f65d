"""Model errors found by a refinement, and where in the model they come from.

Why this module: a failed compile is only useful to a model author when it names the instance,
the resource and the line of the model that made it. Exceptions carry a traceback; the
deepest frame in the model's own files is the line to show. Resource-level problems (one id in
two sets, a dangling ``requires``) are found after the implementations ran, when no frame is
left, so the offending implementation is run once more under a profiler that records, for
every resource built, the model line that built it. That costs nothing on the happy path.

Every problem is collected (up to a limit) and raised as one ``ModelError`` whose ``errors``
detail lists them, each with ``kind``, ``message``, ``instance``, ``entity``, ``resource``,
``line`` (``path:lineno``) and, for exceptions, ``traceback``.
"""

from __future__ import annotations

import inspect
import linecache
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from pydantic import BaseModel

from lsm.errors import ModelError
from lsm.model.resource import Resource, Shared

#: at most this many problems are reported (and located) per compile
MAX_PROBLEMS = 50

_LSM_DIR = str(Path(__file__).resolve().parent.parent) + os.sep
_LIBRARY_DIRS = tuple(
    {
        str(Path(p).resolve()) + os.sep
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    }
)


@dataclass
class Problem:
    """One model error; ``message`` is a complete sentence, the rest are its ids."""

    kind: str
    message: str
    instance: str | None = None
    entity: str | None = None
    resource: str | None = None
    line: str | None = None
    traceback: str | None = None
    details: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "message": self.message,
            "instance": self.instance,
            "entity": self.entity,
            "resource": self.resource,
            "line": self.line,
        }
        if self.traceback is not None:
            out["traceback"] = self.traceback
        if self.details:
            out.update(self.details)
        return out


def raise_problems(problems: list[Problem]) -> None:
    """Raise one ``ModelError`` for all problems (nothing when there are none)."""
    if not problems:
        return
    first = problems[0]
    if len(problems) == 1:
        message = first.message
    else:
        shown = "; ".join(p.message for p in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        message = f"{len(problems)} model errors: {shown}{more}"
    raise ModelError(
        message,
        instance=first.instance,
        entity=first.entity,
        resource=first.resource,
        line=first.line,
        errors=[p.to_dict() for p in problems],
        # an export rule the first problem breaks (rule 6: a cross-set ``requires``), named at
        # the top as an export refused by the rule would name it
        **{k: v for k, v in (first.details or {}).items() if k in _RULE_DETAILS},
    )


#: the details of a problem that name an export rule and what it is about
_RULE_DETAILS = ("rule", "sets", "requires")


# -- locating lines -----------------------------------------------------------------------
def model_dir(fn: Callable[..., Any]) -> str:
    """The directory of the file that defines ``fn``: frames in it count as model lines."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else (inspect.getsourcefile(fn) or "")
    return str(Path(filename).resolve().parent) + os.sep


def _is_model_file(filename: str, directory: str) -> bool:
    """Under the model's directory, and not in the engine or a library below it.

    The engine and the virtualenv may sit inside the model's directory (a model file at the
    repository root); a model installed in site-packages is under a library directory itself,
    so only the library directories that do not contain the model count as foreign.
    """
    if filename.startswith("<"):
        return False
    path = str(Path(filename).resolve())
    if not path.startswith(directory):
        return False
    foreign = tuple(d for d in (_LSM_DIR, *_LIBRARY_DIRS) if not directory.startswith(d))
    return not path.startswith(foreign)


def _show(filename: str, lineno: int | None) -> str:
    try:
        rel = os.path.relpath(filename)
        if not rel.startswith(".."):
            filename = rel
    except ValueError:  # another drive on Windows
        pass
    return f"{filename}:{lineno}"


def definition_line(fn: Callable[..., Any]) -> str:
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(fn)
    return _show(code.co_filename, code.co_firstlineno)


def exception_line(exc: BaseException, fn: Callable[..., Any]) -> str:
    """The deepest traceback line in the model's files, else the implementation's own line."""
    directory = model_dir(fn)
    tb: TracebackType | None = exc.__traceback__
    found: str | None = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if _is_model_file(filename, directory):
            found = _show(filename, tb.tb_lineno)
        tb = tb.tb_next
    return found or definition_line(fn)


def format_traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def construction_sites(fn: Callable[..., Any], service: Any) -> dict[str, str]:
    """Run ``fn(service)`` again and return ``{resource id: model line that built it}``.

    Only on the error path: a profiler sees every ``BaseModel.__init__`` return, and the first
    frame up the stack that lies in the model's files is the line to show.
    """
    directory = model_dir(fn)
    init_code = BaseModel.__init__.__code__
    sites: dict[str, str] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "return" or frame.f_code is not init_code:
            return
        obj = frame.f_locals.get("self")
        if not isinstance(obj, Resource):
            return
        try:
            rid = obj.id
        except Exception:  # a half-built resource: its construction raised
            return
        caller = frame.f_back
        while caller is not None and not _is_model_file(caller.f_code.co_filename, directory):
            caller = caller.f_back
        if caller is not None:
            sites.setdefault(rid, _show(caller.f_code.co_filename, caller.f_lineno))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        out = fn(service)
        if out is not None and not isinstance(out, Resource | Shared):
            for _ in out:
                pass
    except Exception:
        pass
    finally:
        sys.setprofile(previous)
    return sites


def locate(resource_id: str, service: Any, implementations: Iterable[Callable[..., Any]]) -> str | None:
    """The model line where ``service``'s implementations built ``resource_id``, if found."""
    fallback: str | None = None
    for fn in implementations:
        sites = construction_sites(fn, service)
        if resource_id in sites:
            return sites[resource_id]
        fallback = fallback or definition_line(fn)
    return fallback


# -- where a failed compile's error is in the model ----------------------------------------------
def _model_frames(exc: BaseException, is_model: Callable[[str], bool]) -> tuple[str, int, str] | None:
    """The innermost traceback frame in a model file, over the exception and what caused it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb: TracebackType | None = current.__traceback__
        found: tuple[str, int, str] | None = None
        while tb is not None:
            code = tb.tb_frame.f_code
            if is_model(code.co_filename):
                found = (code.co_filename, tb.tb_lineno, code.co_name)
            tb = tb.tb_next
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


_TRACEBACK_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')


def _from_details(exc: BaseException, is_model: Callable[[str], bool]) -> tuple[str, int, str | None] | None:
    """Where a ``ModelError`` the refinement built from its problems points: the innermost model
    frame of a problem's traceback text, else its ``line`` (``path:lineno``, no function)."""
    if not isinstance(exc, ModelError):
        return None
    problems = [exc.details, *[e for e in exc.details.get("errors") or [] if isinstance(e, dict)]]
    for problem in problems:
        frames = [
            m for m in _TRACEBACK_LINE.finditer(str(problem.get("traceback") or "")) if is_model(m["file"])
        ]
        if frames:
            last = frames[-1]
            return last["file"], int(last["line"]), last["function"]
    for problem in problems:
        filename, _, number = str(problem.get("line") or "").rpartition(":")
        if filename and number.isdigit():
            return filename, int(number), None
    return None


def error_location(exc: BaseException, files: Iterable[str]) -> dict[str, Any] | None:
    """``{file, line, function, source}`` of a model error: where in the model it happened.

    ``files`` are the model's source files. The innermost frame of the traceback that lies in one
    of them wins (the line that raised, not the engine code that called the model); a problem the
    refinement already located (``details["line"] = "path:lineno"``, e.g. a resource built twice)
    is used when the traceback has no model frame. ``source`` is that line of the file, stripped;
    ``function`` is None when only the line is known. None when the model is not involved.
    """
    resolved = {str(Path(f).resolve()) for f in files}

    def is_model(filename: str) -> bool:
        return not filename.startswith("<") and str(Path(filename).resolve()) in resolved

    frame = _model_frames(exc, is_model)
    function: str | None = None
    if frame is not None:
        filename, lineno, function = frame
    else:
        found = _from_details(exc, is_model)
        if found is None:
            return None
        filename, lineno, function = found
    return {
        "file": _show(filename, None).rpartition(":")[0],
        "line": lineno,
        "function": function,
        "source": linecache.getline(filename, lineno).strip() or None,
    }


def located(exc: BaseException, files: Iterable[str]) -> dict[str, Any]:
    """``{"location": {file, line, function, source}}`` when the error is in the model's files,
    else nothing: what a compile report's ``error`` gains (diagnose and the console show it)."""
    location = error_location(exc, files)
    return {} if location is None else {"location": location}
