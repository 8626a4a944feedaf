"""The measured process: one (loop shape, strategy) pair, run in a fresh interpreter.

Protocol (after TensorFlow's own memory_test_util): set up, warm up, GC barrier, baseline,
N measured iterations with cheap probes, full cleanup, final reading. The spec is resolved to its
LoopShape and Strategy once (`pair_for`), into a MeasuredPair that runs the loop here (or an
IsolatedPair that runs each iteration in a spawned child). Started by kerasbench.runner as
`python -m kerasbench.worker SPEC_JSON FD`; it reports JSON lines on FD.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import platform
import resource
import sys
import time
from typing import Optional

from . import SCHEMA_VERSION, __version__, _compat, allocators, gpu, probes
from .errors import Skip
from .loops import LOOPS, LoopShape, Step
from .runner import RunSpec
from .strategies import CLEANUPS, STRATEGIES, Strategy


class MeasuredPair:
    """A loop shape composed with a strategy, run in this process: setup, one iteration, teardown."""

    in_process = True  # the loop runs here (IsolatedPair: in spawned children)

    def __init__(self, spec: RunSpec, shape: LoopShape, strategy: Strategy):
        self.spec = spec
        self.shape = shape
        self.strategy = strategy
        self.loop = None  # the shape's LoopRuntime, made at setup
        self.model = None
        self.kept = []
        self.child_peaks = []  # what isolated children report (IsolatedPair); empty here
        self.child_gpu_alloc_peaks = []
        self.child_gpu_reserved_peaks = []
        self.child_versions = None

    def check_applies(self) -> None:
        """Skip when the strategy does not apply to the loop shape."""
        if self.spec.loop not in self.strategy.applies_to:
            raise Skip(f"strategy {self.strategy.name} does not apply to loop {self.spec.loop}")

    def setup(self) -> None:
        """Import TF and check what the strategy needs (Skip if missing), make the loop's data and a reused model."""
        s = self.strategy
        self.check_applies()
        if self.spec.device == "gpu" and not self.shape.needs_tf and not gpu.fake():  # a test's fake GPU: see gpu.py
            raise Skip(f"loop {self.spec.loop} does not use TensorFlow: nothing to run on a GPU")
        if self.shape.needs_tf:
            _compat.tf()
            _compat.require(s.needs + (("gpu",) if self.spec.device == "gpu" else ()))
            if s.memory_growth:  # before any op: TF has not initialised the GPUs yet
                _compat.set_memory_growth(s.memory_growth == "on")
        self.loop = self.shape.runtime(self.spec, s)
        self.loop.setup()
        self.rebuild = s.model == "rebuild" or (s.model == "loop" and self.shape.rebuilds)
        protects = () if self.rebuild else ("del_model", "clear_session")
        self.cleanups = [CLEANUPS[name] for name in s.cleanup if name not in protects]
        if not self.rebuild:
            self.model = self.loop.build(0)

    def iteration(self, i: int) -> None:
        """Iteration i: a new model if the strategy rebuilds, the loop's work, then the strategy's cleanups."""
        if self.rebuild:
            self.model = self.loop.build(i)  # the old model stays bound until this returns
        forward = None
        if self.strategy.function_in_loop:
            model = self.model
            forward = _compat.traced_function(lambda t: model(t, training=False))
        out = self.loop.run(self.model, i, Step(self.strategy.batch_size(i, self.spec.batch_size), forward))
        if self.strategy.keep_outputs:
            self.kept.append(out)
        del out, forward
        for cleanup in self.cleanups:
            cleanup.action(self)

    def release_model(self) -> None:
        """Drop every reference held to the current model (the del_model cleanup)."""
        self.model = None
        self.loop.release()

    def teardown(self) -> None:
        """The fullest in-process cleanup a user can do: what survives it is retained memory."""
        self.kept.clear()
        self.model = None
        self.loop.teardown()
        if self.shape.needs_tf and "tensorflow" in sys.modules:
            CLEANUPS[self.shape.teardown_cleanup].action(self)
        probes.gc_barrier()


class IsolatedPair(MeasuredPair):
    """process_isolation: each iteration in its own spawned child; this process never imports TF."""

    in_process = False

    def setup(self) -> None:
        """Start the pool of one-task children (the parent stays free of TF: children do the work)."""
        self.check_applies()
        self.pool = multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1)

    def iteration(self, i: int) -> None:
        """Iteration i in a new child; keep what it reports (peaks, traces, models, versions)."""
        child = self.pool.apply(_isolated_iteration, (dataclasses.asdict(self.spec), i))
        self.child_peaks.append(child["peak"])
        self.child_versions = child["versions"]
        self.child_gpu_alloc_peaks.append(child["gpu_alloc_peak"])
        self.child_gpu_reserved_peaks.append(child["gpu_reserved"])
        for kind, n in child["traces"].items():
            probes.count_trace(kind, n)
        probes.count_model(child["models"])

    def teardown(self) -> None:
        """Close the pool."""
        self.pool.close()
        self.pool.join()
        self.pool = None


