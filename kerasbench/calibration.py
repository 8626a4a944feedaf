"""Calibration: which leak rates this machine and allocator can detect, and the floor that follows.

`kerasbench calibrate` runs the control loop (no TF) in fresh workers: control_noop, and
control_leak_native / control_leak_python at known rates. Each worker runs the largest number of
iterations asked for; a shorter count reads the first N points of the same series (the protocol
up to iteration N is identical, so this is a run of N iterations, at half the cost).

A leak of rate R counts as detected in a run when its verdict, with a floor of R/2, is `grows`:
the run saw a rising trend, a CI above zero and at least half the leak. For each iteration count,
the stored floor is R_min/2, where R_min is the smallest rate detected in >= 95 % of runs in every
heap while control_noop says `grows` in <= 5 % of runs at that floor. The analysis below is pure
(series in, report out); tests feed it simulated series.

With --tf-control it also runs the TF negative control (TF_CONTROL: one model, one input, predict
every iteration; nothing should grow) and reports how often it says `grows` at the chosen floor and
at each candidate floor: a TF loop adds glibc's megabyte sawtooth, which the control loop lacks.
It does not change the stored floor.
"""

import platform
import time

import numpy as np

from . import stats
from .floors import SCHEMA
from .units import KIB

DETECT = 0.95  # share of runs that must say `grows` for a rate to count as detected
FALSE_POSITIVE = 0.05  # largest share of control_noop runs allowed to say `grows`
HEAPS = {"native": "control_leak_native", "python": "control_leak_python"}
TF_CONTROL = ("inference", "reuse_model")  # the TF negative control: one model, one input, predict; must read flat


# --- analysis (pure) ---------------------------------------------------------------------------

def cell_stats(series_list, rate, iterations):
    """Detection rate, false-positive or slope error of one cell (a leak rate in one heap) at `iterations`."""
    fits = [stats.fit_growth(s[:iterations]) for s in series_list]
    floor = rate / 2 if rate else None
    out = {"rate": rate, "iterations": iterations, "runs": len(fits)}
    slopes = np.array([f.slope for f in fits], dtype=float)
    out["median_slope"] = float(np.nanmedian(slopes)) if len(fits) else None
    if rate:
        out["detected"] = float(np.mean([stats.verdict(f, floor) == "grows" for f in fits])) if fits else 0.0
        errors = slopes / rate - 1
        out["median_error"] = float(np.nanmedian(errors))
        out["p95_abs_error"] = float(np.nanpercentile(np.abs(errors), 95))
    else:
        out["fits"] = fits
    return out


def false_positive_rate(fits, floor):
    """Share of control_noop fits that say `grows` at `floor`."""
    return float(np.mean([stats.verdict(f, floor) == "grows" for f in fits])) if fits else 0.0


def candidate_floors(rates):
    """The floors a calibration can choose (half of each rate) and the default floor."""
    return sorted({r / 2 for r in rates} | {float(stats.DEFAULT_FLOOR)})


def tf_control_stats(series_list, iterations, floor, rates):
    """How the TF negative control reads at `iterations`: its slopes, and `grows` at `floor` and each candidate floor.

    `floor` is the calibrated floor at that count, or None (then the default, as `kerasbench run` would use).
    """
    fits = [stats.fit_growth(s[:iterations]) for s in series_list]
    used = stats.DEFAULT_FLOOR if floor is None else floor
    slopes = np.array([f.slope for f in fits], dtype=float)
    by_floor = {str(int(f)): false_positive_rate(fits, f) for f in candidate_floors(rates)}
    safe = next((int(f) for f in candidate_floors(rates) if by_floor[str(int(f))] <= FALSE_POSITIVE), None)
    return {
        "loop": TF_CONTROL[0], "strategy": TF_CONTROL[1], "runs": len(fits),
        "median_slope": float(np.nanmedian(slopes)) if len(fits) else None,
        "max_slope": float(np.nanmax(slopes)) if len(fits) else None,
        "floor": used, "floor_is_default": floor is None,
        "false_positive": false_positive_rate(fits, used),
        "false_positive_by_floor": by_floor,
        "smallest_safe_floor": safe,  # the smallest candidate where it says `grows` in <= 5 % of runs
    }


