"""The metric registry: every number a record's summary carries, declared once.

An entry says what the number is (unit, description), where it comes from (one value per repeat,
derived from the worker's result, and how the repeats combine; or a part of the RSS growth fit
across repeats), and who shows it how: compare's rule and text, whether it is a headline metric
(compare's default set, triage's --metric choices), whether asv tracks it, the report's view and
the run table's column. A new metric is one entry here plus its probe's value in the worker result.

Nothing heavy is imported at module level (asv's short benchmark processes read this registry):
numpy and the statistics load when a value is derived.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, FrozenSet, List, Optional, Sequence, Union

from .units import KIB, MIB, kib_text, mib_text, number_text

Result = Dict[str, Any]  # one worker result (kerasbench.record.Result)
Summary = Dict[str, Any]  # a record's summary (kerasbench.record.Summary)

MIN_RSS = 16 * MIB  # smallest peak/retained difference worth a verdict, a colour or a steep line
MIN_OBJECTS = 25  # objects/iteration: the same for live Python objects


# ---------------------------------------------------------------- how repeats combine


def median(values: Sequence[Optional[float]]) -> Optional[float]:
    """The median of the repeats that have a value; None when none has."""
    import numpy as np

    present = [v for v in values if v is not None]
    return float(np.median(present)) if present else None


def median_of_every(values: Sequence[Optional[float]]) -> Optional[float]:
    """The median, only when every repeat has a value (a probe that ran in some repeats only says nothing)."""
    return median(values) if values and all(v is not None for v in values) else None


# ---------------------------------------------------------------- per-repeat derivations


def _in_process_or_children(key: str, children_key: str) -> Callable[[Result, int], Optional[float]]:
    """A peak read in the worker, else the largest of its isolated children's, else None."""

    def value(result: Result, iterations: int) -> Optional[float]:
        if result.get(key) is not None:
            return result[key]
        children = [v for v in result.get(children_key) or () if v is not None]
        return max(children) if children else None

    return value


def _difference(after_key: str, before_key: str) -> Callable[[Result, int], Optional[float]]:
    def value(result: Result, iterations: int) -> Optional[float]:
        after, before = result.get(after_key), result.get(before_key)
        return None if after is None or before is None else after - before

    return value


def python_blocks_per_iter(result: dict, start: int) -> Optional[float]:
    """Python's blocks per iteration over the steady window (from iteration `start`): from the first sample at or
    after it to the loop's end; the whole loop's when no sample falls in the window (records before samples)."""
    before, after = result.get("py_blocks_before"), result.get("py_blocks_after")
    n = result.get("iterations_done") or len((result.get("series") or {}).get("rss") or ())
    if before is None or after is None or not n:
        return None
    samples = [(k, b) for k, b in result.get("py_blocks_samples") or () if k >= max(start, 1) and k < n]
    if samples:
        k, blocks = samples[0]
        return (after - blocks) / (n - k)
    return (after - before) / n



def _steady_blocks_per_iter(result: Result, iterations: int) -> Optional[float]:
    """Python's blocks per iteration after the RSS series' warm-up (python_blocks_per_iter)."""
    from .stats import steady_start

    rss = result["series"].get("rss") or []
    return python_blocks_per_iter(result, steady_start(rss)[0] if rss and None not in rss else 0)


def _peak_over_setup(result: Result, iterations: int) -> Optional[float]:
    """The largest of the warm-up's and the loop's peaks, minus the RSS after setup (None without a setup reading)."""
    if result.get("setup_rss") is None:
        return None
    peaks = [p for p in (result.get("warmup_peak_rss"), result.get("peak_loop_rss")) if p is not None]
    return max(peaks) - result["setup_rss"] if peaks else None


def _newer(key: str) -> Callable[[Result, int], Optional[float]]:
    """A field newer than the first records: None where a record lacks it."""
    return lambda result, iterations: result.get(key)


def _field(key: str) -> Callable[[Result, int], Optional[float]]:
    return lambda result, iterations: result[key]


