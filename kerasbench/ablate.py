"""`kerasbench ablate`: which cleanup steps are necessary, and which suffice, for a loop that rebuilds its model.

For a base strategy that rebuilds (rebuild_no_clear: a new model per iteration, nothing released) and a set of
cleanup steps (names from strategies.CLEANUPS, the one registry), the variants are: no step (the base), every
step (the full cleanup), each step alone, and every step but one (leave-one-out). A variant is a composed
strategy name (strategies.compose), so each is measured like any pair of `run` (runner.measure_pairs: fresh
workers, the same probes and records) and its records are ordinary records that `compare` and `report` read.

The verdicts are the ones kerasbench already has: a variant's own verdict, RSS and heap together
(rule.pair_verdict, the record's), and compare's slope rule between two variants (95% CIs apart by more than
the floor). A step is *necessary* when leaving it out of the full cleanup makes the loop grow more (compare:
regressed), and *sufficient* when it alone keeps the loop flat; either is "inconclusive" where the CIs do not
decide it.

The heap (the allocator's bytes in use) is read beside RSS, and RSS lags it: glibc hands out pages it already
holds before it asks the OS for more, so a step that leaves +145 KiB of heap per model read flat RSS over the first
8 iterations on TF 2.21.0 inference and grew from about the 14th. So a step whose heap grows is not sufficient
(the record's verdict says so), and one is necessary when the heap alone grows more without it (compare's slope
rule on the heap, judged at the RSS floor: a difference of a few KiB per iteration is not a leak worth a step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .compare.judging import cell_side, judge
from .errors import UsageError, unknown
from .record import Record
from .rule import pair_verdict
from .strategies import CLEANUPS, compose, get_strategy, split
from .units import KIB, floor_kib

BASE = "rebuild_no_clear"  # a new model per iteration and nothing released: what the steps are added to
METRIC = "growth_per_iter"
HEAP_METRIC = "heap_growth_per_iter"


@dataclass(frozen=True)
class Variant:
    """One measured composition: what kind it is, the step it is about, and its strategy name."""

    kind: str  # "none", "full", "alone" (`step` only) or "without" (every step but `step`)
    step: str
    steps: tuple  # the cleanup steps it runs after each iteration, in CLEANUPS order
    strategy: str

    @property
    def label(self) -> str:
        """How the table names it: 'no cleanup', 'full cleanup', 'only STEP', 'all but STEP'."""
        return {"none": "no cleanup", "full": "full cleanup", "alone": f"only {self.step}",
                "without": f"all but {self.step}"}[self.kind]


def check_steps(names: Sequence[str]) -> tuple:
    """`names` in CLEANUPS order, at least two, each known (else a UsageError listing the valid ones)."""
    for name in names:
        if name not in CLEANUPS:
            raise unknown("cleanup step", name, CLEANUPS)
    steps = tuple(s for s in CLEANUPS if s in names)
    if len(steps) < 2:
        raise UsageError(f"Ablation needs two or more cleanup steps. Received: steps={','.join(names)!r}. "
                         f"Expected a comma list of: {', '.join(CLEANUPS)}.")
    return steps


def check_base(base: str, loop: str) -> str:
    """`base` if it is a registry strategy with no cleanup of its own that applies to `loop`; else a UsageError."""
    strategy = get_strategy(base)
    if strategy.cleanup or split(base)[1]:
        raise UsageError(f"Ablation adds cleanup steps to a strategy without any: {base} already runs "
                         f"{', '.join(strategy.cleanup)}. Expected e.g. {BASE}.")
    if loop not in strategy.applies_to:
        from .loops import LOOPS

        rebuilding = [name for name in LOOPS if name in get_strategy(BASE).applies_to]
        raise UsageError(f"Strategy {base} does not apply to loop {loop}: ablation needs a loop that rebuilds "
                         f"its model. Expected one of: {', '.join(rebuilding)}.")
    return base


def variants(steps: Sequence[str], base: str = BASE) -> List[Variant]:
    """The variants of an ablation of `steps` on `base`: none, full, each alone, each left out (no duplicates)."""
    steps = tuple(steps)
    found = [Variant("none", "", (), base), Variant("full", "", steps, compose(base, steps))]
    found += [Variant("alone", s, (s,), compose(base, (s,))) for s in steps]
    found += [Variant("without", s, tuple(t for t in steps if t != s), compose(base, [t for t in steps if t != s]))
              for s in steps]
    return found


def pairs(loop: str, steps: Sequence[str], base: str = BASE) -> List[Tuple[str, str]]:
    """The (loop, strategy) pairs to measure, each once, in variants' order."""
    return list(dict.fromkeys((loop, v.strategy) for v in variants(steps, base)))


