"""Shared helpers for benchmarks: timing, and the one-line JSON report ``bench/run`` collects.

A benchmark script prints human-readable lines and, last, one line ``BENCH_JSON <json list>`` where each
item is ``{"name", "unit", "median", "min", "max", "baseline"?, "ratio"?, "target", "kind", "passed"}``.
``kind`` is ``"ratio"`` (target is the highest acceptable ratio to the baseline measured in the same
run) or ``"abs"`` (target is the highest acceptable absolute median, in ``unit``).
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from typing import Any, Callable


def measure(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1) -> list[float]:
    """Wall-clock seconds of ``fn()``, ``repeat`` times after ``warmup`` unmeasured runs."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def result(name: str, samples: list[float], *, unit: str = "s", target: float, kind: str = "abs",
           baseline: list[float] | None = None, scale: float = 1.0) -> dict[str, Any]:
    med = statistics.median(samples) * scale
    item: dict[str, Any] = {
        "name": name, "unit": unit, "median": med, "min": min(samples) * scale, "max": max(samples) * scale,
        "target": target, "kind": kind,
    }
    if baseline is not None:
        base = statistics.median(baseline) * scale
        item["baseline"] = base
        item["ratio"] = med / base if base else float("inf")
        item["passed"] = item["ratio"] <= target if kind == "ratio" else med <= target
    else:
        item["passed"] = med <= target
    return item


def report(items: list[dict[str, Any]]) -> None:
    print(f"# python {platform.python_version()} on {platform.machine()} ({platform.system()})")
    for it in items:
        extra = f"  baseline {it['baseline']:.4g}{it['unit']}  ratio {it['ratio']:.3f}" if "baseline" in it else ""
        verdict = "PASS" if it["passed"] else "FAIL"
        print(f"{it['name']}: median {it['median']:.4g}{it['unit']} (min {it['min']:.4g}, max {it['max']:.4g})"
              f"{extra}  target {'≤' if it['kind'] == 'abs' else 'ratio ≤'} {it['target']}  {verdict}")
    print("BENCH_JSON " + json.dumps(items))
    sys.stdout.flush()