def _series_slope(name: str) -> Callable[[Result, int], Optional[float]]:
    """Theil-Sen slope of a per-iteration series, or None when it is missing, has gaps or is too short."""

    def value(result: Result, iterations: int) -> Optional[float]:
        from . import stats

        series = result["series"].get(name)
        if not series or any(v is None for v in series):
            return None
        slope = stats.fit_growth(series).slope
        return None if slope != slope else slope  # NaN (fewer than 3 points) reads as "no number"

    return value


def _graph_ops(result: Result, iterations: int) -> Optional[float]:
    return result["series"]["graph_ops"][-1] if "graph_ops" in result["series"] else None


def _graph_ops_per_iter(result: Result, iterations: int) -> Optional[float]:
    from . import stats

    return stats.fit_growth(result["series"]["graph_ops"]).slope if "graph_ops" in result["series"] else None


def _seconds_per_iter(result: Result, iterations: int) -> Optional[float]:
    """The median iteration's seconds; the loop's seconds over its iterations without the series (probes off); None
    where a record has neither (a record from elsewhere, edited: the metric is missing, not a traceback)."""
    import numpy as np

    seconds = (result.get("series") or {}).get("seconds")
    if seconds and all(isinstance(v, (int, float)) for v in seconds):
        return float(np.median(seconds))
    loop = result.get("loop_seconds")
    return loop / iterations if isinstance(loop, (int, float)) and iterations else None


# ---------------------------------------------------------------- how it is shown


@dataclass(frozen=True)
class SlopeCI:
    """compare: regressed when the new slope's CI lies above the baseline's, by more than the floor."""

    alone: ClassVar[bool] = False  # a value compare judges only of pairs measured one at a time (TimingBand's)
    series: str = "rss"  # the series whose fit the slope and CI are: "rss" or "heap"


@dataclass(frozen=True)
class Magnitude:
    """compare: regressed / improved when the difference is at least `minimum` and at least NOISE_K times the noise."""

    alone: ClassVar[bool] = False
    minimum: float
    difference: Callable[[float], str]  # a signed difference, for the why text
    series_noise: bool = False  # the RSS series' scatter around its line counts as noise too (robust: MAD)
    face_value_alone: bool = False  # one repeat (no spread): the difference is taken at face value
    # the value piles up over the iterations of a growing pair (a peak, what is retained): two runs of one such pair
    # that stopped at different counts are not compared on it (their slope is), protocol 9
    with_count: bool = False
    # one repeat taken at face value: a difference under this share of the larger value is not a change either (two
    # identical default runs of a sweep read +18,047 and +18,073 objects/iteration: 0.15 %), protocol 9
    relative: float = 0.0


@dataclass(frozen=True)
class ExactCount:
    """compare: any change is regressed (more) or improved (fewer); inconclusive when the repeats disagree."""

    alone: ClassVar[bool] = False


@dataclass(frozen=True)
class TimingBand:
    """compare: unchanged within the ratio band; beyond it only when the per-iteration times separate.

    Only where the runs' conditions make timings comparable: else "not comparable" with the reason
    (pairs measured at once, 1-minute loads per CPU that differ by more than `load_difference`, or one
    repeat on a machine loaded beyond `loaded` per CPU or whose load was not recorded).
    """

    alone: ClassVar[bool] = True  # timings of pairs measured at once share the CPUs: the runner measures them alone
    band: float
    load_difference: float = 0.5  # runnable threads per CPU
    loaded: float = 1.0  # more runnable threads than CPUs


CompareRule = Union[SlopeCI, Magnitude, ExactCount, TimingBand]


@dataclass(frozen=True)
class ReportView:
    """How the HTML report shows a metric: a heat-table and a plot across TF versions per loop shape."""

    title: str
    unit: str  # after scaling, e.g. "MiB"
    scale: float
    log: bool = False  # colour on a log scale (growth: 1 KiB .. span per iteration)
    span: float = MIN_RSS  # differences smaller than this get no colour and no steep line
    signed: bool = False
    optional: bool = False  # the optional views (heap, GPU) appear only when some record has a value for one of them

    def text(self, value: float) -> str:
        v = value / self.scale
        sign = "+" if self.signed else ""
        return f"{v:{sign}.1f}" if abs(v) < 10 else f"{v:{sign}.0f}"