def tables(records: Sequence[Record], steps: Sequence[str], base: str, counts: str, repeats: int,
           metric: str = METRIC) -> str:
    """The text of every loop with a finished variant among `records` (its others n/a), then the floors judged by."""
    parts = []
    for loop in dict.fromkeys(r["loop"] for r in records):
        env = next((r["environment"] for r in records if r["loop"] == loop and r.get("environment")), None) or {}
        on = "" if metric == METRIC else f" of {metric}"
        title = (f"{loop}: cleanup ablation{on} on {base}, TF {env.get('tensorflow')}, Keras {env.get('keras')}, "
                 f"{counts}, {repeats} repeat(s)")
        parts.append(text(analyse(records, loop, steps, base, metric), title) + "\n")
    floors = {(r["summary"]["floor"], r["summary"].get("floor_source") or "given")
              for r in records if r["summary"].get("floor") is not None}
    parts += [f"floor {floor_kib(floor)} KiB/iteration, from {source}\n" for floor, source in sorted(floors)]
    return "".join(parts)


# ---------------------------------------------------------------- the analysis


def _side(record: Optional[Record], metric: str = METRIC) -> dict:
    side = cell_side(record, metric) if record else {"value": None, "repeats": 0}
    if metric == HEAP_METRIC and side.get("value") is not None:  # judged at the RSS floor: a leak worth a step
        side["floor"] = max(side["floor"], _floor(record))
    return side


def _floor(record: Record) -> float:
    from .rule import DEFAULT_FLOOR

    return record["summary"].get("floor") or DEFAULT_FLOOR


def _judge(base: Optional[Record], new: Optional[Record], metric: str = METRIC) -> Tuple[str, str]:
    """compare's slope verdict of `new` against `base` on `metric` (regressed: more growth), with why."""
    verdict, why = judge(metric, _side(base, metric), _side(new, metric))
    if verdict == "n/a":
        why = "not measured" if base is None or new is None else f"status {base['status']} / {new['status']}"
    return verdict, why


def _verdict(record: Optional[Record]) -> str:
    """The variant's one verdict, RSS and heap together (rule.pair_verdict), or its status."""
    if record is None:
        return "n/a"
    return pair_verdict(record["summary"]) if record["status"] == "ok" else record["status"]


def _necessary(full: Optional[Record], without: Optional[Record]) -> Tuple[str, str]:
    verdict, why = _judge(full, without)
    answer = {"regressed": "necessary", "unchanged": "not necessary", "improved": "not necessary"}.get(
        verdict, "inconclusive" if verdict == "inconclusive" else "n/a")
    if verdict == "improved":
        why = "less growth without it: " + why
    if answer != "necessary":
        heap, heap_why = _judge(full, without, HEAP_METRIC)
        if heap == "regressed":  # RSS has not followed (yet)
            return "necessary", "the heap grows more without it: " + heap_why
    return answer, why


def _heap_text(record: Record) -> str:
    s = record["summary"]
    return (f"{s[HEAP_METRIC] / KIB:+.0f} KiB/iter [{s['heap_growth_ci_low'] / KIB:+.0f}, "
            f"{s['heap_growth_ci_high'] / KIB:+.0f}]")


def _sufficient(alone: Optional[Record]) -> Tuple[str, str]:
    """Whether a step alone keeps the loop flat: the record's own verdict, RSS and heap together."""
    verdict = _verdict(alone)
    if verdict == "flat":
        return "sufficient", "alone it stays flat (RSS and heap CIs below their floors)"
    if verdict == "grows":
        s = alone["summary"]
        if s.get("verdict") != "grows":  # the heap grows under an RSS that has not followed (yet)
            return "not sufficient", (f"RSS {s.get('verdict')}, but the heap grows {_heap_text(alone)}: the "
                                      "allocator's free pages absorb it for now")
        return "not sufficient", "alone it grows"
    if verdict == "inconclusive":
        why = alone["summary"].get("why")
        return "inconclusive", "alone: not decided" + (f" ({why})" if why else " at this floor and measurement")
    return "n/a", "not measured" if alone is None else f"status {alone['status']}"


def _as_good_as_full(full: Optional[Record], alone: Optional[Record], metric: str) -> Tuple[str, str]:
    """Whether a step alone keeps `metric` where the full cleanup keeps it (a metric other than the growth)."""
    verdict, why = _judge(full, alone, metric)
    answer = {"unchanged": "sufficient", "improved": "sufficient", "regressed": "not sufficient"}.get(
        verdict, "inconclusive" if verdict == "inconclusive" else "n/a")
    return answer, f"alone against the full cleanup: {verdict}: {why}"


