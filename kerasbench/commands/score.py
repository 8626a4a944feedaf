"""`kerasbench score`: how often records' verdicts agree with long reference runs of the same pairs."""

import argparse
from typing import TextIO

from . import options

NAME = "score"
HELP = "how often records' verdicts agree with long reference runs of the same pairs (docs/reference/)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.records(p, options.SCORED, baseline=False, required=False)
    p.add_argument("--reference", required=True, nargs="+", action="extend", metavar="PATH",
                   help="reference records (repeatable), e.g. docs/reference/tf-2.21.0.json")
    p.add_argument("--replay", metavar="PROFILE", default=None,
                   help="score no records: replay PROFILE's protocol on each reference repeat's own readings (where "
                   "its looks would have stopped, what its rules would have said): a check of the rules in seconds, "
                   "not a measurement of the profile")
    p.add_argument("--top", type=options.integer("top", 0), default=0,
                   help="list at most this many disagreeing pairs (default: all)")
    options.json_output(p, "the scoring (every pair)")


def load(paths, reference):
    """score.load's records and reference, or one atlas data file's cells (scored as shown) and the reference."""
    from .. import score
    from ..atlas.inputs import holds_data, load
    from ..loading import load_records

    if len(paths) == 1 and holds_data(paths[0]):
        groups = load(paths)
        return [(cell, path, v) for v, cells in groups.items() for cell, path in cells.values()], \
            load_records(reference)
    return score.load(paths, reference)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """The confusion matrices of the RSS verdict and of what grew against the reference, the pairs that disagree."""
    import json

    from .. import score
    from ..files import write_text

    from ..errors import UsageError
    from ..loading import load_records
    from ..profiles import get_profile

    if bool(args.paths) == bool(args.replay):
        raise UsageError("Give records to score or --replay PROFILE (one of them).")
    if args.replay:
        get_profile(args.replay)  # an unknown name lists the valid ones before anything is read
    options.check_outputs({"--json": args.json}, {"PATH": args.paths, "--reference": args.reference})
    if not args.replay:
        result = score.score(*load(args.paths, args.reference))
        out.write(score.text(result, top=args.top))
    else:
        reference = load_records(args.reference)
        results = []
        if not score.replay_repeats(reference):  # before: nothing printed, exit 0
            raise UsageError(f"Nothing to replay in {', '.join(args.reference)}: no ok record with a repeat's "
                             "readings (an empty or failed run's records).")
        for repeat in range(score.replay_repeats(reference)):
            result = score.score(score.replay(reference, args.replay, repeat), reference)
            out.write(f"== {args.replay} replayed on the reference's repeat {repeat + 1} (its readings, the "
                      f"profile's looks and rules: not a run of the profile)\n")
            out.write(score.text(result, top=args.top) + "\n")
            results.append(result)
        result = {"replay": args.replay, "repeats": results}
    if args.json:
        write_text(args.json, json.dumps(result, indent=1) + "\n", "the scoring")
        count = len(result["pairs"]) if "pairs" in result else sum(len(r["pairs"]) for r in result["repeats"])
        out.write(f"wrote the scoring of {count} pair(s) to {args.json}\n")
    return 0
