"""`kerasbench overhead`: what the harness costs (probes, the suite against bare work, asv, scaling)."""

import argparse
import sys
from typing import TextIO

from . import options

NAME = "overhead"
HELP = "what the harness costs: probes, the suite vs bare work, asv, scaling (minutes)"


def add_arguments(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--wall", type=options.number("wall", 0.001), default=None,
                   help="with --records: the run's wall time in seconds (default: Σ worker seconds / cores)")
    p.add_argument("--cores", type=int, default=None, help="with --records: cores (default: the usable ones)")
    options.json_output(p, "every figure")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Measure what the harness costs, print it, and optionally write every figure as JSON."""
    from .. import overhead
    from ..errors import UsageError
    from ..files import check_writable, write_json
    from ..runner import usable_cores

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
    scale_iterations = options.ints(args.scale_iterations, "scale-iterations", minimum=3)
    scale_strategies = options.ints(args.scale_strategies, "scale-strategies")
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
