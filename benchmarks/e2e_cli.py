"""``python -m benchmarks e2e``: its options, its JSON document and its table.

Why apart from ``benchmarks.cli``: the e2e scenario has other knobs (routers, updates,
concurrency, workers, a deadline) and one run instead of a list of sizes, and it runs no size
in ``benchmarks.isolate``: its server and workers are separate processes anyway, and the seed
runs in its own interpreter. The document has the same envelope as the other scenarios'
(``benchmarks.report.document``: command, machine, code commit), with one result.
"""

from __future__ import annotations

import argparse
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks import report
from benchmarks.backend import backend_name
from benchmarks.drain import run_drain
from benchmarks.e2e import E2eOptions, run_e2e
from benchmarks.tables import checks_table


def add_e2e_parser(commands: Any) -> None:
    """Add the ``e2e`` subcommand to the scenarios of ``benchmarks.cli``."""
    e2e = commands.add_parser(
        "e2e",
        help="operators' updates over real HTTP until the desired state holds them",
        description="Seed ROUTERS routers x 4 ports of examples/router_port in 'up' plus one full "
        "compile (bulk import, before the server starts); start `lsm server` (+ WORKERS `lsm worker`) "
        "on a fresh database; PATCH the MTU of UPDATES random ports concurrently; wait until every "
        "update's exporting compile committed and verify the latest desired state holds them all.",
    )
    e2e.add_argument(
        "--routers", type=int, default=10_000, help="routers seeded, 4 ports each (default 10000)"
    )
    e2e.add_argument("--updates", type=int, default=1_000, help="ports updated, distinct (default 1000)")
    e2e.add_argument("--concurrency", type=int, default=None, help="requests in flight (default: --updates)")
    e2e.add_argument("--workers", type=int, default=0, help="extra `lsm worker` processes (default 0)")
    e2e.add_argument(
        "--server-workers",
        type=int,
        default=None,
        help="`lsm server --workers N`: worker processes the server starts (0: compiles in the server "
        "process, the former default); default: the server's own default",
    )
    e2e.add_argument(
        "--no-server-worker",
        action="store_true",
        help="`lsm server --no-worker`: compiles only in the --workers processes (SQLite: --workers 1)",
    )
    e2e.add_argument(
        "--drain",
        action="store_true",
        help="worker scaling without the API in the way: `lsm server --no-worker` takes every PATCH "
        "first (the validations queue up), then WORKERS `lsm worker` start at once; timed from their "
        "start to the last needed compile (default --workers 1; SQLite: 1 only)",
    )
    e2e.add_argument("--timeout", type=float, default=600.0, help="bound from the first PATCH to done (s)")
    e2e.add_argument("--poll", type=float, default=0.5, help="seconds between completion polls (default 0.5)")
    e2e.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL server (a fresh database per run, dropped after); default: a fresh SQLite file",
    )
    e2e.add_argument("--json", type=Path, default=None, help="result file (default benchmarks/results/...)")
    e2e.add_argument("--workdir", type=Path, default=None, help="where SQLite files and logs go (temp dir)")
    e2e.add_argument("--seed", type=int, default=0, help="random seed: which ports change, to what")


