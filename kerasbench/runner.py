"""Run one (loop shape, strategy) pair in fresh interpreters and return one JSON-ready record.

Each repeat is its own `python -m kerasbench.worker` process (a new interpreter, never a fork
of one that imported TF). The parent watches it: a memory cap on the whole process tree and a
time limit stop a runaway worker, and the record says where it stopped.
"""

import collections
import dataclasses
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from . import _compat, allocators, machine as machines, procs, record, rule, summary
from .errors import exited_without_error, repro_failed, worker_message, worker_said
from .files import worker_path
from .loops import get_loop
from .spec import DEVICES, RunSpec, count_fields, shared_memory_cap  # noqa: F401  (the spec's names, here too)
from .strategies import Strategy, get_strategy
from .units import GIB, KIB
from .machine import default_jobs as default_jobs, usable_cores as usable_cores  # noqa: F401 (here too)

# What a pair is expected to hold at its peak before one of its loop shape has run (then: the largest seen).
# Measured: TF pairs of the default sizes peak at 0.5-0.9 GiB of RSS (2.12-2.21), the control at ~40 MiB.
EXPECTED_PEAK_TF = 1 * GIB
EXPECTED_PEAK_NO_TF = 128 * 1024 * KIB


def _worker_env(spec):
    """The worker's environment: GPUs hidden on device cpu; TF_GPU_ALLOCATOR as the strategy says."""
    env = dict(os.environ)
    if spec.device == "cpu":  # a CPU measurement on a GPU machine must not touch the GPU
        env["CUDA_VISIBLE_DEVICES"] = "-1"
    allocator = get_strategy(spec.strategy).gpu_allocator
    if allocator == "bfc":  # TF's default when the variable is unset
        env.pop("TF_GPU_ALLOCATOR", None)
    elif allocator:
        env["TF_GPU_ALLOCATOR"] = allocator
    root = worker_path()  # the clone, or a folder holding only the installed package (not its site-packages)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if spec.backend:  # Keras 3 picks its backend as it is first imported: the worker's, from its environment
        env[_compat.BACKEND_VAR] = spec.backend
        if spec.backend == "jax" and spec.device == "cpu":
            env["JAX_PLATFORMS"] = "cpu"  # not CUDA's probe on a GPU machine whose GPUs are hidden
    if spec.python:
        from .asvconf import LEGACY_KERAS_VAR
        from .environment import legacy_keras

        if legacy_keras(spec.python):  # an environment made with tf-keras: tf.keras is tf_keras there
            env[LEGACY_KERAS_VAR] = "1"
    return allocators.apply_env(spec.allocator, env)


# Polls in a row whose memory reading failed (the worker alive, its RSS unreadable) before the pair is stopped: the
# memory cap cannot be enforced on a figure that cannot be read (at the default poll, about two seconds).
UNREADABLE_POLLS = 20


def _tree_rss(proc, group=None) -> Optional[int]:
    """The RSS of a worker and its children; None when the worker's own figure cannot be read (a child that exits
    between being listed and being read is left out: it holds no memory any more)."""
    import psutil

    try:
        rss = proc.memory_info().rss
        children = proc.children(recursive=True)
    except (psutil.Error, OSError):
        return None
    if group is not None:
        group.watch(children)
    for child in children:
        try:
            rss += child.memory_info().rss
        except (psutil.Error, OSError):
            pass
    return rss


# After the "done" (or "skip") event, how long a worker may take to exit before its group is killed: a thread
# or a child that user code left running must not hold the pair until the time limit.
EXIT_GRACE = 2.0
LOG_TAIL_BYTES = 64 * KIB  # of a failed worker's log, the part read back (a runaway log can be gigabytes)
# Of a stopped worker's RSS readings (one per measured iteration, sent with its progress events), the most kept: the
# last ones, contiguous up to the stop (a runaway of microsecond iterations makes millions).
PARTIAL_RSS_KEPT = 100_000


def _log_lines(log) -> list:
    """The non-empty lines of the worker's log, reading only its last LOG_TAIL_BYTES."""
    size = log.seek(0, os.SEEK_END)
    log.seek(max(0, size - LOG_TAIL_BYTES))
    text = log.read().decode("utf-8", errors="replace").splitlines()
    if size > LOG_TAIL_BYTES:
        text = text[1:]  # the first line was cut
    return [line for line in text if line.strip()]


