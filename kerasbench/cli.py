"""The kerasbench command: `list` the registries, `run` pairs and print a table, `compare` TF versions,
`report` them as an HTML page, `calibrate` the floor.

This module parses the command line and turns arguments into calls; the commands' bodies live with their
modules (session.run, ablate.run, triage.bisect_releases, calibration.calibrate, overhead.measure_harness,
dashboard.publish_dashboard); pairs are selected by name in selection.py.
User mistakes (unknown names, bad values, unwritable paths) print one line and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, TextIO

from . import selection, stats
from .allocators import ALLOCATORS, DEFAULT as DEFAULT_ALLOCATOR, ENV_VAR as ALLOCATOR_VAR
from .console import status_line
from .errors import UsageError, unknown
from .files import check_not_input, check_writable, write_json, write_text
from .loops import LOOPS
from .metrics import METRICS, judged_metrics
from .profiles import ENV_VAR, PROFILES, get_profile
from .selection import loops_named, pairs_for
from .strategies import CLEANUPS, STRATEGIES
from .units import KIB, MAX_LEAK_BYTES, MIN_MEMORY_CAP, MIN_TIME_LIMIT, check_number, parse_bytes


def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    """The registries: loop shapes, strategies, profiles, allocators, metrics."""
    width = max(map(len, list(LOOPS) + list(STRATEGIES))) + 2
    out.write("Loop shapes\n")
    for shape in LOOPS.values():
        out.write(f"  {shape.name:<{width}}{shape.description}\n")
    out.write("\nStrategies\n")
    for s in STRATEGIES.values():
        applies = " ".join(name for name in LOOPS if name in s.applies_to)
        gpu = "; needs a GPU (--device gpu)" if s.needs_gpu else ""
        out.write(f"  {s.name:<{width}}{s.description}\n  {'':<{width}}applies to: {applies}{gpu}\n")
    out.write("\nProfiles (--profile or $" + ENV_VAR + ")\n")
    for p in PROFILES.values():
        out.write(f"  {p.name:<{width}}{p.summary()}\n")
    out.write("\nAllocators (--allocator or $" + ALLOCATOR_VAR + ")\n")
    for a in ALLOCATORS.values():
        out.write(f"  {a.name:<{width}}{a.description}\n")
    out.write("\nMetrics\n")
    for m in METRICS.values():
        out.write(f"  {m.name:<{width}}{m.description} [{m.unit}]\n")
    return 0


def _spec_options(args: argparse.Namespace) -> dict:
    """The RunSpec fields run and ablate take alike from their options: bytes of KiB and sizes, the default jobs."""
    from .runner import default_jobs

    return dict(leak_bytes=int(args.leak_kib * KIB), memory_cap=parse_bytes(args.memory_cap) if args.memory_cap else 0,
                time_limit=args.time_limit, floor=None if args.floor_kib is None else args.floor_kib * KIB,
                allocator=args.allocator, repro=args.repro or "",
                jobs=default_jobs() if args.jobs is None else args.jobs)


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    """Measure the named pairs, print their table; exit 0 all ok or skipped, 1 a pair failed or stopped.

    With --json each pair's record is written as it ends; after an interrupt or a repro that raised, the table
    of the finished pairs is printed and they stay in the file (session.run). A write that fails is one line, exit 1.
    """
    from . import session

    profile = get_profile(args.profile)
    if args.repro and args.loop is None:
        args.loop = "repro"
    if args.loop is None:
        raise UsageError("Which loop? Give --loop NAME (see `kerasbench list`) or --repro FILE (your own loop body).")
    pairs = pairs_for(args.loop, args.strategy, args.device)
    if args.trace_native and not args.trace:
        args.trace = 10
    if args.trace and len(pairs) != 1:
        raise UsageError(f"--trace traces one pair; this run names {len(pairs)}: "
                         "give one --loop and one --strategy.")
    base = session.base_spec(profile, pairs, args.iterations, args.warmup, args.repeats, batch_size=args.batch_size,
                             probes=not args.no_probes, device=args.device, trace=int(args.trace),
                             trace_native=args.trace_native, **_spec_options(args))
    session.check_outputs([args.json], args.repro)
    if args.json and os.path.isfile(args.json):  # never silently: the earlier records go as the first pair ends
        status_line(sys.stderr, f"kerasbench: {args.json} exists: this run's records replace it as pairs finish",
                    final=True)
    pins = parse_pins(args.pin) if args.tf else args.pin  # without --tf, use_release says --pin needs it
    session.use_release(base, args.config, args.tf, sys.stderr, args.python, pins, args.keras or "", args.machine)
    session.settle_floor(base, not args.no_calibrate, sys.stderr)
    return session.run(base, pairs, session.counts(profile, args.iterations), out, sys.stderr, args.json)


def cmd_ablate(args: argparse.Namespace, out: TextIO) -> int:
    """Measure every cleanup-step variant of each loop (kerasbench.ablate), print the tables and the conclusion.

    Exit 0 when every variant ran (or skipped), 1 when one failed or was stopped; records are written as
    variants finish (--json), an interrupt keeps the finished ones; --html writes the report of them.
    """
    from . import ablate, session

    profile = get_profile(args.profile)
    if args.repro and args.loop is None:
        args.loop = "repro"
    if args.loop is None:
        raise UsageError("Which loop? Give --loop NAME (one that rebuilds its model: sweep, kfold, notebook, "
                         "inference) or --repro FILE.")
    loops = loops_named(args.loop)
    for loop in loops:
        ablate.check_base(args.base, loop)
    steps = ablate.check_steps(selection.names(args.steps, CLEANUPS, "steps"))
    from .triage import check_metric

    metric = check_metric(args.metric)
    base = session.base_spec(profile, [(loops[0], args.base)], args.iterations, args.warmup, args.repeats,
                             **_spec_options(args))
    json_path = args.json or (os.path.splitext(args.html)[0] + ".json" if args.html else None)
    session.check_outputs([json_path, args.html], args.repro)
    pins = parse_pins(args.pin) if args.tf else args.pin  # without --tf, use_release says --pin needs it
    session.use_release(base, args.config, args.tf, sys.stderr, args.python, pins, args.keras or "")
    kept = ablate.run(base, loops, steps, args.base, out, sys.stderr, json_path, metric)
    if kept.error:  # said on one line after the tables
        return 1
    if args.html:  # report reads ablate: it is written here, not there
        from . import report

        out.write(f"wrote the HTML report to {report.write([json_path], args.html)}\n")
    return 1 if kept.failed() else 0


def cmd_compare(args: argparse.Namespace, out: TextIO) -> int:
    """Compare records across TF versions: a table, markdown, JSON or CSV."""
    from . import compare

    from .record import find_records_files

    gates = compare.fail_on(args.fail_on) if args.fail_on is not None else ()
    if args.output:
        check_writable(args.output)
        check_not_input(args.output, [path for path, _ in find_records_files(args.paths)])
    groups = compare.group(compare.load(args.paths))
    cells = compare.compare(groups, baseline=args.baseline)
    if args.changes_only:
        cells = [c for c in cells if c["verdict"] in ("regressed", "improved", "inconclusive")]
    text = compare.render(cells, groups, args.format)
    if args.output:
        write_text(args.output, text)
        out.write(f"wrote {len(cells)} cells ({compare.counts(cells)}) to {args.output}\n")
    else:
        out.write(text)
    failing = compare.gate(cells, gates)
    if failing:  # a CI job's gate: the cells that fail it, then exit 1 (2 stays for usage errors)
        sys.stderr.write(f"kerasbench: {len(failing)} cell(s) are {' or '.join(gates)} (--fail-on):\n")
        sys.stderr.write("".join(f"  {line}\n" for line in failing))
        return 1
    return 0


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


def _template(args: argparse.Namespace, loop: str):
    """The validated RunSpec of triage's and attribute's pair (their --iterations, --warmup, --repeats…)."""
    from .runner import RunSpec

    return RunSpec(loop, args.strategy, iterations=args.iterations, warmup=args.warmup, repeats=args.repeats,
                   repro=args.repro or "", allocator=args.allocator, device=args.device).validate()


def _reproduce(args: argparse.Namespace, loop: str) -> List[str]:
    """The `kerasbench run` command line (no --tf yet) that measures triage's or attribute's pair again."""
    reproduce = ["kerasbench", "run", "--config", args.config] + \
        (["--repro", args.repro] if args.repro else ["--loop", loop]) + \
        ["--strategy", args.strategy, "--iterations", str(args.iterations), "--warmup", str(args.warmup),
         "--repeats", str(args.repeats), "--device", args.device]
    return reproduce + (["--python", args.python] if args.python else [])


def cmd_attribute(args: argparse.Namespace, out: TextIO) -> int:
    """Which package(s) of the bad environment carry the change (kerasbench.attribute.command)."""
    from . import attribute

    return attribute.command(args, out, sys.stderr, _template, _reproduce)


def cmd_triage(args: argparse.Namespace, out: TextIO) -> int:
    """Bisect TF releases (or Keras releases at one TF: --package keras) for the first whose behaviour differs."""
    from . import session, triage

    loop = "repro" if args.repro else args.loop
    metric, args.config = triage.check_request(args.metric, args.config, args.good, args.bad, loop, args.package,
                                               args.tf, args.jobs)
    template = _template(args, loop)
    session.check_outputs([args.json], args.repro)
    reproduce = _reproduce(args, loop)
    text, outcome, records = triage.bisect_releases(args.config, args.good, args.bad, template, metric,
                                                    args.latest_patches, reproduce, sys.stderr, args.python,
                                                    args.jobs, args.tf, args.attribute)
    out.write(text)
    extra = {}
    if args.attribute:  # the bracket's two environments: which package carries it (records join the triage's)
        from . import attribute

        extra = attribute.bracket(args.config, outcome, records, template, metric, reproduce, out, sys.stderr,
                                  args.python, args.jobs, args.max_envs)
    if args.json:
        from .record import records_payload

        write_json(args.json, records_payload(records.values(), triage=triage.summary(outcome, metric), **extra))
        out.write(f"wrote {len(records)} record(s) to {args.json} (kerasbench compare / report read it)\n")
    return 0


def cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    """Write the records as one self-contained HTML page."""
    from . import report

    if args.output:  # the default folder, .asv/html, is made once the records have been read
        check_writable(args.output)
    path = report.write(args.paths, args.output or report.DEFAULT_OUTPUT, baseline=args.baseline)
    out.write(f"wrote the HTML report to {path} (one file, works offline)\n")
    return 0


def cmd_score(args: argparse.Namespace, out: TextIO) -> int:
    """Score records against reference records: the confusion matrices of the RSS verdict and of what grew."""
    import json

    from . import score
    from .record import find_records_files

    if args.json:
        check_writable(args.json)
        check_not_input(args.json, [path for path, _ in find_records_files(list(args.paths) + list(args.reference))])
    result = score.score(*score.load(args.paths, args.reference))
    out.write(score.text(result, top=args.top))
    if args.json:
        write_text(args.json, json.dumps(result, indent=1) + "\n")
        out.write(f"wrote the scoring of {len(result['pairs'])} pair(s) to {args.json}\n")
    return 0


def _ints(text: str, kind: str, minimum: int = 1) -> list:
    """'30,60' -> [30, 60]; UsageError naming the argument otherwise."""
    try:
        values = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or min(values) < minimum:
        raise UsageError(f"Invalid value for argument `{kind}`. Received: {text!r}. "
                         f"Expected a comma list of integers >= {minimum}.")
    return sorted(set(values))


def cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    """Measure the controls per allocator and store the floor (or --show the stored ones)."""
    from . import calibration
    from .allocators import require
    from .runner import default_jobs

    names = selection.names(args.allocator, ALLOCATORS, "allocator")
    if args.show:
        out.write(calibration.render_stored(names))
        return 0
    for name in names:
        require(name)
    if args.runs < 1:
        raise UsageError(f"Invalid value for argument `runs`. Received: runs={args.runs!r}. "
                         "Expected a positive integer.")
    if args.warmup < 0:
        raise UsageError(f"Invalid value for argument `warmup`. Received: warmup={args.warmup!r}. Expected 0 or more.")
    iterations = _ints(args.iterations or ",".join(map(str, calibration.DEFAULT_COUNTS)), "iterations", minimum=3)
    rates = [r * KIB for r in _ints(args.rates_kib, "rates-kib")]
    heaps = selection.names(args.heaps, calibration.HEAPS, "heaps")
    for h in heaps:
        if h not in calibration.HEAPS:
            raise unknown("heap", h, calibration.HEAPS)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"Invalid value for argument `jobs`. Received: jobs={args.jobs!r}. "
                         "Expected a positive integer.")
    cals = calibration.calibrate(names, args.runs, iterations, rates, heaps, args.warmup, args.tf_control, sys.stderr,
                                 jobs=args.jobs or default_jobs())
    out.write(calibration.render(cals))
    return 0


def cmd_overhead(args: argparse.Namespace, out: TextIO) -> int:
    """Measure what the harness costs, print it, and optionally write every figure as JSON."""
    from . import overhead
    from .runner import usable_cores

    if args.records:  # a finished run's records: its wall against the physical limit, nothing measured
        cores = usable_cores() if args.cores is None else args.cores
        if cores < 1:
            raise UsageError(f"Invalid value for argument `cores`. Received: cores={cores!r}. Expected 1 or more.")
        text, report = overhead.records_limit(args.records, args.wall, cores)
        out.write(text)
        if args.json:
            write_json(args.json, report)
        return 0
    if args.runs < 1 or args.iterations < 3:
        raise UsageError(f"Invalid value for argument `runs` or `iterations`. Received: runs={args.runs!r}, "
                         f"iterations={args.iterations!r}. Expected runs >= 1 and iterations >= 3.")
    scale_iterations = _ints(args.scale_iterations, "scale-iterations", minimum=3)
    scale_strategies = _ints(args.scale_strategies, "scale-strategies")
    overhead.check_prerequisites(tf=args.tf, asv=args.asv)
    if args.json:
        check_writable(args.json)
    text, report = overhead.measure_harness(args.runs, args.iterations, scale_iterations, scale_strategies,
                                            tf=args.tf, asv=args.asv, err=sys.stderr)
    out.write(text)
    if args.json:
        write_json(args.json, report)
        out.write(f"wrote {args.json}\n")
    return 0


def cmd_publish(args: argparse.Namespace, out: TextIO) -> int:
    """asv publish, with the dashboard made to work offline."""
    from .asvconf import DEFAULT_CONFIG, find_config
    from .dashboard import publish_dashboard

    publish_dashboard(find_config(args.config, DEFAULT_CONFIG), cdn=args.cdn, out=out)
    return 0


def cmd_envs(args: argparse.Namespace, out: TextIO) -> int:
    """The asv environments of a config, with their pins (or the bare name of one TF release's; --json: a matrix)."""
    import json

    from .asvconf import environments, find_config, matrix_entries, matrix_json, split_pin

    config = find_config(args.config)
    if args.json:  # one line: a CI job writes it to $GITHUB_OUTPUT and fans out over it
        out.write(json.dumps(matrix_json(config), separators=(",", ":")) + "\n")
        return 0
    if args.tf:
        out.write("".join(name + "\n" for name, _ in environments(config, args.tf)))
        return 0
    for entry in matrix_entries(config):
        pins = [(package, version, " (" + " ".join(flags) + ")" if flags else "")
                for package, version, flags in (split_pin(k, v) for k, v in entry["req"].items())]
        said = [f"{package}=={version}{flags}" for package, version, flags in sorted(pins)]
        said += [f"{key}={value}" for key, value in sorted(entry["env"].items())]
        axis = f"  [{entry['axis']}]" if entry["axis"] else ""
        out.write(f"{entry['name']}{axis}\n    {', '.join(said)}\n")
    return 0


def cmd_merge(args: argparse.Namespace, out: TextIO) -> int:
    """The union of asv results and records trees into DEST; a conflict writes nothing (exit 2)."""
    from .merge import asv_folder, merge

    *sources, dest = args.folders
    written, unchanged, notes = merge(sources, dest)
    for note in notes:
        out.write(f"note: {note}\n")
    out.write(f"merged {len(sources)} folder(s) into {asv_folder(dest, dest=True)}: {written} file(s) written, "
              f"{unchanged} already there\n")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other user mistake (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Print `message` on one line, pointing at --help, and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _number(name: str, minimum: float = 0.0, maximum: float = float("inf")):
    """An argparse type: a finite float in [minimum, maximum] (units.check_number, RunSpec's checker too)."""
    def parse(text: str) -> float:
        try:
            return check_number(text, name, minimum, maximum)
        except UsageError as e:
            raise argparse.ArgumentTypeError(e.short) from None
    parse.__name__ = name
    return parse


def _size(minimum: int):
    """An argparse type: a size such as 4GiB of at least `minimum` bytes, kept as typed (cmd_run parses it)."""
    def parse(text: str) -> str:
        try:
            parse_bytes(text, "the size", minimum)
        except UsageError as e:
            raise argparse.ArgumentTypeError(e.short) from None
        return text
    return parse


def _path(text: str) -> str:
    """An argparse type: a non-empty path (an empty one would silently write nothing)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("Invalid path. Received: ''. Expected a file name.")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per cmd_* function."""
    parser = _Parser(prog="kerasbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("list", help="loop shapes, strategies (where they apply, which need a GPU), metrics")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("run", help="measure (loop shape, strategy) pairs, each in fresh processes")
    p.add_argument("--loop", help="loop shape, comma list, or 'all' built-in ones (see `kerasbench list`)")
    p.add_argument("--repro", metavar="FILE", help="measure your own loop body: a Python file defining "
                   "iteration(ctx, model) and optionally setup() and build(ctx) (README: Bring your own repro)")
    p.add_argument("--tf", metavar="VERSION", help="run the workers in the asv environment of this TF release "
                   "(patch releases too; made if missing: seconds with uv, minutes with pip)")
    p.add_argument("--python", metavar="X.Y", help="with --tf: that release's environment on this Python (3.10, "
                   "3.12…; from PATH or pyenv; only where the release has a wheel for it)")
    p.add_argument("--pin", action="append", metavar="NAME==VERSION", help="with --tf: that release's environment "
                   "with this pin instead (repeatable; forced with --no-deps where the others exclude it)")
    p.add_argument("--keras", metavar="VERSION|tf_keras", help="with --tf: this Keras release, or tf_keras (TF >= "
                   "2.16: the tf-keras of its minor, TF_USE_LEGACY_KERAS=1; compare labels it <release>+tf_keras)")
    p.add_argument("--config", help="asv config whose environments --tf uses (default: asv.matrix.json in "
                   "$KERASBENCH_CONFIG, the current folder or the clone kerasbench was imported from; asv.gpu.json "
                   "on a GPU machine)")
    p.add_argument("--machine", metavar="NAME", help="the machine name the records say (default: "
                   "$KERASBENCH_MACHINE, else asv's machine, `asv machine --machine NAME`; never the host name)")
    p.add_argument("--strategy", default="all",
                   help="strategy, comma list, or 'all' applicable (default; GPU-only ones with --device gpu)")
    p.add_argument("--profile", help="quick, default, full or reference: the time budget per pair, warm-up and "
                   f"repeats (default: ${ENV_VAR} or 'default'; `kerasbench list` shows them)")
    p.add_argument("--iterations", type=int, help="exactly this many measured iterations (overrides the profile's "
                   "time budget: no looks)")
    p.add_argument("--warmup", type=int, help="iterations run before the baseline (overrides the profile)")
    p.add_argument("--repeats", type=int,
                   help="fresh processes per pair (overrides the profile; 2+ to trust a verdict)")
    p.add_argument("--device", default="cpu", help="cpu (GPUs hidden from TF) or gpu (skipped where TF sees none)")
    p.add_argument("--batch-size", type=int, default=32, help="batch size of stable-shape loops (default 32)")
    p.add_argument("--floor-kib", type=_number("floor-kib"), default=None,
                   help="smallest growth called a leak, KiB/iteration (default: a stored calibration that fits this "
                   "allocator, library, machine and Python, else one made now, else "
                   f"{stats.DEFAULT_FLOOR // KIB})")
    p.add_argument("--no-calibrate", action="store_true",
                   help="when no stored calibration fits, use the default floor rather than calibrating once "
                   "(about a minute; also $KERASBENCH_NO_CALIBRATE=1)")
    p.add_argument("--allocator", default=os.environ.get(ALLOCATOR_VAR) or DEFAULT_ALLOCATOR,
                   help=f"{', '.join(ALLOCATORS)} (default: ${ALLOCATOR_VAR} or {DEFAULT_ALLOCATOR})")
    p.add_argument("--memory-cap", type=_size(MIN_MEMORY_CAP),
                   help="stop a worker whose processes exceed this, e.g. 4GiB (default: half of RAM)")
    p.add_argument("--jobs", type=int, default=None,
                   help="pairs measured at once, each in its own workers (default: $KERASBENCH_JOBS, else the usable "
                   "cores; a pair starts only while the expected peaks fit in free memory); memory figures are per "
                   "process, but seconds per iteration are then measured under contention (the record's spec says "
                   "jobs; compare does not judge time across jobs), and the default memory cap is shared between them")
    p.add_argument("--time-limit", type=_number("time-limit", MIN_TIME_LIMIT), default=1800.0,
                   help="seconds per worker process (default 1800)")
    p.add_argument("--leak-kib", type=_number("leak-kib", 0, MAX_LEAK_BYTES / KIB), default=0,
                   help="leak per iteration of control_leak_* (default 256)")
    p.add_argument("--no-probes", action="store_true", help="time the loop only (to measure probe overhead)")
    p.add_argument("--trace", metavar="N", nargs="?", type=_number("trace", 1, 1000), const=10, default=0,
                   help="one pair: where memory grows, top N (default 10) Python allocation sites and object types; "
                   "slower, and its memory figures are marked traced")
    p.add_argument("--trace-native", action="store_true", help="with --trace: memray's native sites too (pip "
                   "install 'kerasbench[trace]'; tens of times slower on TF loops)")
    p.add_argument("--json", metavar="PATH", type=_path, help="also write the records to PATH (atomically)")
    p.set_defaults(func=cmd_run)

    from .ablate import BASE as ABLATE_BASE

    p = sub.add_parser("ablate", help="which cleanup steps are necessary and which suffice: the full cleanup, each "
                       "step alone, and all but each step, each in fresh workers")
    p.add_argument("--loop", help="loop shape(s) that rebuild a model, comma list: sweep, kfold, notebook, inference")
    p.add_argument("--repro", metavar="FILE", help="ablate your own loop body (a repro file with build)")
    p.add_argument("--steps", default="all", help="cleanup steps, comma list or 'all' (default): "
                   + ", ".join(CLEANUPS))
    p.add_argument("--base", default=ABLATE_BASE,
                   help=f"the strategy the steps are added to (default {ABLATE_BASE}: a new model, nothing released)")
    p.add_argument("--metric", default="growth_per_iter",
                   help="what a step must keep down: growth_per_iter (default: sufficient = alone it reads flat), or "
                   "any metric compare judges, e.g. peak_over_setup (sufficient = alone as good as the full cleanup)")
    p.add_argument("--tf", metavar="VERSION", help="run the workers in the asv environment of this TF release")
    p.add_argument("--python", metavar="X.Y", help="with --tf: that release's environment on this Python (as run)")
    p.add_argument("--pin", action="append", metavar="NAME==VERSION", help="with --tf: this pin instead (as run)")
    p.add_argument("--keras", metavar="VERSION|tf_keras", help="with --tf: this Keras release, or tf_keras (as run)")
    p.add_argument("--config", help="asv config whose environments --tf uses (default: asv.matrix.json, found as for "
                   "run --tf)")
    p.add_argument("--profile", help=f"quick, default, full or reference (default: ${ENV_VAR} or 'default')")
    p.add_argument("--iterations", type=int, help="exactly this many measured iterations per variant (overrides "
                   "the profile's time budget)")
    p.add_argument("--warmup", type=int, help="iterations run before the baseline (overrides the profile)")
    p.add_argument("--repeats", type=int, help="fresh processes per variant (overrides the profile)")
    p.add_argument("--floor-kib", type=_number("floor-kib"), default=None,
                   help="smallest growth called a leak, KiB/iteration (default: the stored calibration)")
    p.add_argument("--allocator", default=os.environ.get(ALLOCATOR_VAR) or DEFAULT_ALLOCATOR,
                   help=f"{', '.join(ALLOCATORS)} (default: ${ALLOCATOR_VAR} or {DEFAULT_ALLOCATOR})")
    p.add_argument("--memory-cap", type=_size(MIN_MEMORY_CAP), help="stop a worker whose processes exceed this")
    p.add_argument("--jobs", type=int, default=None,
                   help="variants measured at once (default: $KERASBENCH_JOBS, else the usable cores)")
    p.add_argument("--time-limit", type=_number("time-limit", MIN_TIME_LIMIT), default=1800.0,
                   help="seconds per worker process (default 1800)")
    p.add_argument("--leak-kib", type=_number("leak-kib", 0, MAX_LEAK_BYTES / KIB), default=0,
                   help="leak per iteration of a control_leak_* base (default 256)")
    p.add_argument("--json", metavar="PATH", type=_path, help="also write the records to PATH (atomically)")
    p.add_argument("--html", metavar="PATH", type=_path,
                   help="also write the HTML report of them (the records go to --json, else beside it as .json)")
    p.set_defaults(func=cmd_ablate)

    from .compare import FORMATS, __doc__ as rules

    p = sub.add_parser("compare", help="records of one machine and commit: each metric per TF version, with a verdict",
                       description=rules.split("\n\n", 1)[0], epilog="verdicts:\n" + rules.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="records: `kerasbench run --json` files, or folders of them (e.g. .asv/records/<host>)")
    p.add_argument("--baseline", help="the TF version the others are compared to (default: the oldest)")
    p.add_argument("--format", default="table", choices=FORMATS, help="table (default), markdown, json or csv")
    p.add_argument("--changes-only", action="store_true", help="leave out unchanged and n/a cells")
    p.add_argument("--fail-on", metavar="VERDICTS", help="exit 1, listing the cells, when any cell has one of these "
                   "verdicts: a comma list of regressed, improved, inconclusive, not comparable, n/a "
                   "(e.g. regressed,inconclusive)")
    p.add_argument("--output", metavar="PATH", type=_path, help="write to PATH (atomically) instead of stdout")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("triage", help="bisect TF releases for the first whose behaviour differs (asv environments)")
    p.add_argument("--good", required=True, metavar="VERSION", help="a TF release with the behaviour you expect")
    p.add_argument("--bad", required=True, metavar="VERSION", help="a TF release with the behaviour that changed")
    p.add_argument("--loop", help="loop shape (see `kerasbench list`)")
    p.add_argument("--strategy", default="rebuild_no_clear", help="strategy (default rebuild_no_clear)")
    p.add_argument("--repro", metavar="FILE", help="triage your own loop body instead of a loop shape")
    first, *others = judged_metrics()
    p.add_argument("--metric", default=first, help=f"what must differ: {first} (default), {', '.join(others)}")
    p.add_argument("--iterations", type=int, default=20, help="measured iterations per version (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up iterations (default 3)")
    p.add_argument("--repeats", type=int, default=1, help="fresh workers per version (default 1)")
    p.add_argument("--device", default="cpu",
                   help="cpu (default) or gpu (with --config asv.gpu.json on a GPU machine)")
    p.add_argument("--python", metavar="X.Y", help="bisect on this Python (default: the config's, 3.11); "
                   "only releases with a wheel for it")
    p.add_argument("--jobs", type=int, default=2, help="2 (default): both ends measured at once (memory figures "
                   "per process; seconds_per_iter is always measured one at a time); 1: one at a time")
    p.add_argument("--latest-patches", action="store_true",
                   help="only the releases the asv config pins (latest patch per minor), not every patch release")
    p.add_argument("--config", help="asv config with the TF matrix (default: asv.matrix.json, found as for run --tf)")
    p.add_argument("--allocator", default=os.environ.get(ALLOCATOR_VAR) or DEFAULT_ALLOCATOR,
                   help=f"{', '.join(ALLOCATORS)} (default: ${ALLOCATOR_VAR} or {DEFAULT_ALLOCATOR})")
    p.add_argument("--json", metavar="PATH", type=_path,
                   help="also write every version's record and the answer to PATH")
    p.add_argument("--package", default="tensorflow", choices=("tensorflow", "keras"),
                   help="what to bisect: TF releases (default), or Keras releases at one TF (--tf)")
    p.add_argument("--tf", metavar="VERSION", help="with --package keras: the TF release whose environment gets "
                   "each Keras")
    from .attribute import MAX_ENVS

    p.add_argument("--attribute", action="store_true", help="then measure which package of the bracket's "
                   "environments carries the change (as `kerasbench attribute`)")
    p.add_argument("--max-envs", type=int, default=MAX_ENVS, metavar="N", help="with --attribute: as attribute's "
                   f"(default {MAX_ENVS})")
    p.set_defaults(func=cmd_triage)

    p = sub.add_parser("attribute", help="which package(s) carry a change: the bad environment's packages moved "
                       "into the good one alone (and with what they need), or put back one at a time, each measured")
    p.add_argument("--good", required=True, metavar="ENV_OR_RELEASE", help="a TF release (its asv environment's "
                   "pins) or an asv environment (name or folder) with the behaviour you expect")
    p.add_argument("--bad", required=True, metavar="ENV_OR_RELEASE", help="the one whose behaviour changed")
    p.add_argument("--loop", help="loop shape (see `kerasbench list`)")
    p.add_argument("--strategy", default="rebuild_no_clear", help="strategy (default rebuild_no_clear)")
    p.add_argument("--repro", metavar="FILE", help="your own loop body instead of a loop shape")
    p.add_argument("--metric", default=first, help=f"what must differ: {first} (default), {', '.join(others)}")
    p.add_argument("--iterations", type=int, default=20, help="measured iterations per environment (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="warm-up iterations (default 3)")
    p.add_argument("--repeats", type=int, default=1, help="fresh workers per environment (default 1)")
    p.add_argument("--device", default="cpu", help="cpu (default) or gpu")
    p.add_argument("--python", metavar="X.Y", help="the environments on this Python (default: the config's)")
    p.add_argument("--jobs", type=int, default=2, help="environments measured at once (default 2; seconds_per_iter "
                   "one at a time)")
    p.add_argument("--max-envs", type=int, default=MAX_ENVS, metavar="N", help="stop before making anything when the "
                   f"plan (ends, single moves, groups, leave-one-out) could need more than N environments "
                   f"(default {MAX_ENVS})")
    p.add_argument("--config", help="asv config (default: asv.matrix.json, found as for run --tf)")
    p.add_argument("--allocator", default=os.environ.get(ALLOCATOR_VAR) or DEFAULT_ALLOCATOR,
                   help=f"{', '.join(ALLOCATORS)} (default: ${ALLOCATOR_VAR} or {DEFAULT_ALLOCATOR})")
    p.add_argument("--json", metavar="PATH", type=_path, help="also write every environment's record and the "
                   "attribution to PATH")
    p.set_defaults(func=cmd_attribute)

    p = sub.add_parser("report", help="the same records as compare, as one self-contained HTML page "
                       "(heat-tables, plots, curves)")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="records: `kerasbench run --json` files, or folders of them (e.g. .asv/records/<host>)")
    p.add_argument("--baseline", help="the TF version the others are compared to (default: the oldest)")
    p.add_argument("--output", metavar="PATH",
                   help="the HTML file, written atomically "
                   "(default: .asv/html/kerasbench-report.html, beside the dashboard)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("score", help="how often records' verdicts agree with long reference runs of the same pairs "
                       "(docs/reference/)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="records to score: `kerasbench run --json` files, or "
                   "folders of them")
    p.add_argument("--reference", required=True, nargs="+", action="extend", metavar="PATH",
                   help="reference records (repeatable), e.g. docs/reference/tf-2.21.0.json")
    p.add_argument("--top", type=int, default=0, help="list at most this many disagreeing pairs (default: all)")
    p.add_argument("--json", metavar="PATH", type=_path, help="also write the scoring (every pair) as JSON")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("calibrate", help="run the controls here: smallest detectable leak, false positives, floor")
    p.add_argument("--allocator", default=DEFAULT_ALLOCATOR,
                   help=f"comma list of: {', '.join(ALLOCATORS)} (default glibc)")
    p.add_argument("--runs", type=int, default=20, help="fresh workers per control and rate (default 20)")
    p.add_argument("--iterations", default=None,
                   help="comma list of iteration counts (default: 4, 2000 and every count a budgeted run looks at, "
                   "8, 12, 18 … 1598; shorter counts read the first points of the longest, at no cost)")
    p.add_argument("--rates-kib", default="4,16,64,256", help="leak rates, KiB/iteration (default 4,16,64,256)")
    p.add_argument("--jobs", type=int, default=None,
                   help="control workers at once (default: $KERASBENCH_JOBS, else the usable cores)")
    p.add_argument("--heaps", default="native,python", help="native, python or both (default)")
    p.add_argument("--warmup", type=int, default=2, help="warm-up iterations per worker (default 2)")
    p.add_argument("--tf-control", action="store_true",
                   help="also run the TF negative control (inference × reuse_model, ~10 s a worker) and report how "
                   "often it says `grows` at the chosen floor")
    p.add_argument("--show", action="store_true", help="print the stored calibrations, measure nothing")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("overhead",
                       help="what the harness costs: probes, the suite vs bare work, asv, scaling (minutes)")
    p.add_argument("--runs", type=int, default=3,
                   help="fresh workers per probe setting, passes over the scaling grid (default 3)")
    p.add_argument("--iterations", type=int, default=300,
                   help="control-loop iterations per probes on/off worker (default 300)")
    p.add_argument("--tf", action="store_true",
                   help="also time one TF pair (inference × reuse_model) through the runner")
    p.add_argument("--asv", action="store_true",
                   help="also time `asv run --python=same` of the Control class (a temporary clone)")
    p.add_argument("--scale-iterations", default="10,20,40",
                   help="iteration counts of the scaling grid (default 10,20,40)")
    p.add_argument("--scale-strategies", default="1,2,4",
                   help="numbers of control strategies of the scaling grid (default 1,2,4)")
    p.add_argument("--records", nargs="+", metavar="PATH",
                   help="measure nothing: a finished run's records (files or folders, e.g. .asv/records) against "
                   "the physical limit, Σ (setup + bare work) / cores, and where the rest of the wall went")
    p.add_argument("--wall", type=_number("wall", 0.001), default=None,
                   help="with --records: the run's wall time in seconds (default: Σ worker seconds / cores)")
    p.add_argument("--cores", type=int, default=None, help="with --records: cores (default: the usable ones)")
    p.add_argument("--json", metavar="PATH", type=_path, help="also write every figure to PATH (atomically)")
    p.set_defaults(func=cmd_overhead)

    p = sub.add_parser("publish", help="asv publish, with the dashboard's scripts copied locally (works offline)")
    p.add_argument("--config", help="asv config file (default: asv.conf.json in $KERASBENCH_CONFIG, the current "
                   "folder, or the clone kerasbench was imported from)")
    p.add_argument("--cdn", action="store_true", help="keep asv's CDN links (no npm needed)")
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("merge", help="the union of asv results and records trees (a fan-out's jobs) into one",
                       description="Merge the .asv folders of several runs (each with results/ and records/, or a "
                       "clone holding .asv/) into DEST: files only one side has are copied, identical ones left "
                       "alone (merging twice changes nothing); the same results file with other content stops the "
                       "merge before anything is written. machine.json: the newest copy; benchmarks.json: the "
                       "union. Then `kerasbench publish --config DEST-clone/asv.conf.json`.")
    p.add_argument("folders", nargs="+", metavar="SRC... DEST", help="folders to merge, then the destination")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("envs", help="the asv environments of a config (names for `asv run -E`)")
    p.add_argument("--config", help="asv config file (default: asv.matrix.json, found as for run --tf)")
    p.add_argument("--tf", help="only the environment of this TensorFlow release (patch releases too, as run --tf); "
                   "prints its bare name")
    p.add_argument("--json", action="store_true", help="the environments as one line of JSON, GitHub Actions' "
                   "matrix form {\"include\": [{name, tf, tf_package, keras, python, device, config}]}")
    p.set_defaults(func=cmd_envs)
    return parser


def main(argv: Optional[list] = None, out: Optional[TextIO] = None) -> int:
    """Run the command `argv` (default: sys.argv); its exit code. Output goes to `out` (default: stdout).

    Exit codes: 0 done (every pair ok or skipped), 1 something failed or was stopped (a pair, a write),
    2 a usage error, 130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM. Every worker ends with the command.
    """
    from . import procs

    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse already printed its one-line usage error
        return e.code
    try:
        with procs.interrupts():  # Ctrl-C, SIGTERM and the way out end every worker's process group
            return args.func(args, out)
    except UsageError as e:
        sys.stderr.write(f"kerasbench: error: {e}\n")
        return 2
    except KeyboardInterrupt as e:  # procs.Terminated (SIGTERM) too
        code = procs.exit_code(e)
        sys.stderr.write(f"kerasbench: interrupted ({'SIGTERM' if code == 143 else 'SIGINT'})\n")
        return code
    except BrokenPipeError:  # `kerasbench list | head`
        sys.stderr.close()
        return 0
