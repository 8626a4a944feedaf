"""`kerasbench report`: the records as one self-contained HTML page, or one picture of them (--svg, --png)."""

import argparse
import os
from typing import TextIO

from . import options

NAME = "report"
HELP = "the same records as compare, as one self-contained HTML page (heat-tables, plots, curves) or one picture"


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.records(p)
    p.add_argument("--output", metavar="PATH",
                   help="the HTML file, written atomically "
                   "(default: .asv/html/kerasbench-report.html, beside the dashboard; not written with --svg or "
                   "--png unless given)")
    p.add_argument("--svg", metavar="FILE", type=options.path,
                   help="write one picture, ready to paste into an issue, as SVG (--pair or --metric chooses it)")
    p.add_argument("--png", metavar="FILE", type=options.path,
                   help="the same picture as PNG, twice its size: the SVG drawn by headless chromium (Debian's "
                   "chromium on PATH)")
    p.add_argument("--pair", metavar="LOOP:STRATEGY",
                   help="the picture: this pair's RSS and heap after each iteration, with its baseline and floor")
    p.add_argument("--metric", metavar="NAME",
                   help="the picture: this metric of one loop shape, the strategies side by side with their 95%% "
                   "CIs (e.g. growth_per_iter, peak_loop)")
    p.add_argument("--loop", help="with --metric: the loop shape (needed when the records hold several)")
    p.add_argument("--tf", metavar="VERSION",
                   help="the picture's TF version (default: the newest for --pair, every one for --metric)")
    p.add_argument("--atlas", action="store_true",
                   help="write the atlas alone (every loop × strategy against every TF version, the changes from "
                   "one version to the next marked with the commands that explain them); the full report shows it "
                   "first when the records hold two or more versions; written as `kerasbench atlas` writes it, "
                   f"into {options.ATLAS_OUTPUT} with its data, or --output FILE: the page alone)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from .. import pictures, report
    from ..atlas.data import PAGE
    from ..atlas.write import write as write_atlas
    from ..errors import UsageError

    wanted = {"SVG": args.svg, "PNG": args.png}
    choices = [name for name, value in (("--pair", args.pair), ("--metric", args.metric), ("--loop", args.loop),
                                        ("--tf", args.tf)) if value is not None]
    if choices and not any(wanted.values()):
        raise UsageError(f"{', '.join(choices)} {'chooses' if len(choices) == 1 else 'choose'} the picture of --svg "
                         "or --png: give --svg FILE or --png FILE too.")
    if args.atlas and (any(wanted.values()) or choices or args.baseline is not None):
        extra = [n for n, v in (("--svg", args.svg), ("--png", args.png), ("--baseline", args.baseline)) if v] + choices
        raise UsageError(f"--atlas writes the atlas page alone, each version read against the previous one: "
                         f"drop {', '.join(extra)} (the full report, without --atlas, takes them).")
    # the default's folder, .asv/html, is made later
    options.check_outputs({"--output": args.output, "--svg": args.svg, "--png": args.png}, {"PATH": args.paths})
    if any(wanted.values()):
        what = pictures.write_picture(args.paths, svg=args.svg, png=args.png, pair=args.pair, metric=args.metric,
                                    loop=args.loop, version=args.tf, baseline=args.baseline,
                                    rejudge=args.rejudge)
        for kind, path in wanted.items():
            if path:
                out.write(f"wrote the {kind} of {what} to {path}\n")
        if args.output is None:
            return 0
    if args.atlas:
        folder, name = ((os.path.dirname(args.output) or ".", os.path.basename(args.output)) if args.output
                        else (options.ATLAS_OUTPUT, PAGE))
        path = write_atlas(args.paths, folder, rejudge=args.rejudge, page_name=name, with_data=not args.output)[-1]
        out.write(f"wrote the atlas to {path} (one file, works offline)\n")
        return 0
    path = report.write(args.paths, args.output or report.DEFAULT_OUTPUT, baseline=args.baseline,
                        rejudge=args.rejudge)
    out.write(f"wrote the HTML report to {path} (one file, works offline)\n")
    return 0
