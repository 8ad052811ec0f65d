"""How instances are shown: a listing, one instance with its attribute sets, deploy progress.

Why a module of its own: ``lsm instance``, ``lsm expert`` and ``lsm adopt`` answer instances
and must show them alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape

from lsm.cli import render
from lsm.cli.console import out

if TYPE_CHECKING:
    from rich.table import Table


def instances_table(instances: list[dict[str, Any]], title: str) -> Table:
    """A listing of instances: id, state, version, owner and the attributes in force."""
    table = render.table(title, ("id", "state", "version", "owner", "attributes"))
    for i in instances:
        attributes = i.get("active_attributes") or i.get("candidate_attributes") or {}
        state = escape(i["state"]) + (" [dim](deleted)[/]" if i.get("deleted") else "")
        table.add_row(i["id"], state, str(i["version"]), render.cell(i.get("owner")), render.cell(attributes))
    return table


def show_instance(instance: dict[str, Any]) -> None:
    """One instance: its header, then its three attribute sets side by side."""
    head = {
        k: instance.get(k)
        for k in ("id", "service_entity", "state", "version", "desired_state_version", "owner", "deleted")
    }
    head.update(created_at=instance.get("created_at"), last_updated=instance.get("last_updated"))
    if instance.get("deployment_progress"):
        head["deploy"] = progress_line(instance["deployment_progress"])
    render.print_key_values(out, head, title=f"{instance.get('service_entity')} instance")
    table = render.table("attributes", ("attribute", "candidate", "active", "rollback"))
    sets = [instance.get(f"{s}_attributes") or {} for s in ("candidate", "active", "rollback")]
    for key in sorted({k for s in sets for k in s}):
        table.add_row(escape(key), *(render.cell(s[key]) if key in s else "" for s in sets))
    out.print(table)


def progress_line(progress: dict[str, Any]) -> str:
    """``3/5 deployed, 1 failed, 1 waiting`` (counts that are zero left out)."""
    parts = [f"{progress.get('deployed', 0)}/{progress.get('total', 0)} deployed"]
    parts += [f"{progress[k]} {k}" for k in ("failed", "skipped", "waiting") if progress.get(k)]
    return ", ".join(parts)
