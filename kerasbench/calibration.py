"""Calibration: which leak rates this machine and allocator can detect, and the floor that follows.

`kerasbench calibrate` runs the control loop (no TF) in fresh workers: control_noop, and
control_leak_native / control_leak_python at known rates. Each worker runs the largest number of
iterations asked for; a shorter count reads the first N points of the same series (the protocol
up to iteration N is identical, so this is a run of N iterations, at half the cost).

A leak of rate R counts as detected in a run when its verdict, with a floor of R/2, is `grows`:
the run saw a rising trend, a CI above zero and at least half the leak (judged as a run judges it,
rule.judge at the level of a budgeted run's looks, ALPHA). For each iteration count,
the stored floor is R_min/2, where R_min is the smallest rate detected in >= 95 % of runs in every
heap while control_noop says `grows` in <= 5 % of runs at that floor. This module is the analysis, pure
(series in, report out; tests feed it simulated series), and the tables; the measuring is the calibration's
session (session.run_controls, session.calibrate, session.ensure_calibration).

Both readings are analyzed side by side: RSS (the `floors`, what a run's verdict uses) and, where the
worker reads it (probes.HeapProbe), the allocator's heap bytes in use (`heap_floors`, judged on the
native leak only: small Python objects live in pymalloc arenas, mapped outside malloc's count).

With --tf-control it also runs the TF negative control (TF_CONTROL: one model, one input, predict
every iteration; nothing should grow) and reports how often it says `grows` at the chosen floor and
at each candidate floor: a TF loop adds glibc's megabyte sawtooth, which the control loop lacks.
It does not change the stored floor.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Optional, Sequence

import numpy as np

from . import calibration_store as stored, rule
from .console import markdown_table
from .profiles import PROFILES
from .protocol import PROTOCOL_VERSION
from .units import KIB, floor_kib

DETECT = 0.95  # share of runs that must say `grows` for a rate to count as detected
# The level a run's looks are judged at (the default profile's plan: Bonferroni over its looks), so that a floor is
# what a budgeted run can detect; a fixed count (one look at 0.05) detects at least as much.
ALPHA = rule.alpha_for(rule.planned_looks(PROFILES["default"].min_iterations, PROFILES["default"].max_iterations,
                                          PROFILES["default"].sequential))
FALSE_POSITIVE = 0.05  # largest share of control_noop runs allowed to say `grows`
HEAPS = {"native": "control_leak_native", "python": "control_leak_python"}
TF_CONTROL = ("inference", "reuse_model")  # the TF negative control: one model, one input, predict; must read flat


# --- analysis (pure) ---------------------------------------------------------------------------

def _judged(series_list: Sequence[Sequence[float]], iterations: int, floor: float) -> list:
    """The judgement (rule.judge: warm-up cut, fit, verdict at ALPHA) of the first `iterations` of each series."""
    return [rule.judge(s[:iterations], floor, alpha=ALPHA, resolve=True) for s in series_list]


def cell_stats(series_list: Sequence[Sequence[float]], rate: int, iterations: int) -> dict:
    """Detection rate, false-positive or slope error of one cell (a leak rate in one heap) at `iterations`."""
    floor = rate / 2 if rate else rule.DEFAULT_FLOOR
    judged = _judged(series_list, iterations, floor)
    out = {"rate": rate, "iterations": iterations, "runs": len(judged)}
    slopes = np.array([j.fit.slope for j in judged], dtype=float)
    out["median_slope"] = float(np.nanmedian(slopes)) if len(judged) else None
    if rate:
        out["detected"] = float(np.mean([j.verdict == "grows" for j in judged])) if judged else 0.0
        errors = slopes / rate - 1
        out["median_error"] = float(np.nanmedian(errors))
        out["p95_abs_error"] = float(np.nanpercentile(np.abs(errors), 95))
    else:
        out["series"] = [s[:iterations] for s in series_list]
    return out


def false_positive_rate(series_list: Sequence[Sequence[float]], floor: float) -> float:
    """Share of control_noop series that say `grows` at `floor` (judged as a run judges them)."""
    judged = _judged(series_list, max((len(s) for s in series_list), default=0), floor)
    return float(np.mean([j.verdict == "grows" for j in judged])) if judged else 0.0


def candidate_floors(rates: Sequence[int]) -> list:
    """The floors a calibration can choose (half of each rate) and the default floor."""
    return sorted({r / 2 for r in rates} | {float(rule.DEFAULT_FLOOR)})


def tf_control_stats(series_list: Sequence[Sequence[float]], iterations: int, floor: Optional[float],
                     rates: Sequence[int]) -> dict:
    """How the TF negative control reads at `iterations`: its slopes, and `grows` at `floor` and each candidate floor.

    `floor` is the calibrated floor at that count, or None (then the default, as `kerasbench run` would use).
    """
    series = [s[:iterations] for s in series_list]
    used = rule.DEFAULT_FLOOR if floor is None else floor
    slopes = np.array([j.fit.slope for j in _judged(series, iterations, used)], dtype=float)
    by_floor = {str(int(f)): false_positive_rate(series, f) for f in candidate_floors(rates)}
    safe = next((int(f) for f in candidate_floors(rates) if by_floor[str(int(f))] <= FALSE_POSITIVE), None)
    return {
        "loop": TF_CONTROL[0], "strategy": TF_CONTROL[1], "runs": len(series),
        "median_slope": float(np.nanmedian(slopes)) if len(series) else None,
        "max_slope": float(np.nanmax(slopes)) if len(series) else None,
        "floor": used, "floor_is_default": floor is None,
        "false_positive": false_positive_rate(series, used),
        "false_positive_by_floor": by_floor,
        "smallest_safe_floor": safe,  # the smallest candidate where it says `grows` in <= 5 % of runs
    }


def analyze(runs: dict, iterations: Sequence[int], rates: Sequence[int],
            required: Optional[Sequence[str]] = None) -> dict:
    """The calibration report from `runs` ({heap: {rate: [series]}}, heap 'noop' at rate 0).

    For each iteration count: every cell's detection rate and slope error, the smallest rate
    detected in each heap, the noop false-positive rate at each candidate floor, and the floor: half
    the smallest rate R at or above every heap's smallest detected rate (the heaps of `required`, default
    all; each heap may be measured at its own rates) where control_noop says `grows` in <= 5 % at R/2; with heap
    'tf' (the TF negative control, rate 0) also how it reads at that floor.
    """
    report = {"iterations": list(iterations), "rates": list(rates), "by_iterations": {}}
    for n in iterations:
        noop = cell_stats(runs.get("noop", {}).get(0, []), 0, n)
        cells = {heap: {r: cell_stats(runs[heap][r], r, n) for r in rates if r in runs.get(heap, {})}
                 for heap in HEAPS if heap in runs}
        smallest = {heap: next((r for r in sorted(c) if c[r]["detected"] >= DETECT), None) for heap, c in cells.items()}
        fp = {r: false_positive_rate(noop["series"], r / 2) for r in rates}
        floor, detects = None, None
        judged = [smallest[heap] for heap in cells if required is None or heap in required]
        need = max(judged) if judged and None not in judged else None  # each heap's smallest, at its own rates
        for r in sorted(rates):
            if need is not None and r >= need and fp[r] <= FALSE_POSITIVE:
                floor, detects = r / 2, r
                break
        report["by_iterations"][str(n)] = {
            "noop_median_slope": noop["median_slope"],
            "noop_runs": noop["runs"],
            "false_positive": {str(r): fp[r] for r in rates},
            "cells": {heap: {str(r): {k: v for k, v in s.items() if k != "series"} for r, s in c.items()}
                      for heap, c in cells.items()},
            "smallest_detected": smallest,
            "floor": floor,
            "detects": detects,
        }
        if runs.get("tf", {}).get(0):
            report["by_iterations"][str(n)]["tf_control"] = tf_control_stats(runs["tf"][0], n, floor, rates)
    return report


HEAP_REQUIRED = ("native",)  # malloc's count cannot see small Python objects: pymalloc takes its arenas by mmap


def analyze_series(series: dict, iterations: Sequence[int], rates: Sequence[int]) -> tuple:
    """(RSS report, heap report or None) of run_controls' series: RSS judged on every heap, heap on native only."""
    report = analyze(series.get("rss", {}), iterations, rates)
    heap = series.get("heap")
    return report, (analyze(heap, iterations, rates, required=HEAP_REQUIRED) if heap else None)


