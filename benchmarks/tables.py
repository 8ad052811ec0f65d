"""The tables a person reads after a run (rich); the JSON document stays the record.

Why separate from ``report``: formatting changes often and must never change what is stored.
Every time is shown in milliseconds, memory in MB; a size whose run failed shows its error.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def print_document(doc: dict[str, Any], console: Console) -> None:
    """Print the scenario's tables, the failed sizes and the checks of one document."""
    results = [r for r in doc["results"] if "error" not in r]
    if doc["scenario"] == "full":
        console.print(_full_stages(results, doc["backend"]))
        console.print(_full_end_to_end(results, doc["backend"]))
    else:
        console.print(_partial(results, doc["backend"]))
    for failed in (r for r in doc["results"] if "error" in r):
        console.print(f"[red]size {failed['size']:,} failed:[/red] {failed['error']}")
    if doc["checks"]:
        console.print(checks_table(doc["checks"]))


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:,.1f}"


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right", no_wrap=True)
    return table


def _full_stages(results: list[dict[str, Any]], backend: str) -> Table:
    table = _table(
        f"full compile, stages on their own, empty desired state ({backend})",
        "size",
        "resources",
        "seed s",
        "load ms",
        "refine ms",
        "unroll",
        "impls",
        "check",
        "request ms",
        "export ms",
        "total ms",
        "peak RSS MB",
    )
    for r in results:
        s = r["stages"]
        refine = s["refine"]
        table.add_row(
            f"{r['size']:,}",
            f"{s['resources']:,}",
            f"{r['seed_s']:.2f}",
            _ms(s["load_s"]),
            _ms(s["refine_s"]),
            _ms(refine.get("unroll")),
            _ms(refine.get("implementations")),
            _ms(refine.get("check")),
            _ms(s["request_s"]),
            _ms(s["export_s"]),
            _ms(s["total_s"]),
            _mb(r["peak_rss_mb"]),
        )
    return table


def _full_end_to_end(results: list[dict[str, Any]], backend: str) -> Table:
    table = _table(
        f"full compile end to end, as the compile worker runs it ({backend})",
        "size",
        "run",
        "wall ms",
        "cpu ms",
        "select ms",
        "refine ms",
        "request ms",
        "export ms",
        "overhead ms",
        "gc ms",
        "gen2 GCs",
        "resources",
        "trees refined",
        "sets written",
        "peak RSS MB",
    )
    for r in results:
        for name, label in (
            ("first", "1st: empty"),
            ("second", "2nd: 1 changed, incremental"),
            ("complete", "3rd: 1 changed, complete"),
        ):
            run = r["end_to_end"].get(name)
            if run is None:
                continue
            t = run["timings"]
            table.add_row(
                f"{r['size']:,}",
                label,
                _ms(run["wall_s"]),
                _ms(run.get("cpu_s")),
                _ms(t.get("select")),
                _ms(t.get("refine_total")),
                _ms(t.get("request")),
                _ms(t.get("export")),
                _ms(t.get("overhead")),
                _ms(run.get("gc_s")),
                str(run.get("gc_collections", ["-"] * 3)[2]),
                f"{run.get('version_resources') or run['resources']:,}",
                f"{(run.get('incremental') or {}).get('trees_refined', run.get('sets')) or 0:,}",
                f"{run['sets_replaced']:,}",
                _mb(r["peak_rss_e2e_mb"]) if name == "first" else "",
            )
    return table


def _partial(results: list[dict[str, Any]], backend: str) -> Table:
    table = _table(
        f"partial compile + export of ONE updated network ({backend})",
        "size",
        "stat",
        "wall ms",
        "to result ms",
        "cpu ms",
        "select ms",
        "refine ms",
        "request ms",
        "export ms",
        "overhead ms",
        "gc ms",
        "update ms",
        "base resources",
        "seed s",
        "base full ms",
        "peak RSS MB",
    )
    for r in results:
        summary = r["summary"]
        for stat in ("median", "p95"):

            def cell(key: str, stat: str = stat, summary: dict[str, Any] = summary) -> str:
                return _ms(summary[key][stat]) if key in summary else "-"

            first = stat == "median"
            table.add_row(
                f"{r['size']:,}" if first else "",
                f"{'p50' if first else 'p95'} of {r['repeat']}",
                cell("wall_s"),
                cell("result_s"),
                cell("cpu_s"),
                cell("select"),
                cell("refine_total"),
                cell("request"),
                cell("export"),
                cell("overhead"),
                cell("gc_s"),
                cell("update_s"),
                f"{r['base']['resources']:,}" if first else "",
                f"{r['seed_s']:.2f}" if first else "",
                _ms(r["base"]["wall_s"]) if first else "",
                _mb(r["peak_rss_mb"]) if first else "",
            )
    return table


def checks_table(checks: list[dict[str, Any]]) -> Table:
    """The verdicts of a document against the targets (``benchmarks.report.checks``)."""
    table = _table("checks against the targets", "check", "value", "limit", "verdict")
    for c in checks:
        scale, unit = (1000.0, "ms") if c["unit"] == "s" else (1.0, c["unit"])
        table.add_row(
            c["name"],
            f"{c['value'] * scale:,.2f} {unit}",
            f"{c['limit'] * scale:,.2f} {unit}",
            "[green]ok[/green]" if c["ok"] else "[red]MISSED[/red]",
        )
    return table
