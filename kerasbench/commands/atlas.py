"""`kerasbench atlas`: every loop × strategy against every TF version, as one offline page and its small data file."""

import argparse
import datetime
import os
import re
from typing import List, Sequence, TextIO, Tuple

from . import options
from ..errors import UsageError
from ..units import MIB

NAME = "atlas"
DEFAULT_OUTPUT = options.ATLAS_OUTPUT
HELP = ("every loop × strategy against every TF version on one offline page, with its small data file "
        "(docs/atlas/ is the project's)")

# The nightly columns an atlas with --nightlies keeps (docs/workflow.md, "The atlas, alive"): the newest KEEP_DAYS
# days, and before them the first day kept of each of the KEEP_MONTHS months before (the first day of a month does
# not move as days are added: a monthly column stays the same column). At most KEEP_DAYS + KEEP_MONTHS columns.
KEEP_DAYS = 14
KEEP_MONTHS = 12
DAY_FILE = re.compile(r"(\d{4}-\d{2}-\d{2})\.json")
# The published atlas' size budget (--nightlies): the page and its data file, each. docs/atlas's 39 columns and 7
# report rows (protocol 8) are 4,231 KiB (with its answers) and 1,908 KiB; its entries and KEEP_DAYS + KEEP_MONTHS
# quiet nightly columns (65) measured 4.74 and 3.06 MiB (tests/test_atlas_alive.py). Raised by 1 MiB each in stop
# 47, when 49 columns with a floors stamp in every cell measured 3.95 and 3.36 MiB; the stamps are kept once per
# column since.
PAGE_BUDGET = 5 * MIB
DATA_BUDGET = 4 * MIB


def parser_keywords() -> dict:
    return {"description": "Write the atlas of records of several TF versions (an asv records tree, e.g. "
            ".asv/records/<machine>, or `run --json` files) into a folder: index.html, one page that works offline "
            "(a row per loop × strategy, a column per version, each change from the previous version marked with "
            "its picture and the triage, attribute and ablate commands that explain it), and atlas.json, what the "
            "page shows and nothing more (about 0.6 KiB a cell; `kerasbench atlas FOLDER/atlas.json --output "
            "FOLDER` makes the page again from it; `kerasbench atlas FOLDER/atlas.json RECORDS... --output FOLDER` "
            "adds the records' cells to it). With --nightlies, a column per nightly day kept beside them "
            "(the workflow's published atlas). docs/atlas/README.md: how the project's is made."}


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.records(p, what="records of two or more TF versions, or one atlas.json (with records: their cells "
                    "added to its columns, a cell of the same pair and column replaced)", baseline=False)
    p.add_argument("--output", metavar="FOLDER", type=options.path, default=DEFAULT_OUTPUT,
                   help=f"the folder of index.html and atlas.json (default: {DEFAULT_OUTPUT}, beside the dashboard)")
    p.add_argument("--nightlies", metavar="FOLDER", type=options.path,
                   help="a folder of nightly records, one <YYYY-MM-DD>.json per nightly's day (the workflow's "
                        f"history nightly/): a column each beside PATH's, the newest {KEEP_DAYS} days and the first "
                        f"of each of the {KEEP_MONTHS} months before, each judged as it was measured (its protocol "
                        "and floors kept: two protocols are two columns' stamps, not refused); the page and the "
                        f"data then have a size budget ({PAGE_BUDGET // MIB} and {DATA_BUDGET // MIB} MiB): over it, "
                        "the oldest nightly columns are left out until they fit, and when the releases and the "
                        "newest nightly alone do not, exit 2 and nothing written")
    p.add_argument("--reference", nargs="+", action="extend", default=[], metavar="FILE", type=options.path,
                   help="long runs of one release's pairs (repeatable; docs/reference/protocol8/tf-2.21.0.json): the "
                        "atlas column of that release scored as shown against them, said under the map (how far to "
                        "trust a cell: `kerasbench score` of that column, in one sentence); a folder: each of its "
                        "files whose release the atlas shows (docs/reference/protocol8)")
    add_answer_arguments(p)