def analyze(runs, iterations, rates):
    """The calibration report from `runs` ({heap: {rate: [rss series]}}, heap 'noop' at rate 0).

    For each iteration count: every cell's detection rate and slope error, the smallest rate
    detected in each heap, the noop false-positive rate at each candidate floor, and the floor;
    with heap 'tf' (the TF negative control, rate 0) also how it reads at that floor.
    """
    report = {"iterations": list(iterations), "rates": list(rates), "by_iterations": {}}
    for n in iterations:
        noop = cell_stats(runs.get("noop", {}).get(0, []), 0, n)
        cells = {heap: {r: cell_stats(runs[heap][r], r, n) for r in rates if r in runs.get(heap, {})}
                 for heap in HEAPS if heap in runs}
        smallest = {heap: next((r for r in sorted(c) if c[r]["detected"] >= DETECT), None) for heap, c in cells.items()}
        fp = {r: false_positive_rate(noop["fits"], r / 2) for r in rates}
        floor, detects = None, None
        for r in sorted(rates):
            if cells and all(r in c and c[r]["detected"] >= DETECT for c in cells.values()) and fp[r] <= FALSE_POSITIVE:
                floor, detects = r / 2, r
                break
        report["by_iterations"][str(n)] = {
            "noop_median_slope": noop["median_slope"],
            "noop_runs": noop["runs"],
            "false_positive": {str(r): fp[r] for r in rates},
            "cells": {heap: {str(r): {k: v for k, v in s.items() if k != "fits"} for r, s in c.items()} for heap, c in cells.items()},
            "smallest_detected": smallest,
            "floor": floor,
            "detects": detects,
        }
        if runs.get("tf", {}).get(0):
            report["by_iterations"][str(n)]["tf_control"] = tf_control_stats(runs["tf"][0], n, floor, rates)
    return report


def make_calibration(report, allocator, detected, runs, warmup, seconds):
    """The JSON stored per machine and allocator: the report plus what it was measured on."""
    return {
        "schema": SCHEMA,
        "host": platform.node(),
        "allocator": allocator,
        "allocator_detected": detected,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "warmup": warmup,
        "seconds": round(seconds, 1),
        "floors": {n: r["floor"] for n, r in report["by_iterations"].items()},
        "report": report,
    }


# --- measuring ---------------------------------------------------------------------------------

def cells_for(rates, heaps, tf_control=False):
    """(heap, strategy, rate) of every control to run: control_noop first, then each heap's rates (then the TF control)."""
    cells = [("noop", "control_noop", 0)] + [(h, HEAPS[h], r) for h in heaps for r in rates]
    return cells + ([("tf", TF_CONTROL[1], 0)] if tf_control else [])


def measure(allocator, runs, iterations, rates, heaps=tuple(HEAPS), warmup=2, progress=None, tf_control=False):
    """Run every control `runs` times in fresh workers on `allocator`; returns (series by cell, detected allocator).

    With `tf_control`, the TF negative control too (cell 'tf', rate 0), last.
    """
    from .runner import RunSpec, run_worker

    longest = max(iterations)
    series, detected = {}, None
    cells = cells_for(rates, heaps, tf_control)
    for index, (heap, strategy, rate) in enumerate(cells, 1):
        loop = TF_CONTROL[0] if heap == "tf" else "control"
        spec = RunSpec(loop, strategy, iterations=longest, warmup=warmup, leak_bytes=rate or KIB,
                       allocator=allocator, floor=0.0).validate()
        for run in range(runs):
            if progress:
                progress(index, len(cells), heap, rate, run, runs)
            outcome = run_worker(spec, repeat=run)
            if outcome["status"] != "ok":
                raise RuntimeError(f"{loop} × {strategy} at {rate // KIB} KiB {outcome['status']}: {outcome['reason']}")
            detected = outcome["environment"]["allocator"]
            series.setdefault(heap, {}).setdefault(rate, []).append(outcome["result"]["series"]["rss"])
    return series, detected