def make_calibration(report: dict, allocator: str, detected: str, runs: int, warmup: int, seconds: float,
                     jobs: int = 1, heap_report: Optional[dict] = None, python: str = "") -> dict:
    """The JSON stored per environment key (stored.KEY_FIELDS): the report plus what it was measured on."""
    cal = {
        "schema": stored.SCHEMA,
        "protocol": PROTOCOL_VERSION,  # the rule its controls were judged by (records say theirs too)
        "key": stored.environment_key(allocator, python),  # the Python its controls ran on
        "host": platform.node(),  # where it was made: information only, not part of the key
        "allocator": allocator,
        "allocator_detected": detected,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "warmup": warmup,
        "jobs": jobs,
        "seconds": round(seconds, 1),
        "load": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "floors": {n: r["floor"] for n, r in report["by_iterations"].items()},
        "report": report,
    }
    if heap_report is not None:
        cal["heap_floors"] = {n: r["floor"] for n, r in heap_report["by_iterations"].items()}
        cal["heap_report"] = heap_report
    return cal


# --- measuring ---------------------------------------------------------------------------------

# Every count a budgeted run looks at (rule.look_points from 8), and 4 and 2000: floors follow the count judged.
DEFAULT_COUNTS = (4, *rule.look_points(8, 2000), 2000)
DEFAULT_RATES_KIB = (4, 16, 64, 256)
AUTO_RUNS = 10  # a run that finds no fitting calibration makes one: 10 runs per control (~1 minute on 2 cores)
SERIES = ("rss", "heap")  # the readings a calibration analyzes, where the worker has them


