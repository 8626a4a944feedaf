"""What the harness costs (`kerasbench overhead`), each part measured in one run.

1. Probes: one read of each probe, timed in this process (no TF loaded, so live_objects is cheap
   here: in a TF process it walks far more objects), and the control loop in fresh workers with
   RunSpec.probes on and off.
2. The suite: pairs run through runner.measure, as `kerasbench run` does; the wall time of the run
   against the workers' bare work (warm-up + iterations) and their worker_seconds, and where the
   rest went (`breakdown`).
3. The asv layer (optional): `asv run --python=same` on the Control class in a temporary clone;
   asv's wall time against the workers', and the cost of each short track_ process.
4. Scaling: suite wall time over iteration counts and numbers of strategies, with a linear fit
   (`fit_scaling`): fixed + per strategy (a fresh worker) + per pair-iteration.

This module is the analysis, pure (timings in, numbers and tables out; tests feed it synthetic timings);
the measuring is the command's (kerasbench/commands/overhead.py: `measure_harness` runs every part in turn).
"""

from __future__ import annotations

import itertools
from typing import Optional, Sequence

import numpy as np

from .console import markdown_table
from .errors import UsageError


# What each probe read timed by `kerasbench overhead` is, and when a worker takes it.
PROBE_READS = {
    "rss_bytes": "one RSS reading (/proc/self/statm), taken every iteration",
    "PeakTracker": "reset VmHWM and read it back (start + stop), once per phase",
    "live_objects": "count GC-tracked objects, at phase boundaries only",
    "malloc_trim": "glibc malloc_trim(0), before each reading with glibc_trim",
}


def render(costs: dict, rows: list, iterations: int) -> str:
    """Two markdown tables: probe read costs, and the loop with probes on vs off."""
    lines = markdown_table(("probe", "µs per read", "when"),
                           [(f"`{name}`", f"{costs[name] * 1e6:.1f}", PROBE_READS[name]) for name in costs])
    lines += [""] + markdown_table(
        (f"control loop ({iterations} iterations)", "µs/iter probes off", "µs/iter probes on", "on/off",
         "added µs/iter", "worker wall s", "loop share of wall"),
        [(f"`{r['strategy']}`", f"{r['loop_off'] * 1e6:.1f}", f"{r['loop_on'] * 1e6:.1f}", f"{r['ratio']:.1f}×",
          f"{r['added_per_iter'] * 1e6:+.1f}", f"{r['wall_on']:.2f}", f"{r['loop_total_on'] / r['wall_on']:.1%}")
         for r in rows])
    return "\n".join(lines) + "\n"


# --- the suite: wall time vs bare work -----------------------------------------------------------

CONTROLS = ("control_noop", "control_leak_native", "control_leak_python")
TF_PAIR = ("inference", "reuse_model")  # the cheapest TF pair: one model, predict on one input

# Where a suite's wall time goes; together they add up to it (see breakdown).
PARTS = {
    "start": "interpreter start + imports (spawn to the worker's protocol)",
    "setup": "loop setup (TF import, data, first model)",
    "work": "bare work: warm-up + measured iterations",
    "probes": "probes between iterations (RSS, trace counters, progress lines)",
    "protocol": "protocol: GC barriers, object counts, environment, teardown, final reading",
    "exit": "result message, process exit, runner polling",
    "runner": "runner between workers (validate, summarize)",
}


def breakdown(outcomes: list, wall: float) -> dict:
    """{part of PARTS: seconds} of a suite that took `wall` seconds and ran these worker outcomes.

    Per worker: start = spawn to measure(); then setup, warm-up, the loop (iteration bodies are
    bare work, the rest of the loop is probes), the protocol (the rest until the result), and exit
    (the result message, process exit and the runner noticing). `runner` is wall minus the workers.
    """
    parts = dict.fromkeys(PARTS, 0.0)
    for o in outcomes:
        r = o["result"]
        t = r["timing"]
        bodies = sum(r["series"]["seconds"]) if r["series"]["seconds"] else r["loop_seconds"]  # probes off: no series
        parts["start"] += o["start_seconds"]
        parts["setup"] += t["setup_seconds"]
        parts["work"] += t["warmup_seconds"] + bodies
        parts["probes"] += r["loop_seconds"] - bodies
        parts["protocol"] += (t["done"] - t["entered"]) - t["setup_seconds"] - t["warmup_seconds"] - r["loop_seconds"]
        parts["exit"] += o["exit_seconds"]
    parts["runner"] = wall - sum(o["worker_seconds"] for o in outcomes)
    return parts


