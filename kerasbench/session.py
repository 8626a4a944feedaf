"""A measuring session of named pairs, as `run` and `ablate` do it (and kerasbench.measure, its first half).

Before: the base RunSpec of a profile and what the user overrode (`base_spec`), the machine and the asv
environment of a `--tf` release (`use_release`), a run's one-off calibration (`settle_floor`); the outputs are
checked by each command (files.check_outputs). During: each record kept as its pair ends (`Kept`): in the
order the pairs were named, written to the --json file at once, so an interrupt (Ctrl-C, SIGTERM) or a repro
file that raised loses none; what finished is shown and said to be kept before the error goes on
(`Kept.through`). `run` is `kerasbench run`'s whole session: the run table, the file, the line of its wall
against the physical limit.

The calibration's session too: its controls measured in fresh workers (`run_controls`), analyzed by the pure
calibration module and stored (`calibrate`, `calibrate_one`), and a run's one-off calibration when no stored one
fits (`ensure_calibration`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from .console import status_line
from .errors import UsageError
from .files import check_writable, write_json
from .record import Record

if TYPE_CHECKING:  # the types only: runner imports loop shapes (numpy) when a session measures
    from .profiles import Profile
    from .spec import RunSpec


def base_spec(profile: Profile, pairs: Sequence[Tuple[str, str]], iterations: Optional[int] = None,
              warmup: Optional[int] = None, repeats: Optional[int] = None, **fields: Any) -> RunSpec:
    """The validated RunSpec of the first of `pairs`: the profile's counts where none is given, `fields` as given."""
    from .spec import RunSpec

    from .runner import count_fields
    from .strategies import get_strategy

    count = count_fields(counts(profile, iterations)(get_strategy(pairs[0][1])))
    return RunSpec(loop=pairs[0][0], strategy=pairs[0][1], **count,
                   warmup=profile.warmup if warmup is None else warmup,
                   repeats=profile.repeats if repeats is None else repeats, profile=profile.name, **fields).validate()


def counts(profile: Profile, iterations: Optional[int]) -> Callable[[Any], Any]:
    """A pair's count from its strategy: the profile's budget (Profile.counts_for: fewer iterations for isolated
    ones), or exactly `iterations` when one is given (--iterations N: a fixed count, no looks)."""
    return profile.counts_for if iterations is None else (lambda strategy: iterations)


def use_release(base: RunSpec, config: Optional[str], tf: Optional[str], err: TextIO, python: Optional[str] = None,
                pins: Optional[dict] = None, keras: str = "", machine: Optional[str] = None) -> RunSpec:
    """`base` with its workers where they run (the spec, new when it changed): the records' `machine` name, and
    the asv environment of TF release `tf`.

    That environment is made if missing (its progress on `err`); `python`, `pins` and `keras` change it
    (environment.python_for_tf) and need `tf` (else a one-line UsageError). With keras 'tf_keras' the workers inherit
    TF_USE_LEGACY_KERAS=1, so tf.keras is tf_keras there (the record says so). A spec on Keras' jax or torch backend
    gets that framework in the environment too (the matrix's backend entry's pins).
    """
    from .machine import ENV_VAR as MACHINE_VAR, check_name, name as machine_name

    if machine:  # the records' machine name (kerasbench.machine), for the workers too
        os.environ[MACHINE_VAR] = check_name(machine)
    machine_name()  # the name the records will say: a bad $KERASBENCH_MACHINE is one line now, before any work
    if tf is not None and not (isinstance(tf, str) and tf.strip()):  # '' is not "not given": refused, not ignored
        raise UsageError(f"Invalid --tf. Received: {tf!r}. Expected a TF release, e.g. 2.16.1 (`kerasbench envs` "
                         "lists them).")
    if python and not tf:
        raise UsageError("--python picks the Python of a --tf release's environment: give --tf VERSION too.")
    if (pins or keras) and not tf:
        raise UsageError("--pin and --keras change a --tf release's environment: give --tf VERSION too.")
    if not tf:
        return base
    from .asvconf import LEGACY_KERAS_VAR, find_config
    from .environment import python_for_tf

    found = python_for_tf(find_config(config), tf, lambda text: status_line(err, f"TF {tf}: {text}", final=True),
                          python, pins, keras, base.backend if base.backend != "tensorflow" else "")
    if keras == "tf_keras":
        os.environ[LEGACY_KERAS_VAR] = "1"
    return dataclasses.replace(base, python=found).validate()