def cells_for(rates: Sequence[int], heaps: Sequence[str], tf_control: bool = False) -> list:
    """(heap, strategy, rate) of every control to run: control_noop, then each heap's rates, then the TF control."""
    cells = [("noop", "control_noop", 0)] + [(h, HEAPS[h], r) for h in heaps for r in rates]
    return cells + ([("tf", TF_CONTROL[1], 0)] if tf_control else [])


# --- reporting ---------------------------------------------------------------------------------

def _kib(v):
    return "none" if v is None else f"{v / KIB:g}"


def _floor(v):
    return "none" if v is None else floor_kib(v)


def _pct(v):
    return "n/a" if v is None else f"{v:.0%}"


def _reports(cal: dict) -> tuple:
    return cal["report"], cal.get("heap_report")


def summary_rows(cal: dict) -> list:
    """One row (its cells) per iteration count: smallest rate detected (RSS, heap), noop false positives, floors."""
    rows = []
    rss, heap = _reports(cal)
    for n, r in rss["by_iterations"].items():
        h = (heap or {}).get("by_iterations", {}).get(n)

        def fp(rep):
            return rep["false_positive"].get(str(rep["detects"])) if rep and rep["detects"] else None

        rows.append((cal["allocator"], n, _kib(r["smallest_detected"].get("native")),
                     _kib(h["smallest_detected"].get("native")) if h else "n/a",
                     _kib(r["smallest_detected"].get("python")), f"{_pct(fp(r))} / {_pct(fp(h))}",
                     _floor(r["floor"]), _floor(h["floor"]) if h else "n/a"))
    return rows