def _ratio(a, b):
    return a / b if b else None


def suite_summary(records: list, wall: float) -> dict:
    """Wall time of a suite against its workers' bare work and worker_seconds, with the breakdown."""
    outcomes = [o for rec in records for o in rec["repeats"] if o.get("result")]
    parts = breakdown(outcomes, wall)
    worker = sum(o["worker_seconds"] for o in outcomes)
    return {
        "pairs": [f"{rec['loop']} × {rec['strategy']}" for rec in records],
        "workers": len(outcomes),
        "wall": wall,
        "bare_work": parts["work"],
        "worker_seconds": worker,
        "wall_over_bare": _ratio(wall, parts["work"]),
        "wall_over_worker": _ratio(wall, worker),
        "worker_over_bare": _ratio(worker, parts["work"]),
        "parts": parts,
    }


def limit_summary(records: list, wall: float, cores: int) -> dict:
    """A run's wall time against its physical limit: Σ (setup + bare work) of its workers spread over `cores`.

    Setup (TF import, data, first model) and bare work (warm-up + measured iterations) are what a pair cannot do
    without; everything else a worker spends (start, probes, protocol, exit) is the harness's. The wall's
    core-seconds (wall × cores) not spent in workers went to whatever ran around them (asv, pip, publish) or
    to idle cores.
    """
    outcomes = [o for rec in records for o in rec["repeats"] if o.get("result") and o["result"].get("timing")]
    parts = breakdown(outcomes, wall)
    del parts["runner"]  # with several workers at once, wall minus their sum means nothing: core-seconds below
    needed = parts["setup"] + parts["work"]
    worker = sum(o["worker_seconds"] for o in outcomes)
    limit = needed / cores
    return {
        "workers": len(outcomes), "wall": wall, "cores": cores, "limit": limit,
        "wall_over_limit": _ratio(wall, limit), "worker_seconds": worker, "setup_and_work": needed,
        "worker_over_needed": _ratio(worker, needed), "parts": parts,
        "outside_workers": wall * cores - worker,  # core-seconds: asv, pip, publish, idle cores
        "jobs": sorted({rec["spec"].get("jobs", 1) for rec in records}),
    }


def render_limit(s: dict) -> str:
    """limit_summary as markdown: the ratio to the limit, then where the core-seconds went."""
    lines = [f"{s['workers']} workers, wall {s['wall']:.0f} s on {s['cores']} cores (jobs {s['jobs']}): "
             f"limit {s['limit']:.0f} s = Σ (setup + bare work) {s['setup_and_work']:.0f} s / {s['cores']} cores; "
             f"wall / limit {_x(s['wall_over_limit'])}; Σ worker seconds / Σ (setup + bare work) "
             f"{_x(s['worker_over_needed'])}", ""]
    total = s["wall"] * s["cores"]
    rows = [(PARTS[k], v) for k, v in s["parts"].items()]
    rows.append(("outside the workers: asv, pip, publish, idle cores", s["outside_workers"]))
    lines += markdown_table(("where the core-seconds went (wall × cores)", "core-seconds", "share"),
                            [(name, f"{v:.1f}", f"{v / total:.1%}") for name, v in rows])
    return "\n".join(lines) + "\n"


def records_limit(paths: Sequence[str], wall: Optional[float], cores: int) -> tuple:
    """(markdown, summary) of the records under `paths` (a run's files or folder); wall defaults to Σ worker seconds."""
    from .loading import find_records_files, read_records_file

    records = []
    for path, _ in find_records_files(paths):
        payload = read_records_file(path)
        if isinstance(payload, dict) and isinstance(payload.get("records"), list):
            records += [r for r in payload["records"] if isinstance(r, dict)]
    if not records:
        raise UsageError(f"No kerasbench records under {', '.join(paths)}.")
    if wall is None:
        wall = sum(o.get("worker_seconds", 0) for r in records for o in r.get("repeats", [])) / cores
    summary = limit_summary(records, wall, cores)
    return render_limit(summary), summary


# --- scaling -------------------------------------------------------------------------------------

def scaling_pairs(count: int) -> list:
    """`count` control pairs, cycling through the control strategies (4 = all three, then control_noop)."""
    return [("control", s) for s in itertools.islice(itertools.cycle(CONTROLS), count)]