def add_answer_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--answer", action="store_true",
                   help="first run the commands the list of changes names (triage, attribute, ablate: each "
                        "measures, minutes to an hour each) that FOLDER/answers.json has not answered, keeping each "
                        "answer as it finishes (an interrupt keeps what finished; a second call goes on), then write "
                        "the page with every answer beside its command (without --answer the page shows the answers "
                        "FOLDER/answers.json holds)")
    p.add_argument("--answer-limit", type=options.integer("answer-limit", 1), default=0, metavar="N",
                   help="with --answer: at most N commands this call: one answer for each change first, then "
                        "the most telling (a label's flip before slope changes, then the command explaining more "
                        "changes; default: all)")
    p.add_argument("--answer-minutes", type=options.number("answer-minutes", 0.1), default=0,
                   metavar="M",
                   help="with --answer: start no command after M minutes this call (one already started runs to "
                        "its end: a triage of nightlies takes minutes); the rest is left for another call (the "
                        "workflow's nightly budget)")
    p.add_argument("--answer-only", type=options.words("answer-only"), default=(), metavar="COLUMNS",
                   help="with --answer: only the changes into or out of these columns, a comma list of the page's "
                        "labels (2.14.1, 2.21.0+py3.12; a nightly's label or nightly:YYYY-MM-DD): a release's "
                        "changes answered first, the rest left for another call")
    p.add_argument("--config", metavar="FILE", type=options.path,
                   help="with --answer: the asv config whose environments the commands measure in (e.g. "
                        "asv.matrix.json)")
    p.add_argument("--answer-plan", action="store_true",
                   help="with --answer: print the commands it would run this call, in its order, each with the "
                        "changes it explains, and run none (nor write the page)")


def kept_days(days: Sequence[str], keep_days: int = KEEP_DAYS, keep_months: int = KEEP_MONTHS) -> List[str]:
    """The nightly days (YYYY-MM-DD) the atlas keeps of `days`, in order: the newest `keep_days`, and of the older
    ones the first day of each month, for the `keep_months` newest such months."""
    days = sorted(set(days))
    recent = days[-keep_days:] if keep_days > 0 else []
    firsts: dict = {}
    for day in days:
        firsts.setdefault(day[:7], day)
    older = [day for day in sorted(firsts.values()) if not recent or day < recent[0]]
    return sorted((older[-keep_months:] if keep_months > 0 else []) + recent)


def nightly_files(folder: str) -> List[str]:
    """The day files of a nightlies folder the atlas keeps (kept_days), oldest first; the others (release.json,
    anything not named by a day) are not columns."""
    if not os.path.isdir(folder):
        raise UsageError(f"Cannot read the nightlies from {folder}: not a folder; give the folder of "
                         "<YYYY-MM-DD>.json nightly records (the workflow keeps them in its history's nightly/).")
    days = {}
    for name in os.listdir(folder):
        m = DAY_FILE.fullmatch(name)
        if m and os.path.isfile(os.path.join(folder, name)):
            try:
                datetime.date.fromisoformat(m.group(1))
            except ValueError:
                continue  # 2026-13-40.json names no day
            days[m.group(1)] = os.path.join(folder, name)
    return [days[d] for d in kept_days(days)]


def _over(sizes: dict) -> list:
    """[(file name, size, budget constant's name, budget)] of the atlas' files over their budgets."""
    from ..atlas.data import DATA, PAGE

    budgets = {PAGE: ("PAGE_BUDGET", PAGE_BUDGET), DATA: ("DATA_BUDGET", DATA_BUDGET)}
    return [(name, size, *budgets[name]) for name, size in sizes.items()
            if name in budgets and size > budgets[name][1]]


def _budget_error(path: str, size: int, constant: str, budget: int, more: str) -> UsageError:
    return UsageError(f"The atlas is over its size budget: {path} is {size / MIB:.2f} MiB, its budget "
                      f"{budget / MIB:.2f} MiB (kerasbench.commands.atlas.{constant}){more}; raise the budget or keep "
                      "fewer columns, and say so in docs/workflow.md.")


