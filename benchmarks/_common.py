"""What every loop-shape benchmark shares: measure each strategy once, serve every metric from it.

Cost model: asv calls `setup_cache` once per class (one loop shape), which runs every applicable
strategy in its own fresh worker processes (kerasbench.runner), as many at once as the machine has usable
cores and free memory for ($KERASBENCH_JOBS sets it; the records say how many ran at once). Then asv
starts one short process per track_ method and parameter (forked from its forkserver, which imported
this module once); those only read the cached summaries, so keep them cheap: no TensorFlow, numpy or
scipy is imported here.
"""

import os
import re
import subprocess
import sys

import kerasbench
from kerasbench import allocators
from kerasbench.metrics import METRICS
from kerasbench.profiles import get_profile
from kerasbench.protocol import PROTOCOL_VERSION
from kerasbench.record import records_payload
from kerasbench.tree import records_root, run_folder, save_records
from kerasbench.strategies import get_strategy, strategies_for

PROFILE = get_profile()  # KERASBENCH_PROFILE=quick|default|full, shared with the CLI
# The device is an environment variable, set by the asv config of a GPU machine (asv.gpu.json):
# as a benchmark parameter it would double the number of asv processes (one per metric, strategy
# and parameter value, ~0.7 s each) on machines where half of them can only say "no GPU".
DEVICE = os.environ.get("KERASBENCH_DEVICE", "cpu")
# The allocator, the same way: KERASBENCH_ALLOCATOR=tcmalloc asv run ... (kerasbench.allocators);
# the floor follows that allocator's stored calibration (kerasbench calibrate), else the default.
ALLOCATOR = os.environ.get(allocators.ENV_VAR, allocators.DEFAULT)
# The setup_cache of one loop shape runs all of its strategies: allow for the slowest profile.
TIMEOUT = 4 * 3600

# The metrics asv tracks on every loop shape: those kerasbench.metrics marks `tracked` (docs/asv.md).
# Each is one asv process per strategy, so the list is short; every record on disk has all metrics.
TRACKED = tuple(m.name for m in METRICS.values() if m.tracked and not m.tracked_loops)


def _gpu_driver_present():
    """A cheap check (no TF import): without an NVIDIA driver there is no GPU to measure."""
    from kerasbench.gpu import driver_present  # /proc/driver/nvidia/version, or a test's fake GPU

    return driver_present()


def measure_loop(loop: str) -> dict:
    """Run every strategy of `loop` on DEVICE, each in fresh workers; return {strategy: small dict}."""
    from kerasbench import procs, session
    from kerasbench.console import Echo, Progress, console_stream
    from kerasbench.runner import default_jobs, measure_pairs

    if DEVICE == "gpu" and not _gpu_driver_present():
        reason = "no GPU visible to TensorFlow (no NVIDIA driver on this machine)"
        return {s: {"status": "skipped", "reason": reason, "summary": {}} for s in strategies_for(loop)}
    strategies = params_for(loop)[0]  # those this machine runs (runs_here): a GPU strategy only on device gpu
    pairs = [(loop, s) for s in strategies]
    base = session.base_spec(PROFILE, pairs, device=DEVICE, allocator=ALLOCATOR, jobs=default_jobs())
    print(f"kerasbench: {loop}, {len(strategies)} strategies on {DEVICE}, {ALLOCATOR} ({PROFILE.name} profile, "
          f"{base.jobs} at once)", file=sys.stderr, flush=True)
    progress = Progress(sys.stderr, len(strategies), PROFILE.warmup)
    # asv keeps setup_cache's stderr for its log: each pair's outcome, pairs done and time left also go to the
    # terminal asv runs in, a line each, between asv's "Setting up" and its tables
    tty = console_stream()
    if tty is not None:
        tty.write(f"\n  kerasbench: {loop}, {len(strategies)} pairs ({PROFILE.name} profile, {base.jobs} at once)\n")
        tty.flush()
    shown = progress if tty is None else Echo(progress, tty, prefix="  ")
    try:
        with procs.interrupts():  # asv's timeout (SIGTERM) must not leave this class's workers running
            records = measure_pairs(base, pairs, session.counts(PROFILE, None), shown)
    finally:
        if tty is not None:
            tty.close()
    out = {r["strategy"]: {k: r[k] for k in ("status", "reason", "summary")} for r in records}
    save_records(records_dir(), loop, records_payload(records, profile=PROFILE.name))
    return out


