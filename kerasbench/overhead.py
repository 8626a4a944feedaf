"""What the harness costs: one read of each probe, and probes on vs off on the control loop.

Probe reads are timed in this process (no TF loaded, so live_objects is cheap here: in a TF
process it walks far more objects). The loop comparison runs control workers with
RunSpec.probes on and off, each in fresh processes, and compares their loop time to the wall
time of the whole worker (interpreter start, imports, protocol).
"""

import time

import numpy as np

from . import probes

KIB = 1024


def _per_call(fn, n):
    """Median seconds of one call of `fn`, over 5 batches of `n` calls."""
    batches = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        batches.append((time.perf_counter() - t0) / n)
    return float(np.median(batches))


def _peak_read():
    probes.PeakTracker().start().stop()


PROBES = {
    "rss_bytes": (probes.rss_bytes, "one RSS reading (/proc/self/statm), taken every iteration"),
    "PeakTracker": (_peak_read, "reset VmHWM and read it back (start + stop), once per phase"),
    "live_objects": (probes.live_objects, "count GC-tracked objects, at phase boundaries only"),
    "malloc_trim": (probes.malloc_trim, "glibc malloc_trim(0), before each reading with glibc_trim"),
}


def probe_costs(n=200):
    """{probe: seconds per read} in this process."""
    return {name: _per_call(fn, n) for name, (fn, _) in PROBES.items()}


def loop_overhead(runs=3, iterations=300, strategies=("control_noop", "control_leak_native"), leak_bytes=64 * KIB):
    """Per strategy: median loop seconds per iteration with probes on and off, and worker wall seconds."""
    from .runner import RunSpec, run_worker

    rows = []
    for strategy in strategies:
        row = {"strategy": strategy}
        for probes_on in (True, False):
            spec = RunSpec("control", strategy, iterations=iterations, warmup=2, leak_bytes=leak_bytes,
                           probes=probes_on, floor=0.0, memory_cap=2 * 1024**3).validate()
            outcomes = [run_worker(spec, repeat=r) for r in range(runs)]
            bad = [o["reason"] for o in outcomes if o["status"] != "ok"]
            if bad:
                raise RuntimeError(f"control {strategy} failed: {bad[0]}")
            key = "on" if probes_on else "off"
            row[f"loop_{key}"] = float(np.median([o["result"]["loop_seconds"] / iterations for o in outcomes]))
            row[f"wall_{key}"] = float(np.median([o["worker_seconds"] for o in outcomes]))
            row[f"loop_total_{key}"] = float(np.median([o["result"]["loop_seconds"] for o in outcomes]))
        row["ratio"] = row["loop_on"] / row["loop_off"] if row["loop_off"] else float("inf")
        row["added_per_iter"] = row["loop_on"] - row["loop_off"]
        rows.append(row)
    return rows


def render(costs, rows, iterations):
    """Two plain-text tables: probe read costs, and the loop with probes on vs off."""
    lines = ["| probe | µs per read | when |", "|---|---|---|"]
    lines += [f"| `{name}` | {costs[name] * 1e6:.1f} | {PROBES[name][1]} |" for name in costs]
    lines += ["", f"| control loop ({iterations} iterations) | µs/iter probes off | µs/iter probes on | on/off | "
              "added µs/iter | worker wall s | loop share of wall |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['strategy']}` | {r['loop_off'] * 1e6:.1f} | {r['loop_on'] * 1e6:.1f} | {r['ratio']:.1f}× | "
                     f"{r['added_per_iter'] * 1e6:+.1f} | {r['wall_on']:.2f} | {r['loop_total_on'] / r['wall_on']:.1%} |")
    return "\n".join(lines) + "\n"