def fit(paths: Sequence[str], nightlies: Sequence[str], groups: dict, output: str,
        trust: Sequence[str] = ()) -> Tuple[List[str], dict, str]:
    """(the nightly files kept, their groups, a note) within the budget: the atlas of every column, else the oldest
    nightly columns left out, a quarter of them at a time, until the page (with its `trust` lines) and its data fit
    (the newest nightly is kept); a one-line UsageError naming the file and its size against its budget when even the
    releases and the newest nightly do not fit."""
    from ..atlas.data import DATA, PAGE, data, data_text
    from ..atlas.html import page

    columns = {path: {v for v, cells in groups.items() for _, where in cells.values() if where == path}
               for path in nightlies}
    kept, note = list(nightlies), ""
    while True:
        shown = {v: cells for v, cells in groups.items()
                 if not any(v in columns[p] for p in nightlies if p not in kept)}
        used = [*paths, *kept]
        sizes = {PAGE: len(page(used, shown, trust=trust).encode("utf-8")),
                 DATA: len(data_text(data(shown)).encode("utf-8"))}
        over = _over(sizes)
        if not over:
            left = len(nightlies) - len(kept)
            if left:
                note = (f"; {left} oldest nightly column(s) left out to fit the size budget ({PAGE_BUDGET / MIB:.0f} "
                        f"and {DATA_BUDGET / MIB:.0f} MiB)")
            return kept, shown, note
        if len(kept) <= 1:
            name, size, constant, budget = over[0]
            with_what = f" with {len(kept)} nightly column(s)" if kept else ""
            raise _budget_error(os.path.join(output, name), size, constant, budget, f"{with_what}; nothing written")
        kept = kept[max(1, len(kept) // 4):]


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..atlas.changes import questions
    from ..atlas.data import DATA
    from ..atlas.inputs import group_columns, holds_data, merge
    from ..atlas.trust import trust_lines
    from ..atlas.write import write
    from ..compare.groups import load
    from ..nightlies import check_day_files

    paths, groups, nightlies, note, trust = list(args.paths), None, [], "", None
    if args.nightlies is not None:
        if any(holds_data(p) for p in paths):
            raise UsageError("--nightlies adds columns to records, not to an atlas file (kerasbench-atlas): give the "
                             "records of the releases.")
        nightlies = check_day_files(nightly_files(args.nightlies))  # a release's records under a day's name: refused
        groups = group_columns(load(paths + nightlies), args.rejudge)
        # a reference scores a release's column, which fit never leaves out: its lines are the page's whatever fits
        trust = trust_lines(groups, args.reference)
        nightlies, groups, note = fit(paths, nightlies, groups, args.output, trust)
    if (args.answer_limit or args.answer_minutes or args.answer_only or args.config or args.answer_plan) and not \
            args.answer:
        raise UsageError("--answer-limit, --answer-minutes, --answer-only, --answer-plan and --config go with "
                         "--answer (they say which of the changes' commands to run and how).")
    added = ""
    if groups is None:
        groups, counts = merge(paths, args.rejudge)
        if counts["columns"]:
            added = (f"; {counts['added'] + counts['replaced']} cell(s) of the records put into the atlas file's "
                     f"columns ({counts['replaced']} in place of its own, {counts['columns']} column(s))")
    if trust is None:  # a reference's error before any --answer runs (hours), as the records' are
        trust = trust_lines(groups, args.reference)
    if args.answer:
        from .. import answers
        from ..files import make_folder

        path = os.path.join(args.output, answers.FILE)
        args.config = answers.check_config(args.config)  # once, before any command: each would fail alike
        asked = questions(groups, args.answer_only, answers.read(path)["answers"])
        if args.answer_plan:
            answers.plan(asked, path, out, limit=args.answer_limit)
            return 0
        make_folder(args.output, "the atlas")
        answers.answer_all(asked, path, out, config=args.config, limit=args.answer_limit, minutes=args.answer_minutes)
    written = write(paths + nightlies, args.output, groups=groups, rejudge=args.rejudge, trust=trust)
    over = _over({os.path.basename(p): os.path.getsize(p) for p in written}) if args.nightlies is not None else []
    if over:  # fit measured the same text: a guard
        name, size, constant, budget = over[0]
        raise _budget_error(os.path.join(args.output, name), size, constant, budget, " as written")
    sizes = ", ".join(f"{os.path.basename(p)} {os.path.getsize(p) / 1024:,.0f} KiB" for p in written)
    kept = "" if len(written) > 1 else f" ({DATA}, the input, kept as it is)"
    days = (f" with {len(nightlies)} nightly column(s) of {args.nightlies}" if args.nightlies is not None else "")
    out.write(f"wrote the atlas to {args.output}{days}: {sizes}{kept}{added}{note}; open {written[-1]} in a "
              "browser, it needs no server\n")
    return 0
