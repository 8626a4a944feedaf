"""The options commands share, declared once: a command that takes --allocator, --tf or --json adds its group and
gets the same name, type, default and help as every other command that takes it (and the same checks).

The groups: the measured pair of a run (`pairs`) or of a bisection (`bisected_pair`), the counts of a profile
(`counts`: run, ablate, triage, attribute), the release and environment (`release`, `matrix_config`), the
limits of a worker (`limits`, `allocator`), the outputs (`json_output`) and the records read (`records`).
The argparse types check values with units.check_number, RunSpec's own checker, and whole numbers (`integer`)
against their range: a value out of range is one line naming the option at parse time, before any work.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from ..allocators import ALLOCATORS, DEFAULT as DEFAULT_ALLOCATOR, ENV_VAR as ALLOCATOR_VAR
from ..errors import UsageError
from ..metrics import judged_metrics
from ..profiles import ENV_VAR as PROFILE_VAR
from ..rule import MARGINS
from ..rule.floors import RSS_LEAST_MARGIN
from ..units import KIB, MAX_LEAK_BYTES, MIN_MEMORY_CAP, MIN_TIME_LIMIT, check_number, parse_bytes

DEFAULT_ALLOCATOR_NOW = os.environ.get(ALLOCATOR_VAR) or DEFAULT_ALLOCATOR
ATLAS_OUTPUT = os.path.join(".asv", "html", "atlas")  # `atlas` and `report --atlas` write here, beside the dashboard


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other user mistake (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print `message` on one line, pointing at --help, and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# ---------------------------------------------------------------- argparse types


def number(name: str, minimum: float = 0.0, maximum: float = float("inf")):
    """An argparse type: a finite float in [minimum, maximum] (units.check_number, RunSpec's checker too)."""
    def parse(text: str) -> float:
        try:
            return check_number(text, name, minimum, maximum)
        except UsageError as e:
            raise argparse.ArgumentTypeError(e.short) from None
    parse.__name__ = name
    return parse


def integer(name: str, minimum: int = 0, maximum: Optional[int] = None):
    """An argparse type: a whole number in [minimum, maximum]; anything else ('1.5', '1e3', 'lots', -1 below 0) is
    argparse's one line naming the option, at parse time, before any work."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            value = None
        if value is None or value < minimum or (maximum is not None and value > maximum):
            bound = f">= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
            shown = repr(text) if len(repr(text)) <= 40 else repr(text)[:37] + "..."
            raise argparse.ArgumentTypeError(f"Invalid value. Received: {shown}. Expected an integer {bound}.")
        return value
    parse.__name__ = name
    return parse


def words(name: str):
    """An argparse type: a comma list of non-empty names ('2.14.1,nightly:2026-10-26'), as a tuple without repeats;
    an empty list is argparse's one line naming the option."""
    def parse(text: str) -> tuple:
        names = tuple(dict.fromkeys(w.strip() for w in text.split(",") if w.strip()))
        if not names:
            raise argparse.ArgumentTypeError(f"Invalid value. Received: {text!r}. Expected a comma list of names.")
        return names
    parse.__name__ = name
    return parse


class Joined(argparse.Action):
    """A repeatable option whose values join as one comma list: `--strategy a --strategy b` is `--strategy a,b`
    (before, the last one silently replaced the others). A name given twice is measured once (selection.names)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        given = f"_{self.dest}_given"
        joined = f"{getattr(namespace, self.dest)},{values}" if getattr(namespace, given, False) else values
        setattr(namespace, self.dest, joined)
        setattr(namespace, given, True)


class Renamed(argparse.Action):
    """An option's old spelling: it still works (its value, or True for a switch, goes to the new option's `dest`),
    and says the new name on stderr, one line. Hidden from --help."""

    def __init__(self, option_strings, dest, new: str = "", why: str = "", **kwargs):
        kwargs.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.new, self.why = new, why

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        sys.stderr.write(f"{parser.prog}: {option_string} is now {self.new} ({self.why}); {option_string} still works "
                         "for now.\n")
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        setattr(namespace, f"_{self.dest}_spelled", option_string.lstrip("-"))


def fail_on(p: argparse.ArgumentParser, valid: Sequence[str], code: int, what: str, example: str) -> None:
    """--fail-on, as compare and run declare it: a comma list of `valid` verdicts; the command exits `code`, listing
    the `what`s that have one, when any has (2 stays for usage errors). gates() reads the value."""
    p.add_argument("--fail-on", metavar="VERDICTS", help=f"exit {code}, listing the {what}s, when any {what} has one "
                   f"of these verdicts: a comma list of {', '.join(valid)} (e.g. {example})")


def gates(text: str, valid: Sequence[str]) -> Tuple[str, ...]:
    """The verdicts of `--fail-on grows,inconclusive` (selection.gates: compare's analysis reads them too)."""
    from ..selection import gates as named

    return named(text, valid)


def size(minimum: int):
    """An argparse type: a size such as 4GiB of at least `minimum` bytes, kept as typed (spec_options parses it)."""
    def parse(text: str) -> str:
        try:
            parse_bytes(text, "the size", minimum)
        except UsageError as e:
            raise argparse.ArgumentTypeError(e.short) from None
        return text
    return parse


def path(text: str) -> str:
    """An argparse type: a non-empty path (an empty one would silently write nothing)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("Invalid path. Received: ''. Expected a file name.")
    return text


def ints(text: str, kind: str, minimum: int = 1) -> list:
    """'30,60' -> [30, 60]; UsageError naming the argument otherwise."""
    try:
        values = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or min(values) < minimum:
        raise UsageError(f"Invalid value for argument `{kind}`. Received: {text!r}. "
                         f"Expected a comma list of integers >= {minimum}.")
    return sorted(set(values))


def parse_pins(given: Optional[List[str]]) -> dict:
    """{name: version} of --pin NAME==VERSION options; a one-line UsageError for one of another form."""
    import re

    pins = {}
    for text in given or []:
        found = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][A-Za-z0-9.+!-]*)\s*", text)
        if not found:
            raise UsageError(f"Invalid --pin. Received: {text!r}. Expected NAME==VERSION, e.g. keras==2.14.0.")
        pins[found[1]] = found[2]
    return pins


# ---------------------------------------------------------------- the groups


def pairs(p: argparse.ArgumentParser) -> None:
    """--loop, --repro, --strategy of a run: names, comma lists or 'all'."""
    p.add_argument("--loop", action=Joined, help="loop shape, comma list, or 'all' built-in ones (see `kerasbench "
                   "list`); repeatable")
    repro(p, "measure your own loop body: a Python file defining iteration(ctx, model) and optionally setup() and "
             "build(ctx) (README: Bring your own repro)")
    p.add_argument("--strategy", default="all", action=Joined,
                   help="strategy, comma list, or 'all' applicable (default; GPU-only ones with --device gpu); "
                   "repeatable; a name given twice is measured once")


def repro(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--repro", metavar="FILE", help=text)


def device(p: argparse.ArgumentParser) -> None:
    """--device and --backend: what the workers run on."""
    p.add_argument("--device", default="cpu", help="cpu (GPUs hidden from TF) or gpu (skipped where TF sees none; "
                   "with --config asv.gpu.json on a GPU machine)")
    backend(p)


class Backend(argparse.Action):
    """--backend NAME: one of Keras 3's backends; '' given is an error (not "not given", the caller's backend)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        from .._compat import BACKENDS

        if values not in BACKENDS:
            parser.error(f"argument {option_string}: invalid choice: {values!r} (choose from {', '.join(BACKENDS)})")
        setattr(namespace, self.dest, values)


