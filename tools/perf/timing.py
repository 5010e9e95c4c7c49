"""Timing a call the way the micro-benchmarks do: one warm-up call, then the median."""

import statistics
import time


def median_seconds(call, repeats, clock=time.perf_counter):
    """Median wall time of `repeats` calls of `call()`, after one untimed call, as `clock()`
    (seconds) measures it."""
    call()
    times = []
    for _ in range(repeats):
        start = clock()
        call()
        times.append(clock() - start)
    return statistics.median(times)


def gflop_per_s(flops, call, repeats):
    """`flops` over `median_seconds(call, repeats)`, in GFLOP/s to four significant digits
    (a tiny test product's rate stays above zero)."""
    return float(f"{flops / median_seconds(call, repeats) / 1e9:.4g}")
