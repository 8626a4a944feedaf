"""Probes: readings taken inside the measured process, as hook objects the worker's protocol nests.

Per-iteration readings must cost microseconds (an RSS read from /proc/self/statm is ~10 µs);
anything heavier (live-object counts) is read only at the phase boundaries.

A Probe (as pyperf's hooks) takes its readings at the protocol's hooks and contributes its own
named series and result fields; PROBES declares them once, in nesting order. ProbeStack runs the
active ones like nested context managers: the first probe is the innermost, started last and
stopped first, so the loop timer sits right around the loop and the GC-heavy object count outside
everything. The order is the protocol's (after TensorFlow's memory_test_util), and figures depend on it:

  start (after the GC barrier):  objects before, graph-building seconds before, TF memory stats reset,
                                 child GPU peaks cleared, GPU reset + baseline, Python blocks, baseline heap,
                                 baseline RSS, peak reset, loop timer
  around each iteration:         t0 | iteration | t1, RSS, heap bytes, trace counters, TF1 graph ops,
                                 GPU reading
  stop (after the loop):         loop seconds, peak RSS, Python blocks after, GPU peak, TF allocator peak,
                                 graph-building seconds after, GC barrier + objects after
  after cleanup (teardown):      final RSS, final heap, final GPU reading

The readings themselves (rss_bytes, PeakTracker, live_objects, ...) are plain functions of kerasbench.readings,
also timed by kerasbench.overhead; their names are imported here too.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass
from typing import Any, Optional

from . import _compat, counters, gpu
from .allocators import HeapReader, heap_reader, malloc_trim
from .readings import PeakTracker, gc_barrier, live_objects, rss_bytes, timer

# Probes as hook objects ---------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeContext:
    """What the probes of one measurement need to know about it, fixed after setup and warm-up."""

    tf_loaded: bool  # TensorFlow is imported in this process
    in_process: bool  # the loop runs in this process (False: the TF-free parent of process_isolation)
    device: str  # "cpu" or "gpu"
    trim_before_read: bool  # malloc_trim(0) before each RSS reading (allocator glibc_trim)
    counts_steps: bool  # the loop shape's models count their train/predict traces
    extra_probes: tuple = ()  # probes the loop shape asks for (LoopShape.extra_probes)
    pair: Any = None  # the measured pair: the peaks its isolated children reported
    gpu_reader: Optional[gpu.GpuMemoryReader] = None  # a given GPU reader (tests): the GPU probe is on with it
    block_samples: frozenset = frozenset()  # after these measured iterations (1 = the first), Python's blocks too


class Probe:
    """One kind of reading, taken at the protocol's hooks; its named series and result fields are its own.

    SERIES names the per-iteration lists it appends to, FIELDS the result fields it fills (None
    when the probe is not active). Hooks it does not need are left as they are (they do nothing).
    """

    SERIES: tuple = ()
    FIELDS: tuple = ()

    def __init__(self, context: ProbeContext):
        self.context = context
        self.series = {}  # the measurement's series (ProbeStack.series): its own SERIES begin at start

    @classmethod
    def for_context(cls, context: ProbeContext) -> Optional[Probe]:
        """This probe for the measurement described by `context`, or None where it does not apply."""
        return cls(context)

    def start(self) -> None:
        """After the GC barrier, before the loop: take baselines."""

    def before_iteration(self) -> None:
        """Right before an iteration (probes on)."""

    def after_iteration(self) -> None:
        """Right after an iteration (probes on): append to the series."""

    def stop(self) -> None:
        """After the loop: the phase's readings."""

    def after_cleanup(self) -> None:
        """After the pair's teardown: final readings."""

    def fields(self) -> dict:
        """The result fields (keys: FIELDS), read once everything is done."""
        return {}


class LoopTimerProbe(Probe):
    """Wall time of each iteration and of the whole loop (the only reading with probes off)."""

    SERIES = ("seconds",)
    FIELDS = ("loop_seconds",)

    def start(self) -> None:
        self.loop_start = timer()

    def before_iteration(self) -> None:
        self.t0 = timer()

    def after_iteration(self) -> None:
        self.series["seconds"].append(timer() - self.t0)

    def stop(self) -> None:
        self.loop_seconds = timer() - self.loop_start

    def fields(self) -> dict:
        return {"loop_seconds": self.loop_seconds}