# The repository these benchmarks were imported from: asv imports benchmark_dir in place.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _asv_context():
    """(conf dir, commit, environment name) of this asv run.

    asv passes ASV_CONF_DIR, ASV_COMMIT and ASV_ENV_NAME to the environments it creates, but not
    with --python=same (an "existing" environment gets no ASV_* variables, and setup_cache runs in
    a temporary folder asv deletes): then the repository's own checkout and interpreter say it.
    """
    if os.environ.get("ASV_CONF_DIR"):
        env_name = os.environ.get("ASV_ENV_NAME", "unknown")
        return os.environ["ASV_CONF_DIR"], os.environ.get("ASV_COMMIT") or "nocommit", env_name
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "nocommit"
    return ROOT, commit, "existing-py" + re.sub(r"[^A-Za-z0-9.]", "_", sys.executable)


def records_dir() -> str:
    """Where full records (per-iteration series, environment) go beside asv's results, under asv's machine name.

    The machine is kerasbench.machine.name(): $KERASBENCH_MACHINE, the `asv run --machine NAME` this runs
    under, or the one machine of ~/.asv-machine.json; never the host name a CI runner changes per job.
    """
    conf_dir, commit, env_name = _asv_context()
    return run_folder(records_root(conf_dir), commit, env_name, ALLOCATOR)


def _tracker(metric):
    def track(self, records, strategy):
        value = records[strategy]["summary"][metric.name]
        return float("nan") if value is None else float(value)

    track.__name__ = "track_" + metric.name
    track.unit = metric.unit
    return track


def runs_here(strategy: str) -> bool:
    """Whether this machine's suite has a row for `strategy`: a GPU strategy only where DEVICE is gpu (asv.gpu.json
    sets it in every environment, so asv's one discovery sees it). On a CPU each would be a row of n/a in every
    table, and a skipped record (`kerasbench run` still says why)."""
    return DEVICE == "gpu" or not get_strategy(strategy).needs_gpu


def tracked_here(metric) -> bool:
    """Whether asv tracks `metric` on this machine: a GPU-only one (its run column's gpu_only) only on device gpu."""
    return DEVICE == "gpu" or not (metric.column is not None and metric.column.gpu_only)


def params_for(loop: str) -> list:
    return [[s for s in strategies_for(loop) if runs_here(s)]]


class _LoopBenchmark:
    """Base of one class per loop shape: `class Sweep(_LoopBenchmark, loop="sweep")`, declaring its `setup_cache`.

    The loop shape gives the params (its strategies) and a track_<metric> method for every metric
    asv tracks on it (kerasbench.metrics): a new tracked metric needs no edit here.
    """

    param_names = ["strategy"]
    # asv hashes only this file's source, not kerasbench's: tie results to the measurement schema
    # and the profile, so results that are not comparable are never plotted as one line (asv
    # shows only results whose version matches the last discovery: publish one profile at a time).
    # A non-default allocator is part of the version too: its numbers are another series; so is the protocol
    # (rule.PROTOCOL_VERSION, whose comment keeps its history; the first versions ended at the profile).
    version = f"kerasbench-{kerasbench.SCHEMA_VERSION}-{PROFILE.name}" + (
        "" if PROTOCOL_VERSION == 1 else f"-protocol{PROTOCOL_VERSION}") + (
        "" if ALLOCATOR == allocators.DEFAULT else f"-{ALLOCATOR}")
    timeout = TIMEOUT

    def __init_subclass__(cls, loop: str, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.params = params_for(loop)
        for metric in METRICS.values():
            if metric.tracked_on(loop) and tracked_here(metric):
                setattr(cls, "track_" + metric.name, _tracker(metric))

    def setup(self, records, strategy):
        record = records[strategy]
        if record["status"] == "skipped":
            raise NotImplementedError(record["reason"])  # asv shows n/a
        if record["status"] != "ok":
            raise RuntimeError(f"{record['status']}: {record['reason']}")  # asv shows failed, this in its log
