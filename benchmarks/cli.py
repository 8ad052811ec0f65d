"""``python -m benchmarks {full,partial,e2e}``: parse the options, run each size, print, write JSON.

Why argparse and not the engine's typer CLI: the harness is a developer tool outside the
``lsm`` package and must not grow the product's command surface; ``--help`` is all it needs.

Each size runs in a fresh subprocess (``benchmarks.isolate``) unless ``--in-process`` is given
(the smoke test uses it; peak RSS is then the whole process's). ``e2e`` has its own options
and runner (``benchmarks.e2e_cli``): its server and workers are subprocesses already. The run
exits 1 when a size could not be measured, 0 otherwise, whatever the checks say: targets are
reported, not asserted (docs/architecture.md §8: performance is measured by benchmarks, never
asserted by timed tests).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import report, tables
from benchmarks.backend import backend_name
from benchmarks.deploy import add_deploy_parser, run_deploy_command
from benchmarks.e2e_cli import add_e2e_parser, run_e2e_command
from benchmarks.faults import add_faults_parser, run_faults_command
from benchmarks.isolate import SizeJob, run_in_process, run_in_subprocess
from benchmarks.orders import add_orders_parser, run_orders_command
from benchmarks.watch import add_watch_parser, run_watch_command

FULL_SIZES = "1000,5000,10000,100000"
PARTIAL_SIZES = "1000,10000,100000"


def parse_sizes(value: str) -> list[int]:
    """``"1000,5k,100_000"`` -> ``[1000, 5000, 100000]`` (positive, in the given order)."""
    sizes: list[int] = []
    for part in value.split(","):
        token = part.strip().lower().replace("_", "")
        try:
            size = int(token[:-1]) * 1000 if token.endswith("k") else int(token)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a size: {part!r}") from None
        if size < 1:
            raise argparse.ArgumentTypeError(f"a size must be positive, not {size}")
        sizes.append(size)
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Measure lsm-engine: compiles over the examples/networks model "
        "(N networks x --hosts hosts + 1 shared resource), or the whole system over HTTP (e2e).",
    )
    commands = parser.add_subparsers(
        dest="scenario", required=True, metavar="{full,partial,e2e,deploy,orders,faults,watch}"
    )
    full = commands.add_parser(
        "full",
        help="full compile: stages on their own, then end to end (empty store, then one change)",
        description="Per size, in a fresh process and database: seed N networks in 'up'; time "
        "loading the exporting instances, the refine, building the export request and the store "
        "export on their own; then a full compile end to end twice (empty desired state, then "
        "after changing one network).",
    )
    _common(full, FULL_SIZES)
    partial = commands.add_parser(
        "partial",
        help="one instance update as a partial compile + export, repeated (median, p95)",
        description="Per size, in a fresh process and database: seed N networks, store one full "
        "compile, then REPEAT times change one random network's active hosts and run a partial "
        "compile of it; report median and p95 of the end-to-end time and of each stage.",
    )
    _common(partial, PARTIAL_SIZES)
    partial.add_argument("--repeat", type=int, default=30, help="updates measured per size (default 30)")
    add_e2e_parser(commands)
    add_deploy_parser(commands)
    add_watch_parser(commands)
    add_orders_parser(commands)
    add_faults_parser(commands)
    return parser


def _common(parser: argparse.ArgumentParser, sizes: str) -> None:
    parser.add_argument(
        "--sizes", type=parse_sizes, default=parse_sizes(sizes), help=f"networks per run (default {sizes})"
    )
    parser.add_argument("--hosts", type=int, default=5, help="hosts per network (default 5)")
    parser.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL server (a fresh schema per run, dropped after); default: a fresh SQLite file",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="result file (default benchmarks/results/<scenario>-<backend>-<timestamp>.json)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where SQLite files go (default: the temp directory)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed: which networks change")
    parser.add_argument(
        "--in-process", action="store_true", help="no subprocess per size (peak RSS is then cumulative)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        nargs="?",
        const=report.RESULTS / "profiles",
        default=None,
        help="cProfile the measured compiles into this directory (default benchmarks/results/profiles); "
        "inflates their times: profile and measure in separate runs",
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.scenario == "e2e":
        return run_e2e_command(args, argv)
    if args.scenario == "deploy":
        return run_deploy_command(args, argv)
    if args.scenario == "watch":
        return run_watch_command(args, argv)
    if args.scenario == "orders":
        return run_orders_command(args, argv)
    if args.scenario == "faults":
        return run_faults_command(args, argv)
    out = Console()
    if not out.is_terminal:  # a pipe or a file: keep every column whole
        out = Console(width=200)
    progress = Console(stderr=True, log_path=False)
    started_at = datetime.now(UTC)
    backend = backend_name(args.database_url)
    repeat = getattr(args, "repeat", 1)
    results: list[dict[str, Any]] = []
    for size in args.sizes:
        job = SizeJob(
            args.scenario, size, args.hosts, repeat, args.database_url, args.workdir, args.seed, args.profile
        )
        progress.log(f"{args.scenario} {size:,} networks on {backend} ...")
        result = run_in_process(job) if args.in_process else run_in_subprocess(job)
        results.append(result)
        progress.log(
            f"{args.scenario} {size:,}: {'FAILED ' + result['error'] if 'error' in result else 'done'}"
        )
    parameters = {
        "sizes": args.sizes,
        "hosts": args.hosts,
        "repeat": repeat if args.scenario == "partial" else None,
        "seed": args.seed,
        "in_process": args.in_process,
        "profile": None if args.profile is None else str(args.profile),
        "database_url": args.database_url,
    }
    doc = report.document(args.scenario, backend, argv, parameters, results, args.database_url, started_at)
    path = report.write_json(doc, args.json or report.default_path(args.scenario, backend, started_at))
    tables.print_document(doc, out)
    out.print(f"results written to {path}")
    return 1 if any("error" in r for r in results) else 0
