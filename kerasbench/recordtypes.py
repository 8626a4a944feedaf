"""What a record holds, as TypedDicts: a record, its spec, repeats, results, series, trace, environment and summary,
and the records file around records (schema 1: kerasbench.record.SCHEMA_VERSION).

kerasbench.record turns them (and the metric registry, for the summary) into the record's JSON Schema and checks
a record read back against it; the definitions alone import nothing of kerasbench's machinery.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Literal, Optional, TypedDict, get_type_hints

from .specfields import FIRST_FIELDS, SpecFields

Status = Literal["ok", "skipped", "failed", "stopped"]
Verdict = Literal["grows", "flat", "inconclusive"]
GrowthKind = Literal["leak", "retention", "step", "settling", "flat", "inconclusive"]
Shape = Literal["grows", "flat", "step", "settling", "inconclusive"]
StopReason = Literal["count", "decided", "budget", "iterations", "growth"]


# The spec: RunSpec's fields (kerasbench.specfields, declared once for both) with their types; the ones every record
# has had required, the later ones not (records made before them lack them).
_SPEC_TYPES = get_type_hints(SpecFields)
_SPEC_NAMES = [f.name for f in dataclasses.fields(SpecFields)]
_SpecFields = TypedDict("_SpecFields", {name: _SPEC_TYPES[name] for name in _SPEC_NAMES if name in FIRST_FIELDS})
_SpecLater = TypedDict("_SpecLater", {name: _SPEC_TYPES[name] for name in _SPEC_NAMES if name not in FIRST_FIELDS},
                       total=False)


class RecordSpec(_SpecFields, _SpecLater, total=False):
    """Everything that decided the measurement: the fields of kerasbench.runner.RunSpec, floor resolved."""


class _SeriesFields(TypedDict):
    rss: List[int]
    seconds: List[float]
    train_traces: List[int]
    predict_traces: List[int]
    function_traces: List[int]


class Series(_SeriesFields, total=False):
    """Readings after each measured iteration (empty with probes off); probes may add series."""

    all_traces: List[int]  # traces of every tf.function so far (records before the tracing hook lack it)
    train_path_traces: List[int]  # of the training / prediction path so far (records before protocol 5 lack them)
    predict_path_traces: List[int]
    graph_ops: List[int]
    heap: List[Optional[int]]  # allocator heap bytes in use (absent where no reader: see heap_unavailable)
    gpu_alloc: List[Optional[int]]
    gpu_reserved: List[Optional[int]]


class Timing(TypedDict, total=False):
    """Where the worker's time went (monotonic clock): what `kerasbench overhead` reads."""

    entered: float
    setup_seconds: float
    warmup_seconds: float
    done: float


class TraceSite(TypedDict):
    """An allocation site that grew between the trace's two snapshots: per iteration, and the frames that led there."""

    site: str
    bytes_per_iter: float
    count_per_iter: float
    stack: List[str]


class TraceType(TypedDict):
    """An object type whose GC-tracked count grew, per iteration."""

    type: str
    per_iter: float


class TraceHolder(TypedDict):
    """What holds a growing type's objects at the loop's end: the referrers of its newest few, followed up to a module
    global or a class (kerasbench.trace.holders)."""

    type: str
    per_iter: float
    alive: int  # its GC-tracked objects at the loop's end
    sampled: int  # objects whose referrers were followed
    agree: int  # how many of them this chain holds
    held_by: List[str]  # the holder first, e.g. ['list (len 40)', 'module global `histories` in repro.py']
    rooted: bool  # the chain ends at a module global or a class (else: not followed further)


class TraceContainer(TypedDict):
    """A container (list, dict, set, deque) whose length grew by an item an iteration or more: what holds objects the
    gc does not track (numpy arrays), which no growing type names (kerasbench.trace.grown_containers)."""

    kind: str  # list, dict, set or deque
    len: int  # its length at the loop's end
    per_iter: float  # items gained per iteration
    bytes_per_iter: float  # sys.getsizeof of a sample of the new items, per iteration
    items: List[str]  # the types of the new items, the most common first
    held_by: List[str]  # its name (module `m` global `kept`), else the chain of its holders, the holder first
    rooted: bool  # named from a module's globals, or the chain ends at one or a class


class _TraceFields(TypedDict):
    top: int


class Trace(_TraceFields, total=False):
    """`run --trace`: where memory grew between the first and the last measured iteration (kerasbench.trace)."""

    skipped: str
    iterations: int
    first: int
    last: int
    frames: int  # frames tracemalloc kept per allocation (records before it lack it: 6)
    python_bytes_per_iter: float
    # Growth by each allocation's innermost frame in the user's files; stack: that line, the library call it made,
    # where that path allocated (records before them lack user_sites and holders)
    user_sites: List[TraceSite]
    python_sites: List[TraceSite]
    types: List[TraceType]
    holders: List[TraceHolder]  # what holds the objects of the types that grow
    containers: List[TraceContainer]  # the containers that grow (records before them lack it)
    native_sites: Optional[List[TraceSite]]
    native_note: str
    native_file: str  # memray's capture of the window (--trace-native), kept for `memray flamegraph FILE`
    seconds_in_loop: float
    seconds_after: float