def pair_for(spec: RunSpec, in_child: bool = False) -> MeasuredPair:
    """The spec resolved to its loop shape and strategy: the one place the worker looks them up.

    `in_child`: an isolated child's pair, the same strategy run in process on this spec's loop.
    """
    shape, strategy = LOOPS[spec.loop], STRATEGIES[spec.strategy]
    if in_child:
        strategy = dataclasses.replace(strategy, isolate=False, applies_to=frozenset({spec.loop}))
    return (IsolatedPair if strategy.isolate else MeasuredPair)(spec, shape, strategy)


def _isolated_iteration(spec_dict, i):
    """One iteration in a spawned child: the same loop, model rebuilt, nothing else shared."""
    spec = RunSpec(**spec_dict)
    pair = pair_for(spec, in_child=True)
    pair.setup()
    pair.iteration(i)
    on_gpu = spec.device == "gpu" and pair.shape.needs_tf
    reader = gpu.GpuProbe() if on_gpu else None
    versions = _compat.versions() if pair.shape.needs_tf else None
    if on_gpu:
        versions.update(_gpu_environment())
    return {
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "traces": {kind: probes.traces(kind) for kind in ("train_step", "predict_step", "function")},
        "models": probes.models_built(),
        "versions": versions,
        # TF's allocator peak over the child's life; NVML's reading at its end (BFC never hands
        # memory back before the process exits, so that is the child's largest reservation)
        "gpu_alloc_peak": reader.peak() if reader else None,
        "gpu_reserved": reader.read()["reserved"] if reader else None,
    }


def _gpu_environment():
    """CUDA/cuDNN build versions, the GPUs TF sees, and NVML's driver version and GPU name."""
    return {**_compat.build_info(), "gpus": _compat.gpu_details(), **gpu.driver_details()}


def environment(pair: Optional[MeasuredPair] = None) -> dict:
    """What this process actually runs on: interpreter, libraries, CPU, allocator, settings."""
    import numpy

    env = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "hostname": platform.node(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_total": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),  # no psutil: asv's TF envs lack it
        "libc": "-".join(platform.libc_ver()),
        "allocator": probes.allocator_in_use(),
        "allocator_requested": pair.spec.allocator if pair else None,
        "kerasbench": __version__,
        "schema": SCHEMA_VERSION,
        "numpy": numpy.__version__,
        "tensorflow": None,
        "keras": None,
        "device": pair.spec.device if pair else "cpu",
        "env": {
            k: v
            for k, v in sorted(os.environ.items())
            if k.startswith(("TF_", "MALLOC_", "LD_PRELOAD", "OMP_", "KERAS", "CUDA_VISIBLE", "KERASBENCH_"))
        },
    }
    if pair is not None and pair.spec.device == "gpu":
        env.update(gpu.driver_details())  # NVML needs no TF: the driver and GPU model even where TF is not loaded
    if "tensorflow" in sys.modules:
        env.update(_compat.versions())
        env.update(_gpu_environment())
    elif pair is not None and pair.child_versions:
        env.update(pair.child_versions)
        env["tf_in"] = "child processes"
    return env


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def gpu_probe_for(spec, pair):
    """The GPU probe of a measurement on device gpu, or None (CPU; the TF-free isolation parent)."""
    if spec.device != "gpu" or not pair.in_process:
        return None
    return gpu.GpuProbe(allocator="tensorflow" in sys.modules)


# Progress events at most this often (seconds): a loop of microsecond iterations must not flood
# the runner; TF iterations (tens of ms and more) are all reported.
EMIT_EVERY = 0.01


