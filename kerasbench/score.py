"""`kerasbench score`: how often a profile's verdicts agree with long reference runs of the same pairs.

The reference (docs/reference/: the `reference` profile, long runs of every CPU pair on a release) is what
happened over a long loop; a profile is worth its verdicts only as far as they agree with it. Both sides are
judged again from their series with this kerasbench's rules (kerasbench.rule: the warm-up rule, the floors
at the counts judged, the sequential level of each side's own plan), so a change of the rules is scored on the
records already measured. Pairs are matched by TF release (the records' labels: 2.21.0, 2.16.2+tf_keras …),
loop and strategy; pairs that are not ok on both sides are counted, not scored.

An atlas data file (docs/atlas/atlas.json) keeps no series: its cells are scored as shown, their stored labels at
their stored floors (the reference judged at those floors), the trust figure of the page a reader looks at.

A verdict is a claim relative to its margin, and the margin does not depend on the count (protocol 9): the long run
answers the question the scored record asked by being judged as it is, at its own counts' resolution against the
same margin. (Protocols up to 8 judged the reference at the scored record's floors, a question that moved with the
count; `reference.own` is kept for the atlas' cells, scored as shown at their stored floors.)

Two confusion matrices, reference in rows: the RSS verdict (grows / flat / inconclusive) and "what grew" (leak,
retention, step, settling, flat, inconclusive). Agreement is the diagonal's share, of every pair and of the pairs
the reference decides: where its long run is itself undecided (its repeats disagree, or it is still settling at
the end) there is no truth to score against, and the profile's label there is shown, not counted right or wrong.
A pair the reference calls flat (RSS flat, and nothing grew) that the profile calls `grows` or a leak is a false
alarm, listed apart.

A verdict can be right and its slope not: a growth that is fast for its first iterations and slower after reads
`grows` at both, at the rate of the iterations each measured. So the slopes of the pairs both sides read `grows`
are set side by side too: the scored slope over the reference's, their median, and each pair off by more than
SLOPE_OFF either way, with the iterations each side measured (on TF 2.12.1 the cells the atlas decided after 12
iterations show up to ×25 the long run's slope).
"""

from __future__ import annotations

import copy
import os
import statistics
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from . import rule
from .console import printable, text_table
from .record import Record
from . import summary
from .loading import load_records
from .rule import GROWTH_KINDS, VERDICTS
from .errors import UsageError
from .units import KIB

if TYPE_CHECKING:  # the type only: the spec module loads the loop shapes (numpy)
    from .spec import RunSpec

KINDS = tuple(GROWTH_KINDS) + ("n/a",)
# A scored slope within this factor of the reference's (either way) tells a reader the size of the growth; beyond
# it, the direction may hold but the size read off the record does not (a rate of its first iterations).
SLOPE_OFF = 1.5


def rejudged(record: Record, floors: Optional[Dict[str, float]] = None, margin: Optional[float] = None) -> dict:
    """The record's summary judged again from its series with this kerasbench's rules (summary.rejudged)."""
    return summary.rejudged(record, floors, margin)["summary"]


def has_series(record: Record) -> bool:
    """Whether the record keeps a repeat's series (a run's records do; an atlas cell keeps its summary only)."""
    return any(((rep or {}).get("result") or {}).get("series") for rep in record.get("repeats") or ())


def as_shown(record: Record) -> dict:
    """An atlas cell's summary as it was judged and shown, its heap floor named where the cell's stamp says the
    64 KiB default judged both series (protocol 7's cells stored the RSS floor alone)."""
    shown = dict(record.get("summary") or {})
    heap_from = ((shown.get("floors_from") or {}).get("heap") or {}).get("kind")
    if shown.get("heap_floor") is None and heap_from == "default" and shown.get("floor") is not None:
        shown["heap_floor"] = shown["floor"]
    return shown


def _labels(summary: dict) -> Tuple[str, str]:
    return summary.get("verdict") or "inconclusive", summary.get("growth_kind") or "n/a"


def _by_pair(loaded: Sequence[Tuple[Record, str, str]]) -> Dict[Tuple[str, str, str], Record]:
    return {(version, r["loop"], r["strategy"]): r for r, _, version in loaded}