def run_e2e_command(args: argparse.Namespace, argv: list[str]) -> int:
    """Run once, print the table, write the document; 1 when the run failed, else 0."""
    out = Console()
    if not out.is_terminal:
        out = Console(width=200)
    progress = Console(stderr=True, log_path=False)
    started_at = datetime.now(UTC)
    backend = backend_name(args.database_url)
    options = E2eOptions(
        routers=args.routers,
        updates=args.updates,
        concurrency=args.concurrency,
        workers=max(args.workers, 1) if args.drain else args.workers,
        server_worker=not (args.no_server_worker or args.drain),
        server_workers=args.server_workers,
        timeout=args.timeout,
        database_url=args.database_url,
        workdir=args.workdir,
        rng_seed=args.seed,
        poll_s=args.poll,
    )
    mode = "drain" if args.drain else "e2e"
    progress.log(
        f"{mode}: {args.routers:,} routers, {args.updates:,} updates, "
        f"{options.workers} workers on {backend} ..."
    )
    code = report.code_info()
    measured: dict[str, Any] = {}
    run = run_drain if args.drain else run_e2e
    try:
        result: dict[str, Any] = {**run(options, measured), "code": code}
    except Exception as exc:  # a broken run is an error entry in the document, like a failed size
        error = f"{type(exc).__name__}: {exc}"
        result = {**measured, "error": error, "traceback": traceback.format_exc(), "code": code}
    parameters = {
        "routers": args.routers,
        "updates": args.updates,
        "concurrency": options.in_flight,
        "workers": options.workers,
        "drain": args.drain,
        "timeout": args.timeout,
        "poll": args.poll,
        "seed": args.seed,
        "database_url": args.database_url,
    }
    doc = report.document("e2e", backend, argv, parameters, [result], args.database_url, started_at)
    path = report.write_json(doc, args.json or report.default_path("e2e", backend, started_at))
    print_e2e(doc, out)
    out.print(f"results written to {path}")
    return 1 if "error" in result else 0


def print_e2e(doc: dict[str, Any], console: Console) -> None:
    """The table of one e2e document (a failed run prints its error and the processes' logs)."""
    result = doc["results"][0]
    if "error" in result:
        console.print(f"[red]e2e failed:[/red] {result['error']}")
        for name, tail in (result.get("logs") or {}).items():
            console.print(f"[bold]{name} log (tail)[/bold]\n{tail}")
        return
    if result.get("mode") == "drain":
        console.print(_drain_table(doc, result))
    else:
        console.print(_summary_table(doc, result))
    console.print(_compiles_table(result))
    if doc["checks"]:
        console.print(checks_table(doc["checks"]))


QUANTILES = ("p50", "p95", "p99", "max")


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:,.1f}"


