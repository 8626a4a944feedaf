"""`kerasbench merge`: the union of asv results and records trees (a fan-out's jobs) into one."""

import argparse
from typing import TextIO

NAME = "merge"
HELP = "the union of asv results and records trees (a fan-out's jobs) into one"


def parser_keywords() -> dict:
    return {"description": "Merge the .asv folders of several runs (each with results/ and records/, or a clone "
            "holding .asv/) into DEST: files only one side has are copied, identical ones left alone (merging twice "
            "changes nothing); the same results file with other content stops the merge before anything is "
            "written. machine.json: the newest copy; benchmarks.json: the union. Then `kerasbench publish --config "
            "DEST-clone/asv.conf.json`."}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folders", nargs="+", metavar="SRC... DEST", help="folders to merge, then the destination")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """The union into DEST; a conflict writes nothing (exit 2)."""
    from ..merge import asv_folder, merge

    *sources, dest = args.folders
    written, unchanged, notes = merge(sources, dest)
    for note in notes:
        out.write(f"note: {note}\n")
    out.write(f"merged {len(sources)} folder(s) into {asv_folder(dest, dest=True)}: {written} file(s) written, "
              f"{unchanged} already there\n")
    return 0