class PeakRssProbe(Probe):
    """Peak RSS of the loop (VmHWM reset at start, or a sampler thread)."""

    FIELDS = ("peak_loop_rss", "peak_method")

    def start(self) -> None:
        self.tracker = PeakTracker().start()

    def stop(self) -> None:
        self.peak = self.tracker.stop()

    def fields(self) -> dict:
        return {"peak_loop_rss": self.peak, "peak_method": self.tracker.method}


class CollectProbe(Probe):
    """A collection of Python's young generations (gc.collect(1)) after each iteration, before RSS and the heap are
    read: what those readings and their slopes count is memory the cyclic collector has reached.

    Without it the heap reading after an iteration holds the cycles the iteration left for the collector (Keras's
    predict leaves ~10 KiB a call: a reused model's heap read +10.4 KiB/call over 300 calls, +1.2 after a
    collection), and a slope measures when the collector last ran, not what the loop keeps. The young generations
    hold what an iteration just left (a full collection reads the same +1.2 at ~500× the cost: 146 ms against
    0.3 ms in a TF process); older garbage is taken by Python's own full collections (the heap's teeth, which the
    verdict handles). Its seconds per iteration are recorded, outside the loop timer's.
    """

    FIELDS = ("collect_generation", "collect_seconds")

    GENERATION = 1

    def __init__(self, context: ProbeContext):
        super().__init__(context)
        self.seconds = 0.0

    def after_iteration(self) -> None:
        t0 = timer()
        gc.collect(self.GENERATION)
        self.seconds += timer() - t0

    def fields(self) -> dict:
        return {"collect_generation": self.GENERATION, "collect_seconds": self.seconds}


class RssProbe(Probe):
    """RSS at the baseline, after each iteration and after cleanup (glibc_trim: malloc_trim(0) first)."""

    SERIES = ("rss",)
    FIELDS = ("baseline_rss", "final_rss")

    def read(self) -> int:
        """RSS now; with glibc_trim, freed pages are handed back first, so RSS shows what is really held."""
        if self.context.trim_before_read:
            malloc_trim()
        return rss_bytes()

    def start(self) -> None:
        self.baseline = self.read()

    def after_iteration(self) -> None:
        self.series["rss"].append(self.read())

    def after_cleanup(self) -> None:
        self.final = self.read()  # as the baseline was read

    def fields(self) -> dict:
        return {"baseline_rss": self.baseline, "final_rss": self.final}


class HeapProbe(Probe):
    """Heap bytes in use (the allocator's own count): baseline, per iteration, final; Python's blocks before/after.

    RSS counts what the allocator holds from the OS, freed or not; the heap reading counts what the
    program still holds, so a leak grows both and allocator retention grows RSS alone. The reader is
    the running allocator's (allocators.heap_reader, ~1-9 us a reading); where none can be read, the
    heap series is absent, the heap fields are None and `heap_unavailable` says why. Python's blocks
    (sys.getallocatedblocks: every object the interpreter's allocator holds, GC-tracked or not) walk
    every pymalloc arena, ~270 us with TF loaded, so they are read at the loop's ends and after the few
    iterations of `block_samples` (geometric: ~20 readings in 5,000 iterations), [iteration, blocks] pairs from
    which the steady window's blocks per iteration are read (the first iterations' own growth left out).
    """

    SERIES = ("heap",)
    FIELDS = ("heap_baseline", "heap_peak", "heap_final", "heap_source", "heap_unavailable",
              "py_blocks_before", "py_blocks_after", "py_blocks_samples")

    def __init__(self, context: ProbeContext, reader: Optional[HeapReader] = None):
        super().__init__(context)
        self.reader = reader if reader is not None else heap_reader()
        self.unavailable = self.reader.unavailable
        if self.reader.source is None:
            self.SERIES = ()  # no heap series at all: n/a, never zeros
        self.baseline = self.final = self.py_before = self.py_after = None
        self.done = 0  # measured iterations so far
        self.samples = []

    def read(self) -> Optional[int]:
        """Heap bytes in use now, or None once the reader failed (the reason kept for the record)."""
        if self.reader.source is None or self.unavailable is not None:
            return None
        try:
            return self.reader.read()
        except OSError as e:
            self.unavailable = f"{self.reader.source}: {e}"
            return None

    def start(self) -> None:
        self.py_before = sys.getallocatedblocks()
        self.baseline = self.read()

    def after_iteration(self) -> None:
        if self.SERIES:
            self.series["heap"].append(self.read())
        self.done += 1
        if self.done in self.context.block_samples:
            self.samples.append([self.done, sys.getallocatedblocks()])

    def stop(self) -> None:
        self.py_after = sys.getallocatedblocks()

    def after_cleanup(self) -> None:
        self.final = self.read()

    def fields(self) -> dict:
        readings = [v for v in self.series.get("heap") or () if v is not None]
        if self.baseline is not None:
            readings.append(self.baseline)
        return {
            "heap_baseline": self.baseline,
            "heap_peak": max(readings) if readings and self.unavailable is None else None,
            "heap_final": self.final if self.unavailable is None else None,
            "heap_source": self.reader.source,
            "heap_unavailable": self.unavailable,
            "py_blocks_before": self.py_before,
            "py_blocks_after": self.py_after,
            "py_blocks_samples": self.samples,
        }


