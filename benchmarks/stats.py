"""Order statistics of repeated samples: median and nearest-rank percentiles.

Why not ``statistics.quantiles``: it interpolates between samples and refuses fewer than two,
while a p95 over 30 runs should be a run that really happened, and the smoke test repeats
twice. Nearest rank is defined for any non-empty sample and never invents a value.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of a non-empty sample."""
    if not values:
        raise ValueError("percentile of an empty sample")
    ordered = sorted(values)
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def quantiles(values: Sequence[float]) -> dict[str, float] | None:
    """``p50``, ``p95``, ``p99`` and ``max`` of a sample (latencies), ``None`` for an empty one."""
    if not values:
        return None
    return {
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values),
    }


def summarize(values: Iterable[float]) -> dict[str, float]:
    """``median``, ``p95``, ``min``, ``max`` and ``mean`` of one sample (the unit is the caller's)."""
    sample = list(values)
    return {
        "median": statistics.median(sample),
        "p95": percentile(sample, 95),
        "min": min(sample),
        "max": max(sample),
        "mean": statistics.fmean(sample),
    }


def timed_ms(fn: Callable[[], object], repeat: int) -> dict[str, float]:
    """Call ``fn`` ``repeat`` times; the summary of its wall times in milliseconds (3 decimals)."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000.0)
    return {k: round(v, 3) for k, v in summarize(samples).items()}