def _log_tail(log, lines: int = 15) -> list:
    """The last non-empty `lines` lines of the worker's log, reading only its last LOG_TAIL_BYTES."""
    return _log_lines(log)[-lines:]


def _where(phase: str, last: Optional[int], spec: RunSpec) -> str:
    """Where in the protocol a worker was when stopped, from its last events (phase, last iteration reported)."""
    if phase == "warmup":
        done = "before its first iteration" if last is None else f"after warm-up iteration {last + 1}/{spec.warmup}"
        return f"during warm-up, {done}"
    if phase == "iteration":
        return "in the first iteration" if last is None else f"after iteration {last + 1}/{spec.iterations}"
    return "during setup"


def run_worker(spec: RunSpec, repeat: int = 0, progress: Optional[Callable[[dict], None]] = None,
               poll: float = 0.05) -> record.Repeat:
    """One fresh worker process for `spec`; returns a repeat dict (status, result, environment). Its result's series
    are arrays (record.series_arrays: 8 bytes a reading); `measure` lists them in the record it returns.

    The worker's whole process group (and whatever user code started in it) is ended before this returns,
    also when it is interrupted (kerasbench.procs owns the groups).
    """
    import psutil

    read_fd, write_fd = os.pipe()
    answer_read, answer_write = os.pipe()  # the runner's answers to a sequential run's looks
    log = tempfile.TemporaryFile(mode="w+b")
    started, spawned = time.perf_counter(), time.monotonic()
    try:
        group = procs.start(
            [spec.python or sys.executable, "-m", "kerasbench.worker", json.dumps(dataclasses.asdict(spec)),
             str(write_fd), str(answer_read)],
            pass_fds=(write_fd, answer_read), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=_worker_env(spec),
        )
    except BaseException:
        os.close(read_fd)
        os.close(answer_write)
        log.close()
        raise
    finally:
        os.close(write_fd)
        os.close(answer_read)
    answers = os.fdopen(answer_write, "w", buffering=1)
    try:
        return _Watch(spec, group, answers, log, repeat, progress, started, spawned, psutil).run(read_fd, poll)
    finally:
        group.end()
        answers.close()
        log.close()


class _Never:
    """The answer to looks of a run that is not sequential: go on."""

    @staticmethod
    def look(readings: dict, plan: Optional[dict] = None) -> bool:
        return False


_NEVER = _Never()


def _answer(answers, decider: Any, ev: dict) -> Tuple[bool, Optional[str]]:
    """Answer a look: "stop" when the pair's verdicts are decided (rule.Decider), else "go"; (whether decided, why
    the look could not be judged or None). A look the parent cannot judge does not stop the worker dead: it runs on
    to its budget, and the error is kept (the repeat's `look_error`), not swallowed."""
    error = None
    try:
        decided = decider.look(ev.get("readings") or {}, ev.get("plan"))
    except Exception as e:
        decided = False
        error = (f"the stop rule failed at the look at iteration {ev.get('iteration')}: {type(e).__name__}: {e}; "
                 "the worker ran on to its budget")
    try:
        answers.write("stop\n" if decided else "go\n")
    except (OSError, ValueError):  # the worker is gone, or being ended
        pass
    return decided, error


# What each event the worker sends must hold (worker.run_protocol writes them), by kind: the watcher and the progress
# read these fields. A line that is not such an event (user code that wrote to the result pipe, a line cut into
# by another write) ends the pair: what follows it cannot be trusted.
EVENT_FIELDS = {"phase": {"phase": str}, "warmup": {"iteration": int}, "iteration": {"iteration": int},
                "look": {"iteration": int}, "skip": {"reason": str, "environment": dict},
                "done": {"result": dict, "environment": dict}}
NOT_AN_EVENT = "not an event"  # the watcher's own mark in the queue, for the line that broke the protocol


def _event(line: str) -> Optional[dict]:
    """The event a line of the result pipe holds, or None when it is not one (EVENT_FIELDS)."""
    try:
        ev = json.loads(line)
    except (ValueError, RecursionError):
        return None
    fields = EVENT_FIELDS.get(ev.get("event")) if isinstance(ev, dict) and isinstance(ev.get("event"), str) else None
    if fields is None or any(not isinstance(ev.get(k), t) or isinstance(ev.get(k), bool) for k, t in fields.items()):
        return None
    readings = ev.get("rss_since", [])
    numbers = [ev["rss"]] if "rss" in ev else []
    if not isinstance(readings, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in numbers + readings):
        return None
    return ev