def detail_rows(cal: dict) -> list:
    """One row (its cells) per positive control: detection share and slope error, RSS and heap side by side."""
    rows = []
    rss, heap = _reports(cal)
    for n, r in rss["by_iterations"].items():
        h = (heap or {}).get("by_iterations", {}).get(n, {})
        for kind, cells in r["cells"].items():
            for rate, c in cells.items():
                pair = (c, h.get("cells", {}).get(kind, {}).get(rate))  # RSS, heap (None: not read)
                det = " / ".join(_pct(x["detected"]) if x else "n/a" for x in pair)
                slope = " / ".join(f"{x['median_slope'] / KIB:+.2f}" if x else "n/a" for x in pair)
                err = " / ".join(f"{x['median_error']:+.1%}" if x else "n/a" for x in pair)
                p95 = " / ".join(f"{x['p95_abs_error']:.1%}" if x else "n/a" for x in pair)
                rows.append((cal["allocator"], n, kind, f"{int(rate) / KIB:g}", det, slope, err, p95))
    return rows


SUMMARY_HEADER = ("allocator", "iterations", "smallest native leak detected, RSS (KiB/iter)", "same, heap",
                  "smallest python leak, RSS", "control_noop `grows` at that floor, RSS / heap",
                  "floor, RSS (KiB/iter)", "floor, heap")
DETAIL_HEADER = ("allocator", "iterations", "leak in", "KiB/iter", "runs `grows` (floor = leak/2), RSS / heap",
                 "median slope KiB/iter, RSS / heap", "median error, RSS / heap",
                 "95th pct. of abs. error, RSS / heap")


def tf_control_rows(cal: dict) -> list:
    """One row (its cells) per iteration count of the TF negative control, where it was measured."""
    rows = []
    for n, r in cal["report"]["by_iterations"].items():
        t = r.get("tf_control")
        if t:
            default = " (default)" if t["floor_is_default"] else ""
            by_floor = ", ".join(f"{int(f) // KIB}: {v:.0%}" for f, v in t["false_positive_by_floor"].items())
            rows.append((cal["allocator"], n, t["runs"], f"{t['median_slope'] / KIB:+.1f}",
                         f"{t['max_slope'] / KIB:+.1f}", f"{_kib(t['floor'])}{default}",
                         f"{t['false_positive']:.0%}", by_floor, _kib(t["smallest_safe_floor"])))
    return rows


TF_CONTROL_HEADER = ("allocator", "iterations", f"runs of `{TF_CONTROL[0]}` × `{TF_CONTROL[1]}`",
                     "median slope KiB/iter", "largest slope", "floor (KiB/iter)", "`grows` at that floor",
                     "`grows` at each floor (KiB/iter)", "smallest floor with ≤ 5 %")


def render(cals: Sequence[dict]) -> str:
    """Markdown tables of one or more stored calibrations (what `kerasbench calibrate` prints)."""
    lines = markdown_table(SUMMARY_HEADER, [row for cal in cals for row in summary_rows(cal)])
    lines += [""] + markdown_table(DETAIL_HEADER, [row for cal in cals for row in detail_rows(cal)])
    tf_rows = [row for cal in cals for row in tf_control_rows(cal)]
    if tf_rows:
        lines += ["", "TF negative control (one model, one input; should read flat):", ""]
        lines += markdown_table(TF_CONTROL_HEADER, tf_rows)
    lines.append("")
    for cal in cals:
        where = (f"{stored.describe(cal['key'], allocator=False)}, " if "key" in cal else "") + f"host {cal['host']}"
        load = f", load {' / '.join(map(str, cal['load']))}" if cal.get("load") else ""
        lines.append(f"{cal['allocator']} (detected {cal['allocator_detected']}) on {where}: {cal['runs']} runs per "
                     f"cell, {cal['warmup']} warm-up, {cal.get('jobs', 1)} at once, {cal['seconds']:.0f} s{load}, "
                     f"{cal['created']}")
    return "\n".join(lines) + "\n"


def render_stored(allocators: Sequence[str]) -> str:
    """The best fitting stored calibration of each of `allocators` as `render` prints them, or a line saying none."""
    found = [cal for cal in (stored.load(name) for name in allocators) if cal]
    return render(found) if found else f"no stored calibration fits here (looked in {', '.join(stored.folders())})\n"
