"""`kerasbench atlas`: every loop × strategy against every TF version, as one offline page and its small data file."""

import argparse
import os
from typing import TextIO

from . import options

NAME = "atlas"
DEFAULT_OUTPUT = options.ATLAS_OUTPUT
HELP = ("every loop × strategy against every TF version on one offline page, with its small data file "
        "(docs/atlas/ is the project's)")


def parser_keywords() -> dict:
    return {"description": "Write the atlas of records of several TF versions (an asv records tree, e.g. "
            ".asv/records/<machine>, or `run --json` files) into a folder: index.html, one page that works offline "
            "(a row per loop × strategy, a column per version, each change from the previous version marked with "
            "its picture and the triage, attribute and ablate commands that explain it), and atlas.json, what the "
            "page shows and nothing more (about 0.4 KiB a cell; `kerasbench atlas FOLDER/atlas.json --output "
            "FOLDER` makes the page again from it). docs/atlas/README.md: how the project's is made."}


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.records(p, what="records of two or more TF versions, or one atlas.json", baseline=False)
    p.add_argument("--output", metavar="FOLDER", type=options.path, default=DEFAULT_OUTPUT,
                   help=f"the folder of index.html and atlas.json (default: {DEFAULT_OUTPUT}, beside the dashboard)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from .. import atlas

    written = atlas.write(args.paths, args.output, rejudge=args.rejudge)
    sizes = ", ".join(f"{os.path.basename(p)} {os.path.getsize(p) / 1024:,.0f} KiB" for p in written)
    kept = "" if len(written) > 1 else f" ({atlas.DATA}, the input, kept as it is)"
    out.write(f"wrote the atlas to {args.output}: {sizes}{kept}; open {written[-1]} in a browser, it needs no "
              "server\n")
    return 0