def _not_an_event(line: str) -> str:
    """The reason of a pair whose worker wrote `line`, which is not an event: the line, shortened."""
    text = line.rstrip("\n")
    shown = repr(text[:80] + "…" if len(text) > 80 else text)
    return f"the worker wrote a line that is not an event: {shown}"


class _Watch:
    """One worker followed until it exits, is stopped, or lingers past EXIT_GRACE after its last event: its events
    read on a thread (a look answered there at once: the worker waits for it), the memory cap and the time limit
    checked each poll, the repeat's outcome made at the end."""

    def __init__(self, spec, group, answers, log, repeat, progress, started, spawned, psutil):
        from .rule import Decider

        self.spec, self.group, self.answers, self.log = spec, group, answers, log
        self.repeat, self.progress, self.started, self.spawned = repeat, progress, started, spawned
        self.events: queue.Queue = queue.Queue()
        self.decider = Decider(spec) if spec.sequential else _NEVER
        self.ps = psutil.Process(group.proc.pid)
        self.outcome = {"repeat": repeat, "status": "failed", "reason": None, "result": None, "environment": None}
        self.last_iteration, self.phase, self.finished_at = None, "setup", None
        self.max_tree_rss, self.unreadable = 0, 0
        # The RSS readings of the measured iterations, from the progress events (each carries those since the one
        # before), so a stopped worker still shows its curve: the last PARTIAL_RSS_KEPT of one unbroken run.
        self.partial_rss: collections.deque = collections.deque(maxlen=PARTIAL_RSS_KEPT)
        self.received = 0  # the iteration whose reading comes next
        self.broken: Optional[str] = None  # why the pair ends when the worker wrote a line that is not an event
        self.look_error: Optional[str] = None  # the first look the stop rule could not judge

    def read(self, read_fd: int) -> None:
        """The reader thread: each line of the result pipe an event on the queue (a look answered first)."""
        with os.fdopen(read_fd, errors="replace") as f:  # bytes that are not UTF-8: a line that is not an event
            for line in f:
                ev = _event(line)
                if ev is None:  # the pair ends (drain): nothing after it is read
                    self.events.put({"event": NOT_AN_EVENT, "reason": _not_an_event(line)})
                    return
                if ev.get("event") == "look":  # its readings are the result's too: not kept here
                    decided, error = _answer(self.answers, self.decider, ev)
                    self.look_error = self.look_error or error
                    ev = {"event": "look", "iteration": ev.get("iteration"), "decided": decided}
                self.events.put(ev)

    def drain(self) -> None:
        """Take what is queued now (a worker that reports faster than the poll must not keep it from checking the
        cap and the time limit)."""
        for _ in range(self.events.qsize()):
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                return
            if ev["event"] == NOT_AN_EVENT:
                self.broken = ev["reason"]
                continue
            if self.take(ev) and self.progress:
                self.progress({**ev, "repeat": self.repeat})

    def take(self, ev: dict) -> bool:
        """One event into the outcome; False for one that is not passed on (a result that cannot be read back)."""
        kind = ev["event"]
        if kind == "phase":
            self.phase, self.last_iteration = ev["phase"], None
        elif kind in ("warmup", "iteration"):
            self.phase, self.last_iteration = kind, ev["iteration"]
            readings = ev.pop("rss_since", None) or ([ev["rss"]] if "rss" in ev else [])
            if kind == "iteration" and readings:
                if ev["iteration"] - len(readings) + 1 != self.received:  # one went unreported: what follows, kept
                    self.partial_rss.clear()
                self.partial_rss.extend(readings)
                self.received = ev["iteration"] + 1
        elif kind == "skip":
            self.outcome.update(status="skipped", reason=ev["reason"], environment=ev["environment"])
            self.finished_at = time.perf_counter()
        elif kind == "done":
            try:  # its series as arrays, 8 bytes a reading (record.series_arrays): not a list of Python numbers
                if "series" in ev["result"]:
                    ev["result"]["series"] = record.series_arrays(ev["result"]["series"])
            except ValueError as e:
                self.broken = f"the worker's result cannot be read back: {e}"
                return False
            self.outcome.update(status="ok", result=ev["result"], environment=ev["environment"])
            self.finished_at = time.perf_counter()
        return True

    def stop_reason(self) -> Optional[str]:
        """Why the pair stops now (a line not an event, the memory cap, the time limit, memory that cannot be read),
        else None."""
        tree = _tree_rss(self.ps, self.group)
        if tree is None:
            self.unreadable += 1
        else:
            self.unreadable, self.max_tree_rss = 0, max(self.max_tree_rss, tree)
        if self.broken:
            return self.broken
        if tree is not None and tree > self.spec.memory_cap:
            return f"exceeded memory cap ({tree / GIB:.2f} GiB > {self.spec.memory_cap / GIB:.2f} GiB)"
        if time.perf_counter() - self.started > self.spec.time_limit:
            return f"exceeded time limit ({self.spec.time_limit:g} s)"
        if self.unreadable >= UNREADABLE_POLLS and self.group.proc.poll() is None:
            return (f"its memory could not be read for {self.unreadable} polls in a row: the memory cap cannot be "
                    "enforced")
        return None

    def run(self, read_fd: int, poll: float) -> record.Repeat:
        thread = threading.Thread(target=self.read, args=(read_fd,), daemon=True)
        thread.start()
        if self.progress:
            self.progress({"repeat": self.repeat, "event": "start"})
        proc, stopped = self.group.proc, None
        while proc.poll() is None:
            if self.finished_at is not None and time.perf_counter() - self.finished_at > EXIT_GRACE:
                self.group.end()  # its result is in: a thread or child it left running must not hold the pair
                break
            stopped = self.stop_reason()
            if stopped:
                self.group.end()
                break
            self.drain()
            time.sleep(poll)
        proc.wait()
        thread.join(timeout=5)
        self.drain()
        if stopped and self.finished_at is not None:  # the result arrived in the same poll as the stop: keep it
            stopped = None
        if self.broken:  # whenever it came (before its result, or as the worker exited): not a measurement
            stopped = self.broken
            self.outcome.update(result=None)
        return self.finish(stopped)

    def finish(self, stopped: Optional[str]) -> record.Repeat:
        outcome = self.outcome
        outcome["worker_seconds"] = time.perf_counter() - self.started
        outcome["max_tree_rss"] = self.max_tree_rss
        timing = (outcome["result"] or {}).get("timing")
        if timing:  # interpreter start + imports before the protocol; exit + this loop's polling after it
            outcome["start_seconds"] = timing["entered"] - self.spawned
            outcome["exit_seconds"] = outcome["worker_seconds"] - (timing["done"] - self.spawned)
        if self.look_error:
            outcome["look_error"] = self.look_error
        if stopped:
            outcome.update(status="stopped", reason=f"{stopped} {_where(self.phase, self.last_iteration, self.spec)}",
                           partial_rss=list(self.partial_rss))
        elif outcome["status"] == "failed":
            lines = _log_lines(self.log)
            code = self.group.proc.returncode
            outcome["reason"] = f"worker exited with code {code}: {worker_message(lines)}" \
                if worker_said(lines) is not None or code <= 0 else exited_without_error(code)
            outcome["log_tail"] = lines[-15:]
        return outcome