def backend(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="", metavar="NAME", action=Backend,
                   help="Keras 3's backend for the workers: tensorflow, jax or torch (sets KERAS_BACKEND; needs that "
                   "framework and Keras 3 installed; default: $KERAS_BACKEND, else tensorflow); tf_data and tf1_graph "
                   "run on tensorflow only")


def bisected_pair(p: argparse.ArgumentParser) -> None:
    """--loop, --strategy, --repro, --metric, --device of triage and attribute: one pair, what must differ."""
    p.add_argument("--loop", help="loop shape (see `kerasbench list`)")
    p.add_argument("--strategy", default="rebuild_no_clear", help="strategy (default rebuild_no_clear)")
    repro(p, "your own loop body instead of a loop shape")
    metric(p)
    device(p)


def metric(p: argparse.ArgumentParser, default: Optional[str] = None, text: str = "") -> None:
    """--metric: what must differ (triage, attribute) or what a step must keep down (ablate)."""
    first, *others = judged_metrics()
    p.add_argument("--metric", default=default or first,
                   help=text or f"what must differ: {first} (default), {', '.join(others)}")


def counts(p: argparse.ArgumentParser, what: str = "pair") -> None:
    """--profile, --iterations, --warmup, --repeats of a measuring session (run, ablate)."""
    p.add_argument("--profile", help="quick, default, full or reference: the time budget per pair, warm-up and "
                   f"repeats (default: ${PROFILE_VAR} or 'default'; `kerasbench list` shows them)")
    p.add_argument("--iterations", type=integer("iterations", 1), help=f"exactly this many measured iterations per "
                   f"{what} (overrides the profile's time budget: no looks)")
    p.add_argument("--warmup", type=integer("warmup", 0), help="iterations run before the baseline (overrides the "
                   "profile)")
    p.add_argument("--repeats", type=integer("repeats", 1),
                   help=f"fresh processes per {what} (overrides the profile; 2+ to trust a verdict)")