@dataclass(frozen=True)
class RunColumn:
    """A column of the run table (`kerasbench run`): its heading and the cell text of one summary."""

    heading: str
    text: Callable[[Summary], str]
    gpu_only: bool = False  # shown when a record ran on device gpu


def _traces(s: Summary) -> str:
    """train path / predict path / all functions, where the tracing hook counted them (else the steps' counts)."""
    if s.get("all_traces") is not None:
        return "/".join("n/a" if s.get(k) is None else f"{s[k]:.0f}"
                        for k in ("train_path_traces", "predict_path_traces", "all_traces"))
    if s.get("train_traces") is None:
        return "n/a"
    return f"{s['train_traces']:.0f}/{s['predict_traces']:.0f}/{s['function_traces']:.0f}"


def _ci(s: Summary) -> str:
    if s.get("growth_ci_low") is None:
        return "n/a"
    return f"[{kib_text(s['growth_ci_low'])}, {kib_text(s['growth_ci_high'])}]"


def _signed_mib(v: float) -> str:
    return f"{v / MIB:+.1f} MiB"


def _heap_ci(s: Summary) -> str:
    if s.get("heap_growth_ci_low") is None:
        return "n/a"
    return f"[{kib_text(s['heap_growth_ci_low'])}, {kib_text(s['heap_growth_ci_high'])}]"


# ---------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Metric:
    """One summary number of a record: what it is, where it comes from, and how each output shows it."""

    name: str
    unit: str
    description: str
    per_repeat: Optional[Callable[[Result, int], Optional[float]]] = None  # (worker result, iterations) -> value
    combine: Callable[[Sequence[Optional[float]]], Optional[float]] = median
    rss_fit: str = ""  # "slope", "low" or "high": a part of the RSS fit over the repeats (protocol), not per repeat
    heap_fit: str = ""  # the same, of the heap series' fit (None when a repeat has no heap reading)
    text: Optional[Callable[[float], str]] = None  # the value with its unit, for people (compare's tables)
    compare: Optional[CompareRule] = None
    headline: int = 0  # position in compare's default set and triage's --metric choices (1 first); 0: not one
    tracked: bool = False  # asv has a track_<name> benchmark of it ...
    tracked_loops: FrozenSet[str] = frozenset()  # ... on these loop shapes only (empty: on every one)
    report: Optional[ReportView] = None
    column: Optional[RunColumn] = None
    beside: str = ""  # another metric compare shows beside this one's values (e.g. the absolute peak)

    @property
    def measured_alone(self) -> bool:
        """Whether its pairs are measured one at a time (runner.measure_specs): a time, which pairs at once share."""
        return bool(self.compare is not None and self.compare.alone)

    def show(self, value: float) -> str:
        """`value` as people read it, with its unit."""
        return self.text(value) if self.text else f"{value:.4g} {self.unit}"

    def value(self, results: Sequence[Result], iterations: int, fit: Any = None,
              heap: Any = None) -> Optional[float]:
        """This metric over the repeats' results; `fit` is the RSS fit over the repeats, `heap` the heap's (or None)."""
        if self.rss_fit:
            return getattr(fit, self.rss_fit)
        if self.heap_fit:
            return None if heap is None else getattr(heap, self.heap_fit)
        return self.combine([self.per_repeat(r, r.get("iterations_done") or iterations) for r in results])

    def tracked_on(self, loop: str) -> bool:
        return self.tracked and (not self.tracked_loops or loop in self.tracked_loops)


