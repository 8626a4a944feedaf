"""`kerasbench score`: how often records' verdicts agree with long reference runs of the same pairs."""

import argparse
from typing import TextIO

from . import options

NAME = "score"
HELP = "how often records' verdicts agree with long reference runs of the same pairs (docs/reference/)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.records(p, "records to score", baseline=False)
    p.add_argument("--reference", required=True, nargs="+", action="extend", metavar="PATH",
                   help="reference records (repeatable), e.g. docs/reference/tf-2.21.0.json")
    p.add_argument("--top", type=int, default=0, help="list at most this many disagreeing pairs (default: all)")
    options.json_output(p, "the scoring (every pair)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """The confusion matrices of the RSS verdict and of what grew against the reference, the pairs that disagree."""
    import json

    from .. import score
    from ..files import check_not_input, check_writable, write_text
    from ..loading import find_records_files

    if args.json:
        check_writable(args.json)
        check_not_input(args.json, [path for path, _ in find_records_files(list(args.paths) + list(args.reference))])
    result = score.score(*score.load(args.paths, args.reference))
    out.write(score.text(result, top=args.top))
    if args.json:
        write_text(args.json, json.dumps(result, indent=1) + "\n")
        out.write(f"wrote the scoring of {len(result['pairs'])} pair(s) to {args.json}\n")
    return 0