TRACE_KINDS = {"train_traces": "train_step", "predict_traces": "predict_step", "function_traces": "function"}


class TraceProbe(Probe):
    """Traces: of train_step and predict_step and the loop's own tf.functions (counters bumped in the traced Python),
    and of every tf.function in the process (TF's tracing entry point, kerasbench._compat.install_trace_hook): all of
    them, those of the training and prediction paths, and per function (owner, instances, traces, the instances
    alive and the concrete functions alive when the loop ends, before teardown); models built."""

    SERIES = tuple(TRACE_KINDS) + ("all_traces", "train_path_traces", "predict_path_traces")
    FIELDS = tuple(TRACE_KINDS) + ("models_built", "train_path_traces", "predict_path_traces", "all_traces",
                                   "functions", "trace_hook", "compilations")
    at_stop = None  # counters.functions() when the loop stops

    def after_iteration(self) -> None:
        for name, kind in TRACE_KINDS.items():
            self.series[name].append(counters.traces(kind))
        self.series["all_traces"].append(counters.all_traces())
        for path in ("train", "predict"):  # per iteration: a budgeted run's count depends on its length (compare)
            self.series[f"{path}_path_traces"].append(counters.path_traces(path))

    def stop(self) -> None:
        self.at_stop = counters.functions()  # the loop's last iteration done, before teardown's cleanup

    def fields(self) -> dict:
        # a user's own models (loop repro) have no counting steps: n/a, not 0
        steps = self.context.counts_steps
        hooked = counters.hook_state().startswith("installed") or bool(counters.functions())
        return {
            "train_traces": counters.traces("train_step") if steps else None,
            "predict_traces": counters.traces("predict_step") if steps else None,
            "function_traces": counters.traces("function"),
            "models_built": counters.models_built() if steps else None,
            # the paths are known from the counting steps: a repro's models do not mark them
            "train_path_traces": counters.path_traces("train") if steps and hooked else None,
            "predict_path_traces": counters.path_traces("predict") if steps and hooked else None,
            "all_traces": counters.all_traces() if hooked else None,
            "functions": self.at_stop if hooked else None,
            "trace_hook": counters.hook_state(),
            "compilations": counters.compilations("xla_compile") if "jax" in counters.hook_state() else None,
        }


class GraphOpsProbe(Probe):
    """Operations in the TF1 default graph after each iteration (for loop shapes that ask for it)."""

    SERIES = ("graph_ops",)

    @classmethod
    def for_context(cls, context: ProbeContext) -> Optional[Probe]:
        return cls(context) if context.in_process else None

    def after_iteration(self) -> None:
        self.series["graph_ops"].append(_compat.default_graph_ops())