def measure(spec, emit, gpu_probe=None):
    """Run the protocol for `spec` in this process; `emit(event, **fields)` reports as it goes.

    `gpu_probe` (a gpu.GpuProbe) replaces the one device gpu would make, e.g. a fake in tests.
    """
    entered = time.monotonic()  # system-wide on Linux: the runner subtracts its spawn time from it
    pair = pair_for(spec)
    trim = allocators.get_allocator(spec.allocator).trim_before_read

    def read_rss():  # glibc_trim: hand freed pages back first, so RSS shows what is really held
        if trim:
            probes.malloc_trim()
        return probes.rss_bytes()

    try:
        t0 = probes.timer()
        pair.setup()
        setup_seconds = probes.timer() - t0
        for w in range(spec.warmup):  # a child of process_isolation may find out it must skip
            pair.iteration(w)
            emit("warmup", iteration=w)
        warmup_seconds = probes.timer() - t0 - setup_seconds
    except Skip as e:
        emit("skip", reason=str(e), environment=environment(pair))
        return
    tf1 = "graph_ops" in pair.shape.extra_probes and pair.in_process
    gpu_probe = gpu_probe or gpu_probe_for(spec, pair)
    tf_loaded = "tensorflow" in sys.modules

    probes.gc_barrier()
    probes.live_objects()  # throwaway: the first snapshot itself allocates
    objects_before = probes.live_objects()
    build_before = _compat.graph_building_seconds() if tf_loaded else None
    if tf_loaded:
        _compat.reset_tf_memory_stats()
    gpu_baseline = {"alloc": None, "reserved": None}
    pair.child_gpu_alloc_peaks.clear()  # GPU peaks of the measured loop only, as in-process
    pair.child_gpu_reserved_peaks.clear()
    if gpu_probe is not None:
        gpu_probe.reset()
        gpu_baseline = gpu_probe.read()
    baseline = read_rss()
    peak = probes.PeakTracker().start()

    series = {"rss": [], "seconds": [], "train_traces": [], "predict_traces": [], "function_traces": []}
    if tf1:
        series["graph_ops"] = []
    if gpu_probe is not None:
        series["gpu_alloc"], series["gpu_reserved"] = [], []
    loop_start = probes.timer()
    last_emit = loop_start - EMIT_EVERY
    for k in range(spec.iterations):
        i = spec.warmup + k
        if spec.probes:
            t0 = probes.timer()
            pair.iteration(i)
            t1 = probes.timer()
            rss = read_rss()
            series["rss"].append(rss)
            series["seconds"].append(t1 - t0)
            series["train_traces"].append(probes.traces("train_step"))
            series["predict_traces"].append(probes.traces("predict_step"))
            series["function_traces"].append(probes.traces("function"))
            if tf1:
                series["graph_ops"].append(_compat.default_graph_ops())
            if gpu_probe is not None:
                reading = gpu_probe.read()
                series["gpu_alloc"].append(reading["alloc"])
                series["gpu_reserved"].append(reading["reserved"])
            if t1 - last_emit >= EMIT_EVERY or k + 1 == spec.iterations:
                emit("iteration", iteration=k, rss=rss)
                last_emit = t1
        else:
            pair.iteration(i)
            now = probes.timer()
            if now - last_emit >= EMIT_EVERY or k + 1 == spec.iterations:
                emit("iteration", iteration=k)
                last_emit = now
    loop_seconds = probes.timer() - loop_start
    peak_loop = peak.stop()
    gpu_alloc_peak = gpu_probe.peak() if gpu_probe is not None else None
    gpu_reserved = [v for v in series.get("gpu_reserved", []) + [gpu_baseline["reserved"]] if v is not None]

    tf_alloc = _compat.tf_memory_info() if tf_loaded else None
    build_after = _compat.graph_building_seconds() if build_before is not None else None
    probes.gc_barrier()
    objects_after = probes.live_objects()
    environment_now = environment(pair)
    pair.teardown()
    final = read_rss()  # as the baseline was read
    gpu_final = gpu_probe.read() if gpu_probe is not None else {"alloc": None, "reserved": None}
    # Where the worker's time went (kerasbench overhead): the rest of done - entered is protocol.
    timing = {"entered": entered, "setup_seconds": setup_seconds, "warmup_seconds": warmup_seconds,
              "done": time.monotonic()}

    emit(
        "done",
        result={
            "iterations_done": spec.iterations,
            "series": series,
            "baseline_rss": baseline,
            "peak_loop_rss": peak_loop,
            "peak_method": peak.method,
            "final_rss": final,
            "loop_seconds": loop_seconds,
            "objects_before": objects_before,
            "objects_after": objects_after,
            "graph_build_seconds": None if build_after is None else build_after - build_before,
            "tf_alloc_peak": tf_alloc["peak"] if tf_alloc else None,
            "child_peaks": pair.child_peaks,
            "gpu_alloc_baseline": gpu_baseline["alloc"],
            "gpu_alloc_peak": gpu_alloc_peak,
            "gpu_alloc_final": gpu_final["alloc"],
            "gpu_reserved_baseline": gpu_baseline["reserved"],
            "gpu_reserved_peak": max(gpu_reserved) if gpu_reserved else None,
            "gpu_reserved_final": gpu_final["reserved"],
            "gpu_reserved_source": gpu_probe.source if gpu_probe is not None else None,
            "child_gpu_alloc_peaks": pair.child_gpu_alloc_peaks,
            "child_gpu_reserved_peaks": pair.child_gpu_reserved_peaks,
            # a user's own models (loop repro) have no counting steps: n/a, not 0
            "train_traces": probes.traces("train_step") if pair.shape.counts_steps else None,
            "predict_traces": probes.traces("predict_step") if pair.shape.counts_steps else None,
            "function_traces": probes.traces("function"),
            "models_built": probes.models_built() if pair.shape.counts_steps else None,
            "timing": timing,
        },
        environment=environment_now,
    )


def main(argv: Optional[list] = None) -> None:
    """`python -m kerasbench.worker SPEC_JSON FD`: run the protocol, reporting JSON lines on FD."""
    argv = sys.argv[1:] if argv is None else argv
    spec = RunSpec(**json.loads(argv[0]))
    out = os.fdopen(int(argv[1]), "w", buffering=1)

    def emit(event, **fields):
        out.write(json.dumps({"event": event, **fields}) + "\n")

    measure(spec, emit)
    out.close()


if __name__ == "__main__":
    main()
