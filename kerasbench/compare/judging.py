"""One metric of one pair judged from two versions' records: what each version's record contributes (its side), the
two sides judged by the metric's compare rule (kerasbench.metrics), and a side's value with its standard uncertainty.
The rules are the package's docstring (kerasbench.compare). Pure: records in, verdicts out; the rule's series
judgement (rule.series) is the lowest thing it stands on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import stats
from ..metrics import METRICS, ExactCount, Magnitude, SlopeCI, TimingBand
from ..record import Record
from ..rule.series import DEFAULT_FLOOR, MARGINS, pair_verdict, widened
from ..units import KIB, floor_kib

NOISE_K = 3.0  # a difference must be this many times the measured noise
LENGTHS_APART = 1.25  # runs of a growing pair whose counts differ by more than this are not compared on what piles up
MIN_SERIES = 8  # iterations a series needs before its scatter around its line counts as noise
MAD_SD = 1.4826  # MAD x this estimates a normal standard deviation
ALPHA = 0.05

Side = Dict[str, Any]  # what one version contributes to a cell (see _side)


def _results(record):
    if record is None or record.get("status") != "ok":
        return []
    return [r["result"] for r in record.get("repeats", []) if r.get("result")]


def residual_noise(values: Sequence[float]) -> float:
    """Robust scatter of a series around its Theil-Sen line (1.4826 x MAD of the residuals); NaN under MIN_SERIES."""
    y = np.asarray(values, dtype=float)
    if len(y) < MIN_SERIES:
        return float("nan")
    fit = stats.fit_growth(y)
    if not np.isfinite(fit.slope):
        return float("nan")
    x = np.arange(len(y))
    resid = y - np.median(y - fit.slope * x) - fit.slope * x
    return float(MAD_SD * np.median(np.abs(resid - np.median(resid))))


def _spread(values):
    values = [v for v in values if v is not None]
    return float(np.std(values, ddof=1)) if len(values) >= 2 else float("nan")


def _nanmax(*values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    return max(values) if values else float("nan")


def cell_side(record: Optional[Record], metric: str) -> Side:
    """What one version contributes to a cell: value, per-repeat values, and what its rule reads (noise, fit, times).
    A rule that reads the summary alone (a slope's CI: Judging.summary_alone) judges an ok record that keeps no
    repeats too (an atlas file's cell)."""
    results = _results(record)
    how = METRICS[metric].compare if metric in METRICS else None
    alone = (not results and how is not None and JUDGING[type(how)].summary_alone
             and status_of(record) == "ok" and isinstance(record.get("summary"), dict))
    value = record["summary"].get(metric) if results or alone else None
    side = {"value": value, "repeats": len(results)}
    if value is None:
        return side
    spec = METRICS[metric]
    n = min(r.get("iterations_done") or record["spec"]["iterations"] for r in results) if results else 0
    side["per_repeat"] = ([spec.per_repeat(r, r.get("iterations_done") or n) for r in results]
                          if spec.per_repeat and results else None)
    if how is not None:
        JUDGING[type(how)].side(side, record, results, n, how, metric)
    return side


def _slope_side(side: Side, record: Record, results: list, n: int, how: SlopeCI, metric: str) -> None:
    """The record's own judgement (kerasbench.rule), never fitted again here: its CI, verdict, resolution (floor),
    margin and level."""
    s = record["summary"]
    floor = s.get("floor") or DEFAULT_FLOOR
    margin = s.get("margin") or MARGINS["rss"]  # records before protocol 9: the default margin
    if how.series == "heap":  # the heap's own floor (records before it: the RSS one)
        floor = s.get("heap_floor") or floor
        margin = s.get("heap_margin") or MARGINS["heap"]
    prefix, verdict = ("heap_growth", s.get("heap_verdict")) if how.series == "heap" else ("growth", s.get("verdict"))
    low, high = (s.get(f"{prefix}_ci_{end}") for end in ("low", "high"))
    kind = s.get("growth_kind")  # what grew (rule.growth_kind), named beside the series' verdict
    side.update(low=float("nan") if low is None else low, high=float("nan") if high is None else high,
                verdict=f"{verdict} (what grew: {kind})" if kind else str(verdict), bare=str(verdict), kind=kind,
                series="heap" if how.series == "heap" else "RSS", floor=floor, margin=margin,
                alpha=s.get("alpha") or ALPHA)


def _magnitude_side(side: Side, record: Record, results: list, n: int, how: Magnitude, metric: str) -> None:
    """The noise: the repeats' spread (and the RSS series' scatter around its line, where the rule counts it)."""
    noise = _spread(side["per_repeat"])
    if how.series_noise:
        scatter = [residual_noise(r["series"]["rss"]) for r in results]
        scatter = [v for v in scatter if np.isfinite(v)]
        noise = _nanmax(noise, float(np.median(scatter)) if scatter else float("nan"))
    side.update(noise=noise, iterations=n, grows=pair_verdict(record["summary"]) == "grows")


def _count_side(side: Side, record: Record, results: list, n: int, how: ExactCount, metric: str) -> None:
    """Which tf.functions (the why of a changed count), the iterations each repeat's count spans, its rate."""
    side["functions"] = results[0].get("functions")
    warmup = record["spec"].get("warmup") or 0
    side["lengths"] = [warmup + (r.get("iterations_done") or n) for r in results]
    side["rates"] = [loop_rate(r, metric) for r in results]


def _timing_side(side: Side, record: Record, results: list, n: int, how: TimingBand, metric: str) -> None:
    """The per-iteration times and the conditions they were measured in (jobs, load per CPU)."""
    side.update(seconds=[s for r in results for s in r["series"].get("seconds") or []],
                jobs=record["spec"].get("jobs") or 1, load=load_per_cpu(record))


def uncertain_values(metric: str, sides: Sequence[Side]) -> Optional[List[Tuple[float, float]]]:
    """(value, standard uncertainty) of each side (uncertain_value), or None when any has none, or when the sides
    are counts over runs of different lengths (a budgeted run stops when it is decided: totals are not one scale)."""
    how = METRICS[metric].compare if metric in METRICS else None
    lengths = {n for side in sides for n in side.get("lengths") or ()}
    if how is not None and JUDGING[type(how)].totals and len(lengths) > 1:
        return None
    found = [uncertain_value(metric, side) for side in sides]
    return None if None in found else found  # type: ignore[return-value]


def uncertain_value(metric: str, side: Side) -> Optional[Tuple[float, float]]:
    """(value, standard uncertainty) of one side on the metric's own scale, for placing a middle build between two
    ends (rule.place); None where the metric's rule gives no such figure.

    A slope: the half-width of its CI over the CI's z (the record's level: a look's CI is wider than 95 %, so the
    uncertainty is, if anything, overstated). A magnitude: its noise as compare measures it (the spread of the
    repeats or of the RSS series around its line); where it cannot be measured, None, or 0 where the rule takes one
    repeat at face value. A count: exact (the spread of its repeats where they disagree); None over runs of different
    lengths, whose totals are not on one scale. Seconds: None (compare judges them by a ratio and a rank test).
    """
    value, how = side.get("value"), METRICS[metric].compare if metric in METRICS else None
    if value is None or not math.isfinite(value) or how is None:
        return None
    return JUDGING[type(how)].uncertainty(float(value), side, how)


def _slope_uncertainty(value: float, side: Side, how: SlopeCI) -> Optional[Tuple[float, float]]:
    from statistics import NormalDist

    low, high, alpha = side.get("low", float("nan")), side.get("high", float("nan")), side.get("alpha") or ALPHA
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    if "floor" in side and "value" in side:  # the interval the verdict was read from: widened by the resolution
        low, high = _widened(side)
    return value, (high - low) / 2 / NormalDist().inv_cdf(1 - alpha / 2)


def _magnitude_uncertainty(value: float, side: Side, how: Magnitude) -> Optional[Tuple[float, float]]:
    noise = side.get("noise", float("nan"))
    if not math.isfinite(noise) or noise <= 0:  # as _magnitude: unknown, unless taken at face value
        return (value, 0.0) if how.face_value_alone else None
    return value, float(noise)


def _count_uncertainty(value: float, side: Side, how: ExactCount) -> Optional[Tuple[float, float]]:
    if len(set(side.get("lengths") or ())) > 1:
        return None
    spread = _spread(side.get("per_repeat") or [])
    return value, spread if math.isfinite(spread) else 0.0


def load_per_cpu(record: Record) -> Optional[float]:
    """The largest 1-minute load per CPU at the start or end of the record's ok workers; None if not recorded."""
    loads = []
    for rep in record.get("repeats", []):
        env = rep.get("environment") or record.get("environment") or {}
        if rep.get("status") != "ok" or not env.get("cpu_count"):
            continue
        found = [env[k][0] for k in ("load_start", "load_end") if env.get(k)]
        if not found:
            return None  # a worker that did not record it: the record's conditions are not known
        loads.append(max(found) / env["cpu_count"])
    return max(loads) if loads else None


def _widened(side) -> Tuple[float, float]:
    """A side's slope interval widened by the resolution it was judged at (the rule's own widening)."""
    return widened(stats.Fit(side["value"], side["low"], side["high"], float("nan"), 0), side["floor"])


def _slope_ci(base, new):
    margin = max(base.get("margin") or MARGINS["rss"], new.get("margin") or MARGINS["rss"])
    diff = new["value"] - base["value"]
    if not all(np.isfinite([base["low"], base["high"], new["low"], new["high"]])):
        return "inconclusive", "too few iterations for a slope CI"
    (base_low, base_high), (new_low, new_high) = _widened(base), _widened(new)
    ci = (f"[{new_low / KIB:+.0f}, {new_high / KIB:+.0f}] vs [{base_low / KIB:+.0f}, {base_high / KIB:+.0f}] "
          "KiB/iter (CI and resolution)")
    if new_low > base_high and diff > margin:
        return "regressed", f"{ci}: above, by more than the margin ({floor_kib(margin)} KiB/iter)"
    if new_high < base_low and -diff > margin:
        return "improved", f"{ci}: below, by more than the margin ({floor_kib(margin)} KiB/iter)"
    # the series' own verdicts, not what grew beside them: +3646 "grows (settling)" and +3649 "grows (leak)" of one
    # sweep are one growth whose heap was judged differently at 20 iterations
    bare = new.get("bare", new["verdict"])
    if base.get("bare", base["verdict"]) == bare and abs(diff) < margin:
        return "unchanged", (f"{new.get('series', 'series')} {bare} in both{_what_grew(base, new)}, slopes within "
                             f"the margin ({floor_kib(margin)} KiB/iter)")
    if base.get("bare", base["verdict"]) == bare and base_low <= new["value"] <= base_high \
            and new_low <= base["value"] <= new_high:  # each slope inside the other's interval: one growth, twice
        return "unchanged", (f"{new.get('series', 'series')} {bare} in both{_what_grew(base, new)}, each slope in the "
                             f"other's interval ({ci})")
    return "inconclusive", f"{ci}; verdicts {base['verdict']} / {new['verdict']}"


def _what_grew(base, new) -> str:
    """What grew on each side, where the records say (their series' verdicts being the same, what grew may differ:
    RSS flat with the heap flat on one side, growing on the other)."""
    kinds = (base.get("kind"), new.get("kind"))
    if kinds == (None, None):
        return ""
    if kinds[0] == kinds[1]:
        return f"; what grew: {kinds[1]}"
    return f"; what grew: {kinds[0] or 'not read'} → {kinds[1] or 'not read'}"


def _magnitude(base, new, rule):
    diff = new["value"] - base["value"]
    counts = base.get("iterations"), new.get("iterations")
    if rule.with_count and (base.get("grows") or new.get("grows")) and all(counts) and \
            max(counts) > LENGTHS_APART * min(counts):
        return "not comparable", (f"a growing pair measured over {counts[0]} and {counts[1]} iterations: what piles "
                                  f"up grows with the count (difference {rule.difference(diff)}); its slope compares "
                                  "the runs")
    noise = math.hypot(base.get("noise", float("nan")), new.get("noise", float("nan")))
    fmt, minimum = rule.difference, rule.minimum
    size = fmt(abs(diff)).lstrip("+")
    if abs(diff) < minimum:
        return "unchanged", f"difference {fmt(diff)} below the minimum {fmt(minimum).lstrip('+')}"
    share = rule.relative * max(abs(base["value"]), abs(new["value"]))
    if abs(diff) < share:
        return "unchanged", f"difference {fmt(diff)} under {rule.relative:.0%} of the value ({fmt(share).lstrip('+')})"
    if not np.isfinite(noise) or noise <= 0:
        if not rule.face_value_alone:
            if not np.isfinite(noise):
                short = min(base.get("iterations", 0), new.get("iterations", 0)) < MIN_SERIES
                why = (f"one repeat of fewer than {MIN_SERIES} iterations" if short else "one repeat") \
                    if min(base["repeats"], new["repeats"]) < 2 else "no spread measurable"
            else:
                why = "measured 0 (repeats and series without scatter cannot tell)"
            return "inconclusive", f"difference {fmt(diff)}, noise unknown: {why}"
        verdict = "regressed" if diff > 0 else "improved"  # e.g. object counts of one repeat: taken at face value
        return verdict, f"difference {fmt(diff)} ≥ the minimum {fmt(minimum).lstrip('+')} (one repeat: no spread)"
    if abs(diff) >= NOISE_K * noise:
        return ("regressed" if diff > 0 else "improved"), \
            f"difference {fmt(diff)} ≥ the minimum and ≥ {NOISE_K:g}× noise {fmt(noise).lstrip('+')}"
    return "inconclusive", f"difference {size} within {NOISE_K:g}× noise {fmt(noise).lstrip('+')}"


def loop_rate(result: dict, metric: str) -> Optional[float]:
    """A count's increase per measured iteration, from its per-iteration series (first to last reading); None
    without one (records before protocol 5 kept no series of the path traces) or with fewer than 2 readings."""
    values = ((result.get("series") or {}).get(metric)) or []
    if len(values) < 2 or any(v is None for v in values):
        return None
    return (values[-1] - values[0]) / (len(values) - 1)


def _exact_count(base, new, unit):
    lengths = set(base.get("lengths") or ()) | set(new.get("lengths") or ())
    if len(lengths) > 1 and len(set(base["per_repeat"]) | set(new["per_repeat"])) > 1:
        return _count_per_iteration(base, new, unit)
    for side in (base, new):
        if len(set(side["per_repeat"])) > 1:
            return "inconclusive", f"repeats disagree: {sorted(set(side['per_repeat']))}"
    b, n = int(base["value"]), int(new["value"])
    if n == b:
        return "unchanged", f"{n} {unit} in both"
    changed = function_changes(base.get("functions"), new.get("functions"))
    why = f"{b} -> {n} {unit}" + (f"; by function: {changed}" if changed else "")
    return ("regressed" if n > b else "improved"), why


def _count_per_iteration(base, new, unit):
    """A count of runs of different lengths (a budgeted run stops when it is decided): a function that retraces
    every call counts 70 over 70 iterations and 29 over 29, so the totals tell nothing; its increase per measured
    iteration does. A change is one that adds up to at least one trace over the shorter loop."""
    span = f"{int(base['value'])} over {max(base['lengths'])} and {int(new['value'])} over {max(new['lengths'])} " \
           f"iterations"
    rates = [side["rates"] for side in (base, new)]
    if any(r is None for side in rates for r in side):
        return "inconclusive", f"{span}: the runs' lengths differ and a record keeps no per-iteration count of it"
    shortest = min(length for side in (base, new) for length in side["lengths"])
    for side in rates:
        if (max(side) - min(side)) * shortest >= 1:
            return "inconclusive", f"repeats disagree: {sorted(round(r, 2) for r in side)} {unit} per iteration"
    rb, rn = float(np.median(rates[0])), float(np.median(rates[1]))
    if abs(rn - rb) * shortest < 1:
        return "unchanged", f"{rn:.2f} {unit} per iteration in both ({span})"
    changed = function_changes(base.get("functions"), new.get("functions"))
    why = f"{rb:.2f} -> {rn:.2f} {unit} per iteration ({span})" + (f"; by function: {changed}" if changed else "")
    return ("regressed" if rn > rb else "improved"), why


def function_changes(base: Optional[list], new: Optional[list], top: int = 3) -> str:
    """The tf.functions whose traces differ most between two records' tables: 'owner function a -> b', largest first."""
    if not base or not new:
        return ""

    def table(rows):
        return {(r["owner"], r["function"]): r["traces"] for r in rows}

    a, b = table(base), table(new)
    changes = sorted(((b.get(k, 0) - a.get(k, 0), k) for k in set(a) | set(b) if a.get(k, 0) != b.get(k, 0)),
                     key=lambda c: (-abs(c[0]), c[1]))
    return ", ".join(f"{owner} {name.rsplit('.', 1)[-1]} {a.get((owner, name), 0)} -> {b.get((owner, name), 0)}"
                     for _, (owner, name) in changes[:top])


def timing_conditions(base: Side, new: Side, rule: TimingBand) -> Optional[str]:
    """Why the two sides' timings are not comparable (jobs, load, one repeat on a loaded machine); None if they are."""
    for name, side in (("baseline", base), ("new", new)):
        if side.get("jobs", 1) > 1:
            return f"the {name} run measured {side['jobs']} pairs at once (jobs {side['jobs']}): timings share the CPUs"
    lb, ln = base.get("load"), new.get("load")
    if lb is not None and ln is not None and abs(lb - ln) > rule.load_difference:
        return f"loads differ: {lb:.2f} vs {ln:.2f} per CPU (1-minute averages; more than {rule.load_difference:g})"
    for name, side in (("baseline", base), ("new", new)):
        if side["repeats"] < 2:
            if side.get("load") is None:
                return f"one repeat of the {name} run, its load not recorded"
            if side["load"] > rule.loaded:
                return f"one repeat of the {name} run on a loaded machine ({side['load']:.2f} per CPU)"
    return None


def _timing_band(base, new, rule):
    from scipy.stats import mannwhitneyu

    band = rule.band
    reason = timing_conditions(base, new, rule)
    if reason:
        return "not comparable", reason
    ratio = new["value"] / base["value"] if base["value"] else float("inf")
    if 1 / band < ratio < band:
        return "unchanged", f"ratio {ratio:.2f} within the {band:g}x noise band"
    worse = ratio >= band
    if len(base["seconds"]) and len(new["seconds"]):
        p = float(mannwhitneyu(new["seconds"], base["seconds"], alternative="greater" if worse else "less").pvalue)
        if p < ALPHA:
            verdict = "regressed" if worse else "improved"
            return verdict, f"ratio {ratio:.2f}, per-iteration times separated (p={p:.3f})"
        return "inconclusive", f"ratio {ratio:.2f}, but per-iteration times overlap (p={p:.2f})"
    return "inconclusive", f"ratio {ratio:.2f}, no per-iteration times"


def judge(metric: str, base: Side, new: Side) -> Tuple[str, str]:
    """(verdict, why) for one cell, from the two versions' sides (see cell_side), by the metric's compare rule."""
    if base["value"] is None or new["value"] is None:
        return "n/a", "no value" + (" for the baseline" if base["value"] is None else "")
    how = METRICS[metric].compare if metric in METRICS else None
    if how is None:
        raise ValueError(metric)
    return JUDGING[type(how)].judge(base, new, how, metric)


@dataclass(frozen=True)
class Judging:
    """What compare does for one kind of compare rule (metrics.CompareRule): what a version's side reads from its
    record (cell_side), how two sides are judged (judge), a side's value and standard uncertainty (uncertain_value;
    None where the rule gives none), and whether its values are totals over the run (runs of different lengths are
    then not on one scale), and whether a side reads the record's summary alone (then a record without repeats, an
    atlas file's cell, is judged too). A new kind of rule is one class in metrics.py and one entry of JUDGING."""

    side: Callable[..., None]
    judge: Callable[[Side, Side, Any, str], Tuple[str, str]]
    uncertainty: Callable[[float, Side, Any], Optional[Tuple[float, float]]] = lambda value, side, how: None
    totals: bool = False
    summary_alone: bool = False


JUDGING = {
    SlopeCI: Judging(_slope_side, lambda base, new, how, metric: _slope_ci(base, new), _slope_uncertainty,
                     summary_alone=True),
    Magnitude: Judging(_magnitude_side, lambda base, new, how, metric: _magnitude(base, new, how),
                       _magnitude_uncertainty),
    ExactCount: Judging(_count_side, lambda base, new, how, metric: _exact_count(base, new, METRICS[metric].unit),
                        _count_uncertainty, totals=True),
    TimingBand: Judging(_timing_side, lambda base, new, how, metric: _timing_band(base, new, how)),
}


def figures_verdict(base: Optional[Record], new: Optional[Record], metric: str = "growth_per_iter") -> Tuple[str, str]:
    """(verdict, why) of one metric from record `base` to record `new` by compare's rule, the figures alone (the
    hardware not asked: the caller says it beside): the atlas' marks. n/a where either has no value."""
    sides = [cell_side(r, metric) if r else {"value": None, "repeats": 0} for r in (base, new)]
    return judge(metric, *sides)


def status_of(record):
    """A record's status ("missing" for none, "?" for a record that says none)."""
    return "missing" if record is None else record.get("status", "?")