def settle_floor(base: RunSpec, allowed: bool, err: TextIO) -> RunSpec:
    """`base`, after making sure a calibration resolves its counts: a stored one must fit, else one is made now
    (allowed), else the default resolution applies (rule.floor_for says so in each record's floor_source). The
    margin (what counts as growth) is the spec's given floor or the default: a calibration never moves it."""
    if base.floor is not None:
        return base
    from . import calibration_store as stored

    why = ensure_calibration(base.allocator, base.iterations, err, allowed=allowed and not stored.no_calibrate(),
                             python=base.python)
    # why none was made rides in floor_source (a floor not given has no source of its own): the default resolution's
    # text says it (rule.floor_at), and the record keeps the text it was judged with
    return dataclasses.replace(base, floor_source=why).validate() if why else base


class Kept:
    """The records of named pairs, kept as each ends: in the named order, written to `path` (when given) at once.

    `what` names a pair in the lines said ("pair", "variant"); `payload` goes into the records file beside the
    records (record.records_payload). Nothing is written, nor said to be kept, before a record exists.
    """

    def __init__(self, pairs: Sequence[Tuple[str, str]], path: Optional[str] = None, what: str = "pair",
                 **payload: Any):
        self.records: List[Record] = []
        self.path, self.what, self.payload, self.total = path, what, payload, len(pairs)
        self.order: Dict[Tuple[str, str], int] = {pair: i for i, pair in reversed(list(enumerate(pairs)))}
        self.error: Optional[str] = None  # the last write's failure, None once a write succeeded

    def finished(self, record: Record) -> None:
        """Keep `record` (runner.measure_pairs' `finished`): in the named order when several end out of order (all
        in the order they ended if one is of a pair not named, which cannot be placed)."""
        self.records.append(record)
        keys = [(r["loop"], r["strategy"]) for r in self.records]
        if all(key in self.order for key in keys):
            self.records.sort(key=lambda r: self.order[(r["loop"], r["strategy"])])
        if self.path:
            self.error = self.save()

    def save(self) -> Optional[str]:
        """Write the records file; None, or the one-line reason it could not be written (a full disk, a lost mount)."""
        from .record import records_payload

        try:
            write_json(self.path, records_payload(self.records, **self.payload))
        except OSError as e:
            return f"cannot write results to {self.path}: {e.strerror or e}"
        return None

    def report(self, out: TextIO, err: TextIO, note: str = "", said: str = "", write: bool = True) -> bool:
        """Write the file (`write`; else the last write's outcome) and say so on one line; False if it failed.

        A failure is an error line on `err` (with `note`); else `note` on `err` with where the records are kept;
        else 'wrote N record(s) to PATH' and `said` on `out`.
        """
        kept = bool(self.path and self.records)
        if kept and write:
            self.error = self.save()
        error = self.error if kept else None
        if error:
            err.write(f"kerasbench: error: {error}" + (f" ({note})" if note else "") + "\n")
        elif note:
            err.write(f"kerasbench: {note}" + (f"; kept in {self.path}" if kept else "") + "\n")
        elif kept:
            out.write(f"wrote {len(self.records)} record(s) to {self.path}{said}\n")
        return error is None

    def through(self, measure: Callable[[Callable[[Record], None]], Any], show: Callable[[], None], out: TextIO,
                err: TextIO) -> None:
        """`measure(self.finished)`; if it is interrupted or a repro file raises, what finished is shown (`show`),
        written and said to be kept, then the interrupt or the error goes on (main says it).

        An output that cannot be written then (a terminal closed by the SIGHUP, a pipe whose reader went away) does not
        replace the interrupt: the records are written first. A closed pipe (BrokenPipeError) ends the measuring as
        an interrupt does: what finished is written and said to be kept where that can still be said.
        """
        try:
            measure(self.finished)
        except KeyboardInterrupt:
            self._keep(lambda: self.report(out, err, self.before("the interrupt")), show)
            raise
        except BrokenPipeError:
            self.closed(out, err)
            raise
        except UsageError:
            self._keep(lambda: self.report(out, err), show)
            raise

    def before(self, what: str) -> str:
        """'N of M pair(s) finished before `what`'."""
        return f"{len(self.records)} of {self.total} {self.what}(s) finished before {what}"

    def closed(self, out: TextIO, err: TextIO) -> None:
        """The output's reader went away (BrokenPipeError): the records written, and said to be kept if err can."""
        self._keep(lambda: self.report(out, err, self.before("the output closed")))

    def _keep(self, report: Callable[[], Any], show: Optional[Callable[[], None]] = None) -> None:
        """After an interrupt or an error: the records written (`report` writes them first, then says so), and shown
        before that when they can be; a stream that cannot be written any more is left alone."""
        if show is not None and self.records:
            try:
                show()
            except OSError:  # EIO of a closed terminal, EPIPE: the file still gets written
                pass
        try:
            report()
        except OSError:
            pass

    def failed(self) -> bool:
        """Whether a pair failed or was stopped (the commands' exit 1)."""
        return any(r["status"] in ("failed", "stopped") for r in self.records)


