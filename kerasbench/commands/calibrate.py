"""`kerasbench calibrate`: run the controls here, the smallest detectable leak, false positives and the floor."""

import argparse
import sys
from typing import TextIO

from . import options

NAME = "calibrate"
HELP = "run the controls here: smallest detectable leak, false positives, floor"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..allocators import ALLOCATORS, DEFAULT

    p.add_argument("--allocator", default=DEFAULT, help=f"comma list of: {', '.join(ALLOCATORS)} (default glibc)")
    p.add_argument("--runs", type=options.integer("runs", 1), default=20,
                   help="fresh workers per control and rate (default 20)")
    p.add_argument("--counts", default=None, metavar="N,N,...",
                   help="comma list of iteration counts (default: 4, 2000 and every count a budgeted run looks at, "
                   "8, 12, 18 … 1598; shorter counts read the first points of the longest, at no cost)")
    p.add_argument("--iterations", dest="counts", action=options.Renamed, new="--counts",
                   why="a comma list of counts; every other --iterations is one count")
    p.add_argument("--rates-kib", default="4,16,64,256", help="leak rates, KiB/iteration (default 4,16,64,256)")
    p.add_argument("--jobs", type=options.integer("jobs", 1), default=None,
                   help="control workers at once (default: $KERASBENCH_JOBS, else the usable cores)")
    p.add_argument("--heaps", default="native,python", help="native, python or both (default)")
    p.add_argument("--warmup", type=options.integer("warmup", 0), default=2,
                   help="warm-up iterations per worker (default 2)")
    p.add_argument("--tf-control", action="store_true",
                   help="also run the TF negative control (inference × reuse_model, ~10 s a worker) and report how "
                   "often it says `grows` at the chosen floor")
    p.add_argument("--show", action="store_true", help="print the stored calibrations, measure nothing")
    p.add_argument("--settling", nargs="+", metavar="REFERENCE", default=None,
                   help="measure nothing: derive the floor of TF's own heap settling per count from reference records "
                   "(e.g. docs/reference/protocol8/*.json: their TF pairs whose long runs are flat) and store it "
                   "beside the calibrations (docs/protocol.md)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Measure the controls per allocator and store the floor (or --show the stored ones)."""
    from .. import calibration, selection, session
    from ..allocators import ALLOCATORS, require
    from ..errors import unknown
    from ..machine import default_jobs
    from ..units import KIB

    if args.settling:
        return _settling(args.settling, out)
    names = selection.names(args.allocator, ALLOCATORS, "allocator")
    if args.show:
        out.write(calibration.render_stored(names))
        return 0
    for name in names:
        require(name)
    given = args.counts is not None  # '' is refused by ints, not read as "not given" (the default counts)
    iterations = options.ints(args.counts if given else ",".join(map(str, calibration.DEFAULT_COUNTS)),
                              getattr(args, "_counts_spelled", "counts"), minimum=3)
    rates = [r * KIB for r in options.ints(args.rates_kib, "rates-kib")]
    heaps = selection.names(args.heaps, calibration.HEAPS, "heaps")
    for h in heaps:
        if h not in calibration.HEAPS:
            raise unknown("heap", h, calibration.HEAPS)
    cals = session.calibrate(names, args.runs, iterations, rates, heaps, args.warmup, args.tf_control, sys.stderr,
                             jobs=args.jobs or default_jobs())
    out.write(calibration.render(cals))
    return 0


def _settling(paths: list, out: TextIO) -> int:
    """Derive TF's heap settling floors from reference records, store them in the user's calibration folder."""
    import os

    from .. import calibration_store, rule
    from ..files import make_folder, write_json
    from ..loading import load_records
    from ..spec import settling_candidate
    from ..units import KIB

    path = os.path.join(calibration_store.directory(), rule.settling.NAME)
    make_folder(os.path.dirname(path), "calibration")
    options.check_outputs({"the settling calibration": path}, {"--settling": paths}, calibration=True)
    loaded = load_records(paths)
    derived = rule.settling.derive([r for r, _, _ in loaded],
                              lambda r: (lambda n: rule.floor_for((r.get("spec") or {}).get("allocator") or "glibc",
                                                                    n, default=rule.DEFAULT_FLOOR,
                                                                    series=rule.settling.SERIES, beyond=False)),
                              settling_candidate, sources=[os.path.basename(p) for p in paths])
    if not derived["floors"]:
        out.write(f"no count has {rule.settling.MIN_NEGATIVES} negative series in {', '.join(paths)}: nothing stored\n")
        return 1
    rows = [[n, str(row["negatives"]), f"{row['largest_ci_top'] / KIB:+.2f}", row["from"], f"{row['floor'] / KIB:g}"]
            for n, row in derived["counts"].items()]
    from ..console import text_table

    out.write(f"TF's heap settling: {len(derived['negatives'])} negative series (flat long runs of TF pairs)\n")
    out.write("\n".join(text_table(["iterations", "negatives", "largest CI top (KiB/it)", "from", "floor (KiB/it)"],
                                    rows)) + "\n")
    write_json(path, derived, "settling calibration")
    out.write(f"wrote {path}\n")
    return 0
