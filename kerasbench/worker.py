"""The measured process: one (loop shape, strategy) pair, run in a fresh interpreter.

Protocol (after TensorFlow's own memory_test_util): set up, warm up, GC barrier, baseline,
N measured iterations with cheap probes, full cleanup, final reading. The spec is resolved to its
LoopShape and Strategy once (`pair_for`), into a MeasuredPair that runs the loop here (or an
IsolatedPair that runs each iteration in a spawned child); the probes (kerasbench.probes) take
their readings at the protocol's hooks. Started by kerasbench.runner as
`python -m kerasbench.worker SPEC_JSON FD`; it reports JSON lines on FD.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import platform
import re
import resource
import sys
import time
from typing import Any, Callable, Dict, Optional

from . import SCHEMA_VERSION, __version__, _compat, allocators, counters, gpu, probes, procs, rule
from .errors import Skip
from .loops import LOOPS, LoopShape, Step
from .spec import RunSpec
from .strategies import CLEANUPS, Strategy, get_strategy
from .trace.tracer import Tracer


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
        """Skip when the strategy does not apply to the loop shape, or the loop is TF's and Keras runs on another
        backend (nothing imported yet)."""
        if self.spec.loop not in self.strategy.applies_to:
            raise Skip(f"strategy {self.strategy.name} does not apply to loop {self.spec.loop}")
        off = self.shape.off_backend(_compat.backend())
        if off:
            raise Skip(off)

    def setup(self) -> None:
        """Import TF and check what the strategy needs (Skip if missing), make the loop's data and a reused model."""
        s = self.strategy
        self.check_applies()
        if self.spec.device == "gpu" and not self.shape.needs_tf and not gpu.measurable_without_tf():
            raise Skip(f"loop {self.spec.loop} does not use TensorFlow: nothing to run on a GPU")
        if self.shape.needs_tf:
            _compat.framework()
            _compat.require(s.needs + (("gpu",) if self.spec.device == "gpu" else ()))
            if s.memory_growth and _compat.on_tf():  # before any op: TF has not initialised the GPUs yet
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
        if self.shape.needs_tf and ("tensorflow" in sys.modules or not _compat.on_tf()):
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
        child = self.pool.apply(_isolated_iteration, (dataclasses.asdict(self.spec), i, os.getpid()))
        self.child_peaks.append(child["peak"])
        self.child_versions = child["versions"]
        self.child_gpu_alloc_peaks.append(child["gpu_alloc_peak"])
        self.child_gpu_reserved_peaks.append(child["gpu_reserved"])
        for kind, n in child["traces"].items():
            counters.count_trace(kind, n)
        counters.add_child_functions(child.get("functions") or [])
        counters.count_model(child["models"])

    def teardown(self) -> None:
        """Close the pool."""
        self.pool.close()
        self.pool.join()
        self.pool = None


def pair_for(spec: RunSpec, in_child: bool = False) -> MeasuredPair:
    """The spec resolved to its loop shape and strategy: the one place the worker looks them up.

    `in_child`: an isolated child's pair, the same strategy run in process on this spec's loop.
    """
    shape, strategy = LOOPS[spec.loop], get_strategy(spec.strategy)  # composed ones too
    if in_child:
        strategy = dataclasses.replace(strategy, isolate=False, applies_to=frozenset({spec.loop}))
    return (IsolatedPair if strategy.isolate else MeasuredPair)(spec, shape, strategy)


def _isolated_iteration(spec_dict, i, parent=None):
    """One iteration in a spawned child of the worker `parent` (dies with it): the same loop, model rebuilt, nothing
    else shared."""
    procs.die_with_parent(parent)
    spec = RunSpec(**spec_dict)
    pair = pair_for(spec, in_child=True)
    pair.setup()
    pair.iteration(i)
    on_gpu = spec.device == "gpu" and pair.shape.needs_tf
    reader = gpu.GpuMemoryReader() if on_gpu else None
    versions = _compat.versions() if pair.shape.needs_tf else None
    if on_gpu and _compat.on_tf():
        versions.update(_gpu_environment())
    return {
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "traces": {kind: counters.traces(kind) for kind in probes.TRACE_KINDS.values()},
        "functions": counters.functions(),
        "models": counters.models_built(),
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
        "allocator": allocators.allocator_in_use(),
        "allocator_requested": pair.spec.allocator if pair else None,
        "kerasbench": __version__,
        "schema": SCHEMA_VERSION,
        "numpy": numpy.__version__,
        "tensorflow": None,
        "keras": None,
        "device": pair.spec.device if pair else "cpu",
        "env": environment_variables(dict(os.environ)),  # the settings that matter, never a secret
    }
    if pair is not None and pair.spec.device == "gpu":
        env.update(gpu.driver_details())  # NVML needs no TF: the driver and GPU model even where TF is not loaded
    if not _compat.on_tf() and "keras" in sys.modules:  # Keras 3 on jax or torch: TF not imported
        env.update(_compat.versions())
    elif "tensorflow" in sys.modules:
        env.update(_compat.versions())
        env.update(_gpu_environment())
    elif pair is not None and pair.child_versions:
        env.update(pair.child_versions)
        env["tf_in"] = "child processes"
    note = _compat.nightly_note()  # a nightly's environment: which nightly, uploaded when, which build
    if note:
        env["nightly"] = note
    return env


