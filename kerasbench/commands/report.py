"""`kerasbench report`: the records as one self-contained HTML page."""

import argparse
from typing import TextIO

from . import options

NAME = "report"
HELP = "the same records as compare, as one self-contained HTML page (heat-tables, plots, curves)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.records(p)
    p.add_argument("--output", metavar="PATH",
                   help="the HTML file, written atomically "
                   "(default: .asv/html/kerasbench-report.html, beside the dashboard)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from .. import report

    # the default's folder, .asv/html, is made later
    options.check_outputs({"--output": args.output}, {"PATH": args.paths})
    path = report.write(args.paths, args.output or report.DEFAULT_OUTPUT, baseline=args.baseline)
    out.write(f"wrote the HTML report to {path} (one file, works offline)\n")
    return 0