def analyse(records: Sequence[Record], loop: str, steps: Sequence[str], base: str = BASE,
            metric: str = METRIC) -> Dict[str, Any]:
    """The ablation of `loop` from `records` (one TF version): each variant's slope, CI and verdict, and per step
    whether it is necessary and sufficient, with why; missing variants are n/a.

    On the growth (`metric` growth_per_iter, the default) a step is sufficient when alone the variant reads flat by
    its own verdict; on another metric compare judges (a peak, traces), when alone it keeps the metric where the
    full cleanup keeps it. Necessary: leaving it out of the full cleanup makes the metric worse (compare)."""
    by_strategy = {r["strategy"]: r for r in records if r["loop"] == loop}
    rows = []
    for v in variants(steps, base):
        r = by_strategy.get(v.strategy)
        side = _side(r)
        rows.append({"variant": v.label, "kind": v.kind, "step": v.step, "steps": list(v.steps),
                     "strategy": v.strategy, "status": r["status"] if r else "missing", "verdict": _verdict(r),
                     "slope": side.get("value"), "low": side.get("low"), "high": side.get("high"),
                     "heap": r["summary"].get(HEAP_METRIC) if r and r["status"] == "ok" else None,
                     "value": r["summary"].get(metric) if r and r["status"] == "ok" else None,
                     "reason": r.get("reason") if r and r["status"] != "ok" else None})
    full = by_strategy.get(compose(base, steps))
    none = by_strategy.get(base)
    per_step = []
    for s in steps:
        without = by_strategy.get(compose(base, [t for t in steps if t != s]))
        alone = by_strategy.get(compose(base, (s,)))
        necessary, why_n = _necessary(full, without) if metric == METRIC else _necessary_by(full, without, metric)
        sufficient, why_s = _sufficient(alone) if metric == METRIC else _as_good_as_full(full, alone, metric)
        helps, why_h = _judge(none, alone, metric)  # does it alone reduce what no cleanup at all does?
        per_step.append({"step": s, "necessary": necessary, "necessary_why": why_n, "sufficient": sufficient,
                         "sufficient_why": why_s, "alone_vs_none": helps, "alone_vs_none_why": why_h})
    return {"loop": loop, "base": base, "steps": list(steps), "metric": metric, "rows": rows, "per_step": per_step,
            "full_verdict": _verdict(full), "none_verdict": _verdict(none),
            "conclusion": conclusion(per_step, _verdict(full), _verdict(none),
                                     [row["variant"] for row in rows if row["verdict"] == "flat"], metric)}


def _necessary_by(full: Optional[Record], without: Optional[Record], metric: str) -> Tuple[str, str]:
    verdict, why = _judge(full, without, metric)
    answer = {"regressed": "necessary", "unchanged": "not necessary", "improved": "not necessary"}.get(
        verdict, "inconclusive" if verdict == "inconclusive" else "n/a")
    return answer, why


def conclusion(per_step: Sequence[dict], full: str, none: str, flat: Optional[Sequence[str]] = None,
               metric: str = METRIC) -> List[str]:
    """The ablation's findings as sentences: only what the CIs support, the rest called inconclusive.

    `flat`: the labels of the variants whose verdict is flat, named when the full cleanup is not (a step can hurt).
    """
    def named(key: str, value: str) -> List[str]:
        return [p["step"] for p in per_step if p[key] == value]

    lines = [f"no cleanup: {none}; full cleanup ({len(per_step)} steps): {full}."]
    if full == "grows" and metric == METRIC:
        lines.append("The full cleanup does not stop the growth; 'necessary' below means leaving it out adds growth.")
    if flat is not None and full != "flat" and metric == METRIC:
        lines.append(f"Flat variants: {', '.join(flat) or 'none'}.")
    grows_more = "makes it grow more" if metric == METRIC else f"makes {metric} worse"
    stays = "alone it stays flat" if metric == METRIC else f"alone it keeps {metric} where the full cleanup does"
    for key, meaning, values in (
            ("necessary", f"leaving it out of the full cleanup {grows_more}",
             ("necessary", "not necessary", "inconclusive", "n/a")),
            ("sufficient", stays, ("sufficient", "not sufficient", "inconclusive", "n/a"))):
        parts = [f"{value}: {', '.join(named(key, value))}" for value in values if named(key, value)]
        lines.append(f"{key.capitalize()} ({meaning}) — {'; '.join(parts)}.")
    lines += heap_notes(per_step)
    reducing = named("alone_vs_none", "improved")
    if reducing and (full != "flat" or metric != METRIC):
        what = "the growth" if metric == METRIC else metric
        lines.append(f"Alone, these reduce {what} of no cleanup: {', '.join(reducing)}.")
    return lines