# What changes a measurement, by name: an allow-list (records are published: the dashboard, the report, a bug
# report), not every variable of a prefix. TF_ alone also catches Terraform's (TF_VAR_db_password, TF_TOKEN_…).
ENV_NAMES = frozenset({
    "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "XLA_FLAGS", "KERAS_BACKEND", "KERAS_HOME", "MALLOC_CONF",  # jemalloc's
    "PYTHONMALLOC", "PYTHONHASHSEED",
})
ENV_PATTERNS = re.compile(
    r"TF_(CPP|ENABLE|DISABLE|NUM|FORCE|GPU|XLA|USE|DETERMINISTIC|CUDNN|INTER|INTRA|ONEDNN|MKL|CUDA|SYNC)_[A-Z0-9_]*"
    r"|TF_USE_LEGACY_KERAS|OMP_[A-Z_]+|KMP_[A-Z_]+|MKL_[A-Z_]+|MALLOC_[A-Z_]+|TCMALLOC_[A-Z_]+|JE_MALLOC_CONF"
    r"|KERASBENCH_(ALLOCATOR|CACHE|CALIBRATION|CONFIG|DEVICE|INSTALLER|JOBS|LEAK_KIB|MACHINE|MEMORY_CAP|NO_CALIBRATE"
    r"|PROFILE|PYPI|RECORDS_DIR)")
# ... and still not a name that may hold a secret (a second guard, should the list grow): one containing any of
# SECRET_PARTS, or with one of SECRET_WORDS between underscores. Dropping a harmless variable costs a line of
# context; keeping a token publishes it.
SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "KEY", "AUTHORIZATION", "OAUTH",
                "PASSPHRASE", "CREDS", "BEARER", "JWT", "WEBHOOK")
SECRET_WORDS = ("AUTH", "PASS", "PW", "PWD", "COOKIE", "SESSION", "CERT", "DSN", "URL", "URI", "LOGIN", "SAS")
_USERINFO = re.compile(r"(://)?([^/@\s:]+:[^/@\s]*@|(?<=://)[^/@\s]+@)")


def environment_variables(environ: Dict[str, str]) -> Dict[str, str]:
    """The variables a record keeps (worker.environment): those named in ENV_NAMES or matching ENV_PATTERNS, minus
    names that may hold a secret. A value with a user and password in it (`https://user:pw@host`, `user:pw@host`)
    keeps the address, not them."""
    def secret(name: str) -> bool:
        name = name.upper()
        return any(p in name for p in SECRET_PARTS) or any(w in SECRET_WORDS for w in name.split("_"))

    def hidden(value: str) -> str:
        return _USERINFO.sub(lambda m: (m.group(1) or "") + "***@", value)

    return {k: hidden(v) for k, v in sorted(environ.items())
            if (k in ENV_NAMES or ENV_PATTERNS.fullmatch(k)) and not secret(k)}


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# Progress events at most this often (seconds): a loop of microsecond iterations must not flood
# the runner (each event carries the RSS readings since the one before); TF iterations (tens of ms
# and more) are all reported.
EMIT_EVERY = 0.01


STOP_REASONS = {
    "count": "the fixed count of iterations was measured",
    "decided": "both verdicts were decided at a look (the sequential rule)",
    "budget": "the time budget of the loop was spent",
    "iterations": "the most iterations of the budget were measured",
    "growth": "RSS grew by the budget's max_growth over its baseline",
}