def score(records: Sequence[Tuple[Record, str, str]], reference: Sequence[Tuple[Record, str, str]]) -> Dict[str, Any]:
    """The scoring of `records` against `reference` (both as loading.load_records gives them): every matched pair's
    labels on both sides, the confusion matrices, the agreement and the false alarms."""
    mine, ref = _by_pair(records), _by_pair(reference)
    rows, unscored = [], []
    for key in sorted(set(mine) & set(ref)):
        a, b = ref[key], mine[key]
        if a["status"] != "ok" or b["status"] != "ok":
            unscored.append({"pair": key, "why": f"status {a['status']} (reference) / {b['status']}"})
            continue
        shown = not has_series(b)  # an atlas cell: its labels as shown, at its floors
        sb = as_shown(b) if shown else rejudged(b)
        # the long run asked the same question: by this rule, the scored record's margin (a given one, else the
        # default), at its own counts' resolution; an atlas cell of an older rule at its stored floors, as it asked
        given = (sb.get("heap_margin") or sb["margin"]) if str(sb.get("margin_source") or "").startswith("given") \
            else None  # the given floor itself: the heap's margin (RSS's is at least RSS_LEAST_MARGIN)
        own = rejudged(a, margin=given)
        sa = own if sb.get("margin") is not None or not shown else \
            rejudged(a, {"rss": 0.0, "heap": 0.0}, margin=sb["floor"])  # the old rule's question: under its floor?
        (ra, ka), (rb, kb), (ro, ko) = _labels(sa), _labels(sb), _labels(own)
        flat_here, flat_own = _flat(ra, ka), _flat(ro, ko)
        alarm = rb == "grows" or kb == "leak"
        rows.append({"version": key[0], "loop": key[1], "strategy": key[2], "as_shown": shown,
                     "reference": {"verdict": ra, "kind": ka, **_facts(sa),
                                   "own": {"verdict": ro, "kind": ko, "floor": own["floor"],
                                           "heap_floor": own.get("heap_floor")}},
                     "scored": {"verdict": rb, "kind": kb, **_facts(sb)},
                     "agree_verdict": ra == rb, "agree_kind": ka == kb,
                     # what a reader is told against what the long run says at its own (calibrated) floors
                     "agree_own_verdict": ro == rb, "agree_own_kind": ko == kb,
                     # nothing grows in the long run: a leak where there is none
                     "false_alarm": flat_here and flat_own and alarm,
                     # an atlas cell of an older rule: flat at its stored floors, not at the reference's own finer
                     # ones (a growth under the floor the cell claimed it was over)
                     "overstated": flat_here and not flat_own and alarm})
    only = {"reference only": sorted(set(ref) - set(mine)), "scored only": sorted(set(mine) - set(ref))}
    return {"pairs": rows, "unscored": unscored, "unmatched": {k: [list(p) for p in v] for k, v in only.items()},
            "verdict": _matrix(rows, "verdict", VERDICTS), "kind": _matrix(rows, "kind", KINDS),
            "agreement": {name: _share(rows, name) for name in ("verdict", "kind")},
            "decided": {name: sum(_decided(r, name) for r in rows) for name in ("verdict", "kind")},
            "agreement_decided": {name: _share([r for r in rows if _decided(r, name)], name)
                                  for name in ("verdict", "kind")},
            "false_alarms": sum(r["false_alarm"] for r in rows), "overstated": sum(r["overstated"] for r in rows),
            "as_shown": sum(r["as_shown"] for r in rows),
            "agreement_own": {name: _share([r for r in rows if r["reference"]["own"][name] not in UNDECIDED[name]],
                                           f"own_{name}") for name in ("verdict", "kind")},
            "slopes": slopes(rows)}


def slopes(rows: Sequence[dict]) -> Dict[str, Any]:
    """The RSS slopes of the pairs both sides read `grows`: each pair's scored slope over the reference's, their
    median, how many are within SLOPE_OFF either way, and the pairs beyond it (largest factor first)."""
    both = [r for r in rows if r["reference"]["verdict"] == r["scored"]["verdict"] == "grows"
            and (r["reference"]["slope"] or 0) > 0 and (r["scored"]["slope"] or 0) > 0]
    ratios = [r["scored"]["slope"] / r["reference"]["slope"] for r in both]
    off = sorted(([r, x] for r, x in zip(both, ratios) if not 1 / SLOPE_OFF <= x <= SLOPE_OFF),
                 key=lambda rx: -max(rx[1], 1 / rx[1]))
    return {"pairs": len(both), "median_ratio": statistics.median(ratios) if ratios else None,
            "within": len(both) - len(off), "off_by": SLOPE_OFF,
            "off": [{"version": r["version"], "loop": r["loop"], "strategy": r["strategy"], "ratio": x,
                     "scored": r["scored"]["slope"], "reference": r["reference"]["slope"],
                     "scored_measured": r["scored"]["measured"], "reference_measured": r["reference"]["measured"]}
                    for r, x in off]}


