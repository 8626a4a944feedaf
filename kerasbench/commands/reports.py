"""`kerasbench reports`: the public TF/Keras memory reports (kerasbench.public): their runs, and the table of claims
against kerasbench's answers from records."""

import argparse
from typing import TextIO

from . import options

NAME = "reports"
HELP = "the public memory-leak reports as repro files: the runs that measure them, and claim vs kerasbench's answer"


def parser_keywords() -> dict:
    return {"description": "Without records, list the public reports (kerasbench/examples/reports) and the `kerasbench "
            "run` of each under its reporter's strategy (--tf: in that release). With records (`run --json` files of "
            "those runs, or folders of them), print the table: report, claim, kerasbench's verdict and RSS slope "
            "per measured TF release, and whether that agrees with the claim."}


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.records(p, what="records of the reports' runs", baseline=False, required=False)
    p.add_argument("--report", default="all", metavar="NAMES",
                   help="a comma list of report names, or all (default)")
    p.add_argument("--tf", metavar="VERSION", default="", help="without records: the release each run measures")
    p.add_argument("--format", choices=("markdown", "text"), default="markdown", help="the table's (default markdown)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from .. import public
    from ..atlas.inputs import load
    from ..atlas.model import main_axis

    chosen = public.select(args.report)
    if not args.paths:
        for report in chosen:
            out.write(f"{report.name}  {report.url}\n  claim: {report.claim}\n  {report.command(args.tf)}\n")
        return 0
    names = {r.name for r in chosen}
    groups = main_axis(load(args.paths, rejudge=args.rejudge))  # the atlas' labels: 2.16.2, 2.16.2+py3.12
    kept = {v: {k: cell for k, cell in pairs.items()
                if not k[0].startswith(public.LOOP_PREFIX) or k[0][len(public.LOOP_PREFIX):] in names}
            for v, pairs in groups.items()}
    out.write(public.render(kept, args.format))
    return 0
