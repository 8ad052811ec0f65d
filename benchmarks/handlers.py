"""The cost of the bundled handlers alone: ``python -m benchmarks.handlers [--null N] [--files N]``.

Why apart from the engine scenarios: the engine's deploy throughput (>= 2,000 ``std::Null``
deploys/s) is bounded by what one handler call costs, and a first deploy of ``std::File``
resources by the file system. This measures exactly the per-resource work an agent does around
a handler (``materialize`` from the stored form, a ``HandlerContext``, ``deploy``), first deploy
and then a second one that finds everything in its desired state, with no store and no
scheduling. Figures go to stdout as JSON lines; nothing is asserted (docs/architecture.md §8).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lsm.deploy.handler import HandlerContext
from lsm.deploy.materialize import materialize
from lsm.deploy.registry import HandlerRegistry
from lsm.model.resource import Resource, ResourceData


def deploy_all(registry: HandlerRegistry, data: list[ResourceData], state_dir: Path) -> dict[str, float]:
    """Deploy every resource once; ``{"seconds": ..., "per_second": ...}``."""
    started = time.perf_counter()
    for d in data:
        handler = registry.handler_for(d.id.split("[", 1)[0])
        ctx = HandlerContext(d.id, state_dir=state_dir)
        handler.deploy(ctx, materialize(handler, d.id, d.attributes, d.requires))
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 4), "per_second": round(len(data) / seconds) if seconds else 0.0}


def measure(
    kind: str, count: int, make: Callable[[int], Resource], state_dir: Path
) -> list[dict[str, object]]:
    registry = HandlerRegistry()
    data = [make(i).to_data() for i in range(count)]
    return [
        {"handler": kind, "resources": count, "deploy": which, **deploy_all(registry, data, state_dir)}
        for which in ("first", "in_state")
    ]


def main(argv: list[str] | None = None) -> int:
    from lsm_handlers.files import File
    from lsm_handlers.null import Null

    parser = argparse.ArgumentParser(prog="python -m benchmarks.handlers", description=__doc__)
    parser.add_argument("--null", type=int, default=100_000, help="std::Null resources (over 10 agents)")
    parser.add_argument("--files", type=int, default=10_000, help="std::File resources")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lsm-handlers-bench-") as tmp:
        root = Path(tmp)
        rows = measure("std::Null", options.null, lambda i: Null(agent=f"a{i % 10}", name=f"n{i}"), root)
        rows += measure(
            "std::File",
            options.files,
            lambda i: File(agent="files", path=str(root / f"f{i}"), content=f"line {i}\n"),
            root,
        )
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