def fit_scaling(points: list) -> dict:
    """Least-squares fit of wall = fixed + per_strategy × S + per_iteration × S × N over `points`.

    `points`: [{"strategies": S, "iterations": N, "wall": seconds}, ...]. Each strategy is a fresh
    worker (per_strategy) that runs N iterations (per_iteration, per pair). Returns the three
    coefficients, R² and the largest residual.
    """
    s = np.array([p["strategies"] for p in points], dtype=float)
    n = np.array([p["iterations"] for p in points], dtype=float)
    y = np.array([p["wall"] for p in points], dtype=float)
    design = np.column_stack([np.ones_like(s), s, s * n])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residuals = y - design @ coef
    total = float(np.sum((y - y.mean()) ** 2))
    return {
        "fixed": float(coef[0]),
        "per_strategy": float(coef[1]),
        "per_iteration": float(coef[2]),
        "r2": 1 - float(np.sum(residuals**2)) / total if total else None,
        "max_residual": float(np.max(np.abs(residuals))),
        "points": len(points),
    }


# --- the asv layer -------------------------------------------------------------------------------

def asv_summary(wall: float, setup_cache: float, worker_seconds: float, processes: int) -> dict:
    """asv's wall time against the workers' and the cost of each track_ process.

    `setup_cache`: seconds asv spent in setup_cache (which runs the workers); `processes`: how many
    benchmark processes asv spawned (one per track_ method and parameter).
    """
    return {
        "wall": wall,
        "setup_cache": setup_cache,
        "worker_seconds": worker_seconds,
        "track_processes": processes,
        "wall_over_worker": _ratio(wall, worker_seconds),
        "setup_cache_over_worker": _ratio(setup_cache, worker_seconds),
        "per_process": _ratio(wall - setup_cache, processes),
    }


def results_counts(results: dict) -> tuple:
    """(seconds in setup_cache, number of benchmark processes) from one asv results JSON (a dict)."""
    setup = sum(v for k, v in results.get("durations", {}).items() if k.startswith("<setup_cache"))
    columns = results["result_columns"]
    processes = 0
    for row in results["results"].values():
        params = row[columns.index("params")] if "params" in columns and len(row) > columns.index("params") else []
        processes += int(np.prod([len(p) for p in params])) if params else 1
    return setup, processes


# --- rendering -----------------------------------------------------------------------------------

def _x(v):
    return "n/a" if v is None else f"{v:.2f}×"


def render_suite(name: str, s: dict) -> str:
    """The suite's ratios and where its wall time went, as markdown."""
    lines = [f"{name}: {s['workers']} workers ({', '.join(s['pairs'])}), wall {s['wall']:.2f} s", ""]
    lines += markdown_table(("wall / bare work", "wall / Σ worker_seconds", "Σ worker_seconds / bare work"),
                            [(_x(s["wall_over_bare"]), f"{s['wall_over_worker']:.3f}×", _x(s["worker_over_bare"]))])
    lines += [""] + markdown_table(("where the wall time went", "seconds", "share of wall"),
                                   [(PARTS[k], f"{v:.3f}", f"{v / s['wall']:.1%}") for k, v in s["parts"].items()])
    return "\n".join(lines) + "\n"


def render_scaling(sc: dict) -> str:
    """The scaling grid and its linear fit, as markdown."""
    f = sc["fit"]
    r2 = "n/a" if f["r2"] is None else f"{f['r2']:.3f}"
    lines = markdown_table(("strategies", "iterations", "suite wall s", "Σ worker_seconds", "bare work s"),
                           [(p["strategies"], p["iterations"], f"{p['wall']:.2f}", f"{p['worker_seconds']:.2f}",
                             f"{p['bare_work']:.4f}") for p in sc["points"]])
    lines += [""] + markdown_table(
        ("fit: wall = fixed + per strategy × S + per iteration × S × N", "fixed s", "per strategy s",
         "per pair-iteration ms", "R²", "largest residual s"),
        [(f"{f['points']} points", f"{f['fixed']:+.3f}", f"{f['per_strategy']:.3f}", f"{f['per_iteration'] * 1e3:.3f}",
          r2, f"{f['max_residual']:.3f}")])
    return "\n".join(lines) + "\n"


def render_asv(a: dict) -> str:
    """asv's wall time against the workers', as markdown."""
    return "\n".join(markdown_table(
        ("asv wall s", "setup_cache s", "Σ worker_seconds", "asv wall / Σ worker_seconds", "track processes",
         "per process s ((wall − setup_cache) / processes)"),
        [(f"{a['wall']:.1f}", f"{a['setup_cache']:.1f}", f"{a['worker_seconds']:.1f}", _x(a["wall_over_worker"]),
          a["track_processes"], f"{a['per_process']:.2f}")])) + "\n"


# --- the overhead command ------------------------------------------------------------------------
