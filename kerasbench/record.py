"""The record: what one measured (loop shape, strategy) pair leaves behind, defined here in one piece.

A record is a plain JSON-ready dict; the TypedDicts below say what it holds, and `json_schema()`
turns them (and the metric registry, for the summary) into the JSON Schema shipped as
docs/record.schema.json (`python -m kerasbench.record > docs/record.schema.json` regenerates it);
`check_record` checks a record read back against it. Records travel in a records file (`records_payload`).

The other jobs around a record have modules of their own: building one from a worker's repeats (summary.py),
the records tree beside asv's results (tree.py), reading records back for compare and report (loading.py).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Literal, Optional, Sequence, TypedDict, Union, get_args, get_origin

from ._compat import FRAMEWORKS
from .errors import UsageError
from .metrics import METRICS

# Bump when what a record measures or means changes: asv benchmark versions follow it, so asv
# notices that results from before and after are not comparable. Records of schema 1 written
# before a key existed lack it: readers use .get for everything newer than the first records.
SCHEMA_VERSION = 1

Status = Literal["ok", "skipped", "failed", "stopped"]
Verdict = Literal["grows", "flat", "inconclusive"]
GrowthKind = Literal["leak", "retention", "step", "settling", "flat", "inconclusive"]
Shape = Literal["grows", "flat", "step", "settling", "inconclusive"]
StopReason = Literal["count", "decided", "budget", "iterations", "growth"]


class _SpecFields(TypedDict):
    loop: str
    strategy: str
    iterations: int
    warmup: int
    repeats: int
    batch_size: int
    leak_bytes: int
    probes: bool
    memory_cap: int
    time_limit: float
    floor: Optional[float]


class RecordSpec(_SpecFields, total=False):
    """Everything that decided the measurement: the fields of kerasbench.runner.RunSpec, floor resolved."""

    floor_source: str
    profile: str
    device: str
    backend: str  # Keras 3's backend asked for (--backend; records before it, and "": the caller's, which the
    #               environment's keras_backend says)
    allocator: str
    repro: str
    body: str  # measure(body=): the function, module:qualname (records before it, and of other loops, lack it: "")
    body_sha256: str  # the first 12 hex digits of the sha256 of its source (of its bytecode where it has none)
    python: str
    jobs: int  # pairs measured at once (records before `--jobs` lack it: one at a time)
    trace: int  # top N of `run --trace` (0 or missing: not traced; a traced record's memory figures move)
    trace_native: bool  # `run --trace-native`: memray's native sites too
    min_iterations: int  # a budgeted run (records before it lack these: a fixed count of `iterations`)
    budget: float
    min_seconds: float
    sequential: bool
    max_growth: int


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


# Open definitions: probes and the worker's environment may add keys the readers do not need.
_OPEN = {"Result", "Series", "Timing", "Environment"}


OTHER_BACKENDS = tuple(FRAMEWORKS)  # Keras 3's backends besides tensorflow: a record of one is a side of its own


def backend_of(environment: Optional[Dict[str, Any]]) -> str:
    """The Keras backend a record's environment ran (tensorflow for records made before backends were recorded)."""
    return str((environment or {}).get("keras_backend") or "tensorflow")


def framework_text(environment: Dict[str, Any]) -> str:
    """What a record's loops ran on, for people: 'TF 2.21.0, Keras 3.13.2' ('Keras 2.16.0 (tf_keras)'), or on jax
    and torch 'Keras 3.13.2 on jax 0.10.2 (TF 2.21.0 installed, not imported)'; a loop that imported neither (the
    control loop) says so."""
    env, backend = environment, backend_of(environment)
    if not env.get("tensorflow") and not env.get("keras"):  # a control loop: before, "TF None, Keras None"
        return "TF and Keras not imported (the loop ran without them)"
    if backend in OTHER_BACKENDS:
        versions = env.get("backend_versions") or {}
        installed = f" (TF {env['tensorflow']} installed, not imported)" if env.get("tensorflow") else ""
        return f"Keras {env.get('keras')} on {backend} {versions.get(backend) or '?'}{installed}"
    tf_keras = " (tf_keras)" if env.get("keras_package") == "tf_keras" else ""
    return f"TF {env.get('tensorflow')}, Keras {env.get('keras')}{tf_keras}"


def records_payload(records: Sequence[Record], **extra: Any) -> RecordsFile:
    """A records file's content: the schema version, `extra` (e.g. profile, triage), the records."""
    return {"schema": SCHEMA_VERSION, **extra, "records": list(records)}