# The reference's labels that say its long run could not decide: no truth to score a profile against.
UNDECIDED = {"verdict": ("inconclusive",), "kind": ("inconclusive", "settling")}


def _decided(row: dict, name: str) -> bool:
    return row["reference"][name] not in UNDECIDED[name]


def _share(rows: Sequence[dict], name: str) -> Optional[float]:
    return sum(r[f"agree_{name}"] for r in rows) / len(rows) if rows else None


def _flat(verdict: str, kind: str) -> bool:
    return verdict == "flat" and kind in ("flat", "n/a")


def _facts(summary: dict) -> dict:
    return {"slope": summary.get("growth_per_iter"), "low": summary.get("growth_ci_low"),
            "high": summary.get("growth_ci_high"), "heap": summary.get("heap_growth_per_iter"),
            "measured": summary.get("measured"), "stopped": summary.get("stopped"), "why": summary.get("why") or ""}


def _matrix(rows: Sequence[dict], label: str, order: Sequence[str]) -> Dict[str, Dict[str, int]]:
    seen = [x for x in order if any(r["reference"][label] == x or r["scored"][label] == x for r in rows)]
    return {a: {b: sum(r["reference"][label] == a and r["scored"][label] == b for r in rows) for b in seen}
            for a in seen}


def _kib(value: Any) -> str:
    return "n/a" if value is None else f"{value / KIB:+.1f}"


def _side_text(side: dict) -> str:
    n = ",".join(str(x) for x in side.get("measured") or [])
    return (f"{side['verdict']}/{side['kind']} RSS {_kib(side['slope'])} [{_kib(side['low'])}, {_kib(side['high'])}] "
            f"heap {_kib(side['heap'])} KiB/it, n={n}")


def text(result: Dict[str, Any], top: int = 0) -> str:
    """The scoring for people: both matrices, agreement, false alarms, the pairs that disagree (`top`: at most)."""
    lines = []
    if result.get("as_shown"):
        lines += [f"{result['as_shown']} of {len(result['pairs'])} pair(s) scored as shown: an atlas's cells keep no "
                  "series, so their stored labels at their stored floors are scored, not judged again", ""]
    for name, title in (("verdict", "RSS verdict"), ("kind", "what grew")):
        matrix = result[name]
        labels = list(matrix)
        share = result["agreement"][name]
        agree = "n/a" if share is None else f"{share:.0%}"
        decided, share_decided = result["decided"][name], result["agreement_decided"][name]
        undecided = len(result["pairs"]) - decided
        of_decided = ("" if not undecided else
                      f"; {'n/a' if share_decided is None else f'{share_decided:.0%}'} of the {decided} the reference "
                      f"decides ({undecided} it does not: {'/'.join(UNDECIDED[name])})")
        lines.append(f"{title}: reference (rows) vs scored (columns), agreement {agree} of {len(result['pairs'])} "
                     f"pairs{of_decided}")
        lines += text_table(["reference \\ scored", *labels], [[a, *(str(matrix[a][b]) for b in labels)]
                                                               for a in labels])
        lines.append("")
    own = result.get("agreement_own") or {}
    if own.get("verdict") is not None or own.get("kind") is not None:
        lines.append("against the reference at its own floors, of the pairs it decides there (what a reader is told vs "
                     "what the long run says): " + ", ".join(
                         f"{title} {'n/a' if own.get(name) is None else format(own[name], '.0%')}"
                         for name, title in (("verdict", "RSS verdict"), ("kind", "what grew"))))
    lines.append(f"false alarms (reference flat at the scored floors and at its own, scored grows or leak): "
                 f"{result['false_alarms']}")
    lines.append(f"overstated (reference flat at the scored floors but not at its own finer ones, scored grows or "
                 f"leak): {result.get('overstated', 0)}")
    lines += _slopes_text(result.get("slopes"), top)
    differ = [r for r in result["pairs"] if not (r["agree_verdict"] and r["agree_kind"])]
    if differ:
        lines += ["", f"pairs that disagree ({len(differ)}):"]
        shown = differ[:top] if top else differ
        for r in shown:
            alarm = "  FALSE ALARM" if r["false_alarm"] else "  OVERSTATED" if r.get("overstated") else ""
            lines.append(f"  TF {r['version']} {r['loop']} × {r['strategy']}{alarm}")
            for side in ("reference", "scored"):  # each side's own why, on its own line
                why = r[side]["why"]
                own = r[side].get("own")
                at_own = (f" (at its own floors: {own['verdict']}/{own['kind']})"
                          if own and (own["verdict"], own["kind"]) != (r[side]["verdict"], r[side]["kind"]) else "")
                lines.append(f"    {side:<9} {_side_text(r[side])}{at_own}" + (f"; {why}" if why else ""))
        if len(shown) < len(differ):
            lines.append(f"  … and {len(differ) - len(shown)} more (--json has all)")
    for kind, pairs in result["unmatched"].items():
        if pairs:
            lines.append(f"{len(pairs)} pair(s) {kind} (not scored)")
    if result["unscored"]:
        lines.append(f"{len(result['unscored'])} pair(s) not ok on both sides (not scored)")
    return "\n".join(lines) + "\n"


