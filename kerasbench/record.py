"""The record: what one measured (loop shape, strategy) pair leaves behind, built, written and found here.

A record is a plain JSON-ready dict; the TypedDicts below say what it holds, and `json_schema()`
turns them (and the metric registry, for the summary) into the JSON Schema shipped as
docs/record.schema.json (`python -m kerasbench.record > docs/record.schema.json` regenerates it).
Every derived number comes from kerasbench.metrics, so the runner and compare derive alike.

On disk, records travel in a records file (`records_payload`): `kerasbench run --json`, triage
and the asv suite write them; the asv suite's go into a tree beside asv's results,
<root>/<machine>/<commit8>-<asv environment>[-<allocator>]/<loop>.json (`run_folder`; the machine is asv's
machine name, kerasbench.machine, not the host name: folders written before were named after the host and
still load), which `load_records` reads back (compare, report) and `newest_run` picks from (publish).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, TypedDict, Union, get_args, get_origin

from . import allocators, machine as machines
from .errors import UsageError
from .files import check_readable, make_folder, write_json
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
    allocator: str
    repro: str
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


class _TraceFields(TypedDict):
    top: int


class Trace(_TraceFields, total=False):
    """`run --trace`: where memory grew between the first and the last measured iteration (kerasbench.trace)."""

    skipped: str
    iterations: int
    first: int
    last: int
    python_bytes_per_iter: float
    python_sites: List[TraceSite]
    types: List[TraceType]
    native_sites: Optional[List[TraceSite]]
    native_note: str
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
    py_blocks_before: int  # sys.getallocatedblocks() at the loop's start and end
    py_blocks_after: int
    py_blocks_samples: List[List[int]]  # [measured iterations done, blocks] at a few counts (stats.look_points)
    stop_reason: StopReason  # why the loop ended (worker.STOP_REASONS); records before budgets: a fixed count
    train_path_traces: Optional[int]  # traces of every tf.function that traced a train_step (Keras's wrappers)
    predict_path_traces: Optional[int]
    all_traces: Optional[int]  # of every tf.function in the worker (None: no TF, or no hook in this TF)
    functions: Optional[List[TracedFunction]]  # per function, most traces first
    trace_hook: str  # how the tracing hook stood (kerasbench._compat.install_trace_hook)
    setup_rss: Optional[int]  # RSS after setup, before the first iteration (None: process_isolation's parent)
    first_iteration_peak_rss: Optional[int]  # peak RSS of the first iteration (VmHWM reset after setup)
    warmup_peak_rss: Optional[int]  # peak RSS of the warm-up (None without one)
    looks: int  # looks a sequential run took
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

    floor_source: str
    heap_floor: float  # bytes/iteration: the heap series' floor (its own calibration: the heap is quieter than RSS)
    heap_floor_source: str
    heap_verdict: Optional[Verdict]  # the heap series' verdict at heap_floor; None where the heap was not read
    growth_kind: Optional[GrowthKind]  # what grew (stats.GROWTH_KINDS); None where the heap was not read
    # How the series were judged (kerasbench.protocol; records before the budgeted protocol lack these):
    alpha: float  # the level of each look (0.05 over the planned looks: Bonferroni)
    rss_shape: Shape  # the RSS series' shape after its warm-up (stats.SHAPES)
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


# Open definitions: probes and the worker's environment may add keys the readers do not need.
_OPEN = {"Result", "Series", "Timing", "Environment"}


# ---------------------------------------------------------------- building a record


def judging_floor(spec: Any, series: str = "rss", iterations: Optional[int] = None) -> Tuple[float, str]:
    """(floor, where it came from) of a runner.RunSpec's `series` ("rss" or "heap") at `iterations` (default: the
    spec's count): as given, else its allocator's calibration of that series, else the default (protocol.floor_at)."""
    from .protocol import floor_at

    return floor_at(spec, series)(spec.iterations if iterations is None else iterations)


def summarize(repeats: Sequence[Repeat], spec: Any, floors: Optional[Dict[str, float]] = None) -> Summary:
    """Every metric of METRICS over the repeats with a result, plus the verdicts, the floors they were judged with
    and how each repeat's series was judged (kerasbench.protocol: the same judgement as a sequential run's looks).

    `floors` ({"rss": bytes, "heap": bytes}) judges at those floors instead of the spec's (kerasbench score)."""
    from . import protocol, stats

    results = [r["result"] for r in repeats if r.get("result")]
    summary = dict.fromkeys(METRICS)
    summary.update(verdict=None, p_trend=None, repeats=len(results), alpha=protocol.alpha(spec))
    if not results:
        floor, floor_source = judging_floor(spec)
        summary.update(floor=floor, floor_source=floor_source)
        partial = [r["partial_rss"] for r in repeats if r.get("partial_rss")]
        if partial:  # a stopped worker: its growth until the stop is still worth showing
            judged = stats.judge(partial[0], protocol.floor_at(spec), summary["alpha"])
            summary.update({m.name: getattr(judged.fit, m.rss_fit) for m in METRICS.values() if m.rss_fit})
            summary.update(p_trend=judged.fit.p_trend, verdict=judged.verdict, floor=judged.floor,
                           floor_source=judged.floor_source)
        return summary
    floors = floors or {}
    rss = protocol.judge_results(results, spec, "rss", floors.get("rss"))
    heap = protocol.judge_results(results, spec, "heap", floors.get("heap"))  # far quieter than RSS: its own floor
    fit = rss.fit if rss else stats.NAN_FIT
    floor, floor_source = rss.floor if rss else judging_floor(spec)
    summary.update(floor=floor, floor_source=floor_source)
    if heap:
        summary.update(zip(("heap_floor", "heap_floor_source"), heap.floor))
    summary.update({m.name: m.value(results, spec.iterations, fit, heap and heap.fit) for m in METRICS.values()})
    verdict = rss.verdict if rss else "inconclusive"
    why = [f"{name}: {j.why}" for name, j in (("RSS", rss), ("heap", heap)) if j and j.why]
    summary.update(
        p_trend=fit.p_trend, verdict=verdict, heap_verdict=heap.verdict if heap else None,
        rss_shape=rss.shape if rss else "inconclusive", heap_shape=heap.shape if heap else None,
        growth_kind=stats.growth_kind(verdict, heap.verdict if heap else None, rss.shape if rss else "",
                                      heap.shape if heap else "", fit.slope, summary.get("py_blocks_per_iter")),
        why="; ".join(why),
        measured=[r.get("iterations_done") for r in results],
        stopped=[r.get("stop_reason") or "count" for r in results],
        warmup_found=[j.start for j in rss.judgements] if rss else [],
        heap_warmup_found=[j.start for j in heap.judgements] if heap else [],
    )
    return summary