def _summary_table(doc: dict[str, Any], r: dict[str, Any]) -> Table:
    title = (
        f"e2e: {r['updates']:,} PATCHes on {r['ports']:,} ports ({r['routers']:,} routers), "
        f"{r['concurrency']} in flight, {r['workers']} extra workers ({doc['backend']})"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("measure", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    rows = [
        ("updates/s (first PATCH -> last needed compile)", f"{r['updates_per_s']:,.1f}"),
        ("total s", f"{r['duration_s']:,.2f}"),
        ("all accepted s", f"{r['all_accepted_s']:,.2f}"),
        ("accepted / errors", f"{r['accepted']:,} / {r['errors'] or 'none'}"),
    ]
    for name, key in (
        ("PATCH latency ms", "patch_latency_s"),
        ("GET of another port during the burst, ms", "read_during_burst_s"),
        ("completion latency ms", "completion_s"),
    ):
        q = r.get(key) or {}
        rows.append((f"{name} p50 / p95 / p99 / max", " / ".join(_ms(q.get(k)) for k in QUANTILES)))
    floor = r.get("floor") or {}
    quantiles = floor.get("patch_latency_s") or {}
    rows.append(
        (
            "PATCH latency ms of a do-nothing endpoint (this machine's floor) p50 / p95 / p99 / max",
            floor["error"][:60] if "error" in floor else " / ".join(_ms(quantiles.get(k)) for k in QUANTILES),
        )
    )
    rows += [
        ("exporting runs", f"{r['exporting_runs']:,}"),
        ("some compile running s (of total)", f"{r['compiles_busy_s']:,.2f}"),
        (
            "verified in desired state",
            f"{r['verified']['verified']:,} (version {r['verified']['desired_state_version']})",
        ),
        (
            "seed: import s / full compile s",
            f"{r['seed']['import_s']:.2f} / {r['seed']['full_compile_s']:.2f}",
        ),
        ("server start s", f"{r['server_start_s']:.2f}"),
        ("CPU s", ", ".join(f"{k} {v:,.1f}" for k, v in r["cpu_s"].items() if v is not None)),
        (
            "CPU ms per update during the load",
            ", ".join(f"{k} {1000 * v / r['updates']:,.2f}" for k, v in r["cpu_during_load_s"].items()),
        ),
        ("1-min load average at start", f"{r['load_average_at_start']:.2f}"),
        _reference_row(doc),
        ("peak RSS MB", ", ".join(f"{k} {v:,.0f}" for k, v in r["peak_rss_mb"].items() if v is not None)),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _reference_row(doc: dict[str, Any]) -> tuple[str, str]:
    """The machine's speed (``report.reference_loop``): compare runs only where it agrees."""
    reference = doc["machine"].get("reference_loop_ms")
    value = f"{reference['best']:,.1f} / {reference['median']:,.1f}" if reference else "-"
    return ("machine reference loop ms, best / median (lower: faster)", value)


def _drain_table(doc: dict[str, Any], r: dict[str, Any]) -> Table:
    title = (
        f"e2e --drain: {r['accepted']:,} queued updates on {r['ports']:,} ports ({r['routers']:,} routers), "
        f"{r['workers']} `lsm worker` ({doc['backend']})"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("measure", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    accept = r["accept"]
    latency = accept["patch_latency_s"] or {}
    rows = [
        ("updates/s of the drain (workers' start -> last needed compile)", f"{r['updates_per_s']:,.1f}"),
        ("drain s", f"{r['drain_s']:,.2f}"),
        ("first claim s (workers' start-up)", f"{r['first_claim_s']:,.2f}"),
        ("updates/s from the first claim", f"{r['updates_per_s_from_first_claim']:,.1f}"),
        ("some compile running s (of the drain)", f"{r['compiles_busy_s']:,.2f}"),
        ("exporting runs", f"{r['exporting_runs']:,}"),
        *(
            (
                f"{name}: requests / runs / claims",
                "; ".join(
                    f"{kind} {counts.get(kind + '_requests', 0)} / {counts.get(kind + '_runs', 0)}"
                    f" / {counts.get(kind + '_claims', 0)}"
                    for kind in ("validation", "partial", "full")
                    if kind + "_requests" in counts
                ),
            )
            for name, counts in r["per_worker"].items()
        ),
        (
            "ran once: validated once / new versions",
            f"{r['ran_once']['validated_once']:,} / {r['ran_once']['new_versions']:,}",
        ),
        (
            "verified in desired state",
            f"{r['verified']['verified']:,} (version {r['verified']['desired_state_version']})",
        ),
        ("PATCHes: accepted / errors", f"{accept['accepted']:,} / {accept['errors'] or 'none'}"),
        ("PATCHes: all answered s / p50 ms", f"{accept['all_answered_s']:,.2f} / {_ms(latency.get('p50'))}"),
        (
            "seed: import s / full compile s",
            f"{r['seed']['import_s']:.2f} / {r['seed']['full_compile_s']:.2f}",
        ),
        ("CPU s", ", ".join(f"{k} {v:,.1f}" for k, v in r["cpu_s"].items() if v is not None)),
        (
            "machine CPU busy during the drain (all cores, everyone)",
            "-" if r.get("machine_cpu_busy") is None else f"{r['machine_cpu_busy']:.0%}",
        ),
        (
            "1-min load average at start / at the drain",
            f"{r['load_average_at_start']:.2f} / {r['load_average_at_drain']:.2f}",
        ),
        _reference_row(doc),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _compiles_table(r: dict[str, Any]) -> Table:
    table = Table(title="compiles during the load (sums over the runs, seconds)", title_justify="left")
    columns = (
        "kind",
        "requested",
        "ran",
        "success",
        "failed",
        "wall",
        "queue wait",
        "select",
        "refine",
        "export",
    )
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right", no_wrap=True)
    for kind, counts in sorted(r["compiles"].items()):
        stages = r["compile_stages_s"].get(kind, {})
        table.add_row(
            kind,
            f"{counts.get('requested', 0):,}",
            f"{counts.get('ran', 0):,}",
            f"{counts.get('success', 0):,}",
            f"{counts.get('failed', 0):,}",
            *(
                f"{stages[k]:,.2f}" if k in stages else "-"
                for k in ("wall", "queue_wait", "select", "refine_total", "export")
            ),
        )
    return table