def matrix_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="asv config whose environments --tf uses (default: asv.matrix.json in "
                   "$KERASBENCH_CONFIG, the current folder, the clone kerasbench was imported from, or the installed "
                   "package's; on a GPU machine give asv.gpu.json)")


def release(p: argparse.ArgumentParser) -> None:
    """--tf, --python, --pin, --keras, --config, --machine: where a session's workers run and what records say."""
    p.add_argument("--tf", metavar="VERSION", help="run the workers in the asv environment of this TF release "
                   "(patch releases too; made if missing: seconds with uv, minutes with pip), or of a nightly: "
                   "nightly (the newest), nightly:YYYY-MM-DD (that day's, else the nearest earlier one; the CPU build "
                   "where that day has one, else the full build)")
    p.add_argument("--python", metavar="X.Y", help="with --tf: that release's environment on this Python (3.10, "
                   "3.12…; from PATH or pyenv; only where the release has a wheel for it)")
    p.add_argument("--pin", action="append", metavar="NAME==VERSION", help="with --tf: that release's environment "
                   "with this pin instead (repeatable; forced with --no-deps where the others exclude it); "
                   "tensorflow==VERSION: the release's full build instead of tensorflow-cpu")
    p.add_argument("--keras", metavar="VERSION|tf_keras|nightly[:DATE]", help="with --tf: this Keras release, "
                   "tf_keras (TF >= 2.16: the tf-keras of its minor, TF_USE_LEGACY_KERAS=1; compare labels it "
                   "<release>+tf_keras), or keras-nightly (nightly, nightly:YYYY-MM-DD or its version) in place of "
                   "the release's Keras (needs uv)")
    matrix_config(p)
    p.add_argument("--machine", metavar="NAME", help="the machine name the records say (default: "
                   "$KERASBENCH_MACHINE, else asv's machine, `asv machine --machine NAME`; never the host name)")


def allocator(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allocator", default=DEFAULT_ALLOCATOR_NOW,
                   help=f"{', '.join(ALLOCATORS)} (default: ${ALLOCATOR_VAR} or {DEFAULT_ALLOCATOR})")


def limits(p: argparse.ArgumentParser, what: str = "pair") -> None:
    """--floor-kib, --allocator, --memory-cap, --jobs, --time-limit, --leak-kib of a measuring session."""
    p.add_argument("--floor-kib", type=number("floor-kib"), default=None,
                   help="the margin: the growth per iteration that counts as growth, KiB/iteration, at any count "
                   f"(default: RSS {MARGINS['rss'] // KIB}, heap {MARGINS['heap'] // KIB}; RSS at no less than "
                   f"{RSS_LEAST_MARGIN // KIB}). What a count resolves comes from a stored calibration that fits "
                   "this allocator, library, machine and Python, else one made now")
    allocator(p)
    p.add_argument("--memory-cap", type=size(MIN_MEMORY_CAP),
                   help="stop a worker whose processes exceed this, e.g. 4GiB (default: half of RAM)")
    p.add_argument("--jobs", type=integer("jobs", 1), default=None,
                   help=f"{what}s measured at once, each in its own workers (default: $KERASBENCH_JOBS, else the "
                   "usable cores; one starts only while the expected peaks fit in free memory); memory figures are "
                   "per process, but seconds per iteration are then measured under contention (the record's spec "
                   "says jobs; compare does not judge time across jobs), and the default memory cap is shared "
                   "between them")
    p.add_argument("--time-limit", type=number("time-limit", MIN_TIME_LIMIT), default=1800.0,
                   help="seconds per worker process (default 1800)")
    p.add_argument("--leak-kib", type=number("leak-kib", 1 / KIB, MAX_LEAK_BYTES / KIB), default=None,
                   help="leak per iteration of control_leak_* (default 256; at least 1 byte: 0 would mean the default)")