# The summary of every record carries these keys, in this order (None where a probe does not apply).
# The run table shows the columns in this order too.
METRICS: Dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("growth_per_iter", "bytes/iteration", "RSS growth per iteration: Theil-Sen slope over the measured loop",
               rss_fit="slope", text=lambda v: f"{v / KIB:+.0f} KiB/it", compare=SlopeCI(), headline=1, tracked=True,
               # growth on a log colour scale (1 KiB .. 16 MiB per iteration): a leak of 8 MiB/iter must not wash
               # out one of 100 KiB/iter, and 30 KiB/iter of noise must not look like a leak when nothing else grows
               report=ReportView("Growth per iteration", "KiB/iter", KIB, log=True, span=16 * MIB, signed=True),
               column=RunColumn("KiB/iter", lambda s: kib_text(s.get("growth_per_iter")))),
        Metric("growth_ci_low", "bytes/iteration", "lower bound of the slope's 95% confidence interval",
               rss_fit="low", tracked=True,  # the verdict as a number: above the floor means "grows"
               column=RunColumn("95% CI", _ci)),
        Metric("growth_ci_high", "bytes/iteration", "upper bound of the slope's 95% confidence interval",
               rss_fit="high"),
        # compare judges the loop's own peak (over its baseline): an absolute peak also moves with the size of
        # the process before the loop (another TF release imports more), which is not the loop's doing.
        # peak_loop keeps its measurement (and its asv history); it is shown beside peak_over_baseline.
        Metric("peak_loop", "bytes", "peak RSS during the measured loop (VmHWM reset after warm-up)",
               _field("peak_loop_rss"), text=lambda v: f"{v / MIB:.1f} MiB", tracked=True,
               # judged on request (triage --metric), not by default
               compare=Magnitude(MIN_RSS, _signed_mib, with_count=True),
               report=ReportView("Loop peak RSS", "MiB", MIB),
               column=RunColumn("peak MiB", lambda s: mib_text(s.get("peak_loop")))),
        Metric("peak_over_baseline", "bytes", "peak RSS of the loop minus the post-warm-up baseline",
               lambda r, n: r["peak_loop_rss"] - r["baseline_rss"], text=_signed_mib,
               compare=Magnitude(MIN_RSS, _signed_mib, series_noise=True, with_count=True), headline=2, tracked=True,
               beside="peak_loop", report=ReportView("Loop peak over baseline", "MiB", MIB, signed=True)),
        # What the loop needs on top of its setup: the peak of the whole run (warm-up and loop) over the RSS just
        # before the first iteration. A transient working set that the first iteration reaches, and glibc keeps, is
        # already in the post-warm-up baseline: peak_over_baseline cannot see it, this does (a batched forward pass
        # of a large CNN: +12 MiB over the baseline, +2.6 GiB over the setup). first_iteration_peak is the first
        # iteration's own (VmHWM reset after setup).
        Metric("peak_over_setup", "bytes", "peak RSS of the warm-up and the loop minus the RSS after setup (model "
               "built, data ready), just before the first iteration", _peak_over_setup, text=_signed_mib,
               compare=Magnitude(MIN_RSS, _signed_mib, series_noise=True, with_count=True), headline=3, tracked=True,
               beside="peak_loop", report=ReportView("Peak over setup", "MiB", MIB, signed=True, optional=True)),
        Metric("first_iteration_peak", "bytes", "peak RSS of the first iteration minus the RSS after setup",
               _difference("first_iteration_peak_rss", "setup_rss"), text=_signed_mib,
               compare=Magnitude(MIN_RSS, _signed_mib, with_count=True)),
        Metric("retained", "bytes", "RSS after the loop and a full cleanup, minus the baseline",
               lambda r, n: r["final_rss"] - r["baseline_rss"], text=_signed_mib,
               compare=Magnitude(MIN_RSS, _signed_mib, series_noise=True, with_count=True), headline=4, tracked=True,
               column=RunColumn("retained MiB", lambda s: "n/a" if s.get("retained") is None
                                else f"{s['retained'] / MIB:+.1f}")),
        # The allocator's own count of bytes in use (probes.HeapProbe): what a leak grows; RSS also grows when the
        # allocator keeps freed pages. n/a where the allocator cannot be read (the record's heap_unavailable says why).
        # Only the slope is tracked by asv (one asv process per strategy each): beside growth_per_iter it tells a
        # leak (both rise) from allocator retention (RSS rises, heap flat).
        Metric("heap_growth_per_iter", "bytes/iteration", "heap bytes in use, growth per iteration: Theil-Sen slope "
               "of the allocator's count (mallinfo2 / jemalloc / tcmalloc)", heap_fit="slope",
               text=lambda v: f"{v / KIB:+.1f} KiB/it", compare=SlopeCI(series="heap"), headline=10, tracked=True,
               report=ReportView("Heap growth per iteration", "KiB/iter", KIB, log=True, span=16 * MIB, signed=True,
                                 optional=True),
               column=RunColumn("heap KiB/iter", lambda s: kib_text(s.get("heap_growth_per_iter")))),
        Metric("heap_growth_ci_low", "bytes/iteration", "lower bound of the heap slope's 95% confidence interval",
               heap_fit="low", column=RunColumn("heap 95% CI", _heap_ci)),
        Metric("heap_growth_ci_high", "bytes/iteration", "upper bound of the heap slope's 95% confidence interval",
               heap_fit="high"),
        Metric("heap_retained", "bytes", "heap bytes in use after the loop and a full cleanup, minus the baseline",
               _difference("heap_final", "heap_baseline"), text=_signed_mib,
               compare=Magnitude(MIN_RSS, _signed_mib, with_count=True)),
        Metric("heap_peak_over_baseline", "bytes", "largest per-iteration heap reading minus the baseline "
               "(sampled after each iteration: a spike inside one is not seen)",
               _difference("heap_peak", "heap_baseline"), text=_signed_mib,
               compare=Magnitude(MIN_RSS, _signed_mib, with_count=True)),
        Metric("py_blocks_per_iter", "blocks/iteration", "growth of Python's allocated blocks per iteration, "
               "over the RSS series' steady window (sys.getallocatedblocks, sampled at a few counts: every Python "
               "object, GC-tracked or not; native buffers are not blocks)", _steady_blocks_per_iter,
               text=lambda v: f"{v:+.1f}/it",
               column=RunColumn("py blocks/iter", lambda s: number_text(s.get("py_blocks_per_iter"), "{:+.1f}"))),
        # Every tf.function's traces (kerasbench._compat's hook on TF's tracing entry point): the training path (the
        # functions that traced a train_step: Keras's wrappers, which differ by Keras version), the prediction path,
        # and all of them (tf.data's, the user's). A wrapper that retraces every call leaves the step's own count
        # at 1 or 2; these see it. The steps' own counts stay below (and in asv, under their names).
        Metric("train_path_traces", "traces", "traces of the training path: every tf.function that traced a "
               "train_step, warm-up included", _newer("train_path_traces"), text=lambda v: f"{v:.0f}",
               compare=ExactCount(), headline=5, column=RunColumn("traces train/predict/all", _traces)),
        Metric("predict_path_traces", "traces", "traces of the prediction path: every tf.function that traced a "
               "predict_step, warm-up included", _newer("predict_path_traces"), text=lambda v: f"{v:.0f}",
               compare=ExactCount(), headline=6),
        Metric("all_traces", "traces", "traces of every tf.function in the worker (Keras's, tf.data's, the loop's), "
               "warm-up included", _newer("all_traces"), text=lambda v: f"{v:.0f}", compare=ExactCount(),
               headline=7, tracked=True),
        Metric("train_traces", "traces", "traces of train_step, warm-up included", _field("train_traces"),
               text=lambda v: f"{v:.0f}", compare=ExactCount(), tracked=True),
        Metric("predict_traces", "traces", "traces of predict_step, warm-up included", _field("predict_traces"),
               text=lambda v: f"{v:.0f}", compare=ExactCount(), tracked=True),
        Metric("function_traces", "traces", "traces of tf.functions the loop defines itself",
               _field("function_traces")),
        Metric("models_built", "models", "models built and compiled, warm-up included", _field("models_built"),
               column=RunColumn("models", lambda s: number_text(s.get("models_built")))),
        Metric("graph_build_seconds", "seconds", "time TF spent building tf.function graphs in the loop",
               _field("graph_build_seconds")),
        Metric("objects_per_iter", "objects/iteration", "growth of GC-tracked Python objects per iteration",
               lambda r, n: (r["objects_after"] - r["objects_before"]) / n, text=lambda v: f"{v:+.0f}/it",
               compare=Magnitude(MIN_OBJECTS, lambda v: f"{v:+.0f} obj/iter", face_value_alone=True, relative=0.02),
               headline=9, tracked=True,
               column=RunColumn("obj/iter", lambda s: number_text(s.get("objects_per_iter"), "{:+.0f}"))),
        Metric("graph_ops", "ops", "operations in the TF1 default graph at the end of the loop",
               _graph_ops, median_of_every, tracked=True, tracked_loops=frozenset({"tf1_graph"}),
               column=RunColumn("graph ops", lambda s: number_text(s.get("graph_ops")))),
        Metric("graph_ops_per_iter", "ops/iteration", "growth of the TF1 default graph per iteration",
               _graph_ops_per_iter, median_of_every),
        # Not tracked by asv: no CPU build 2.12-2.21 keeps TF's allocator peak on CPU:0 (get_memory_info
        # raises; n/a in every record); on a GPU, TF's allocator peak is gpu_alloc_peak.
        Metric("tf_alloc_peak", "bytes", "TF allocator peak bytes in the loop (get_memory_info), where TF keeps it",
               _field("tf_alloc_peak")),
        Metric("child_peak", "bytes", "largest peak RSS of a child process (process isolation)",
               lambda r, n: max(r["child_peaks"]) if r["child_peaks"] else None),
        # GPU (None, so n/a, on CPU): TF's allocator bytes in use vs what NVML says the process holds
        Metric("gpu_alloc_peak", "bytes", "TF's GPU allocator peak bytes in use in the loop (reset after warm-up; "
               "largest child's for process_isolation)",
               _in_process_or_children("gpu_alloc_peak", "child_gpu_alloc_peaks"),
               tracked=True, report=ReportView("GPU allocator peak", "MiB", MIB, optional=True),
               column=RunColumn("GPU alloc MiB", lambda s: mib_text(s.get("gpu_alloc_peak")), gpu_only=True)),
        Metric("gpu_alloc_growth_per_iter", "bytes/iteration",
               "growth of TF's GPU allocator bytes in use per iteration", _series_slope("gpu_alloc")),
        Metric("gpu_reserved_peak", "bytes", "GPU memory the process holds as NVML sees it, largest per-iteration "
               "reading (largest child's for process_isolation)",
               _in_process_or_children("gpu_reserved_peak", "child_gpu_reserved_peaks"),
               tracked=True, report=ReportView("NVML reserved peak", "MiB", MIB, optional=True),
               column=RunColumn("GPU NVML MiB", lambda s: mib_text(s.get("gpu_reserved_peak")), gpu_only=True)),
        Metric("gpu_retained", "bytes",
               "TF's GPU allocator bytes in use after the loop and a full cleanup, minus the baseline",
               _difference("gpu_alloc_final", "gpu_alloc_baseline")),
        Metric("gpu_reserved_retained", "bytes", "NVML's reading after the loop and a full cleanup, minus the baseline",
               _difference("gpu_reserved_final", "gpu_reserved_baseline")),
        Metric("seconds_per_iter", "seconds", "median wall time of one iteration", _seconds_per_iter,
               text=lambda v: f"{v:.3f} s", compare=TimingBand(1.5), headline=8, tracked=True,
               column=RunColumn("s/iter", lambda s: number_text(s.get("seconds_per_iter"), "{:.3f}"))),
    )
}


def headline_metrics() -> List[str]:
    """compare's default metrics and triage's --metric choices, in their order."""
    return [m.name for m in sorted((m for m in METRICS.values() if m.headline), key=lambda m: m.headline)]


def judged_metrics() -> List[str]:
    """Every metric compare can judge, the headline ones first: triage's and attribute's --metric choices."""
    first = headline_metrics()
    return first + [m.name for m in METRICS.values() if m.compare is not None and m.name not in first]