def allocator_check(spec: Any, environment: Optional[Environment]) -> AllocatorCheck:
    """The allocator requested and the one the worker found in /proc/self/maps, and whether they agree."""
    detected = environment.get("allocator") if environment else None
    expected = allocators.get_allocator(spec.allocator).detects
    return {"requested": spec.allocator, "detected": detected, "matches": detected in (None, expected)}


def make_record(spec: Any, repeats: List[Repeat]) -> Record:
    """The record of a runner.RunSpec's repeats: the worst status, the first environment, the summary."""
    statuses = [r["status"] for r in repeats]
    status = next((s for s in ("failed", "stopped", "skipped") if s in statuses), "ok")
    reason = next((r["reason"] for r in repeats if r["status"] == status), None)
    environment = next((r["environment"] for r in repeats if r["environment"]), None)
    if environment is not None and "machine_name" not in environment:
        environment = {**environment, "machine_name": machines.name()}
    summary = summarize(repeats, spec)
    return {
        "schema": SCHEMA_VERSION,
        "loop": spec.loop,
        "strategy": spec.strategy,
        "spec": {**dataclasses.asdict(spec), "floor": summary["floor"], "floor_source": summary["floor_source"]},
        "status": status,
        "reason": reason,
        "environment": environment,
        "allocator": allocator_check(spec, environment),
        "repeats": repeats,
        "summary": summary,
    }


def records_payload(records: Sequence[Record], **extra: Any) -> RecordsFile:
    """A records file's content: the schema version, `extra` (e.g. profile, triage), the records."""
    return {"schema": SCHEMA_VERSION, **extra, "records": list(records)}


# ---------------------------------------------------------------- the environment variables a record keeps