def against(cells: Sequence[Tuple[Record, str, str]], reference_path: str,
            absent_ok: bool = False) -> Optional[Tuple[str, Dict[str, Any]]]:
    """(the release, the scoring) of an atlas's `cells` (version-labelled, as shown) against one reference file: the
    cells of the column of the reference's release. A UsageError naming the file where it holds more than one release
    or none the cells have (`absent_ok`: None for the latter, a folder's file of a release the atlas does not show)."""
    from .errors import UsageError

    reference = load_records([reference_path])
    releases = sorted({version for _, _, version in reference})
    if len(releases) != 1:
        raise UsageError(f"{reference_path} holds records of {len(releases)} TF releases ({', '.join(releases)}); a "
                         "reference to score an atlas column against is the long runs of one release.")
    [release] = releases
    column = [c for c in cells if c[2] == release]
    if not column and absent_ok:
        return None
    if not column:
        shown = sorted({version for _, _, version in cells})
        raise UsageError(f"{reference_path} holds long runs of TF {release}, which no column of the atlas is "
                         f"(its columns: {', '.join(shown)}); give a reference of a release it shows.")
    return release, score(column, reference)


def brief(release: str, result: Dict[str, Any], reference_path: str) -> str:
    """One sentence of a scoring of cells as shown: the agreement of the pairs the long runs decide, the false
    alarms and overstated pairs, the slopes (an atlas page's "how far to trust a cell")."""
    rows = result["pairs"]
    lengths = [n for r in rows for n in (r["reference"].get("measured") or [])]
    repeats = sorted({len(r["reference"].get("measured") or []) for r in rows})
    median = f"a median {statistics.median(lengths):.0f} iterations" if lengths else "iterations not recorded"

    def share(name: str) -> str:
        decided, agreement = result["decided"][name], result["agreement_decided"][name]
        return "n/a" if agreement is None else f"{agreement:.0%} of the {decided} they decide"

    found = result["slopes"]
    off = [o["ratio"] for o in found["off"]]
    spread = "" if not off else (f" (the other {len(off)} ×{min(off):.3g} … ×{max(off):.3g}: the rate of the "
                                 "iterations the cell measured, not of the long run)")
    slopes = (f"; RSS slopes within ×{found['off_by']:g} of theirs for {found['within']} of the {found['pairs']} "
              f"pairs both read grows{spread}") if found["pairs"] else ""
    pairs = f"{len(rows)} pair{'' if len(rows) == 1 else 's'}"
    return (f"TF {release}: {pairs} against their long runs ({os.path.basename(reference_path)}: "
            f"{median}, {'/'.join(map(str, repeats)) or 'n/a'} repeat{'' if repeats == [1] else 's'} each): "
            f"the RSS verdict agrees on {share('verdict')}, what grew on {share('kind')}; "
            f"{result['false_alarms']} false alarm{'' if result['false_alarms'] == 1 else 's'}, "
            f"{result['overstated']} overstated{slopes}.")


def _counts(measured: Any) -> str:
    return ",".join(str(x) for x in measured or []) or "n/a"


def _slopes_text(found: Optional[Dict[str, Any]], top: int = 0) -> List[str]:
    """The slopes' lines of `text`: none where no pair grows on both sides."""
    if not found or not found["pairs"]:
        return []
    k = found["off_by"]
    lines = ["", f"RSS slopes of the {found['pairs']} pair(s) both read grows: scored / reference, median "
                 f"×{found['median_ratio']:.2f}; within ×{k:g} either way: {found['within']} of {found['pairs']}"]
    shown = found["off"][:top] if top else found["off"]
    for o in shown:
        lines.append(f"  TF {o['version']} {o['loop']} × {o['strategy']}: ×{o['ratio']:.2f} "
                     f"({_kib(o['scored'])} KiB/it over n={_counts(o['scored_measured'])}, reference "
                     f"{_kib(o['reference'])} over n={_counts(o['reference_measured'])})")
    if len(shown) < len(found["off"]):
        lines.append(f"  … and {len(found['off']) - len(shown)} more (--json has all)")
    return lines


