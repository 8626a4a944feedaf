"""`kerasbench overhead`: what the harness costs (probes, the suite against bare work, asv, scaling).

The measuring is here (kerasbench/overhead.py has what each part means and the pure analysis): probe reads timed in
this process, the control loop in fresh workers with probes on and off, the suite through runner.measure, `asv run
--python=same` of the Control class in a temporary clone, and the scaling grid.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional, Sequence, TextIO

from . import options

Notify = Optional[Callable[[str], None]]  # called with one line saying what is being measured

NAME = "overhead"
HELP = "what the harness costs: probes, the suite vs bare work, asv, scaling (minutes)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=options.integer("runs", 1), default=3,
                   help="fresh workers per probe setting, passes over the scaling grid (default 3)")
    p.add_argument("--iterations", type=options.integer("iterations", 3), default=300,
                   help="control-loop iterations per probes on/off worker (default 300)")
    p.add_argument("--tf-pair", action="store_true",
                   help="also time one TF pair (inference × reuse_model) through the runner")
    p.add_argument("--tf", dest="tf_pair", nargs=0, action=options.Renamed, new="--tf-pair",
                   why="every other --tf takes a TF release")
    p.add_argument("--asv", action="store_true",
                   help="also time `asv run --python=same` of the Control class (a temporary clone)")
    p.add_argument("--scale-iterations", default="10,20,40",
                   help="iteration counts of the scaling grid (default 10,20,40)")
    p.add_argument("--scale-strategies", default="1,2,4",
                   help="numbers of control strategies of the scaling grid (default 1,2,4)")
    p.add_argument("--records", nargs="+", metavar="PATH",
                   help="measure nothing: a finished run's records (files or folders, e.g. .asv/records) against "
                   "the physical limit, Σ (setup + bare work) / cores, and where the rest of the wall went")
    p.add_argument("--wall", type=options.number("wall", 0.001), default=None,
                   help="with --records: the run's wall time in seconds (default: Σ worker seconds / cores)")
    p.add_argument("--cores", type=options.integer("cores", 1), default=None,
                   help="with --records: cores (default: the usable ones)")
    options.json_output(p, "every figure")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Measure what the harness costs, print it, and optionally write every figure as JSON."""
    from .. import overhead
    from ..files import write_json
    from ..machine import usable_cores

    options.check_outputs({"--json": args.json}, {"--records": args.records})  # before anything is read or measured
    if not args.records:  # workers to start: a bad $KERAS_BACKEND is one line now, not after the first measurement
        from .._compat import check_backend_var

        check_backend_var()
    if args.records:  # a finished run's records: its wall against the physical limit, nothing measured
        cores = usable_cores() if args.cores is None else args.cores
        text, report = overhead.records_limit(args.records, args.wall, cores)
        out.write(text)
        if args.json:
            write_json(args.json, report)
        return 0
    scale_iterations = options.ints(args.scale_iterations, "scale-iterations", minimum=3)
    scale_strategies = options.ints(args.scale_strategies, "scale-strategies")
    check_prerequisites(tf=args.tf_pair, asv=args.asv)
    text, report = measure_harness(args.runs, args.iterations, scale_iterations, scale_strategies,
                                   tf=args.tf_pair, asv=args.asv, err=sys.stderr)
    out.write(text)
    if args.json:
        write_json(args.json, report)
        out.write(f"wrote {args.json}\n")
    return 0


# ---------------------------------------------------------------- the measuring


def _per_call(fn, n):
    """Median seconds of one call of `fn`, over 5 batches of `n` calls."""
    batches = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        batches.append((time.perf_counter() - t0) / n)
    return float(statistics.median(batches))


def probe_costs(n: int = 200) -> dict:
    """{probe: seconds per read} in this process (overhead.PROBE_READS says what each is)."""
    from .. import allocators, probes

    reads = {"rss_bytes": probes.rss_bytes, "PeakTracker": lambda: probes.PeakTracker().start().stop(),
             "live_objects": probes.live_objects, "malloc_trim": allocators.malloc_trim}
    return {name: _per_call(fn, n) for name, fn in reads.items()}