# --- reporting ---------------------------------------------------------------------------------

def _kib(v):
    return "none" if v is None else f"{v / KIB:g}"


def summary_rows(cal):
    """One markdown row per iteration count: smallest rate detected per heap, noop false positives, floor."""
    rows = []
    for n, r in cal["report"]["by_iterations"].items():
        floor = r["floor"]
        fp = r["false_positive"].get(str(r["detects"])) if r["detects"] else None
        rows.append(f"| {cal['allocator']} | {n} | " + " | ".join(_kib(r["smallest_detected"].get(h)) for h in HEAPS)
                    + f" | {'n/a' if fp is None else f'{fp:.0%}'} | {_kib(floor)} |")
    return rows


def detail_rows(cal):
    """One markdown row per positive control: detection share and slope error."""
    rows = []
    for n, r in cal["report"]["by_iterations"].items():
        for heap, cells in r["cells"].items():
            for rate, c in cells.items():
                rows.append(f"| {cal['allocator']} | {n} | {heap} | {int(rate) // KIB} | {c['detected']:.0%} | "
                            f"{c['median_slope'] / KIB:+.1f} | {c['median_error']:+.0%} | {c['p95_abs_error']:.0%} |")
    return rows


SUMMARY_HEADER = ("| allocator | iterations | smallest leak detected, native (KiB/iter) | smallest, python heap | "
                  "control_noop `grows` at that floor | stored floor (KiB/iter) |\n|---|---|---|---|---|---|")
DETAIL_HEADER = ("| allocator | iterations | heap | leak KiB/iter | runs `grows` (floor = leak/2) | median slope KiB/iter | "
                 "median error | 95th pct. of abs. error |\n|---|---|---|---|---|---|---|---|")


def tf_control_rows(cal):
    """One markdown row per iteration count of the TF negative control, where it was measured."""
    rows = []
    for n, r in cal["report"]["by_iterations"].items():
        t = r.get("tf_control")
        if t:
            default = " (default)" if t["floor_is_default"] else ""
            by_floor = ", ".join(f"{int(f) // KIB}: {v:.0%}" for f, v in t["false_positive_by_floor"].items())
            rows.append(f"| {cal['allocator']} | {n} | {t['runs']} | {t['median_slope'] / KIB:+.1f} | {t['max_slope'] / KIB:+.1f} | "
                        f"{_kib(t['floor'])}{default} | {t['false_positive']:.0%} | {by_floor} | {_kib(t['smallest_safe_floor'])} |")
    return rows


TF_CONTROL_HEADER = (f"| allocator | iterations | runs of `{TF_CONTROL[0]}` × `{TF_CONTROL[1]}` | median slope KiB/iter | "
                     "largest slope | floor (KiB/iter) | `grows` at that floor | `grows` at each floor (KiB/iter) | "
                     "smallest floor with ≤ 5 % |\n|---|---|---|---|---|---|---|---|---|")


def render(cals):
    """Markdown tables of one or more stored calibrations (what `kerasbench calibrate` prints)."""
    lines = [SUMMARY_HEADER] + [row for cal in cals for row in summary_rows(cal)]
    lines += ["", DETAIL_HEADER] + [row for cal in cals for row in detail_rows(cal)]
    tf_rows = [row for cal in cals for row in tf_control_rows(cal)]
    if tf_rows:
        lines += ["", "TF negative control (one model, one input; should read flat):", "", TF_CONTROL_HEADER] + tf_rows
    lines.append("")
    for cal in cals:
        lines.append(f"{cal['allocator']} (detected {cal['allocator_detected']}) on {cal['host']}: {cal['runs']} runs per cell, "
                     f"{cal['warmup']} warm-up, {cal['seconds']:.0f} s, {cal['created']}")
    return "\n".join(lines) + "\n"
