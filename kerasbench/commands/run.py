"""`kerasbench run`: measure (loop shape, strategy) pairs, each in fresh processes; print their table."""

import argparse
import os
import sys
from typing import TextIO

from . import options

NAME = "run"
HELP = "measure (loop shape, strategy) pairs, each in fresh processes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.pairs(p)
    options.release(p)
    options.counts(p)
    options.device(p)
    p.add_argument("--batch-size", type=options.integer("batch-size", 1), default=32,
                   help="batch size of stable-shape loops (default 32)")
    options.limits(p)
    p.add_argument("--no-calibrate", action="store_true",
                   help="when no stored calibration fits, use the default floor rather than calibrating once "
                   "(about a minute; also $KERASBENCH_NO_CALIBRATE=1)")
    p.add_argument("--no-probes", action="store_true", help="time the loop only (to measure probe overhead)")
    from ..trace.tracer import DEFAULT_TOP

    p.add_argument("--trace", metavar="N", nargs="?", type=options.number("trace", 1, 1000), const=DEFAULT_TOP,
                   default=0, help=f"one pair: where memory grows, top N (default {DEFAULT_TOP}) Python allocation "
                   "sites and object types; "
                   "slower, and its memory figures are marked traced")
    p.add_argument("--trace-native", action="store_true", help="with --trace: memray's native sites too (pip "
                   "install 'kerasbench[trace]'; tens of times slower on TF loops)")
    options.json_output(p)
    from ..session import RUN_GATES, GATE_EXIT

    options.fail_on(p, RUN_GATES, GATE_EXIT, "pair", "grows")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Measure the named pairs, print their table; exit 0 all ok or skipped, 1 a pair failed or stopped, 3 (with
    --fail-on) a pair has one of the verdicts named (listed on stderr).

    With --json each pair's record is written as it ends; after an interrupt or a repro that raised, the table
    of the finished pairs is printed and they stay in the file (session.run). A write that fails is one line, exit 1.
    """
    from .. import session
    from ..console import status_line
    from ..errors import UsageError
    from ..profiles import get_profile
    from ..selection import pairs_for

    gates = options.gates(args.fail_on, session.RUN_GATES) if args.fail_on is not None else ()
    profile = get_profile(args.profile)
    loop = options.loop_of(args)
    if loop is None:
        raise UsageError("Which loop? Give --loop NAME (see `kerasbench list`) or --repro FILE (your own loop body).")
    pairs = pairs_for(loop, args.strategy, args.device, args.backend)
    if args.trace_native and not args.trace:
        from ..trace.tracer import DEFAULT_TOP

        args.trace = DEFAULT_TOP
    if args.trace and len(pairs) != 1:
        raise UsageError(f"--trace traces one pair; this run names {len(pairs)}: "
                         "give one --loop and one --strategy.")
    base = session.base_spec(profile, pairs, args.iterations, args.warmup, args.repeats, batch_size=args.batch_size,
                             probes=not args.no_probes, device=args.device, backend=args.backend,
                             trace=int(args.trace),
                             trace_native=args.trace_native, **options.spec_options(args))
    options.check_outputs({"--json": args.json}, {"--repro": args.repro, "--config": options.config_read(args)})
    if args.json and os.path.isfile(args.json):  # never silently: the earlier records go as the first pair ends
        status_line(sys.stderr, f"kerasbench: {args.json} exists: this run's records replace it as pairs finish",
                    final=True)
    pins = options.parse_pins(args.pin) if args.tf else args.pin  # without --tf, use_release says --pin needs it
    base = session.use_release(base, args.config, args.tf, sys.stderr, args.python, pins, args.keras or "",
                               args.machine)
    base = session.settle_floor(base, not args.no_calibrate, sys.stderr)
    return session.run(base, pairs, session.counts(profile, args.iterations), out, sys.stderr, args.json, gates)