def loop_overhead(runs: int = 3, iterations: int = 300,
                  strategies: Sequence[str] = ("control_noop", "control_leak_native"),
                  leak_bytes: int = 64 * 1024) -> list:
    """Per strategy: median loop seconds per iteration with probes on and off, and worker wall seconds."""
    from ..runner import run_worker
    from ..spec import RunSpec
    from ..units import GIB

    rows = []
    for strategy in strategies:
        row = {"strategy": strategy}
        for probes_on in (True, False):
            spec = RunSpec("control", strategy, iterations=iterations, warmup=2, leak_bytes=leak_bytes,
                           probes=probes_on, floor=0.0, memory_cap=2 * GIB).validate()
            outcomes = [run_worker(spec, repeat=r) for r in range(runs)]
            bad = [o["reason"] for o in outcomes if o["status"] != "ok"]
            if bad:
                raise RuntimeError(f"control {strategy} failed: {bad[0]}")
            key = "on" if probes_on else "off"
            row[f"loop_{key}"] = float(statistics.median([o["result"]["loop_seconds"] / iterations for o in outcomes]))
            row[f"wall_{key}"] = float(statistics.median([o["worker_seconds"] for o in outcomes]))
            row[f"loop_total_{key}"] = float(statistics.median([o["result"]["loop_seconds"] for o in outcomes]))
        row["ratio"] = row["loop_on"] / row["loop_off"] if row["loop_off"] else float("inf")
        row["added_per_iter"] = row["loop_on"] - row["loop_off"]
        rows.append(row)
    return rows


def run_suite(pairs: Sequence[tuple], iterations: int, warmup: int, progress: Notify = None) -> tuple:
    """Measure each (loop, strategy) once through runner.measure; returns (records, wall seconds)."""
    from ..runner import measure
    from ..spec import RunSpec
    from ..units import GIB

    records = []
    started = time.perf_counter()
    for index, (loop, strategy) in enumerate(pairs, 1):
        if progress:
            progress(f"[{index}/{len(pairs)}] {loop} × {strategy}, {iterations} iterations")
        spec = RunSpec(loop, strategy, iterations=iterations, warmup=warmup, floor=0.0, memory_cap=4 * GIB)
        record = measure(spec)
        if record["status"] != "ok":
            raise RuntimeError(f"{loop} × {strategy}: {record['status']}: {record['reason']}")
        records.append(record)
    return records, time.perf_counter() - started


def scaling(iteration_counts: Sequence[int], strategy_counts: Sequence[int], runs: int = 1, warmup: int = 2,
            progress: Notify = None) -> dict:
    """Suite wall time over the grid of iteration counts × numbers of control strategies, `runs` times each."""
    from ..overhead import fit_scaling, scaling_pairs, suite_summary

    points = []
    grid = [(n, k) for n in iteration_counts for k in strategy_counts]
    for run in range(runs):
        for index, (n, k) in enumerate(grid, 1):
            if progress:
                progress(f"scaling run {run + 1}/{runs} [{index}/{len(grid)}]: {k} strategies × {n} iterations")
            records, wall = run_suite(scaling_pairs(k), n, warmup)
            summary = suite_summary(records, wall)
            points.append({"iterations": n, "strategies": k, "wall": wall,
                           "worker_seconds": summary["worker_seconds"], "bare_work": summary["bare_work"]})
    return {"points": points, "fit": fit_scaling(points)}