def measure_pairs(base: RunSpec, pairs: Sequence[Tuple[str, str]], iterations: Callable[[Strategy], Any],
                  progress: Optional[Any] = None,
                  finished: Optional[Callable[[record.Record], None]] = None) -> List[record.Record]:
    """Measure each (loop, strategy) of `pairs` with `base`'s settings, `base.jobs` at once; their records, in order.

    `iterations(strategy)` is a pair's count: an int (exactly that many), or the RunSpec count fields of a
    profile's budget (Profile.counts_for: process_isolation gets fewer). The rest is measure_specs'.
    """
    specs = [dataclasses.replace(base, loop=loop, strategy=strategy, **count_fields(iterations(get_strategy(strategy))))
             for loop, strategy in pairs]
    return measure_specs(specs, base.jobs, progress, finished)


def measure_specs(specs: Sequence[RunSpec], jobs: int, progress: Optional[Any] = None,
                  finished: Optional[Callable[[record.Record], None]] = None,
                  metric: str = "", repro_raises: bool = True) -> List[record.Record]:
    """Measure `specs` (each complete but for how many run at once: its interpreter, pair, counts), at most `jobs` at
    once; their records, in the order given. The one place that decides how many run at once:

    - no more than the specs that start a worker (one alone runs at jobs 1, whatever was asked), and one at a time
      when `metric` is a time (metrics.Metric.measured_alone: compare judges timings only of pairs measured alone);
    - the records say that many jobs, and a default memory cap (0, or the one resolved for a spec's own jobs)
      becomes half the RAM shared between those (spec.shared_memory_cap); a cap given stays.

    `progress`, a console.Progress (or console.Labelled) or None, is told when a pair starts and ends and sees its
    workers' events; `finished` gets each record as its pair ends (so a caller keeps them through an interrupt or
    a later error). A repro file that raises in the worker stops the run with that error (after `finished` got its
    record): the next pair would raise it again. With `repro_raises` False its record (status failed) is returned
    as any other: specs that differ in their environment (attribute's steps: a mix of two releases' packages may
    fail where neither release does).
    """
    from .metrics import METRICS

    machines.name()  # the name the records will say, checked before any worker (not after the first pair)
    alone = metric in METRICS and METRICS[metric].measured_alone
    at_once = 1 if alone else max(1, min(jobs, sum(_skipped(spec) is None for spec in specs)))
    specs = [dataclasses.replace(spec, jobs=at_once, memory_cap=shared_memory_cap(at_once)
                                 if spec.memory_cap in (0, shared_memory_cap(spec.jobs)) else spec.memory_cap)
             for spec in specs]
    with procs.terminations():  # the API's SIGTERM or SIGHUP ends the workers (and a caller's `finally` runs)
        if at_once > 1:
            return measure_at_once(specs, at_once, progress, finished, repro_raises=repro_raises)
        records = []
        for index, spec in enumerate(specs, 1):
            if progress is not None:
                progress.start(index, spec.loop, spec.strategy, spec.iterations, spec.budget)
            result = measure(spec, progress=progress)
            if progress is not None:
                progress.done(result)
            records.append(result)
            if finished is not None:
                finished(result)
            if spec.repro and result["status"] == "failed" and repro_raises:
                raise repro_failed(spec.repro, result)
        return records