# `run --fail-on`: a pair's one verdict (rule.pair_verdict) or what grew (rule.GROWTH_KINDS' leak, retention), and
# the exit code when a pair has one: not 1 (a pair failed or stopped: the run itself went wrong) nor 2 (a usage error).
RUN_GATES = ("grows", "inconclusive", "leak", "retention")
GATE_EXIT = 3


def gated(records: Sequence[Record], gates: Sequence[str]) -> List[str]:
    """One line per record whose pair verdict or what grew is one of `gates`: what a CI job prints before it fails."""
    from .console import loop_label, strategy_label, verdict_text
    from .rule.series import pair_verdict
    from .units import kib_text

    return [f"{loop_label(r)} × {strategy_label(r)}: {verdict_text(s)}, RSS {kib_text(s.get('growth_per_iter'))}, "
            f"heap {kib_text(s.get('heap_growth_per_iter'))} KiB/iteration" for r, s in
            ((r, r["summary"]) for r in records if r["status"] == "ok")
            if {pair_verdict(s), s.get("growth_kind")} & set(gates)]


def run(base: RunSpec, pairs: Sequence[Tuple[str, str]], count: Callable[[Any], int], out: TextIO, err: TextIO,
        json_path: Optional[str] = None, gates: Sequence[str] = ()) -> int:
    """`kerasbench run`'s session: measure `pairs` with `base`'s settings, print their table (and traces); exit code.

    0 when every pair ran or skipped, 1 when one failed or was stopped or the records could not be written, else
    GATE_EXIT when a pair has one of `gates` (--fail-on: its verdict or what grew; listed on `err` either way).
    """
    import time

    from .console import Progress
    from .runtable import functions_text, run_table
    from .runner import measure_pairs
    from .trace.readout import text as trace_text

    kept = Kept(pairs, json_path)

    def show() -> None:
        out.write(run_table(kept.records))
        out.write(functions_text(kept.records))  # nothing unless a tf.function retraced in a measured loop
        out.write(trace_text(kept.records))  # nothing unless traced
        out.flush()

    started = time.perf_counter()
    kept.through(lambda finished: measure_pairs(base, pairs, count, Progress(err, len(pairs), base.warmup), finished),
                 show, out, err)
    try:
        if kept.records:
            show()
        if not kept.report(out, err):
            return 1
    except BrokenPipeError:  # `| head`: the table's reader went away; the file is whole (main: exit 141)
        kept.closed(out, err)
        raise
    say_limit(kept.records, time.perf_counter() - started, err)
    failing = gated(kept.records, gates)
    if failing:  # a CI job's gate, as compare's --fail-on: the pairs, then GATE_EXIT (1 outranks it: a pair failed)
        err.write(f"kerasbench: {len(failing)} pair(s) are {' or '.join(gates)} (--fail-on):\n")
        err.write("".join(f"  {line}\n" for line in failing))
    return 1 if kept.failed() else GATE_EXIT if failing else 0