class GpuProbe(Probe):
    """TF's GPU allocator bytes and NVML's reservation: baseline, per iteration, peak, after cleanup."""

    SERIES = ("gpu_alloc", "gpu_reserved")
    FIELDS = ("gpu_alloc_baseline", "gpu_alloc_peak", "gpu_alloc_final", "gpu_reserved_baseline",
              "gpu_reserved_peak", "gpu_reserved_final", "gpu_reserved_source")

    @classmethod
    def for_context(cls, context: ProbeContext) -> Optional[Probe]:
        if context.gpu_reader is not None:
            return cls(context, context.gpu_reader)
        if context.device != "gpu" or not context.in_process:  # CPU; the TF-free isolation parent
            return None
        return cls(context, gpu.GpuMemoryReader(allocator=context.tf_loaded or not _compat.on_tf()))

    def __init__(self, context: ProbeContext, reader: gpu.GpuMemoryReader):
        super().__init__(context)
        self.reader = reader

    def start(self) -> None:
        self.reader.reset()
        self.baseline = self.reader.read()

    def after_iteration(self) -> None:
        reading = self.reader.read()
        self.series["gpu_alloc"].append(reading["alloc"])
        self.series["gpu_reserved"].append(reading["reserved"])

    def stop(self) -> None:
        self.alloc_peak = self.reader.peak()
        reserved = [v for v in self.series["gpu_reserved"] + [self.baseline["reserved"]] if v is not None]
        self.reserved_peak = max(reserved) if reserved else None

    def after_cleanup(self) -> None:
        self.final = self.reader.read()

    def fields(self) -> dict:
        return {
            "gpu_alloc_baseline": self.baseline["alloc"],
            "gpu_alloc_peak": self.alloc_peak,
            "gpu_alloc_final": self.final["alloc"],
            "gpu_reserved_baseline": self.baseline["reserved"],
            "gpu_reserved_peak": self.reserved_peak,
            "gpu_reserved_final": self.final["reserved"],
            "gpu_reserved_source": self.reader.source,
        }


class ChildPeaksProbe(Probe):
    """Peaks the isolated children of process_isolation reported (empty lists in process).

    RSS peaks include the warm-up's children; GPU peaks are the measured loop's only, as in process.
    """

    FIELDS = ("child_peaks", "child_gpu_alloc_peaks", "child_gpu_reserved_peaks")

    def start(self) -> None:
        self.context.pair.child_gpu_alloc_peaks.clear()
        self.context.pair.child_gpu_reserved_peaks.clear()

    def fields(self) -> dict:
        pair = self.context.pair
        return {"child_peaks": pair.child_peaks, "child_gpu_alloc_peaks": pair.child_gpu_alloc_peaks,
                "child_gpu_reserved_peaks": pair.child_gpu_reserved_peaks}


class TfAllocatorProbe(Probe):
    """TF's CPU allocator peak bytes in the loop (reset at start), where TF keeps the statistic."""

    FIELDS = ("tf_alloc_peak",)

    @classmethod
    def for_context(cls, context: ProbeContext) -> Optional[Probe]:
        return cls(context) if context.tf_loaded else None

    def start(self) -> None:
        _compat.reset_tf_memory_stats()

    def stop(self) -> None:
        info = _compat.tf_memory_info()
        self.peak = info["peak"] if info else None

    def fields(self) -> dict:
        return {"tf_alloc_peak": self.peak}


class GraphBuildProbe(Probe):
    """Seconds TF spent building tf.function graphs during the loop (its own counter, where it has one)."""

    FIELDS = ("graph_build_seconds",)

    @classmethod
    def for_context(cls, context: ProbeContext) -> Optional[Probe]:
        return cls(context) if context.tf_loaded else None

    def start(self) -> None:
        self.before = _compat.graph_building_seconds()

    def stop(self) -> None:
        after = _compat.graph_building_seconds() if self.before is not None else None
        self.seconds = None if after is None else after - self.before

    def fields(self) -> dict:
        return {"graph_build_seconds": self.seconds}


class LiveObjectsProbe(Probe):
    """GC-tracked Python objects before and after the loop, each after a GC barrier (outermost: it is slow)."""

    FIELDS = ("objects_before", "objects_after")

    def start(self) -> None:
        live_objects()  # throwaway: the first snapshot itself allocates
        self.before = live_objects()

    def stop(self) -> None:
        gc_barrier()
        self.after = live_objects()

    def fields(self) -> dict:
        return {"objects_before": self.before, "objects_after": self.after}