def heap_notes(per_step: Sequence[dict]) -> List[str]:
    """The conclusion's notes on calls the heap made where RSS had not followed (yet): why each."""
    return [f"{p['step']} {p[key]}: {p[f'{key}_why']}." for p in per_step for key in ("necessary", "sufficient")
            if "heap" in p[f"{key}_why"] and p[key] != "n/a"]


def answer(records: Sequence[Record], steps: Sequence[str], base: str = BASE, metric: str = METRIC) -> dict:
    """The ablation's answer as `--json` keeps it (answers.result): each loop's conclusion, its notes on the heap's
    calls left out (the findings, not their reasons)."""
    from .questions import result

    said = []
    for loop in dict.fromkeys(r["loop"] for r in records):
        found = analyse(records, loop, steps, base, metric)
        notes = heap_notes(found["per_step"])
        said += [line for line in found["conclusion"] if line not in notes]
    return result(" ".join(said))


def find(records: Sequence[Record]) -> List[Tuple[str, str, tuple]]:
    """(loop, base, steps) of each ablation among `records`: its full cleanup is a loop's composed strategy with the
    most steps (two or more), and at least two of its other composed variants are there too (an interrupted
    ablation is shown with the rest n/a; a lone composed strategy run with `run` is not an ablation)."""
    by_loop: Dict[Tuple[str, str], List[tuple]] = {}
    for r in records:
        base, steps = split(r["strategy"])
        if steps:
            by_loop.setdefault((r["loop"], base), []).append(steps)
    found = []
    for (loop, base), compositions in by_loop.items():
        full = max(compositions, key=len)
        others = {v.steps for v in variants(full, base) if v.steps and v.steps != full}
        if len(full) >= 2 and len(others & set(compositions)) >= 2:
            found.append((loop, base, full))
    return found


# ---------------------------------------------------------------- text


def _kib(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value / KIB:+.0f}"


def _ci(row: dict) -> str:
    if row["low"] is None or row["high"] is None or row["slope"] is None:
        return "n/a"
    return f"[{row['low'] / KIB:+.0f}, {row['high'] / KIB:+.0f}]"


def variant_rows(result: Dict[str, Any]) -> List[List[str]]:
    """The variant table's rows: variant, KiB/iteration, 95% CI, verdict, heap KiB/iteration (and the ablated
    metric's value when it is not the growth)."""
    from .metrics import METRICS

    metric = result.get("metric", METRIC)
    shown = METRICS[metric].show if metric != METRIC else None
    return [[row["variant"], _kib(row["slope"]), _ci(row),
             row["verdict"] if row["status"] == "ok" else f"{row['status']}: {row['reason'] or 'not measured'}",
             _kib(row.get("heap"))] + ([("n/a" if row.get("value") is None else shown(row["value"]))] if shown else [])
            for row in result["rows"]]


VARIANT_HEADER = ("variant", "KiB/iter", "95% CI", "verdict", "heap KiB/iter")


def variant_header(result: Dict[str, Any]) -> Tuple[str, ...]:
    """VARIANT_HEADER, and the ablated metric when it is not the growth."""
    metric = result.get("metric", METRIC)
    return VARIANT_HEADER + ((metric,) if metric != METRIC else ())
STEP_HEADER = ("step", "alone", "all but it", "necessary", "sufficient")


def step_rows(result: Dict[str, Any]) -> List[List[str]]:
    """The per-step table's rows: step, its alone and left-out verdicts, necessary, sufficient."""
    verdicts = {(row["kind"], row["step"]): row["verdict"] for row in result["rows"]}
    return [[p["step"], verdicts.get(("alone", p["step"]), "n/a"), verdicts.get(("without", p["step"]), "n/a"),
             p["necessary"], p["sufficient"]] for p in result["per_step"]]


def text(result: Dict[str, Any], title: str = "") -> str:
    """The ablation as text: the variant table, the per-step table, the conclusion."""
    from .console import text_table

    lines = [title] if title else []
    lines += text_table(variant_header(result), variant_rows(result)) + [""]
    lines += text_table(STEP_HEADER, step_rows(result)) + [""]
    lines += result["conclusion"]
    return "\n".join(lines) + "\n"
