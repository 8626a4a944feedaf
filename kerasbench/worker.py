"""The measured process: one (loop shape, strategy) pair, run in a fresh interpreter.

Protocol (after TensorFlow's own memory_test_util): set up, warm up, GC barrier, baseline,
N measured iterations with cheap probes, full cleanup, final reading. Started by
kerasbench.runner as `python -m kerasbench.worker SPEC_JSON FD`; it reports JSON lines on FD.
"""

import dataclasses
import json
import multiprocessing
import os
import platform
import resource
import sys
import time

from . import SCHEMA_VERSION, __version__, _compat, allocators, gpu, probes
from .errors import Skip
from .loops import LOOPS
from .runner import RunSpec
from .strategies import CLEANUPS, STRATEGIES


@dataclasses.dataclass
class Step:
    """What a loop shape needs to know about the strategy for one iteration."""

    batch_size: int
    forward: object
    strategy: object


class Workload:
    """A loop shape composed with a strategy: setup, one iteration, teardown."""

    def __init__(self, spec):
        self.spec = spec
        self.shape = LOOPS[spec.loop]
        self.strategy = STRATEGIES[spec.strategy]
        self.model = None
        self.kept = []
        self.child_peaks = []
        self.child_gpu_alloc_peaks = []
        self.child_gpu_reserved_peaks = []
        self.child_versions = None
        self.pool = None

    def setup(self):
        s = self.strategy
        if self.spec.loop not in s.applies_to:
            raise Skip(f"strategy {s.name} does not apply to loop {self.spec.loop}")
        if s.isolate:  # the parent stays free of TF: children do the work
            self.pool = multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1)
            return
        if self.spec.device == "gpu" and not self.shape.needs_tf and not gpu.fake():  # a test's fake GPU: see gpu.py
            raise Skip(f"loop {self.spec.loop} does not use TensorFlow: nothing to run on a GPU")
        if self.shape.needs_tf:
            _compat.tf()
            _compat.require(s.needs + (("gpu",) if self.spec.device == "gpu" else ()))
            if s.memory_growth:  # before any op: TF has not initialised the GPUs yet
                _compat.set_memory_growth(s.memory_growth == "on")
        self.loop = self.shape.impl(self.spec)
        self.loop.setup()
        self.rebuild = s.model == "rebuild" or (s.model == "loop" and self.shape.rebuilds)
        protects = () if self.rebuild else ("del_model", "clear_session")
        self.cleanups = [CLEANUPS[name] for name in s.cleanup if name not in protects]
        if not self.rebuild:
            self.model = self.loop.build(0)

    def iteration(self, i):
        if self.pool is not None:
            return self._isolated(i)
        if self.rebuild:
            self.model = self.loop.build(i)  # the old model stays bound until this returns
        forward = None
        if self.strategy.function_in_loop:
            model = self.model
            forward = _compat.traced_function(lambda t: model(t, training=False))
        step = Step(self.strategy.batch_size(i, self.spec.batch_size), forward, self.strategy)
        out = self.loop.run(self.model, i, step)
        if self.strategy.keep_outputs:
            self.kept.append(out)
        del out, forward, step
        for cleanup in self.cleanups:
            cleanup.action(self)

    def release_model(self):
        """Drop every reference held to the current model (the del_model cleanup)."""
        self.model = None
        self.loop.release()

    def _isolated(self, i):
        child = self.pool.apply(_isolated_iteration, (dataclasses.asdict(self.spec), i))
        self.child_peaks.append(child["peak"])
        self.child_versions = child["versions"]
        self.child_gpu_alloc_peaks.append(child["gpu_alloc_peak"])
        self.child_gpu_reserved_peaks.append(child["gpu_reserved"])
        for kind, n in child["traces"].items():
            probes.count_trace(kind, n)
        probes.count_model(child["models"])

    def teardown(self):
        """The fullest in-process cleanup a user can do: what survives it is retained memory."""
        if self.pool is not None:
            self.pool.close()
            self.pool.join()
            self.pool = None
            return
        self.kept.clear()
        self.model = None
        self.loop.teardown()
        if self.shape.needs_tf and "tensorflow" in sys.modules:
            if self.spec.loop == "tf1_graph":
                CLEANUPS["reset_default_graph"].action(self)
            else:
                CLEANUPS["clear_session"].action(self)
        probes.gc_barrier()