# ---------------------------------------------------------------- series while measuring: compact arrays
#
# A series holds one reading per measured iteration: a run of microsecond iterations makes millions. As Python lists
# of Python numbers they cost 30-40 bytes a reading, and the worker's result came to the runner as one JSON line of
# them (parsed into lists again: 3 million iterations took the runner to 740 MiB). So the worker sends each series
# as the bytes of an array (`wire_series`, zlib-compressed in the JSON line) and the runner keeps it as one
# (`series_arrays`): array('q') for integers, array('d') for floats, 8 bytes a reading, until the pair's repeats
# are done. Then each is listed once (`listed_repeats`) and the record built from them: a record is a plain
# JSON-ready dict, judged from the lists as before. A sequential run's looks keep theirs as arrays too
# (rule.Decider).
# A series that is neither all integers nor all floats (a heap reader that failed leaves None) stays a list.

WIRE_KEYS = ("typecode", "length", "zlib_base64")  # a series as the worker sends it: {key: ...} in place of the list


def compact(values: Any) -> Any:
    """`values` as an array: 'q' when every value is an int (readings: never a bool), 'd' when every one is a float;
    else as it is (a list with None in it, mixed ints and floats, ints beyond 64 bits, an array already)."""
    from array import array

    if not isinstance(values, list) or not values:
        return values
    if type(values[0]) is int:
        try:
            return array("q", values)  # refuses a float or None (TypeError), an int beyond 64 bits (OverflowError)
        except (TypeError, OverflowError):
            return values
    if all(type(v) is float for v in values):  # array("d") would take ints too, and write them back as floats
        return array("d", values)
    return values


def wire_series(series: Dict[str, Any]) -> Dict[str, Any]:
    """The worker's series for its result's JSON line: each compact one as {"typecode", "length", "zlib_base64"}
    (its array's bytes, compressed: a flat trace count is a few bytes, not 3 a reading), the others as they are."""
    import base64
    import zlib

    sent = {}
    for name, values in series.items():
        packed = compact(values)
        if packed is values:
            sent[name] = values
            continue
        data = base64.b64encode(zlib.compress(packed.tobytes(), 1)).decode("ascii")
        sent[name] = dict(zip(WIRE_KEYS, (packed.typecode, len(packed), data)))
    return sent


def series_arrays(series: Any) -> Any:
    """The series of a worker's result as the runner keeps them: what `wire_series` sent back into arrays, a list of
    numbers into one (compact); ValueError when a sent series is not one (a bad typecode, length or data)."""
    import base64
    import zlib
    from array import array

    if not isinstance(series, dict):
        return series
    kept = {}
    for name, values in series.items():
        if not isinstance(values, dict):
            kept[name] = compact(values)
            continue
        typecode, length, data = (values.get(k) for k in WIRE_KEYS)
        if typecode not in ("q", "d") or type(length) is not int or length < 0 or not isinstance(data, str):
            raise ValueError(f"series {name!r} is not a sent series")
        try:
            raw = zlib.decompress(base64.b64decode(data.encode("ascii"), validate=True))
        except (ValueError, zlib.error) as e:  # binascii.Error and UnicodeEncodeError are ValueErrors
            raise ValueError(f"series {name!r} cannot be read back: {e}") from None
        values = array(typecode)
        if len(raw) != length * values.itemsize:
            raise ValueError(f"series {name!r} holds {len(raw)} bytes, not {length} readings")
        values.frombytes(raw)
        kept[name] = values
    return kept


def listed(values: Any) -> Any:
    """A series as a record holds it: an array as a list (ints that repeat share one object: a flat RSS series of
    millions of readings holds a few distinct ints, 8 bytes a reading); anything else as it is."""
    from array import array

    if not isinstance(values, array):
        return values
    if values.typecode != "q":
        return values.tolist()
    shared: Dict[int, int] = {}
    return list(map(shared.setdefault, values, values))


def listed_repeats(repeats: Sequence[Repeat]) -> Sequence[Repeat]:
    """`repeats` with every result's series as lists (listed), in place: what a record is built from (JSON-ready).
    One series at a time: its array is let go as its list is made."""
    for repeat in repeats:
        result = repeat.get("result")
        series = result.get("series") if isinstance(result, dict) else None
        if isinstance(series, dict):
            for name in list(series):
                series[name] = listed(series[name])
    return repeats


# ---------------------------------------------------------------- checking a record against its schema

RECORD_KEYS = {"loop", "strategy", "spec", "status", "repeats", "summary"}  # what every record has had

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
               "integer": int, "number": (int, float)}
_SCALARS = {"integer": (int,), "number": (int, float), "null": (type(None),), "string": (str,), "boolean": (bool,)}


def _is(value: Any, kind: str) -> bool:
    return isinstance(value, _JSON_TYPES[kind]) and not (isinstance(value, bool) and kind in ("integer", "number"))