def say_limit(records: List[Record], wall: float, err: TextIO) -> None:
    """One line on `err`: the run's wall against its physical limit (kerasbench overhead --records explains it)."""
    from .overhead import limit_summary
    from .machine import usable_cores

    jobs = max([r["spec"].get("jobs", 1) for r in records] or [1])  # what ran at once (a lone pair: 1)
    s = limit_summary(records, wall, min(jobs, usable_cores()))
    if s["workers"] and s["limit"] >= 1:  # controls alone: setup and work are milliseconds, the ratio says nothing
        status_line(err, f"kerasbench: {s['workers']} worker(s) in {wall:.1f} s, {jobs} at once; the physical "
                    f"limit, Σ (setup + loop work) / {s['cores']} core(s), is {s['limit']:.1f} s: "
                    f"{s['wall_over_limit']:.2f}× it", final=True)


# ---------------------------------------------------------------- calibration: the controls measured


def run_controls(allocator: str, runs: int, iterations: Sequence[int], rates: Sequence[int],
                 heaps: Sequence[str] = ("native", "python"), warmup: int = 2,
                 progress: Optional[Callable[..., None]] = None, tf_control: bool = False, jobs: int = 1,
                 python: str = "") -> tuple:
    """Run every control `runs` times in fresh workers on `allocator`, `jobs` at once (runner.measure_pairs).

    Returns ({series name: {heap: {rate: [series]}}}, detected allocator); series names are those of SERIES
    the workers read. `progress(done, total, heap, rate)` is called as each worker ends. With `tf_control`, the
    TF negative control too (cell 'tf', rate 0), last.
    """
    from .calibration import SERIES, cells_for
    from .runner import measure_pairs
    from .spec import RunSpec
    from .units import KIB

    longest = max(iterations)
    series: dict = {}
    detected = None
    cells = cells_for(rates, heaps, tf_control)
    total, done = len(cells) * runs, 0
    by_rate: dict = {}  # one measure_pairs call per leak size (the spec's leak_bytes): its cells × runs
    for heap, strategy, rate in cells:
        by_rate.setdefault((heap == "tf", rate), []).append((heap, strategy))
    for (tf, rate), group in by_rate.items():
        base = RunSpec("inference" if tf else "control", group[0][1], iterations=longest, warmup=warmup,
                       leak_bytes=rate or KIB, allocator=allocator, floor=0.0, jobs=jobs, python=python).validate()
        pairs = [(base.loop, strategy) for _, strategy in group for _ in range(runs)]
        heap_of = {strategy: heap for heap, strategy in group}

        def finished(rec, rate=rate, heap_of=heap_of):
            nonlocal done, detected
            if rec["status"] != "ok":
                raise RuntimeError(f"{rec['loop']} × {rec['strategy']} at {rate // KIB} KiB {rec['status']}: "
                                   f"{rec['reason']}")
            done += 1
            detected = rec["environment"]["allocator"]
            for name, values in rec["repeats"][0]["result"]["series"].items():
                if name in SERIES and values and all(v is not None for v in values):
                    series.setdefault(name, {}).setdefault(heap_of[rec["strategy"]], {}).setdefault(
                        rate, []).append(values)
            if progress:
                progress(done, total, heap_of[rec["strategy"]], rate)

        measure_pairs(base, pairs, lambda strategy: longest, finished=finished)
    return series, detected


