"""What every loop-shape benchmark shares: measure each strategy once, serve every metric from it.

Cost model: asv calls `setup_cache` once per class (one loop shape), which runs every applicable
strategy in its own fresh worker processes (kerasbench.runner). Then asv spawns one short process
per track_ method and parameter; those only read the cached summaries, so keep them cheap: no
TensorFlow, numpy or scipy is imported here.
"""

import json
import os
import platform
import re
import subprocess
import sys

import kerasbench
from kerasbench.probes import METRICS
from kerasbench.profiles import get_profile
from kerasbench.strategies import get_strategy, strategies_for

PROFILE = get_profile()  # KERASBENCH_PROFILE=quick|default|full, shared with the CLI
# The device is an environment variable, set by the asv config of a GPU machine (asv.gpu.json):
# as a benchmark parameter it would double the number of asv processes (one per metric, strategy
# and parameter value, ~0.7 s each) on machines where half of them can only say "no GPU".
DEVICE = os.environ.get("KERASBENCH_DEVICE", "cpu")
# The allocator, the same way: KERASBENCH_ALLOCATOR=tcmalloc asv run ... (kerasbench.allocators);
# the floor follows that allocator's stored calibration (kerasbench calibrate), else the default.
ALLOCATOR = os.environ.get("KERASBENCH_ALLOCATOR", "glibc")
# The setup_cache of one loop shape runs all of its strategies: allow for the slowest profile.
TIMEOUT = 4 * 3600

# The metrics tracked for every pair (a subset of kerasbench.METRICS; see README). Each is one
# asv process per strategy, so the list is short; every record on disk has all of them.
# Not tracked: tf_alloc_peak, TF's allocator peak on CPU:0, which no CPU build 2.12-2.21 keeps
# (get_memory_info raises; n/a in every record), so it would only add n/a processes; on a GPU,
# TF's allocator peak is gpu_alloc_peak.
TRACKED = (
    "growth_per_iter",
    "growth_ci_low",  # the verdict as a number: above the floor means "grows"
    "peak_loop",
    "retained",
    "train_traces",
    "predict_traces",
    "seconds_per_iter",
    "objects_per_iter",
    # GPU (None, so n/a, on CPU): TF's allocator bytes in use vs what NVML says the process holds
    "gpu_alloc_peak",
    "gpu_reserved_peak",
)


def _gpu_driver_present():
    """A cheap check (no TF import): without an NVIDIA driver there is no GPU to measure."""
    from kerasbench.gpu import driver_present  # /proc/driver/nvidia/version, or a test's fake GPU

    return driver_present()


def measure_loop(loop):
    """Run every strategy of `loop` on DEVICE, each in fresh workers; return {strategy: small dict}."""
    from kerasbench.runner import RunSpec, measure

    if DEVICE == "gpu" and not _gpu_driver_present():
        reason = "no GPU visible to TensorFlow (no NVIDIA driver on this machine)"
        return {s: {"status": "skipped", "reason": reason, "summary": {}} for s in strategies_for(loop)}
    records, out = [], {}
    for strategy in strategies_for(loop):
        spec = RunSpec(loop, strategy, iterations=PROFILE.iterations_for(get_strategy(strategy)), warmup=PROFILE.warmup,
                       repeats=PROFILE.repeats, profile=PROFILE.name, device=DEVICE, allocator=ALLOCATOR)
        print(f"kerasbench: {loop} × {strategy} on {DEVICE}, {ALLOCATOR} ({PROFILE.name} profile)", file=sys.stderr, flush=True)
        record = measure(spec)
        records.append(record)
        out[strategy] = {k: record[k] for k in ("status", "reason", "summary")}
    save_records(loop, records)
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
        return os.environ["ASV_CONF_DIR"], os.environ.get("ASV_COMMIT") or "nocommit", os.environ.get("ASV_ENV_NAME", "unknown")
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "nocommit"
    return ROOT, commit, "existing-py" + re.sub(r"[^A-Za-z0-9.]", "_", sys.executable)


def records_dir():
    """Where full records (per-iteration series, environment) go beside asv's results."""
    conf_dir, commit, env_name = _asv_context()
    base = os.environ.get("KERASBENCH_RECORDS_DIR") or os.path.join(conf_dir, ".asv", "records")
    suffix = "" if ALLOCATOR == "glibc" else f"-{ALLOCATOR}"
    return os.path.join(base, platform.node() or "machine", f"{commit[:8]}-{env_name}{suffix}")


def save_records(loop, records):
    path = os.path.join(records_dir(), f"{loop}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"schema": kerasbench.SCHEMA_VERSION, "profile": PROFILE.name, "records": records}, f)
    os.replace(tmp, path)


class _LoopBenchmark:
    """Base of one class per loop shape; subclasses set `params` and declare `setup_cache`."""

    param_names = ["strategy"]
    # asv hashes only this file's source, not kerasbench's: tie results to the measurement schema
    # and the profile, so results that are not comparable are never plotted as one line (asv
    # shows only results whose version matches the last discovery: publish one profile at a time).
    # A non-default allocator is part of the version too: its numbers are another series.
    version = f"kerasbench-{kerasbench.SCHEMA_VERSION}-{PROFILE.name}" + ("" if ALLOCATOR == "glibc" else f"-{ALLOCATOR}")
    timeout = TIMEOUT

    def setup(self, records, strategy):
        record = records[strategy]
        if record["status"] == "skipped":
            raise NotImplementedError(record["reason"])  # asv shows n/a
        if record["status"] != "ok":
            raise RuntimeError(record["reason"])  # asv shows failed, with this reason in its log


def _tracker(name):
    def track(self, records, strategy):
        value = records[strategy]["summary"][name]
        return float("nan") if value is None else float(value)

    track.__name__ = "track_" + name
    track.unit = METRICS[name].unit
    return track


for _name in TRACKED:
    setattr(_LoopBenchmark, "track_" + _name, _tracker(_name))


def params_for(loop):
    return [strategies_for(loop)]