@dataclass(frozen=True)
class ProbeKind:
    """A registry entry: a probe, what it reads, and whether it runs only for loop shapes that ask for it."""

    name: str
    description: str
    probe: type  # a Probe subclass
    on_request: bool = False  # only where LoopShape.extra_probes names it


# Innermost first: ProbeStack starts them in reverse order and stops them in this one.
PROBES = {
    kind.name: kind
    for kind in (
        ProbeKind("loop_timer", "wall time of each iteration and of the loop", LoopTimerProbe),
        ProbeKind("peak_rss", "peak RSS of the loop (VmHWM or a sampler)", PeakRssProbe),
        ProbeKind("collect", "a collection of Python's young generations after each iteration, before RSS and the "
                  "heap are read (what they count, the collector has reached)", CollectProbe),
        ProbeKind("rss", "RSS at the baseline, after each iteration, after cleanup", RssProbe),
        ProbeKind("heap", "allocator heap bytes in use (baseline, per iteration, after cleanup); Python's "
                  "allocated blocks before and after the loop", HeapProbe),
        ProbeKind("traces", "trace and model counters after each iteration and at the end", TraceProbe),
        ProbeKind("graph_ops", "operations in the TF1 default graph after each iteration", GraphOpsProbe,
                  on_request=True),
        ProbeKind("gpu", "TF's GPU allocator bytes and NVML's reservation (device gpu)", GpuProbe),
        ProbeKind("child_peaks", "peaks reported by isolated children (process_isolation)", ChildPeaksProbe),
        ProbeKind("tf_allocator", "TF's CPU allocator peak in the loop (TF loaded)", TfAllocatorProbe),
        ProbeKind("graph_build", "seconds TF spent building tf.function graphs (TF loaded)", GraphBuildProbe),
        ProbeKind("live_objects", "GC-tracked objects before and after the loop", LiveObjectsProbe),
    )
}


class ProbeStack:
    """The active probes of one measurement, nested like context managers (the first innermost).

    `series` holds every active probe's per-iteration series by name (in PROBES order); a series
    list is made when its probe starts, after the objects baseline, as the protocol always made them.
    """

    def __init__(self, context: ProbeContext):
        self.context = context
        self.probes = {}  # name: active Probe, in PROBES order
        for kind in PROBES.values():
            if kind.on_request and kind.name not in context.extra_probes:
                continue
            probe = kind.probe.for_context(context)
            if probe is not None:
                self.probes[kind.name] = probe
        active = list(self.probes.values())
        self.series = dict.fromkeys(name for probe in active for name in probe.SERIES)
        for probe in active:
            probe.series = self.series
        self._outermost_first = active[::-1]
        self._before_iteration = [p.before_iteration for p in reversed(active) if _overrides(p, "before_iteration")]
        self._after_iteration = [p.after_iteration for p in active if _overrides(p, "after_iteration")]

    def start(self) -> None:
        """Start every active probe, outermost first.

        The harness's own objects made between the two object counts are part of objects_per_iter:
        start indexes (a range iterator is not GC-tracked) instead of iterating over a list, so the
        objects alive at both counts are the ones the protocol always held there (the peak tracker,
        the series dict and its lists, one iterator in stop) and the figure does not move.
        """
        for i in range(len(self._outermost_first)):
            probe = self._outermost_first[i]
            for name in probe.SERIES:
                self.series[name] = []
            probe.start()

    def before_iteration(self) -> None:
        """Outermost first, so the loop timer reads t0 last."""
        for hook in self._before_iteration:
            hook()

    def after_iteration(self) -> None:
        """Innermost first, so the loop timer reads t1 first."""
        for hook in self._after_iteration:
            hook()

    def stop(self) -> None:
        """Stop every active probe, innermost first."""
        for probe in self.probes.values():
            probe.stop()

    def after_cleanup(self) -> None:
        """Final readings after the pair's teardown, in PROBES order."""
        for probe in self.probes.values():
            probe.after_cleanup()

    def fields(self) -> dict:
        """Every probe's result fields; those of inactive probes are None."""
        fields = {}
        for kind in PROBES.values():
            probe = self.probes.get(kind.name)
            fields.update(probe.fields() if probe is not None else dict.fromkeys(kind.probe.FIELDS))
        return fields


def _overrides(probe, hook):
    return getattr(type(probe), hook) is not getattr(Probe, hook)