def calibrate_one(name: str, runs: int, iterations: Sequence[int], rates: Sequence[int], heaps: Sequence[str],
                  warmup: int, tf_control: bool, err: TextIO, jobs: int = 1, python: str = "",
                  label: str = "calibrate", merge: bool = False) -> dict:
    """Measure, analyze and store one allocator's calibration (in stored.path_for), progress on `err`. With `merge`
    (a calibration made on the fly) it is added to the file there (stored.merged: the counts it did not measure are
    kept), never replacing it; without, it replaces it (`kerasbench calibrate`, asked for)."""
    import time

    from . import calibration_store as stored
    from .calibration import TF_CONTROL, analyze_series, cells_for, make_calibration
    from .units import KIB

    started = time.perf_counter()
    cells = len(cells_for(rates, heaps, tf_control))

    def progress(done, total, heap, rate):
        elapsed = time.perf_counter() - started
        what = " × ".join(TF_CONTROL) + " (TF control)" if heap == "tf" else f"{heap} {rate // KIB} KiB/iter"
        text = (f"{label} {name}: {done}/{total} workers ({what}), {elapsed:.0f} s, "
                f"~{elapsed / done * (total - done):.0f} s left")
        status_line(err, text, final=done == total, milestone=done % max(1, total // 10) == 0)

    status_line(err, f"{label} {name}: {cells} controls × {runs} runs × {max(iterations)} iterations, "
                f"{jobs} at once", final=True)
    series, detected = run_controls(name, runs, iterations, rates, heaps, warmup, progress, tf_control=tf_control,
                                    jobs=jobs, python=python)
    report, heap_report = analyze_series(series, iterations, rates)
    cal = make_calibration(report, name, detected, runs, warmup, time.perf_counter() - started, jobs, heap_report,
                           python)
    path, seconds, how = stored.path_for(name, python), cal["seconds"], "wrote"
    existing = stored.read(path, name)
    if merge and existing and existing.get("schema", 0) >= 2 and existing.get("key") == cal["key"]:
        cal, how = stored.merged(existing, cal), "added its counts to"  # before: replaced the fuller one there
    elif not merge:  # `kerasbench calibrate`: replaces a calibration with no more runs or counts, else merged
        cal, how = stored.combined(existing, cal)
    stored.save(cal, path)
    status_line(err, f"{label} {name}: {how} {path} ({seconds:.0f} s)", final=True)
    return cal


def calibrate(allocators: Sequence[str], runs: int, iterations: Sequence[int], rates: Sequence[int],
              heaps: Sequence[str], warmup: int, tf_control: bool, err: TextIO, jobs: int = 1) -> list:
    """`kerasbench calibrate`: measure, analyze and store each allocator's calibration, progress on `err`.

    The arguments are checked by the caller; this checks that the calibration can be stored, TF imported for the
    TF control, and the records' machine name is valid, before minutes of measuring. Returns the calibrations, in the
    order of `allocators`.
    """
    import importlib.util

    from . import calibration_store as stored
    from .machine import name as machine_name

    machine_name()  # the name the records say (a bad $KERASBENCH_MACHINE), before the first control's line
    from ._compat import check_backend_var

    check_backend_var()  # the workers' environment: a bad $KERAS_BACKEND is one line before any control runs
    try:
        os.makedirs(stored.directory(), exist_ok=True)
    except OSError as e:
        raise UsageError(f"Cannot write calibration to {stored.directory()}: {e.strerror}.") from None
    if tf_control and importlib.util.find_spec("tensorflow") is None:
        raise UsageError("--tf-control needs TensorFlow: pip install -e '.[cpu]'.")
    check_writable(stored.path_for(allocators[0]), "calibration")
    from .calibration import PROTOCOL_VERSION

    for name in allocators:  # a shorter calibration over a longer one with nothing to add: refused before measuring
        path = stored.path_for(name)
        stored.check_not_shipped(path)
        planned = {"schema": stored.SCHEMA, "protocol": PROTOCOL_VERSION, "key": stored.environment_key(name),
                   "runs": runs, "floors": {str(n): 0 for n in iterations}}
        refused = stored.refused_over(stored.read(path, name), planned, path)
        if refused:
            raise UsageError(refused)
    return [calibrate_one(name, runs, iterations, rates, heaps, warmup, tf_control, err, jobs)
            for name in allocators]


def undetected_up_to(allocator: str, python: str = "") -> Optional[int]:
    """The largest count at which a calibration that fits `allocator` here tried its rates and detected none, in RSS
    or heap (both floors None); None where none fits or every count it tried detected one. A run of that many
    iterations or fewer cannot use a calibration made now (fewer iterations resolve less): it would be judged at the
    default resolution anyway. A count never tried says nothing (a calibration's first count is not its limit)."""
    from . import calibration_store as stored

    counts = [int(n) for _, data in stored.candidates(allocator, python)
              for n, floor in (data.get("floors") or {}).items()
              if floor is None and (data.get("heap_floors") or {}).get(n) is None]
    return max(counts) if counts else None


def ensure_calibration(allocator: str, iterations: int, err: TextIO, allowed: bool = True, jobs: Optional[int] = None,
           python: str = "") -> Optional[str]:
    """Before a run: make sure a calibration fits `allocator` at `iterations`, calibrating once if none does.

    Returns None when one fits (found, or made now and cached in the user's folder), else why none was made
    (one phrase, for the run table's floor line).
    """
    from . import calibration_store as stored
    from .calibration import AUTO_RUNS, DEFAULT_COUNTS, DEFAULT_RATES_KIB, HEAPS
    from .files import make_folder
    from .machine import default_jobs
    from .units import KIB

    if stored.find(allocator, iterations, python)[1] is not None:
        return None
    if not allowed:
        return "not calibrated: --no-calibrate or $" + stored.NO_CALIBRATE_VAR
    none_at = undetected_up_to(allocator, python)
    if none_at is not None and iterations <= none_at:  # before: 36 s calibrating a 3-iteration run judged at the
        # default resolution anyway
        status_line(err, f"kerasbench: not calibrating: at {iterations} iterations a calibration detects no tested "
                    f"rate (one here detected none at {none_at}); judged at the default resolution", final=True)
        return (f"not calibrated: at {iterations} iterations a calibration detects no tested rate (one here detected "
                f"none at {none_at})")
    try:
        make_folder(stored.directory(), "calibration")
        check_writable(stored.path_for(allocator, python), "calibration")
    except UsageError as e:
        return f"not calibrated: {str(e).rstrip('.')}"
    # only the counts no calibration here has (below them all) when one fits at larger counts: the shipped one
    # keeps judging the runs it covers (stored.find takes the count nearest below a run's)
    fits_larger = stored.load(allocator, python=python) is not None
    counts = sorted({c for c in DEFAULT_COUNTS if c <= iterations or not fits_larger} | {iterations})
    status_line(err, f"kerasbench: no calibration fits {stored.describe(stored.environment_key(allocator, python))} at "
                f"<= {iterations} iterations: calibrating once (about a minute; cached in {stored.directory()}; "
                "--no-calibrate skips it)", final=True)
    try:
        calibrate_one(allocator, AUTO_RUNS, counts, [r * KIB for r in DEFAULT_RATES_KIB], tuple(HEAPS), 2, False,
                      err, jobs or default_jobs(), python, label="calibrating", merge=True)
    except RuntimeError as e:
        return f"not calibrated: {e}"
    return None
