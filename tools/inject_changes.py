"""The atlas as a change detector: two measurements of one column (the same TF on the same machine, measured apart)
replayed with known changes injected into the second, and the atlas' marks (kerasbench.atlas.model.mark) scored.

    python tools/inject_changes.py FIRST.json SECOND.json [--json OUT]

FIRST and SECOND are `kerasbench run --json` files of the same pairs (gzipped ones too: docs/atlas/replay/ keeps the
two the atlas' README quotes). Every pair ok in both is read three ways:

- **as measured** (no change): any `worse` or `better` mark is a false alarm (the software did not change);
- **a leak** of 1, 4, 16, 64, 256 or 1024 KiB/iteration added to every repeat's RSS and heap series from the first
  measured iteration: the mark should be `worse` (recall);
- **not a leak**, which should not be marked: a **one-off step** (16 MiB kept from the middle of the window on) and a
  **settling ramp** (64 KiB/iteration at first, decaying over 5 iterations: 320 KiB in all, then nothing).

Each injected record is judged again from its series by this kerasbench's rule (summary.rejudged), as the
measured ones are, so the marks are the rule's and nothing else's. Recall is given apart for the pairs the first
measurement reads `flat` (a leak that starts: what the map is for) and `grows` (a leak on a leak: compare's rule on
the RSS slope alone can see it). Precision is that of a population with as many changed pairs as unchanged ones:
recall / (recall + the false-alarm share as measured), among the flat pairs.
What a replay cannot say: where a sequential run would have stopped had the leak been there (each repeat is judged
over the iterations it measured).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import math
import os
import sys
import tempfile
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from kerasbench.atlas.model import mark
from kerasbench.errors import UsageError
from kerasbench.loading import load_records
from kerasbench.summary import rejudged
from kerasbench.units import KIB, MIB

LEAKS_KIB = (1, 4, 16, 64, 256, 1024)
STEP = 16 * MIB
RAMP_START, RAMP_SCALE = 64 * KIB, 5.0


def leak(rate: float) -> Callable[[int, int], float]:
    """`rate` bytes more per iteration: the i-th of n readings holds i × rate more."""
    return lambda i, n: rate * i


def step(size: float) -> Callable[[int, int], float]:
    """`size` bytes kept once, from the middle of the window on (a one-off allocation, not a rate)."""
    return lambda i, n: size if i >= n // 2 else 0.0


def ramp(start: float, scale: float) -> Callable[[int, int], float]:
    """A settling ramp: `start` bytes/iteration at first, decaying as exp(-i / scale) (its sum is about start×scale)."""
    step = math.exp(-1 / scale)
    return lambda i, n: start * (1 - step ** i) / (1 - step)  # the sum of start × step^j over j < i


def inject(record: dict, added: Callable[[int, int], float]) -> dict:
    """A copy of `record` whose every repeat's RSS and heap readings hold `added(i, n)` more bytes at reading i of n
    (the figures read from the series, final and peak, follow), judged again from its series."""
    record = copy.deepcopy(record)
    for repeat in record.get("repeats") or ():
        result = repeat.get("result") or {}
        series = result.get("series") or {}
        for name in ("rss", "heap"):
            values = series.get(name)
            if not values:
                continue
            n = len(values)
            series[name] = [None if v is None else v + added(i, n) for i, v in enumerate(values)]
        rss, heap = series.get("rss") or [], series.get("heap") or []
        if rss and rss[-1] is not None:
            result["final_rss"] = rss[-1]
            result["peak_loop_rss"] = max([result.get("peak_loop_rss") or 0] + [v for v in rss if v is not None])
        if heap and heap[-1] is not None:
            result["heap_final"] = heap[-1]
            result["heap_peak"] = max([result.get("heap_peak") or 0] + [v for v in heap if v is not None])
    return rejudged(record)


KINDS: List[Tuple[str, Optional[str], Callable[[int, int], float]]] = (
    [(f"leak {k} KiB/it", "worse", leak(k * KIB)) for k in LEAKS_KIB]
    + [(f"one-off step {STEP // MIB} MiB", None, step(STEP)),
       (f"settling ramp {RAMP_START // KIB} KiB/it, ×e^-i/{RAMP_SCALE:g}", None, ramp(RAMP_START, RAMP_SCALE))])


def _ok(record: dict) -> bool:
    return record.get("status") == "ok" and bool(record.get("repeats"))


def pairs_of(path: str) -> Dict[Tuple[str, str], dict]:
    """{(loop, strategy): record} of a records file, gzipped or not (ok records only)."""
    if not path.endswith(".gz"):
        return {(r["loop"], r["strategy"]): r for r, _, _ in load_records([path]) if _ok(r)}
    with tempfile.TemporaryDirectory() as folder:  # the records file's checks and limits are load_records'
        plain = os.path.join(folder, os.path.basename(path)[:-3])
        try:
            with gzip.open(path, "rb") as f, open(plain, "wb") as out:
                out.write(f.read())
        except (OSError, EOFError) as e:
            raise UsageError(f"Cannot read {path}: {e}.") from None
        return pairs_of(plain)


def label(pair: Tuple[str, str]) -> str:
    return f"{pair[0]} × {pair[1]}"


def _share(hits: int, of: int) -> Optional[float]:
    return hits / of if of else None


def _precision(recall: Optional[float], false_share: Optional[float]) -> Optional[float]:
    """The share of marks that are real in a population with as many changed pairs as unchanged ones."""
    if recall is None or false_share is None or recall + false_share == 0:
        return None
    return recall / (recall + false_share)


def evaluate(first: Dict[Tuple[str, str], dict], second: Dict[Tuple[str, str], dict],
             kinds_of: Optional[Sequence[str]] = None) -> dict:
    """The marks of every pair of both, as measured and with each kind injected into `second` (`kinds_of`: those of
    KINDS' names only): counts and shares, overall and by the first measurement's verdict (flat: a leak that
    starts; grows: a leak on a leak)."""
    shared = sorted(set(first) & set(second))
    if not shared:
        raise UsageError("The two records files share no pair measured ok in both: nothing to replay.")
    before = {p: rejudged(first[p]) for p in shared}
    after = {p: rejudged(second[p]) for p in shared}
    base = {p: before[p]["summary"].get("verdict") for p in shared}
    groups = {"flat": [p for p in shared if base[p] == "flat"], "grows": [p for p in shared if base[p] == "grows"]}
    null = {p: (mark(before[p], after[p]) or (None, ""))[0] for p in shared}
    alarms = [p for p in shared if null[p] in ("worse", "better")]
    false = {name: _share(sum(p in alarms for p in pairs), len(pairs)) for name, pairs in groups.items()}
    false["all"] = _share(len(alarms), len(shared))
    rows = [{"kind": "as measured (no change)", "expected": None, "pairs": len(shared), "marked": len(alarms),
             "false_share": false, "marks": {label(p): null[p] for p in alarms}}]
    for name, expected, added in KINDS:
        if kinds_of is not None and name not in kinds_of:
            continue
        kinds = {p: (mark(before[p], inject(second[p], added)) or (None, ""))[0] for p in shared}
        row = {"kind": name, "expected": expected, "pairs": len(shared)}
        if expected:
            hits = {p for p in shared if kinds[p] == expected}
            recall = {g: _share(len(hits & set(pairs)), len(pairs)) for g, pairs in groups.items()}
            recall["all"] = _share(len(hits), len(shared))
            row.update(marked=len(hits), recall=recall,
                       precision={g: _precision(recall[g], false[g]) for g in recall},
                       missed=[label(p) for p in shared if p not in hits])
        else:
            wrong = [p for p in shared if kinds[p] in ("worse", "better")]
            row.update(marked=len(wrong), false_share=_share(len(wrong), len(shared)),
                       marks={label(p): kinds[p] for p in wrong})
        rows.append(row)
    return {"pairs": len(shared), "by_first_verdict": {g: len(pairs) for g, pairs in groups.items()},
            "false_share": false["all"], "rows": rows}


def _pct(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.0%}"


def table(result: dict) -> str:
    groups = result["by_first_verdict"]
    lines = [f"{result['pairs']} pairs measured ok twice ({groups['flat']} flat, {groups['grows']} growing at the "
             "first); marks of the second measurement read against the first",
             "", f"{'change':<36} {'should mark':>11} {'marked':>6} {'recall flat':>11} {'recall grows':>12} "
                 f"{'precision flat':>14}"]
    for row in result["rows"]:
        recall, precision = row.get("recall") or {}, row.get("precision") or {}
        lines.append(f"{row['kind']:<36} {row['expected'] or 'nothing':>11} {row['marked']:>6} "
                     f"{_pct(recall.get('flat')):>11} {_pct(recall.get('grows')):>12} "
                     f"{_pct(precision.get('flat')):>14}")
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", help="`kerasbench run --json` records of a column")
    parser.add_argument("second", help="the same pairs measured again, apart (same TF, same machine)")
    parser.add_argument("--json", help="write the scores here too")
    args = parser.parse_args(argv)
    try:
        result = evaluate(pairs_of(args.first), pairs_of(args.second))
    except UsageError as e:
        print(f"inject_changes: error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