Loaded = List[Tuple[Record, str, str]]


def load(paths: Sequence[str], reference: Sequence[str]) -> Tuple[Loaded, Loaded]:
    """The records to score and the reference, each loaded as compare loads them (an atlas data file's cells: the
    command's `load`)."""
    return load_records(paths), load_records(reference)


# ---------------------------------------------------------------- replays: a profile's rules on the reference's series


def replay_result(result: dict, spec: RunSpec) -> dict:
    """A reference repeat's result cut where a run of `spec` (a profile's counts) would have stopped on the same
    readings: the worker's loop (min_iterations, min_seconds, the looks rule.LookPlan plans from the
    reference's own seconds per iteration, the budget in seconds of loop, the growth cap, the most iterations) with
    the runner's Decider answering its looks. Its stop reason is "ran out" where the reference ended first."""
    series = result["series"]
    n_all = len(series["rss"])
    decider = rule.Decider(spec)
    stopper = rule.StopRule(spec, lambda k, readings, plan: decider.look(readings, plan))
    elapsed, sent, stop, k = 0.0, 0, None, 0
    base = result.get("baseline_rss") or series["rss"][0]

    def readings() -> dict:
        nonlocal sent
        new = {name: series[name][sent:k] for name in rule.SERIES if series.get(name) is not None}
        sent = k
        return new

    while k < min(spec.iterations, n_all) and stop is None:
        elapsed += series["seconds"][k]
        k += 1
        stop = stopper.after(k, elapsed, series["rss"][k - 1] - base, readings)
    out = copy.deepcopy(result)
    out["series"] = {name: values[:k] for name, values in series.items()}
    out.pop("planned_looks", None), out.pop("planned_last", None)  # the reference's own (it is not sequential)
    out.update(stopper.fields())
    out.update(iterations_done=k, looks=stopper.looks, loop_seconds=elapsed,
               stop_reason=stop or ("iterations" if k >= spec.iterations else "ran out"),
               py_blocks_samples=[s for s in result.get("py_blocks_samples") or () if s[0] < k])
    return out


def replay_repeats(reference: Loaded) -> int:
    """How many repeats `replay` replays (its `repeat` runs below it): up to the last repeat with readings of any ok
    reference record; 0 when none has one."""
    return max((i + 1 for record, _, _ in reference if record.get("status") == "ok"
                for i, r in enumerate(record.get("repeats") or ()) if isinstance(r, dict) and r.get("result")),
               default=0)


def replay(reference: Loaded, profile: str, repeat: int) -> Loaded:
    """Each ok reference record's `repeat` replayed as a run of `profile` (one repeat, the profile's counts): what
    the profile's rules would have said on the reference's own readings. A rules-only check: the measurement is
    the reference's (its warm-up, its speed), not a run of the profile."""
    from .profiles import get_profile
    from .spec import RunSpec
    from .strategies import get_strategy

    chosen = get_profile(profile)
    out = []
    for record, path, version in reference:
        repeats = record.get("repeats") or []
        if record["status"] != "ok" or repeat >= len(repeats) or not repeats[repeat].get("result"):
            continue
        spec = dict(record["spec"], **chosen.counts_for(get_strategy(record["strategy"])), profile=chosen.name,
                    repeats=1, floor=None, floor_source="")
        spec.setdefault("allocator", "glibc")
        series = repeats[repeat]["result"].get("series") or {}
        missing = [name for name in ("rss", "seconds") if not isinstance(series.get(name), list)]
        if missing:  # a replay walks the readings by their seconds: without them, nothing to walk (a KeyError before)
            raise UsageError(f"Cannot replay {path}: its record {printable(record['loop'], lines=True)} × "
                             f"{printable(record['strategy'], lines=True)} has no per-iteration "
                             f"{' and '.join(missing)} in repeat {repeat + 1} (series.{missing[0]}), which a replay "
                             "reads; give records of `kerasbench run --json`.")
        replayed = copy.deepcopy(record)
        replayed["spec"] = spec
        replayed["repeats"] = [dict(repeats[repeat], result=replay_result(repeats[repeat]["result"],
                                                                          RunSpec.of_record(spec)))]
        out.append((replayed, path, version))
    return out