def asv_layer(root: Optional[str] = None, profile: str = "quick", progress: Notify = None) -> dict:
    """`asv run --python=same` of the Control class in a temporary clone of `root`; returns asv_summary plus the log."""
    from ..files import clone_dir
    from ..overhead import asv_summary, results_counts

    root = root or clone_dir()
    with tempfile.TemporaryDirectory(prefix="kerasbench-asv-") as work:
        repo = os.path.join(work, "repo")
        subprocess.run(["git", "clone", "-q", root, repo], check=True)
        subprocess.run(["git", "checkout", "-q", "-B", "main"], cwd=repo, check=True)  # asv.conf.json's branch
        env = dict(os.environ, HOME=work, KERASBENCH_PROFILE=profile,
                   KERASBENCH_RECORDS_DIR=os.path.join(work, "records"),
                   ASV_PYTHONPATH=repo)  # the clone's kerasbench, not one installed elsewhere (asv drops PYTHONPATH)
        asv = [sys.executable, "-m", "asv"]
        subprocess.run(asv + ["machine", "--yes", "--machine", "harness"], cwd=repo, env=env, check=True,
                       capture_output=True)
        if progress:
            progress(f"asv run --python=same -b ^control in a clone of {root} ({profile} profile)")
        started = time.perf_counter()
        proc = subprocess.run(asv + ["run", "--python=same", "--set-commit-hash", "HEAD", "-b", "^control",
                                     "--machine", "harness"], cwd=repo, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"asv run failed (exit {proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
        results_dir = os.path.join(repo, ".asv", "results", "harness")
        names = [n for n in os.listdir(results_dir) if n not in ("machine.json", "benchmarks.json")]
        with open(os.path.join(results_dir, names[0])) as f:
            setup, processes = results_counts(json.load(f))
        worker = 0.0
        for folder, _, files in os.walk(os.path.join(work, "records")):
            for name in files:
                with open(os.path.join(folder, name)) as f:
                    worker += sum(o["worker_seconds"] for rec in json.load(f)["records"] for o in rec["repeats"])
    return {**asv_summary(wall, setup, worker, processes), "profile": profile}


def check_prerequisites(tf: bool, asv: bool) -> None:
    """UsageError unless TensorFlow (for `tf`) and asv with this git checkout (for `asv`) are there."""
    from ..errors import UsageError
    from ..files import clone_dir

    if tf and importlib.util.find_spec("tensorflow") is None:
        raise UsageError("--tf-pair needs TensorFlow: pip install -e '.[cpu]'.")
    if asv:
        root = clone_dir()
        if importlib.util.find_spec("asv") is None:
            raise UsageError("--asv needs asv: pip install asv==0.6.6.")
        if not (os.path.isdir(os.path.join(root, ".git")) or os.path.isfile(os.path.join(root, ".git"))) \
                or not os.path.isfile(os.path.join(root, "asv.conf.json")):
            raise UsageError(f"--asv needs kerasbench run from a git checkout with asv.conf.json; {root} is not one.")


def measure_harness(runs: int, iterations: int, scale_iterations: Sequence[int], scale_strategies: Sequence[int],
                    tf: bool, asv: bool, err: TextIO) -> tuple:
    """`kerasbench overhead`: every part in turn, progress on `err`; returns (markdown, report dict)."""
    from ..console import status_line
    from ..overhead import CONTROLS, TF_PAIR, render, render_asv, render_scaling, render_suite, suite_summary
    from ..profiles import get_profile
    from ..record import SCHEMA_VERSION

    def progress(text: str) -> None:
        status_line(err, f"overhead: {text}", final=True)

    report = {"schema": SCHEMA_VERSION, "cpu_count": os.cpu_count(), "load_before": list(os.getloadavg())}
    started = time.perf_counter()
    progress("probe reads in this process")
    costs = probe_costs()
    progress(f"control workers, probes on and off, {runs} run(s) each")
    rows = loop_overhead(runs, iterations)
    text = render(costs, rows, iterations)
    report.update(probe_costs=costs, probes=rows, probe_iterations=iterations)

    profile = get_profile("default")  # the counts `kerasbench run` and asv use
    progress(f"suite: the control pairs through runner.measure ({profile.iterations} iterations, "
             f"{profile.warmup} warm-up)")
    records, wall = run_suite([("control", s) for s in CONTROLS], profile.iterations, profile.warmup, progress)
    report["suite"] = suite_summary(records, wall)
    text += "\n" + render_suite("control suite", report["suite"])
    if tf:
        progress(f"suite: {' × '.join(TF_PAIR)} (TensorFlow)")
        records, wall = run_suite([TF_PAIR], profile.iterations, profile.warmup, progress)
        report["tf_suite"] = suite_summary(records, wall)
        text += "\n" + render_suite("TF pair", report["tf_suite"])
    if asv:
        report["asv"] = asv_layer(progress=progress)
        text += "\n" + render_asv(report["asv"])
    report["scaling"] = scaling(scale_iterations, scale_strategies, runs=runs, progress=progress)
    text += "\n" + render_scaling(report["scaling"])
    report.update(seconds=time.perf_counter() - started, load_after=list(os.getloadavg()))
    text += (f"\n{report['seconds']:.0f} s on {report['cpu_count']} cores; load average (1 min) "
             f"{report['load_before'][0]:.2f} before, {report['load_after'][0]:.2f} after\n")
    return text, report