class TracedFunction(TypedDict):
    """One tf.function of the worker (grouped by owner, module and qualified name): how often it was traced."""

    owner: str  # 'keras wrapper', 'keras step', 'tf.data', 'tensorflow', 'loop' (kerasbench's own) or 'user'
    module: str
    function: str  # the traced Python function's qualified name
    name: str  # the tf.function's name
    instances: int  # tf.function objects (a new one per model, or per iteration with function_in_loop)
    live: int  # of them, alive at the end
    traces: int  # traces of all instances, warm-up included
    held: Optional[int]  # concrete functions the live instances hold at the end (None: not readable here)
    paths: List[str]  # 'train', 'predict': it traced a train_step / predict_step


class _ResultFields(TypedDict):
    iterations_done: int  # measured iterations (a budgeted run's own count)
    series: Series
    baseline_rss: int
    peak_loop_rss: int
    peak_method: str
    final_rss: int
    loop_seconds: float
    objects_before: int
    objects_after: int
    graph_build_seconds: Optional[float]
    tf_alloc_peak: Optional[int]
    child_peaks: List[int]
    train_traces: Optional[int]
    predict_traces: Optional[int]
    function_traces: int
    models_built: Optional[int]


class Result(_ResultFields, total=False):
    """What one worker measured (bytes, seconds, counts); the metrics derive from it, and probes may add values."""

    gpu_alloc_baseline: Optional[int]
    gpu_alloc_peak: Optional[int]
    gpu_alloc_final: Optional[int]
    gpu_reserved_baseline: Optional[int]
    gpu_reserved_peak: Optional[int]
    gpu_reserved_final: Optional[int]
    gpu_reserved_source: Optional[str]
    child_gpu_alloc_peaks: List[Optional[int]]
    child_gpu_reserved_peaks: List[Optional[int]]
    heap_baseline: Optional[int]
    heap_peak: Optional[int]
    heap_final: Optional[int]
    heap_source: Optional[str]
    heap_unavailable: Optional[str]
    collect_generation: int  # gc.collect(this) after each iteration, before RSS and the heap are read (protocol 8)
    collect_seconds: float  # what those collections took in all (outside the loop timer)
    py_blocks_before: int  # sys.getallocatedblocks() at the loop's start and end
    py_blocks_after: int
    py_blocks_samples: List[List[int]]  # [measured iterations done, blocks] at a few counts (rule.look_points)
    stop_reason: StopReason  # why the loop ended (worker.STOP_REASONS); records before budgets: a fixed count
    train_path_traces: Optional[int]  # traces of every tf.function that traced a train_step (Keras's wrappers)
    predict_path_traces: Optional[int]
    all_traces: Optional[int]  # of every tf.function in the worker (None: no TF, or no hook in this TF)
    functions: Optional[List[TracedFunction]]  # per function, most traces first
    trace_hook: str  # how the tracing hook stood (kerasbench._compat.install_trace_hook)
    compilations: Optional[int]  # the backend's XLA compilations (jax); None where not counted (TF, torch)
    setup_rss: Optional[int]  # RSS after setup, before the first iteration (None: process_isolation's parent)
    first_iteration_peak_rss: Optional[int]  # peak RSS of the first iteration (VmHWM reset after setup)
    warmup_peak_rss: Optional[int]  # peak RSS of the warm-up (None without one)
    looks: int  # looks a sequential run took
    planned_looks: int  # looks it planned at the first (its end included; rule.LookPlan): each at 0.05 / this
    planned_last: int  # the count the plan projected the run to end at (the first look's speed, ×1.5)
    timing: Timing
    trace: Trace