def spec_options(args: argparse.Namespace) -> dict:
    """The RunSpec fields of `limits` and --repro: bytes of KiB and sizes, the default jobs."""
    from ..machine import default_jobs

    return dict(leak_bytes=0 if args.leak_kib is None else round(args.leak_kib * KIB),
                memory_cap=parse_bytes(args.memory_cap) if args.memory_cap else 0,
                time_limit=args.time_limit, floor=None if args.floor_kib is None else args.floor_kib * KIB,
                allocator=args.allocator, repro=args.repro or "",
                jobs=default_jobs() if args.jobs is None else args.jobs)


def json_output(p: argparse.ArgumentParser, what: str = "the records") -> None:
    p.add_argument("--json", metavar="PATH", type=path, help=f"also write {what} to PATH (atomically)")


SCORED = "records to score (or --replay)"  # score judges every record again anyway: no --rejudge


def records(p: argparse.ArgumentParser, what: str = "records", baseline: bool = True, required: bool = True) -> None:
    """The records a command reads (files or folders) and, for those that compare, the baseline version."""
    p.add_argument("paths", nargs="+" if required else "*", metavar="PATH",
                   help=f"{what}: `kerasbench run --json` files, or folders of them (e.g. .asv/records/<machine>)")
    if baseline:
        p.add_argument("--baseline", help="the TF version the others are compared to (default: the oldest)")
    if what != SCORED:
        p.add_argument("--rejudge", action="store_true",
                       help="records judged by an older protocol are judged again from their stored series by this "
                            "kerasbench's (without it, records of two protocols are refused; docs/protocol.md)")


def config_read(args: argparse.Namespace) -> Optional[str]:
    """The asv config a session with `release` options reads (--config, or the one found for --tf; None without
    --tf): an input its outputs must not replace."""
    if args.config or not args.tf:
        return args.config
    from ..asvconf import find_config

    try:
        return find_config(None)
    except UsageError:
        return None  # said where --tf looks for it, after the outputs' check


def loop_of(args: argparse.Namespace) -> Optional[str]:
    """The loop a command's --loop / --repro names: --loop, else loop 'repro' when --repro is given (the one rule:
    both given is the spec's one-line error, a repro file is measured as loop repro)."""
    return args.loop if args.loop is not None else ("repro" if args.repro else None)


def bisect_environments(p: argparse.ArgumentParser, python_help: str) -> None:
    """--python and --config of triage and attribute: the environments the sides are made in."""
    p.add_argument("--python", metavar="X.Y", help=python_help)
    p.add_argument("--config", help="asv config with the TF matrix (default: asv.matrix.json, found as for run --tf)")


def reproduce(args: argparse.Namespace, loop: str) -> List[str]:
    """The `kerasbench run` command line (no --tf yet) that measures triage's or attribute's pair again: its profile,
    and the counts given over it."""
    from ..profiles import get_profile

    given = [(f"--{name}", getattr(args, name)) for name in ("iterations", "warmup", "repeats")]
    line = ["kerasbench", "run", "--config", args.config] + \
        (["--repro", args.repro] if args.repro else ["--loop", loop]) + \
        ["--strategy", args.strategy, "--profile", get_profile(args.profile).name] + \
        [text for option, value in given if value is not None for text in (option, str(value))] + \
        ["--device", args.device] + (["--backend", args.backend] if args.backend else [])
    return line + (["--python", args.python] if args.python else [])


def check_outputs(outputs: Mapping[str, Optional[str]], inputs: Optional[Mapping[str, Any]] = None,
                  calibration: bool = False) -> None:
    """A command's outputs checked before any work (files.check_outputs), none of them in a folder of stored
    calibrations unless it is a `calibration` itself (calibrate --settling)."""
    from .. import files, calibration_store

    files.check_outputs(outputs, inputs, () if calibration else calibration_store.folders())