class MemoryGate:
    """Admits a pair only while the expected peaks of the running ones plus its own fit in the memory free at the start.

    A pair's expected peak is the largest process-tree RSS seen for its loop shape in this run, else a prior by
    whether it loads TF. A pair that does not fit is still started when nothing else runs (it would never fit).
    """

    def __init__(self, free: int):
        self.free = free
        self.running = 0  # bytes expected of the running pairs
        self.active = 0
        self.seen: dict = {}  # loop shape: largest max_tree_rss of its workers so far
        self.waited = 0  # pairs that had to wait for memory (said in the run's progress)
        self._cond = threading.Condition()

    def expected(self, spec: RunSpec) -> int:
        """The peak `spec`'s workers are expected to reach, in bytes."""
        if spec.loop in self.seen:
            return int(self.seen[spec.loop] * 1.25)
        return EXPECTED_PEAK_TF if get_loop(spec.loop).needs_tf else EXPECTED_PEAK_NO_TF

    def enter(self, spec: RunSpec, stop: threading.Event) -> Optional[int]:
        """Wait until `spec` fits (or `stop` is set: None); the bytes reserved for it."""
        need, waited = self.expected(spec), False
        with self._cond:
            while self.active and self.running + need > self.free:
                if stop.is_set():
                    return None
                waited = True
                self._cond.wait(timeout=0.2)
            self.running += need
            self.active += 1
            self.waited += waited
        return need

    def leave(self, spec: RunSpec, reserved: int, result: Optional[record.Record]) -> None:
        """The pair ended: release its reservation and learn its loop shape's peak."""
        with self._cond:
            self.running -= reserved
            self.active -= 1
            for repeat in (result or {}).get("repeats", []):
                self.seen[spec.loop] = max(self.seen.get(spec.loop, 0), repeat.get("max_tree_rss") or 0)
            self._cond.notify_all()


def _free_memory() -> int:
    import psutil

    return psutil.virtual_memory().available


