"""How ``lsm instance diagnose`` shows why an instance is where it is: the causal chain, one
``└─ because ...`` line per link, then the facts as short lines (``--json`` has everything)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from lsm.cli import render
from lsm.cli.console import out
from lsm.cli.instance_views import progress_line


def _compile_line(report: dict[str, Any] | None) -> str | None:
    if not report:
        return None
    line = f"{report.get('kind')} compile {report.get('id')}: {report.get('status')}"
    error = (report.get("report") or {}).get("error")
    return line + (f" ({render.compact(error)})" if error else "")


def show_diagnosis(data: dict[str, Any]) -> None:
    """The causal chain, one link per line and indented by depth, then the facts as short lines;
    ``--json`` has everything."""
    _print_chain(data)
    instance = data.get("instance") or {}
    allowed = ", ".join(f"{a.get('trigger')} -> {a.get('target')}" for a in data.get("allowed") or [])
    last_error = data.get("last_error")
    summary: dict[str, Any] = {
        "instance": f"{instance.get('service_entity')} {instance.get('id')} v{instance.get('version')}",
        "state": data.get("state"),
        "allowed": allowed or "nothing (a final state)",
        "last error": last_error
        and f"{last_error.get('source')} -> {last_error.get('target')}: {last_error.get('message')}",
        "validation": _compile_line(data.get("validation_compile")),
        "pending": _compile_line(data.get("pending_compile")),
    }
    progress = data.get("deployment_progress")
    if progress and progress.get("total"):
        summary["deploy"] = progress_line(progress)
    resources = data.get("resources") or []
    summary["failed resources"] = "; ".join(_resource_problem(r) for r in resources) or None
    render.print_key_values(out, summary, title="diagnosis")


def _print_chain(data: dict[str, Any]) -> None:
    """``router r1 is in `creating```, then ``└─ because <cause>`` per link, each one deeper."""
    chain = data.get("cause") or []
    summary = str(data.get("summary") or "")
    if not chain:
        if summary:
            out.print(escape(summary))
        return
    if chain[0].get("kind") == "none":
        out.print(f"[bold]{escape(summary)}[/]")
        return
    tail = " because " + " because ".join(str(link.get("message")) for link in chain)
    head = summary.removesuffix(tail) if summary.endswith(tail) else summary
    out.print(f"[bold]{escape(head)}[/]")
    for depth, link in enumerate(chain):
        kind = f"[dim]({escape(str(link.get('kind')))})[/]"
        out.print(f"{'   ' * depth}└─ because {escape(str(link.get('message')))} {kind}")


def _resource_problem(resource: dict[str, Any]) -> str:
    """A failed resource with its last error, a skipped one with what blocked it."""
    line = f"{resource.get('id')} ({resource.get('status')})"
    if resource.get("blocked_by"):
        return f"{line}: requires {', '.join(resource['blocked_by'])}"
    if resource.get("last_error"):
        return f"{line}: {resource['last_error']}"
    return line