def _measured_loop(spec: RunSpec, pair: MeasuredPair, stack: probes.ProbeStack, series: dict,
                   emit: Callable[..., Any], ask: Optional[Callable[[int, dict], bool]],
                   tracer: Optional[Tracer]) -> tuple:
    """The measured iterations: (why the loop stopped, looks taken, iterations done, the first one's peak RSS or
    None, the plan's fields); STOP_REASONS.

    A fixed count runs exactly spec.iterations. A budgeted one stops where rule.StopRule says (the one stop rule:
    score's replay of a reference asks it too), its looks answered by `ask(k, new readings, plan)`. Seconds spent
    waiting for an answer are not loop seconds.
    """
    rss_probe, peak_probe = stack.probes.get("rss"), stack.probes.get("peak_rss")
    sent = dict.fromkeys(("rss", "heap"), 0)  # how much of each series the looks have sent
    paused = 0.0  # seconds spent waiting for a look's answer: not loop seconds

    def waited(k: int, readings: dict, plan: Optional[dict]) -> bool:
        nonlocal paused
        t0 = probes.timer()
        decided = ask(k, readings, plan)
        paused += probes.timer() - t0
        return decided

    def new_readings() -> dict:
        new = {name: series[name][sent[name]:] for name in sent if series.get(name) is not None}
        for name in new:
            sent[name] = len(series[name])
        return new

    rule_ = rule.StopRule(spec, waited if spec.probes and ask else None)
    first_peak = None
    start = probes.timer()
    last_emit = float("-inf")  # the first iteration is always reported
    emitted = 0  # the RSS readings sent so far: each event carries those since the one before (a stopped worker's)
    stop = None
    k = 0
    while k < spec.iterations:
        i = spec.warmup + k
        if spec.probes:
            stack.before_iteration()
            pair.iteration(i)
            stack.after_iteration()
        else:
            pair.iteration(i)
        k += 1
        if k == 1 and peak_probe is not None:
            first_peak = peak_probe.tracker.peek()  # VmHWM was reset at the loop's start
        now = probes.timer()
        if now - last_emit >= EMIT_EVERY or k == spec.iterations:
            readings = {}
            if spec.probes:  # the runner keeps them: a worker stopped by the memory cap or time limit has no result
                readings = {"rss": series["rss"][-1], "rss_since": series["rss"][emitted:]}
                emitted = len(series["rss"])
            emit("iteration", iteration=k - 1, **readings)
            last_emit = now
        if tracer:
            tracer.after_iteration(k - 1)
        rss = series.get("rss") if rss_probe is not None else None
        stop = rule_.after(k, now - start - paused, rss[-1] - rss_probe.baseline if rss else None, new_readings)
        if stop:
            break
    return rule_.reason(stop), rule_.looks, k, first_peak, rule_.fields()