def measure_at_once(specs: List[RunSpec], jobs: int, progress: Optional[Any],
                     finished: Optional[Callable[[record.Record], None]],
                     repro_raises: bool = True) -> List[record.Record]:
    """Measure `specs` (each complete: its own interpreter, counts, jobs), `jobs` at once; their records, in order.

    A thread per running pair, each pair still in its own workers (measure_specs' way for more than one at once: the
    jobs and memory caps are set there). A pair starts only when the memory gate
    admits it (MemoryGate). An interrupt (or any error in this thread) ends every running worker at once (procs),
    so the threads return within moments; a pair cut short that way is not a measurement and reaches neither
    `finished` nor the result.
    """
    from concurrent.futures import ThreadPoolExecutor, TimeoutError as Pending

    from . import procs

    machines.name()  # the records' machine name, checked before any worker (measure_specs')
    records: List[Optional[record.Record]] = [None] * len(specs)
    lock, stop, raised = threading.Lock(), threading.Event(), []
    gate = MemoryGate(_free_memory())

    def one(index: int) -> None:
        spec = specs[index]
        if stop.is_set():
            return
        reserved = gate.enter(spec, stop)
        if reserved is None:
            return
        result = None
        try:
            mine = (progress.pair(index + 1, spec.loop, spec.strategy, spec.iterations, spec.budget)
                    if progress else None)
            result = measure(spec, progress=mine)
        finally:
            gate.leave(spec, reserved, result)
        if stop.is_set():  # its workers were ended under it
            return
        with lock:
            if mine is not None:
                mine.done(result)
            records[index] = result
            if finished is not None:
                finished(result)
        if spec.repro and result["status"] == "failed" and repro_raises:
            raised.append(result)
            stop.set()

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="kerasbench-pair")
    # Longest first, so that the last pair does not run alone while the other cores idle: process_isolation
    # starts a fresh interpreter every iteration (2-3× any other pair of its loop). Records keep the named order.
    order = sorted(range(len(specs)), key=lambda i: not get_strategy(specs[i].strategy).isolate)
    futures = [pool.submit(one, i) for i in order]
    try:
        for future in futures:
            while True:
                try:
                    future.result(timeout=0.2)  # short waits: the main thread takes Ctrl-C and SIGTERM in between
                    break
                except Pending:
                    continue
    except BaseException:
        stop.set()
        raise
    finally:
        if stop.is_set():
            while not all(f.done() for f in futures):  # a thread may have started a worker since: end it too
                procs.end_all()
                time.sleep(0.05)
        pool.shutdown(wait=True, cancel_futures=True)
    if raised:
        raise repro_failed(raised[0]["spec"]["repro"], raised[0])
    return [r for r in records if r is not None]


def _skipped(spec: RunSpec) -> Optional[str]:
    """Why `spec` is skipped without starting a worker (its strategy does not apply, or needs a GPU), else None."""
    strategy = get_strategy(spec.strategy)
    if spec.loop not in strategy.applies_to:
        return f"strategy {spec.strategy} does not apply to loop {spec.loop}"
    if strategy.needs_gpu and spec.device != "gpu":
        return f"strategy {spec.strategy} needs a GPU: run it with --device gpu (device {spec.device} hides GPUs)"
    backend = spec.backend or _compat.backend()  # as the worker will: the spec's, else the caller's
    off = get_loop(spec.loop).off_backend(backend)
    if off:
        return off
    if strategy.backend and strategy.backend != backend:
        return f"strategy {spec.strategy} runs on the {strategy.backend} backend only (here: {backend})"
    return None


def measure(spec: RunSpec, progress: Optional[Callable[[dict], None]] = None) -> record.Record:
    """Measure `spec` (validated first, and the machine name its record will say) over its repeats; returns the
    record (a dict)."""
    spec = spec.validate()
    machines.name()
    reason = _skipped(spec)  # known without starting a worker
    if reason:
        skipped = {"repeat": 0, "status": "skipped", "reason": reason, "result": None, "environment": None}
        return summary.make_record(spec, [skipped], rule.spec_floors(spec))
    repeats = []
    with procs.terminations():  # the API's SIGTERM or SIGHUP ends the worker (and a caller's `finally` runs)
        for r in range(spec.repeats):
            outcome = run_worker(spec, repeat=r, progress=progress)
            repeats.append(outcome)
            if outcome["status"] in ("skipped", "stopped"):
                break  # the same pair would skip again; a runaway would run away again
    record.listed_repeats(repeats)  # their series kept as arrays until now (series_arrays): a record holds lists
    environment = next((r["environment"] for r in repeats if r.get("environment")), None)
    return summary.make_record(spec, repeats, rule.spec_floors(spec, environment))