# What changes a measurement: TF's and Keras's settings, the allocator's, threads, the visible GPUs, kerasbench's.
ENV_PREFIXES = ("TF_", "MALLOC_", "LD_PRELOAD", "OMP_", "KERAS", "CUDA_VISIBLE", "KERASBENCH_")
# ... except a name that may hold a secret (records are published: the dashboard, the report, a bug report):
# one containing any of SECRET_PARTS, or with one of SECRET_WORDS between underscores. Dropping a harmless
# variable (TF_MONKEY) costs a line of context; keeping a token publishes it.
SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "KEY")
SECRET_WORDS = ("AUTH", "PASS", "PW", "PWD", "COOKIE", "SESSION", "CERT", "DSN", "URL", "URI", "LOGIN")
_USERINFO = re.compile(r"(://)[^/@\s]+@")


def environment_variables(environ: Dict[str, str]) -> Dict[str, str]:
    """The variables a record keeps (worker.environment): ENV_PREFIXES minus names that may hold a secret.

    A value that is an address with a user and password in it keeps the address, not the user and password.
    """
    def secret(name: str) -> bool:
        name = name.upper()
        return any(p in name for p in SECRET_PARTS) or any(w in SECRET_WORDS for w in name.split("_"))

    return {k: _USERINFO.sub(r"\1***@", v) for k, v in sorted(environ.items())
            if k.startswith(ENV_PREFIXES) and not secret(k)}


# ---------------------------------------------------------------- the records tree

RECORDS_DIR_VAR = "KERASBENCH_RECORDS_DIR"  # where the asv suite's records go, instead of <asv conf dir>/.asv/records
RUN_FOLDER = re.compile(r"^(?P<commit>[0-9a-f]{8}|nocommit)-(?P<env>.+)$")


def records_root(conf_dir: str) -> str:
    """The records tree beside an asv config's results: $KERASBENCH_RECORDS_DIR, else <conf_dir>/.asv/records."""
    return os.environ.get(RECORDS_DIR_VAR) or os.path.join(conf_dir, ".asv", "records")


def run_folder(root: str, commit: str, env_name: str, allocator: str = allocators.DEFAULT,
               machine: Optional[str] = None) -> str:
    """The folder of one asv run's records: <root>/<machine>/<commit8>-<env name>[-<allocator>].

    `machine` defaults to this machine's asv name (kerasbench.machine.name), never the host name.
    """
    suffix = "" if allocator == allocators.DEFAULT else f"-{allocator}"
    return os.path.join(root, machine or machines.name(), f"{commit[:8]}-{env_name}{suffix}")


def save_records(folder: str, name: str, payload: RecordsFile) -> str:
    """Write a records file `<name>.json` into `folder` (made if missing), atomically; returns its path."""
    make_folder(folder, "records")
    return write_json(os.path.join(folder, f"{name}.json"), payload, "records")


def place_of(path: str) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(machine, commit8, env name) when `path` sits in a records tree, else Nones (older trees: the host)."""
    folder = os.path.dirname(os.path.abspath(path))
    m = RUN_FOLDER.match(os.path.basename(folder))
    if not m:
        return None, None, None
    return os.path.basename(os.path.dirname(folder)), m["commit"], m["env"]


def newest_run(root: str) -> Tuple[Tuple[Optional[str], Optional[str]], List[str], int]:
    """((machines, commit), its run folders, how many other commits) of the newest commit in a records tree.

    A fan-out's merged tree holds one folder per machine for the same commit: all of them are the newest
    run (machines joined with '+', e.g. 'ci-tf212+ci-tf221').
    """
    groups: Dict[str, List[Tuple[str, str]]] = {}
    for machine in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, machine)):
            continue
        for run in sorted(os.listdir(os.path.join(root, machine))):
            m = RUN_FOLDER.match(run)
            folder = os.path.join(root, machine, run)
            if m and os.path.isdir(folder):
                groups.setdefault(m["commit"], []).append((machine, folder))
    if not groups:
        return (None, None), [], 0
    newest = max(groups, key=lambda k: max(os.path.getmtime(f) for _, f in groups[k]))
    names = "+".join(dict.fromkeys(m for m, _ in groups[newest]))
    return (names, newest), [f for _, f in groups[newest]], len(groups) - 1


# ---------------------------------------------------------------- reading records back

RECORD_KEYS = {"loop", "strategy", "spec", "status", "repeats", "summary"}  # what every record has had
_ENV_TF = re.compile(r"tensorflow(?:-cpu)?(\d+\.\d+(?:\.\d+)?)")


def find_records_files(paths: Sequence[str]) -> List[Tuple[str, bool]]:
    """(path, named) for every path given and every *.json under a folder given."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [(check_readable(os.path.join(root, f)), False) for f in sorted(files)
                          if f.endswith(".json") and not f.startswith(".")]
        elif os.path.lexists(path):
            found.append((check_readable(path), True))  # a FIFO would hang the reader: refused, not opened
        else:
            raise UsageError(f"Cannot read records from {path}: no such file or folder.")
    return found


