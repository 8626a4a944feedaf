"""`kerasbench compare`: records of one machine and commit, each metric per TF version, with a verdict."""

import argparse
import sys
from typing import TextIO

from . import options

NAME = "compare"
HELP = "records of one machine and commit: each metric per TF version, with a verdict"


def parser_keywords() -> dict:
    """compare's rules are its module's docstring: the description and the epilog of its --help."""
    from ..compare import __doc__ as rules

    return {"description": rules.split("\n\n", 1)[0], "epilog": "verdicts:\n" + rules.split("\n\n", 1)[1],
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..compare import FORMATS

    options.records(p)
    p.add_argument("--format", default="table", choices=FORMATS, help="table (default), markdown, json or csv")
    p.add_argument("--changes-only", action="store_true", help="leave out unchanged, n/a and not comparable cells, "
                   "except those not comparable for their hardware whose figures alone read a change")
    from ..compare import GATES

    options.fail_on(p, GATES, 1, "cell", "regressed,inconclusive")
    p.add_argument("--output", metavar="PATH", type=options.path, help="write to PATH (atomically) instead of stdout")
    p.add_argument("--wide", action="store_true", help="one line a cell, whatever the terminal's width (a table "
                   "otherwise fits $COLUMNS or the terminal, its why column wrapped)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Compare records across TF versions: a table, markdown, JSON or CSV; --fail-on's gate exits 1."""
    from .. import compare
    from ..files import write_text

    gates = compare.fail_on(args.fail_on) if args.fail_on is not None else ()
    options.check_outputs({"--output": args.output}, {"PATH": args.paths})
    groups = compare.group(compare.load(args.paths), args.rejudge)
    cells = compare.compare(groups, baseline=args.baseline)
    if args.changes_only:
        cells = compare.changes(cells)
    from ..console import printable, terminal_width

    width = None if args.output else terminal_width(out, args.wide)
    text = compare.render(cells, groups, args.format, width)
    if args.output:
        write_text(args.output, text, "the comparison")
        out.write(f"wrote {len(cells)} cells ({compare.counts(cells)}) to {args.output}\n")
    else:
        out.write(text)
    failing = compare.gate(cells, gates)
    if failing:  # a CI job's gate: the cells that fail it, then exit 1 (2 stays for usage errors)
        sys.stderr.write(f"kerasbench: {len(failing)} cell(s) are {' or '.join(gates)} (--fail-on):\n")
        sys.stderr.write("".join(f"  {printable(line, lines=True)}\n" for line in failing))
        return 1
    return 0