def _lenient(schema: Any) -> Any:
    """The record's schema as records read back are held to: no key required (older records lack keys that came
    later) and every object open (newer writers, probes add keys); what is checked is that each value has its type."""
    if isinstance(schema, list):
        return [_lenient(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _lenient(v) for k, v in schema.items() if k != "required"}
    if out.get("additionalProperties") is False:
        out["additionalProperties"] = True
    return out


def _validator() -> Any:
    """A jsonschema validator (draft 2020-12) of one record by _lenient(json_schema()), made once. A series (an
    array of scalars: a million readings at a million iterations) is checked at once, item by item by jsonschema
    only when that finds one of another type (9x slower, measured, for the same answer)."""
    if "validator" not in _SCHEMA:
        from jsonschema import Draft202012Validator, validators

        plain = Draft202012Validator.VALIDATORS["items"]

        def items(validator: Any, each: Any, instance: Any, schema: Any) -> Any:
            kinds = each.get("type") if isinstance(each, dict) and set(each) == {"type"} else None
            if kinds and isinstance(instance, list):
                allowed = tuple(t for k in ([kinds] if isinstance(kinds, str) else kinds) for t in _SCALARS.get(k, ()))
                if all(type(v) in allowed for v in instance):
                    return
            yield from plain(validator, each, instance, schema)

        checker = validators.extend(Draft202012Validator, {"items": items})
        _SCHEMA["validator"] = checker(_lenient(_record_schema()))
    return _SCHEMA["validator"]


def _said(error: Any, where: str) -> str:
    """One jsonschema error in words: 'records[0].summary is a string, expected object'; of an anyOf, its first
    member's (a value may be null or a definition: what the definition wants is the useful half)."""
    while error.validator == "anyOf" and error.context:
        error = next((e for e in error.context if e.relative_schema_path[0] == 0), error.context[0])
    at = where + "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in error.absolute_path)
    value = error.instance
    if error.validator == "enum":
        return f"{at} is {value!r}, expected one of {', '.join(map(repr, error.validator_value))}"
    if error.validator == "type":
        kinds = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
        found = next((k for k in ("boolean", "integer", "number", "string", "null", "array", "object")
                      if _is(value, k)), type(value).__name__)
        return f"{at} is {'an' if found[0] in 'aeiou' else 'a'} {found}, expected {' or '.join(kinds)}"
    return f"{at}: {error.message}"


def type_problem(value: Any, where: str) -> Optional[str]:
    """Where `value` (one record) has a type the record's JSON Schema does not allow, e.g. 'records[0].summary is a
    string, expected object' (jsonschema's first error); None when every value present has its type."""
    error = next(iter(_validator().iter_errors(value)), None)
    return None if error is None else _said(error, where)


def check_record(record: Any, path: str, index: int) -> Record:
    """`record` if it is a kerasbench record whose every value has its type; a one-line UsageError otherwise."""
    if not isinstance(record, dict) or not RECORD_KEYS <= set(record):
        raise UsageError(f"Not a kerasbench record in {path} (records[{index}]): "
                         f"expected the keys {', '.join(sorted(RECORD_KEYS))}.")
    problem = type_problem(record, f"records[{index}]")
    if problem:
        raise UsageError(f"Not a kerasbench record in {path}: {problem}.")
    return record


_SCHEMA: Dict[str, Any] = {}


def _record_schema() -> Dict[str, Any]:
    if "schema" not in _SCHEMA:
        _SCHEMA["schema"] = json_schema()
    return _SCHEMA["schema"]


# ---------------------------------------------------------------- the JSON Schema


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _schema_of(tp: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    """The JSON Schema of a type annotation; TypedDicts go into `defs` and are referred to."""
    simple = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
    if tp is Any:
        return {}
    if tp in simple:
        return {"type": simple[tp]}
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union:
        members = [_schema_of(a, defs) for a in args]
        if all(set(m) == {"type"} for m in members):
            return {"type": [m["type"] for m in members]}
        return {"anyOf": members}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(args[1], defs)}
    if _is_typeddict(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: a definition may refer to itself
            defs[name] = _object_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"No JSON Schema for the annotation {tp!r}.")


def _object_schema(td: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    from typing import get_type_hints

    hints = get_type_hints(td, globalns=vars(sys.modules[__name__]))
    schema: Dict[str, Any] = {"description": " ".join((td.__doc__ or "").split()), "type": "object",
                              "properties": {k: _schema_of(t, defs) for k, t in hints.items()}}
    if td.__name__ == "Summary":
        schema["properties"] = {**{m.name: {"type": ["number", "null"], "description": f"{m.description} [{m.unit}]"}
                                   for m in METRICS.values()}, **schema["properties"]}
    schema["required"] = [k for k in hints if k in td.__required_keys__]
    schema["additionalProperties"] = td.__name__ in _OPEN
    return schema


def json_schema() -> Dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one record, generated from the definitions above and METRICS."""
    defs: Dict[str, Any] = {}
    root = _schema_of(Record, defs)
    _schema_of(RecordsFile, defs)  # the file around the records: validate one with {"$ref": "#/$defs/RecordsFile"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"kerasbench record, schema {SCHEMA_VERSION}",
            "description": defs["Record"]["description"], **root, "$defs": dict(sorted(defs.items()))}


def schema_text() -> str:
    """json_schema() as the text of docs/record.schema.json."""
    return json.dumps(json_schema(), indent=1) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text())