def run_protocol(spec: RunSpec, emit: Callable[..., Any], gpu_reader: Optional[gpu.GpuMemoryReader] = None,
                 ask: Optional[Callable[[int, dict], bool]] = None) -> None:
    """Run the protocol for `spec` in this process; `emit(event, **fields)` reports as it goes.

    `gpu_reader` (a gpu.GpuMemoryReader) turns the GPU probe on with it, e.g. a fake in tests. `ask(k, readings)`
    answers a sequential run's looks (the runner's, over a pipe): True when its verdicts are decided.
    """
    entered = time.monotonic()  # system-wide on Linux: the runner subtracts its spawn time from it
    load_start = list(os.getloadavg())  # the machine's load: compare's time verdicts need it
    pair = pair_for(spec)
    peaks = {"setup_rss": None, "first_iteration_peak_rss": None, "warmup_peak_rss": None}
    try:
        t0 = probes.timer()
        pair.setup()
        setup_seconds = probes.timer() - t0
        # What the loop needs on top of its setup (model built, data ready): the RSS now, and the peak of the first
        # iteration and of the warm-up (VmHWM reset here). A working set the first iteration reaches and glibc then
        # keeps is in the post-warm-up baseline already: only this sees it (process_isolation: its children's).
        hwm = None
        if pair.in_process:
            peaks["setup_rss"] = probes.rss_bytes()
            hwm = probes.PeakTracker().start()
        emit("phase", phase="warmup")  # the runner says where a stopped worker was: setup, warm-up, iterations
        for w in range(spec.warmup):  # a child of process_isolation may find out it must skip
            pair.iteration(w)
            if w == 0 and hwm:
                peaks["first_iteration_peak_rss"] = hwm.peek()
            emit("warmup", iteration=w)
        if hwm:
            peak = hwm.stop()  # also ends a sampler thread (where VmHWM cannot be reset)
            peaks["warmup_peak_rss"] = peak if spec.warmup else None
        warmup_seconds = probes.timer() - t0 - setup_seconds
    except Skip as e:
        emit("skip", reason=str(e), environment=environment(pair))
        return
    _compat.build_facts()  # read now, before the baseline: not between the loop and the reading after cleanup
    stack = probes.ProbeStack(probes.ProbeContext(
        tf_loaded="tensorflow" in sys.modules and _compat.on_tf(),
        in_process=pair.in_process,
        device=spec.device,
        trim_before_read=allocators.get_allocator(spec.allocator).trim_before_read,
        counts_steps=pair.shape.counts_steps,
        extra_probes=pair.shape.extra_probes,
        pair=pair,
        gpu_reader=gpu_reader,
        block_samples=frozenset(rule.look_points(1, spec.iterations + 1)),
    ))
    series = stack.series  # every probe's series by name, each list made as its probe starts

    emit("phase", phase="iteration")
    tracer = Tracer(spec.trace, spec.iterations, pair.in_process, spec.trace_native) if spec.trace else None
    if tracer:  # before the barrier and the baseline: its own memory is there from the start
        tracer.start()
    probes.gc_barrier()
    stack.start()
    stop, looks, k, first_peak, planned = _measured_loop(spec, pair, stack, series, emit, ask, tracer)
    if peaks["setup_rss"] is not None and peaks["first_iteration_peak_rss"] is None:
        peaks["first_iteration_peak_rss"] = first_peak  # no warm-up: the first measured iteration was the first
    stack.stop()
    if tracer:
        tracer.finish(k)
    traced = {"trace": tracer.result()} if tracer else {}
    environment_now = {**environment(pair), "load_start": load_start, "load_end": list(os.getloadavg())}
    pair.teardown()
    stack.after_cleanup()
    # Where the worker's time went (kerasbench overhead): the rest of done - entered is protocol.
    timing = {"entered": entered, "setup_seconds": setup_seconds, "warmup_seconds": warmup_seconds,
              "done": time.monotonic()}
    result = {"iterations_done": k, "stop_reason": stop, "looks": looks, **planned, "series": series, **stack.fields(),
              **peaks, "timing": timing, **traced}
    emit("done", result=result, environment=environment_now)


def main(argv: Optional[list] = None) -> None:
    """`python -m kerasbench.worker SPEC_JSON FD [CONTROL_FD]`: run the protocol, reporting JSON lines on FD.

    A look of a sequential run is a "look" event with the readings since the last one; the worker then waits for
    the runner's answer on CONTROL_FD: a line "stop" (decided) or "go". No CONTROL_FD: it never looks.
    """
    procs.die_with_parent()  # first: a parent killed outright (kill -9) must not leave this running
    argv = sys.argv[1:] if argv is None else argv
    spec = RunSpec(**json.loads(argv[0]))
    out = os.fdopen(int(argv[1]), "w", buffering=1)
    control = os.fdopen(int(argv[2]), "r") if len(argv) > 2 else None

    def emit(event, **fields):
        if event == "done":  # each series as its array's bytes (record.wire_series), not a JSON number a reading
            from .record import wire_series

            fields["result"] = {**fields["result"], "series": wire_series(fields["result"].get("series") or {})}
        out.write(json.dumps({"event": event, **fields}) + "\n")

    def ask(k, readings, plan=None):
        if plan and ("tensorflow" in sys.modules or "keras" in sys.modules):  # the first look: the parent judges
            # TF's settling as the record will
            keys = ("tensorflow", "keras", "keras_backend")
            plan = {**plan, "versions": {k: v for k, v in _compat.versions().items() if k in keys}}
        emit("look", iteration=k - 1, readings=readings, **({"plan": plan} if plan else {}))
        return control.readline().strip() != "go"  # "stop", or the runner gone (end of file): stop

    try:
        run_protocol(spec, emit, ask=ask if control else None)
    except SystemExit as e:  # the measured code ended the worker: say so (it prints nothing), then exit as it asked
        sys.stderr.write(f"kerasbench: the measured code called sys.exit({e.code!r})\n")
        raise
    out.close()


if __name__ == "__main__":
    main()
    # The result is sent and its pipe closed: leave now instead of waiting for TF's thread pools and atexit
    # handlers to wind down (0.3-1.5 s a worker, nothing measured). The runner ends the process group anyway.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