def _isolated_iteration(spec_dict, i):
    """One iteration in a spawned child: the same loop, model rebuilt, nothing else shared."""
    spec = RunSpec(**spec_dict)
    strategy = STRATEGIES[spec.strategy]
    workload = Workload(spec)
    workload.strategy = dataclasses.replace(strategy, isolate=False, applies_to=frozenset({spec.loop}))
    workload.setup()
    workload.iteration(i)
    kinds = ("train_step", "predict_step", "function")
    on_gpu = spec.device == "gpu" and workload.shape.needs_tf
    probe = gpu.GpuProbe() if on_gpu else None
    versions = _compat.versions() if workload.shape.needs_tf else None
    if on_gpu:
        versions.update(_gpu_environment())
    return {
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "traces": {k: probes.traces(k) for k in kinds},
        "models": probes.models_built(),
        "versions": versions,
        # TF's allocator peak over the child's life; NVML's reading at its end (BFC never hands
        # memory back before the process exits, so that is the child's largest reservation)
        "gpu_alloc_peak": probe.peak() if probe else None,
        "gpu_reserved": probe.read()["reserved"] if probe else None,
    }


def _gpu_environment():
    """CUDA/cuDNN build versions, the GPUs TF sees, and NVML's driver version and GPU name."""
    return {**_compat.build_info(), "gpus": _compat.gpu_details(), **gpu.driver_details()}


def environment(workload=None):
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
        "allocator_requested": workload.spec.allocator if workload else None,
        "kerasbench": __version__,
        "schema": SCHEMA_VERSION,
        "numpy": numpy.__version__,
        "tensorflow": None,
        "keras": None,
        "device": workload.spec.device if workload else "cpu",
        "env": {
            k: v
            for k, v in sorted(os.environ.items())
            if k.startswith(("TF_", "MALLOC_", "LD_PRELOAD", "OMP_", "KERAS", "CUDA_VISIBLE", "KERASBENCH_"))
        },
    }
    if workload is not None and workload.spec.device == "gpu":
        env.update(gpu.driver_details())  # NVML needs no TF: the driver and GPU model even where TF is not loaded
    if "tensorflow" in sys.modules:
        env.update(_compat.versions())
        env.update(_gpu_environment())
    elif workload is not None and workload.child_versions:
        env.update(workload.child_versions)
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


def gpu_probe_for(spec, workload):
    """The GPU probe of a measurement on device gpu, or None (CPU; the TF-free isolation parent)."""
    if spec.device != "gpu" or workload.pool is not None:
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
    workload = Workload(spec)
    trim = allocators.get_allocator(spec.allocator).trim_before_read

    def read_rss():  # glibc_trim: hand freed pages back first, so RSS shows what is really held
        if trim:
            probes.malloc_trim()
        return probes.rss_bytes()

    try:
        t0 = probes.timer()
        workload.setup()
        setup_seconds = probes.timer() - t0
        for w in range(spec.warmup):  # a child of process_isolation may find out it must skip
            workload.iteration(w)
            emit("warmup", iteration=w)
        warmup_seconds = probes.timer() - t0 - setup_seconds
    except Skip as e:
        emit("skip", reason=str(e), environment=environment(workload))
        return
    tf1 = spec.loop == "tf1_graph" and workload.pool is None
    gpu_probe = gpu_probe or gpu_probe_for(spec, workload)
    tf_loaded = "tensorflow" in sys.modules

    probes.gc_barrier()
    probes.live_objects()  # throwaway: the first snapshot itself allocates
    objects_before = probes.live_objects()
    build_before = _compat.graph_building_seconds() if tf_loaded else None
    if tf_loaded:
        _compat.reset_tf_memory_stats()
    gpu_baseline = {"alloc": None, "reserved": None}
    workload.child_gpu_alloc_peaks.clear()  # GPU peaks of the measured loop only, as in-process
    workload.child_gpu_reserved_peaks.clear()
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
            workload.iteration(i)
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
            workload.iteration(i)
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
    environment_now = environment(workload)
    workload.teardown()
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
            "child_peaks": workload.child_peaks,
            "gpu_alloc_baseline": gpu_baseline["alloc"],
            "gpu_alloc_peak": gpu_alloc_peak,
            "gpu_alloc_final": gpu_final["alloc"],
            "gpu_reserved_baseline": gpu_baseline["reserved"],
            "gpu_reserved_peak": max(gpu_reserved) if gpu_reserved else None,
            "gpu_reserved_final": gpu_final["reserved"],
            "gpu_reserved_source": gpu_probe.source if gpu_probe is not None else None,
            "child_gpu_alloc_peaks": workload.child_gpu_alloc_peaks,
            "child_gpu_reserved_peaks": workload.child_gpu_reserved_peaks,
            # a user's own models (loop repro) have no counting steps: n/a, not 0
            "train_traces": probes.traces("train_step") if workload.shape.counts_steps else None,
            "predict_traces": probes.traces("predict_step") if workload.shape.counts_steps else None,
            "function_traces": probes.traces("function"),
            "models_built": probes.models_built() if workload.shape.counts_steps else None,
            "timing": timing,
        },
        environment=environment_now,
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    spec = RunSpec(**json.loads(argv[0]))
    out = os.fdopen(int(argv[1]), "w", buffering=1)

    def emit(event, **fields):
        out.write(json.dumps({"event": event, **fields}) + "\n")

    measure(spec, emit)
    out.close()


if __name__ == "__main__":
    main()