def read_records_file(path: str) -> Any:
    """The parsed JSON of `path`; a one-line UsageError when it cannot be read or parsed."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise UsageError(f"Cannot read records from {path}: {e.strerror}.") from None
    except ValueError as e:  # truncated or corrupt
        raise UsageError(f"Cannot parse records file {path}: {e} (truncated or corrupt JSON?).") from None


_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
               "integer": int, "number": (int, float)}


def _is(value: Any, kind: str) -> bool:
    return isinstance(value, _JSON_TYPES[kind]) and not (isinstance(value, bool) and kind in ("integer", "number"))


def type_problem(value: Any, schema: Dict[str, Any], defs: Dict[str, Any], where: str) -> Optional[str]:
    """Where `value` has a type the record's JSON Schema does not allow, e.g. 'summary: a str, expected an object'.

    Keys a definition does not list are let through (newer writers, probes), and so are missing ones
    (older records lack keys that came later): what is checked is that every value present has its type.
    """
    if "$ref" in schema:
        return type_problem(value, defs[schema["$ref"].rsplit("/", 1)[1]], defs, where)
    if "anyOf" in schema:
        problems = [type_problem(value, member, defs, where) for member in schema["anyOf"]]
        return None if None in problems else problems[0]
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} is {value!r}, expected one of {', '.join(map(repr, schema['enum']))}"
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds and not any(_is(value, k) for k in kinds):
        found = next((k for k in ("boolean", "integer", "number", "string", "null", "array", "object")
                      if _is(value, k)), type(value).__name__)
        return f"{where} is {'an' if found[0] in 'aeiou' else 'a'} {found}, expected {' or '.join(kinds)}"
    if isinstance(value, dict):
        props, extra = schema.get("properties", {}), schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            problem = sub is not None and type_problem(item, sub, defs, f"{where}.{key}")
            if problem:
                return problem
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problem = type_problem(item, schema["items"], defs, f"{where}[{i}]")
            if problem:
                return problem
    return None


def check_record(record: Any, path: str, index: int) -> Record:
    """`record` if it is a kerasbench record whose every value has its type; a one-line UsageError otherwise."""
    if not isinstance(record, dict) or not RECORD_KEYS <= set(record):
        raise UsageError(f"Not a kerasbench record in {path} (records[{index}]): "
                         f"expected the keys {', '.join(sorted(RECORD_KEYS))}.")
    schema = _record_schema()
    problem = type_problem(record, schema, schema["$defs"], f"records[{index}]")
    if problem:
        raise UsageError(f"Not a kerasbench record in {path}: {problem}.")
    return record


_SCHEMA: Dict[str, Any] = {}


def _record_schema() -> Dict[str, Any]:
    if not _SCHEMA:
        _SCHEMA.update(json_schema())
    return _SCHEMA


def load_records(paths: Sequence[str]) -> List[Tuple[Record, str, str]]:
    """Every usable record under `paths` as [(record, path, tf_version)]: one schema, one commit.

    Records of several machines load together (a fan-out's merged tree): whether their figures may be
    compared is kerasbench.machine's fingerprint, which compare notes per cell.
    """
    out, schema, commit = [], None, None
    payloads = []
    for path, named in find_records_files(paths):
        payload = read_records_file(path)
        if not (isinstance(payload, dict) and isinstance(payload.get("records"), list)):
            if named:
                raise UsageError(f"Not a kerasbench records file: {path} (expected an object with a 'records' list).")
            continue  # e.g. asv's own JSON files in a .asv tree
        payloads.append((path, payload))
    in_run: Dict[str, set] = {}  # the TF versions of each run folder (one asv environment): the controls' too
    sides: Dict[str, Dict[str, set]] = {}  # each run's Keras package and Python: the controls' and skipped pairs' too
    for path, payload in payloads:
        if place_of(path)[1]:
            in_run.setdefault(os.path.dirname(os.path.abspath(path)), set()).update(
                (r.get("environment") or {}).get("tensorflow") for r in payload["records"] if isinstance(r, dict))
        side = sides.setdefault(_run_of(path), {"keras_package": set(), "python": set()})
        for r in payload["records"]:
            env = (r.get("environment") or {}) if isinstance(r, dict) else {}
            side["keras_package"].add(env.get("keras_package"))
            side["python"].add(_python_minor(env))
    for path, payload in payloads:
        _, file_commit, env_name = place_of(path)
        versions = {(r.get("environment") or {}).get("tensorflow")
                    for r in payload["records"] if isinstance(r, dict)} - {None}
        if not versions:  # e.g. the control loop, which never imports TF: its run folder's other loops say it
            versions = in_run.get(os.path.dirname(os.path.abspath(path)), set()) - {None}
        for index, record in enumerate(payload["records"]):
            check_record(record, path, index)
            found = record.get("schema", payload.get("schema"))
            if schema is None:
                schema = (found, path)
            elif found != schema[0]:
                raise UsageError(f"Mixed schema versions: {path} has schema {found}, "
                                 f"{schema[1]} has schema {schema[0]}.")
            if found != SCHEMA_VERSION:
                raise UsageError(f"Unsupported records schema {found} in {path}: "
                                 f"this kerasbench reads schema {SCHEMA_VERSION}.")
            env = dict(record.get("environment") or {})
            version = env.get("tensorflow")
            if version is None and len(versions) == 1:
                version = next(iter(versions))  # e.g. the control loop, which never imports TF
            if version is None and env_name and _ENV_TF.search(env_name):
                version = _ENV_TF.search(env_name)[1]
            if version is None:
                continue
            side = {key: values - {None, ""} for key, values in sides[_run_of(path)].items()}
            keras_package = env.get("keras_package") or (next(iter(side["keras_package"]))
                                                         if len(side["keras_package"]) == 1 else None)
            if keras_package == "tf_keras":  # Keras 2 on a Keras 3 TF: another side than its Keras 3
                version = f"{version}+tf_keras"
            python = _python_minor(env) or (next(iter(side["python"])) if len(side["python"]) == 1 else "")
            if file_commit:
                if commit is None:
                    commit = (file_commit, path)
                elif file_commit != commit[0]:
                    raise UsageError(f"Records from different commits: {path} is from {file_commit}, "
                                     f"{commit[1]} from {commit[0]}.")
            out.append((record, path, str(version), python))
    if not out:
        raise UsageError(f"No records with a TensorFlow version found in {', '.join(paths)}.")
    return _label_pythons(out)


def _run_of(path: str) -> str:
    """What one run wrote: an asv environment's folder of a records tree (several files), else the file itself."""
    return os.path.dirname(os.path.abspath(path)) if place_of(path)[1] else os.path.abspath(path)


def _python_minor(env: dict) -> str:
    """'3.12' of an environment's interpreter ('' when not recorded: a pair skipped before its worker ran)."""
    return ".".join(str(env.get("python") or "").split(".")[:2])


def _label_pythons(loaded: List[Tuple[Record, str, str, str]]) -> List[Tuple[Record, str, str]]:
    """A release measured on several Pythons (the matrix's Python axis, `run --tf V --python X.Y`) is one side per
    Python, `<release>+py3.12`; a release on one Python keeps its plain name. (A record's Python is its run's
    when it has none of its own: a skipped pair.)"""
    minors: Dict[str, set] = {}
    for _, _, version, python in loaded:
        minors.setdefault(version, set()).add(python)
    return [(record, path, f"{version}+py{python}" if len(minors[version]) > 1 and python else version)
            for record, path, version, python in loaded]


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