class Environment(TypedDict, total=False):
    """What the worker ran on: interpreter, libraries, machine, allocator, settings (GPU, TF builds where known)."""

    python: str
    implementation: str
    platform: str
    machine: str
    cpu_model: str
    cpu_count: int
    memory_total: int
    libc: str
    allocator: str
    kerasbench: str
    schema: int
    numpy: str
    tensorflow: Optional[str]
    keras: Optional[str]
    keras_package: str  # "keras", or "tf_keras" (TF_USE_LEGACY_KERAS=1): compare labels those <release>+tf_keras
    keras_backend: str  # tensorflow, jax or torch (records before backends lack it: tensorflow); compare labels a
    #                     jax or torch record keras-<version>+<backend>
    backend_versions: Dict[str, Optional[str]]  # the jax and torch backends' framework: jax and jaxlib, or torch
    tf_git_version: Optional[str]  # tf.version.GIT_VERSION: the commit of the build (records before it lack it)
    tf_distribution: Optional[str]  # tensorflow-cpu, tensorflow, tf-nightly-cpu, tf-nightly
    nightly: Dict[str, Any]  # a nightly's environment: package, version, uploaded, day, flavour (nightlies.NOTE_FILE)
    device: str
    env: Dict[str, str]
    hostname: str
    machine_name: str  # asv's machine name (kerasbench.machine); records before it lack it
    allocator_requested: Optional[str]
    tf_in: str
    gpu_driver: str
    gpu_name: str
    cuda_version: str
    cudnn_version: str
    gpus: List[Dict[str, Any]]
    load_start: List[float]  # os.getloadavg() (1, 5, 15 minutes, whole machine) as the worker started ...
    load_end: List[float]  # ... and as its loop ended: compare's time verdicts read them


class _RepeatFields(TypedDict):
    repeat: int
    status: Status
    reason: Optional[str]
    result: Optional[Result]
    environment: Optional[Environment]


class Repeat(_RepeatFields, total=False):
    """One fresh worker process: how it ended, what it measured, and what the runner saw of it."""

    worker_seconds: float
    max_tree_rss: int
    start_seconds: float
    exit_seconds: float
    partial_rss: List[int]
    log_tail: List[str]
    look_error: str  # the first look the stop rule could not judge (the worker ran on to its budget)


class AllocatorCheck(TypedDict):
    """The allocator requested and the one the worker found in /proc/self/maps, and whether they agree."""

    requested: str
    detected: Optional[str]
    matches: bool


class _SummaryFields(TypedDict):
    verdict: Optional[Verdict]
    floor: float
    p_trend: Optional[float]
    repeats: int


class Summary(_SummaryFields, total=False):
    """Every metric of kerasbench.metrics.METRICS (None where a probe does not apply), the verdict and its floor."""

    protocol: int  # the verdict rule's version (rule.PROTOCOL_VERSION); records without it: protocol 7 or older
    floors_from: Dict[str, Optional[Dict[str, Any]]]  # which file gave each series' floor (rule.floor_stamp)
    floor_source: str
    # protocol 9: what counts as growth (the margin, any count) apart from what the count resolves (the floor)
    margin: float  # bytes/iteration: RSS's margin (given: --floor-kib, max_growth; else rule.MARGINS')
    margin_source: str
    heap_margin: float  # the heap's margin (the given one, as RSS's; else its own default)
    needed: Optional[int]  # RSS undecided: about the count that would decide it (None: decided, or none found)
    heap_needed: Optional[int]
    heap_floor: float  # bytes/iteration: the heap series' resolution at its count (its own calibration)
    heap_floor_source: str
    heap_verdict: Optional[Verdict]  # the heap series' verdict at heap_floor; None where the heap was not read
    growth_kind: Optional[GrowthKind]  # what grew (rule.GROWTH_KINDS); None where the heap was not read
    # How the series were judged (kerasbench.rule; records before the budgeted protocol lack these):
    alpha: float  # the level of each look (0.05 over the planned looks: Bonferroni)
    rss_shape: Shape  # the RSS series' shape after its warm-up (rule.SHAPES)
    heap_shape: Optional[Shape]
    why: str  # why a verdict is not decided: a step, settling, repeats that disagree ('' when decided)
    measured: List[Optional[int]]  # measured iterations of each repeat
    stopped: List[StopReason]  # why each repeat's loop ended (worker.STOP_REASONS)
    warmup_found: List[int]  # iterations each repeat's RSS series discarded as warm-up (stats.steady_start)
    heap_warmup_found: List[int]


TriageClass = TypedDict("TriageClass", {"class": Literal["good", "bad", "unclear"], "why": str})
TriageClass.__doc__ = "How `kerasbench triage` classified this version against the two ends."


class _RecordFields(TypedDict):
    schema: int
    loop: str
    strategy: str
    spec: RecordSpec
    status: Status
    reason: Optional[str]
    environment: Optional[Environment]
    repeats: List[Repeat]
    summary: Summary


class Record(_RecordFields, total=False):
    """One (loop shape, strategy) pair measured over its repeats: spec, environment, every repeat, summary."""

    allocator: AllocatorCheck
    asv_env: str
    triage: TriageClass


class _RecordsFileFields(TypedDict):
    schema: int
    records: List[Record]


class RecordsFile(_RecordsFileFields, total=False):
    """A records file: `kerasbench run --json`, `kerasbench triage --json`, or the asv suite's, per loop shape."""

    profile: str
    triage: Dict[str, Any]
    answer: Dict[str, Any]  # triage's, attribute's and ablate's answer as data (answers.result; the atlas keeps it)
