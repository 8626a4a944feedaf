"""Compare records of one machine and one commit across TensorFlow versions, metric by metric.

Every cell (loop, strategy, metric, TF version) gets its value, its ratio to the baseline version
and a verdict read from the per-iteration series and the repeats, not from a bare ratio:

growth_per_iter   regressed when the new slope's 95% CI (Theil-Sen, spanning all repeats), widened
                  by the resolution of the count it was judged at (the record's floor), lies above
                  the baseline's widened one and the slopes differ by more than the margin; improved
                  the other way round; unchanged when both runs get the same verdict (grows, flat or
                  inconclusive) and the slopes differ by less than the margin or each lies in the
                  other's widened interval; else inconclusive. A
                  window of a few iterations (a model-building loop's first saw-tooth) is wide by its
                  resolution: never a "×1.8 regression" of two runs of one build.
peak_over_baseline, regressed / improved when the difference is at least 16 MiB and at least 3x the
retained          noise (the larger of the spread across repeats and the robust scatter, 1.4826 x MAD,
                  of each RSS series around its Theil-Sen line, from series of 8 or more iterations;
                  combined over both versions); unchanged below 16 MiB; inconclusive in between, or
                  when no noise can be measured (one repeat of a short series) or it measures 0: a
                  noise of 0 would pass any difference. The peak judged is the loop's own (its peak
                  over the post-warm-up baseline); the absolute peak (peak_loop) is shown beside it.
                  Not comparable where either pair grows and the runs stopped at counts more than
                  1.25x apart (a budgeted run stops once decided): what piles up grows with the
                  count, and the slope compares them.
*_traces          exact counts: any change is regressed (more) or improved (fewer); inconclusive
                  when the repeats of one version disagree. Runs of different lengths (a budgeted run
                  stops when decided) are compared per measured iteration instead (the count's series):
                  a change must add up to one trace over the shorter run; no series: inconclusive.
objects_per_iter  like peak_loop, with 25 objects/iteration and 2 % of the rate as the minimum and the
                  spread across repeats as the noise (one repeat: the counts are taken at face value).
seconds_per_iter  not comparable (with the reason) when either side measured pairs at once (jobs > 1),
                  when the 1-minute loads per CPU (os.getloadavg at each worker's start and end, the
                  larger) differ by more than 0.5, or when a side has one repeat and its machine was
                  loaded (> 1 per CPU) or its load was not recorded. Else: unchanged within a 1.5x
                  band; regressed / improved beyond it only when the per-iteration times of the two
                  versions are separated (one-sided Mann-Whitney p < 0.05); else inconclusive.
any metric        not comparable when the two records' hardware fingerprints differ (CPU model, cores,
                  memory, GPU, allocator, glibc: kerasbench.machine), whatever the figures say; the why
                  names what differs and what the figures alone read. Never regressed or improved, so
                  `--fail-on regressed` does not fail on it (a missing value stays n/a).

Records of `kerasbench.measure(body=...)` name their function (spec.body, spec.body_sha256): a pair whose records
measured different bodies, or two sources of one, is refused (UsageError naming both), not compared.

A cell whose record is missing, not ok, or lacks the metric is n/a. Regressions come first. The ratio
is given only where both values have the same sign and the baseline is not 0; the difference always.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import machine as machines, rule, stats
from .column import Column
from .console import markdown_table, text_table
from .errors import UsageError
from .metrics import METRICS, ExactCount, Magnitude, SlopeCI, TimingBand, headline_metrics
from .rule import DEFAULT_FLOOR, MARGINS
from .record import SCHEMA_VERSION, Record, backend_of, framework_text
from .tree import place_of
from .loading import load_records
from .versions import version_key
from .trace.records import traced
from .units import KIB, floor_kib

VERDICTS = ("regressed", "improved", "inconclusive", "not comparable", "unchanged", "n/a")  # also the output order
FORMATS = ("table", "markdown", "json", "csv")
NOISE_K = 3.0  # a difference must be this many times the measured noise
LENGTHS_APART = 1.25  # runs of a growing pair whose counts differ by more than this are not compared on what piles up
MIN_SERIES = 8  # iterations a series needs before its scatter around its line counts as noise
MAD_SD = 1.4826  # MAD x this estimates a normal standard deviation
ALPHA = 0.05

Groups = Dict[str, Dict[Tuple[str, str], Tuple[Record, str]]]  # {version: {(loop, strategy): (record, path)}}
Side = Dict[str, Any]  # what one version contributes to a cell (see _side)
Cell = Dict[str, Any]  # one row of the comparison (FIELDS)


def load(paths: Sequence[str]) -> List[Tuple[Record, str, str]]:
    """loading.load_records over `paths`, where two path arguments may hold the same TF release.

    A pull request's records against the ones main published, or one release before and after a change: when
    two arguments share a release, each argument is a side of its own and its versions are labelled
    `<release>+<label>` (the commit of its records tree, else its file name), in the order given, so the
    first argument is the baseline. Without a shared release, or when one load over all of them (one commit)
    measures no pair twice for a release (it labels a release's Pythons apart: 2.16.2+py3.10), that load.
    """
    if len(paths) < 2:
        return load_records(paths)
    sides = [load_records([path]) for path in paths]
    releases = [{version for _, _, version in side} for side in sides]
    if all(a.isdisjoint(b) for i, a in enumerate(releases) for b in releases[i + 1:]):
        return load_records(paths)
    try:  # one release on several Pythons (`run --tf V --python X.Y` files): one load labels them <release>+pyX.Y
        joint = load_records(paths)
    except UsageError:  # records of two commits: a pull request's against main's
        joint = []
    from . import public  # a report's records are the loop report:<name>, not one loop repro measured twice

    measured = [(version, r["loop"], r["strategy"]) for r, _, version in public.relabel(joint)]
    if joint and len(measured) == len(set(measured)):
        return joint
    labels = []
    for path, side in zip(paths, sides):
        commit = place_of(side[0][1])[1]
        label = commit if commit and commit != "nocommit" else os.path.splitext(os.path.basename(path.rstrip("/")))[0]
        label = re.sub(r"[^A-Za-z0-9.]+", ".", label).strip(".") or "side"
        labels.append(label if label not in labels else f"{label}.{len(labels) + 1}")
    return [(record, path, str(Column(version, label)))
            for side, label in zip(sides, labels) for record, path, version in side]


def group(loaded: Sequence[Tuple[Record, str, str]], rejudge: bool = False) -> Groups:
    """{version: {(loop, strategy): (record, path)}}; a pair measured twice for one version is an error, and so are
    records judged by two protocols, unless `rejudge` judges every record of another protocol again from its series
    (summary.rejudged) first. A public report's records are the pair report:<name> × strategy (public.relabel)."""
    from . import public

    loaded = public.relabel(loaded)
    if rejudge:
        loaded = [(rejudge_record(record, path), path, version) for record, path, version in loaded]
    rule.one_version((record, path) for record, path, _ in loaded)
    groups: Groups = {}
    mixed: Dict[bool, str] = {}  # traced or not: a path of each
    for record, path, version in loaded:
        mixed.setdefault(traced(record), path)
        if len(mixed) > 1:
            raise UsageError(f"Traced and untraced records: {mixed[True]} was measured with `run --trace`, "
                             f"{mixed[False]} without; a trace moves the memory figures: compare traced with "
                             "traced, or run again without --trace.")
        key = (record["loop"], record["strategy"])
        pairs = groups.setdefault(version, {})
        if key in pairs:
            where = [machines.label(r.get("environment")) for r in (pairs[key][0], record)]
            hint = (f" (machines {where[0]} and {where[1]}: compare one machine's folder, e.g. .asv/records/{where[0]})"
                    if where[0] != where[1] else "")
            raise UsageError(f"Duplicate record for TF {version} {key[0]} × {key[1]}: "
                             f"in {path} and in {pairs[key][1]}{hint}.")
        pairs[key] = (record, path)
    _one_body(groups)
    return groups


def rejudge_record(record: Record, path: str) -> Record:
    """The record judged by this kerasbench's protocol: as it is when it was, else again from its stored series; a
    UsageError naming `path` when it holds no series to judge (an atlas data file keeps summaries only)."""
    from . import summary
    from .rule import PROTOCOL_VERSION

    if rule.version_of(record.get("summary")) == PROTOCOL_VERSION or record.get("status") != "ok":
        return record
    if not any(((r.get("result") or {}).get("series") or {}).get("rss") for r in record.get("repeats") or ()):
        raise UsageError(f"Cannot re-judge {path}: {record.get('loop')} × {record.get('strategy')} keeps no "
                         "series (an atlas data file keeps summaries only); give the records it was made from.")
    return summary.rejudged(record)


def _one_body(groups: Groups) -> None:
    """UsageError when a pair's records measured different bodies (`measure(body=...)`: loop repro × reuse_model for
    every function): their figures are not one loop on two versions. Records without the body's name (older ones,
    repro files, loop shapes) are compared as they always were."""
    for key in {p for g in groups.values() for p in g}:
        seen: Dict[Tuple[str, str], str] = {}  # (name, sha) -> the first version that measured it
        for version in sorted(groups, key=version_key):
            spec = groups[version].get(key, ({}, ""))[0].get("spec") or {}
            if spec.get("body"):
                seen.setdefault((spec["body"], spec.get("body_sha256") or "?"), version)
        if len(seen) > 1:
            (a, a_sha), (b, b_sha) = list(seen)[:2]
            va, vb = seen[(a, a_sha)], seen[(b, b_sha)]
            what = (f"two sources of the body {a} (sha256 {a_sha} on {va}, {b_sha} on {vb})" if a == b else
                    f"different bodies: {a} (sha256 {a_sha}) on {va} and {b} (sha256 {b_sha}) on {vb}")
            raise UsageError(f"The records of {key[0]} × {key[1]} measured {what}; compare measures one body across "
                             "versions: measure the same function on each side.")


# ---------------------------------------------------------------- per-metric rules (declared in kerasbench.metrics)


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
             and _status(record) == "ok" and isinstance(record.get("summary"), dict))
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
    side.update(noise=noise, iterations=n, grows=rule.pair_verdict(record["summary"]) == "grows")


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
    return rule.widened(stats.Fit(side["value"], side["low"], side["high"], float("nan"), 0), side["floor"])


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


def _finite(v):
    return v if v is None or math.isfinite(v) else None


def _status(record):
    return "missing" if record is None else record.get("status", "?")


def pick_baseline(versions: Sequence[str], baseline: Optional[str] = None) -> str:
    """`baseline` if it is one of `versions` (sorted), None meaning the oldest; else the one-line error."""
    baseline = versions[0] if baseline is None else baseline
    if baseline not in versions:
        raise UsageError(f"Unknown baseline version. Received: baseline={baseline!r}. "
                         f"Expected one of: {', '.join(versions)}.")
    return baseline


def compare(groups: Groups, baseline: Optional[str] = None, metrics: Optional[Sequence[str]] = None) -> List[Cell]:
    """The cells of a comparison, regressions first; by default against the oldest version, on the headline metrics."""
    metrics = headline_metrics() if metrics is None else metrics
    versions = sorted(groups, key=version_key)
    if len(versions) < 2:
        raise UsageError(f"Only TF {versions[0]} found: compare needs records of two or more TF versions.")
    baseline = pick_baseline(versions, baseline)
    pairs = sorted({p for g in groups.values() for p in g}, key=pair_order)
    cells = []
    for loop, strategy in pairs:
        base_rec = groups[baseline].get((loop, strategy), (None, None))[0]
        for metric in metrics:
            base = cell_side(base_rec, metric) if base_rec else {"value": None, "repeats": 0}
            for version in versions:
                if version == baseline:
                    continue
                rec = groups[version].get((loop, strategy), (None, None))[0]
                new = cell_side(rec, metric) if rec else {"value": None, "repeats": 0}
                verdict, why = judge(metric, base, new)
                if verdict == "n/a" and (_status(base_rec) != "ok" or _status(rec) != "ok"):
                    why = f"status {_status(base_rec)} / {_status(rec)}"
                figures = verdict  # what the figures alone read, before the hardware is asked
                names, hardware = hardware_note(base_rec, rec)
                if hardware:  # a fan-out's machines: said on the cell, not refused for the whole files
                    verdict, why = hardware_verdict(hardware, verdict, why)
                bv, nv = _finite(base["value"]), _finite(new["value"])
                noise = math.hypot(base["noise"], new["noise"]) if "noise" in base and "noise" in new else None
                beside = METRICS[metric].beside
                cells.append({
                    "loop": loop, "strategy": strategy, "metric": metric, "unit": METRICS[metric].unit,
                    "baseline": baseline, "version": version, "baseline_value": bv, "value": nv,
                    "ratio": ratio(bv, nv), "difference": None if None in (bv, nv) else nv - bv,
                    "verdict": verdict, "why": why,
                    "baseline_repeats": base["repeats"], "repeats": new["repeats"],
                    "baseline_ci_low": _finite(base.get("low")), "baseline_ci_high": _finite(base.get("high")),
                    "ci_low": _finite(new.get("low")), "ci_high": _finite(new.get("high")),
                    "noise": _finite(noise), "machines": names, "hardware": hardware, "figures_verdict": figures,
                    "beside": beside or None,
                    "baseline_beside_value": _summary_value(base_rec, beside),
                    "beside_value": _summary_value(rec, beside),
                })
    order = {v: i for i, v in enumerate(VERDICTS)}
    cells.sort(key=lambda c: order[c["verdict"]])  # stable: within a verdict, registry order
    return cells


def ratio(base: Optional[float], new: Optional[float]) -> Optional[float]:
    """new / base, only where both have the same sign and base is not 0 (else the difference says it)."""
    if base is None or new is None or base == 0 or (base < 0) != (new < 0) and new != 0:
        return None
    return new / base


def _summary_value(record, metric):
    if not metric or record is None or record.get("status") != "ok":
        return None
    return _finite(record["summary"].get(metric))


def hardware_verdict(hardware: str, verdict: str, why: str) -> Tuple[str, str]:
    """(verdict, why) of a cell whose two records ran on different hardware (`hardware`: what differs).

    Figures measured on other hardware are not a regression or an improvement of the code: not comparable,
    with what the figures alone read kept in the why. n/a (a value missing) stays n/a.
    """
    if verdict == "n/a":
        return verdict, f"other hardware ({hardware}): figures not comparable; {why}"
    return "not comparable", \
        f"other hardware ({hardware}): figures not comparable (the figures alone: {verdict}, {why})"


CHANGES = ("regressed", "improved", "inconclusive")


def changes(cells: Sequence[Cell]) -> List[Cell]:
    """The cells --changes-only keeps: a change, or a cell not comparable for its hardware whose figures read one
    (left out, a pull request's summary would hide why its gate passed)."""
    return [c for c in cells if c["verdict"] in CHANGES
            or c["verdict"] == "not comparable" and c.get("hardware") and c.get("figures_verdict") in CHANGES]


def hardware_note(base: Optional[Record], new: Optional[Record]) -> Tuple[str, Optional[str]]:
    """('m1' or 'm1 vs m2', None or what differs in the hardware fingerprint) of a cell's two records."""
    envs = [(r or {}).get("environment") or {} for r in (base, new)]
    names = list(dict.fromkeys(machines.label(e) for e in envs if e))
    return " vs ".join(names), (machines.difference(*envs) if base and new else None)


def pair_order(pair: Tuple[str, str]) -> tuple:
    """Sort key of a (loop, strategy) pair: registry order, unknown names last."""
    from .loops import LOOPS
    from .strategies import STRATEGIES

    loops, strategies = list(LOOPS), list(STRATEGIES)
    return (loops.index(pair[0]) if pair[0] in loops else len(loops), pair[0],
            strategies.index(pair[1]) if pair[1] in strategies else len(strategies), pair[1])


# ---------------------------------------------------------------- output

FIELDS = ("loop", "strategy", "metric", "unit", "baseline", "version", "baseline_value", "value", "ratio",
          "difference", "verdict", "why", "baseline_repeats", "repeats", "baseline_ci_low", "baseline_ci_high",
          "ci_low", "ci_high", "noise", "beside", "baseline_beside_value", "beside_value",
          "machines", "hardware", "figures_verdict")
COLUMNS = ("loop", "strategy", "metric", "baseline", "value", "ratio", "verdict", "why")


def difference_text(metric: str, diff: float) -> str:
    """A signed difference of `metric` as people read it (the ratio column where a ratio would mislead)."""
    how = METRICS[metric].compare
    if getattr(how, "difference", None):  # a rule that says how its differences read (Magnitude's)
        return how.difference(diff)
    text = METRICS[metric].show(diff)
    return text if text.startswith(("+", "-")) else f"{'+' if diff >= 0 else ''}{text}"


def _value_text(c, which):
    value = c["baseline_value" if which == "baseline" else "value"]
    text = f"{c[which]}: " + ("n/a" if value is None else METRICS[c["metric"]].show(value))
    beside = c["baseline_beside_value" if which == "baseline" else "beside_value"]
    if c.get("beside") and beside is not None:
        text += f" ({c['beside'].replace('_', ' ')} {METRICS[c['beside']].show(beside)})"
    return text


def _rows(cells):
    rows = []
    for c in cells:
        if c["ratio"] is not None:
            shown = f"{c['ratio']:.2f}x"
        elif c["difference"] is not None and c["baseline_value"]:
            shown = f"Δ {difference_text(c['metric'], c['difference'])}"  # a ratio across signs would mislead
        else:
            shown = "n/a"
        rows.append([c["loop"], c["strategy"], c["metric"], _value_text(c, "baseline"), _value_text(c, "version"),
                     shown, c["verdict"], c["why"]])
    return rows


GATES = ("regressed", "improved", "inconclusive", "not comparable", "n/a")  # what --fail-on may name


def fail_on(text: str) -> Tuple[str, ...]:
    """The verdicts of `--fail-on regressed,inconclusive`; UsageError naming the valid ones otherwise."""
    from .selection import gates

    return gates(text, GATES)


def gate(cells: Sequence[Cell], verdicts: Sequence[str]) -> List[str]:
    """One line per cell whose verdict is one of `verdicts`: what a CI job prints before it fails."""
    return [f"{c['loop']} × {c['strategy']} {c['metric']}: {c['verdict']} on TF {c['version']} vs {c['baseline']}"
            f" ({c['why']})" for c in cells if c["verdict"] in verdicts]


def counts(cells: Sequence[Cell]) -> str:
    """'2 regressed, 5 unchanged': how many cells got each verdict."""
    found = {v: sum(c["verdict"] == v for c in cells) for v in VERDICTS}
    return ", ".join(f"{n} {v}" for v, n in found.items() if n)


def render_table(cells: Sequence[Cell], context: str, width: Optional[int] = None) -> str:
    """The table, its `why` column wrapped to fit `width` characters (None: one line a cell)."""
    return "\n".join(text_table(COLUMNS, _rows(cells), width) + ["", context, counts(cells)]) + "\n"


def render_markdown(cells: Sequence[Cell], context: str) -> str:
    lines = markdown_table(COLUMNS, _rows(cells))
    return "\n".join([f"**kerasbench compare**: {counts(cells)}", "", context, ""] + lines) + "\n"


def render_json(cells: Sequence[Cell], context: str, meta: Dict[str, Any]) -> str:
    payload = {"schema": SCHEMA_VERSION, **meta, "context": context, "cells": cells}
    return json.dumps(payload, indent=1, allow_nan=False) + "\n"


def render_csv(cells: Sequence[Cell]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(cells)
    return buf.getvalue()


def describe(groups: Groups) -> str:
    """One line per version: what it ran on (TF, Keras, Python, numpy, profile/iterations/repeats)."""
    lines = []
    for version in sorted(groups, key=version_key):
        recs = [r for r, _ in groups[version].values()]
        env = next((r["environment"] for r in recs if r.get("environment")), {}) or {}
        iters = sorted({r["spec"]["iterations"] for r in recs if r.get("spec")})
        reps = sorted({r["spec"]["repeats"] for r in recs if r.get("spec")})
        ran = (f"{version}: {framework_text(env)}" if backend_of(env) != "tensorflow" else
               f"TF {version}: Keras {env.get('keras')}")
        lines.append(f"{ran}, Python {env.get('python')}, numpy {env.get('numpy')}, "
                     f"{len(recs)} pairs, {'/'.join(map(str, iters))} iterations, {'/'.join(map(str, reps))} repeat(s)"
                     + build_text(env))
    builds = {_build(r.get("environment") or {}) for g in groups.values() for r, _ in g.values()} - {None}
    if len(builds) > 1:
        lines.append(f"note: the sides ran different TF builds ({' and '.join(sorted(builds))}): CPU figures of the "
                     "full build and the CPU build may differ by the build alone (measure the release in the "
                     "nightly's build to compare like with like: triage does)")
    ran_on: Dict[str, List[str]] = {}
    for version in sorted(groups, key=version_key):
        for record, _ in groups[version].values():
            if not record.get("environment"):  # e.g. a skipped pair: it ran nowhere
                continue
            names = ran_on.setdefault(machines.label(record.get("environment")), [])
            if version not in names:
                names.append(version)
    if len(ran_on) > 1:
        envs = {machines.label(r.get("environment")): r.get("environment")
                for g in groups.values() for r, _ in g.values() if r.get("environment")}
        first = next(iter(envs.values()), None)
        differ = [n for n, e in envs.items() if machines.difference(first, e)]
        lines.append("machines: " + "; ".join(f"{n} (TF {', '.join(v)})" for n, v in ran_on.items()) + ": " +
                     ("different hardware (cells between them say so)" if differ else "the same hardware fingerprint"))
    note = weak_note(groups)
    if note:
        lines.append(note)
    return "\n".join(lines)


def weak_note(groups: Groups) -> Optional[str]:
    """The note on how far the verdicts hold, true for the protocol that judged them; None when nothing is weak.

    Stamped records (protocol 8 on: rule.version_of) were decided by sequential looks against their floors, so a
    count of iterations or repeats says nothing of them: weak are the pairs left undecided (the pair's verdict
    inconclusive) and those judged at the default floor (no calibration fit) or at a given one; the note counts each.
    Older records (unstamped) keep the old rule of thumb: fewer than 8 iterations or 2 repeats per pair."""
    ok = [r for g in groups.values() for r, _ in g.values()
          if _status(r) == "ok" and isinstance(r.get("summary"), dict)]
    stamped = [r for r in ok if rule.version_of(r["summary"]) is not None]
    parts, weak = [], set()
    if stamped:
        undecided = {id(r) for r in stamped if rule.pair_verdict(r["summary"]) == "inconclusive"}
        floors = {kind: {id(r) for r in stamped if any(isinstance(stamp, dict) and stamp.get("kind") == kind
                                                      for stamp in (r["summary"].get("floors_from") or {}).values())}
                  for kind in ("default", "given")}
        weak = undecided | floors["default"] | floors["given"]
        parts += [f"{len(undecided)} undecided (inconclusive)" if undecided else "",
                  f"{len(floors['default'])} judged at the {DEFAULT_FLOOR // KIB} KiB default floor (no calibration "
                  "fits them)" if floors["default"] else "",
                  f"{len(floors['given'])} at a given floor" if floors["given"] else ""]
    older = [r for r in ok if rule.version_of(r["summary"]) is None and r.get("spec")]
    if older and (min(r["spec"].get("repeats") or 1 for r in older) < 2
                  or min(r["spec"].get("iterations") or 0 for r in older) < 8):
        parts.append(f"{len(older)} judged before protocol 8 (unstamped) with fewer than 8 iterations or 2 repeats "
                     "per pair")
        weak |= {id(r) for r in older}
    parts = [p for p in parts if p]
    if not parts:
        return None
    versions = sorted({rule.version_of(r["summary"]) for r in stamped})
    how = (f"{', '.join(rule.version_text(v) for v in versions)} decided the other {len(ok) - len(weak)} by "
           "sequential looks against their floors; " if stamped else "")
    calibrate = ", or calibrate this machine (kerasbench calibrate)" if stamped and floors["default"] else ""
    return (f"note: of {len(ok)} pairs measured, {'; '.join(parts)}: those verdicts are weak ({how}measure the weak "
            f"ones longer, --profile full{calibrate}, before you trust them)")


def _build(env: Dict[str, Any]) -> Optional[str]:
    """'cpu' or 'full' for the TF build a record ran (its distribution), None when unknown (older records)."""
    name = env.get("tf_distribution")
    return None if not name else "cpu" if name.endswith("-cpu") else "full"


def build_text(env: Dict[str, Any]) -> str:
    """', nightly of DATE (tf-nightly-cpu, GIT_VERSION)' / ', tensorflow-cpu (GIT_VERSION)' for a side's line."""
    nightly, name, git = env.get("nightly") or {}, env.get("tf_distribution"), env.get("tf_git_version")
    if nightly:
        return (f", nightly of {nightly.get('day')} ({nightly.get('package')} {nightly.get('version')}, uploaded "
                f"{str(nightly.get('uploaded') or '')[:16]}{f', {git}' if git else ''})")
    return f", {name}{f' ({git})' if git else ''}" if name else ""


def render(cells: Sequence[Cell], groups: Groups, fmt: str, width: Optional[int] = None) -> str:
    """The comparison as text in `fmt` (one of FORMATS); a table fits `width` characters where one is given."""
    context = describe(groups)
    if fmt == "table":
        return render_table(cells, context, width)
    if fmt == "markdown":
        return render_markdown(cells, context)
    if fmt == "json":
        versions = sorted(groups, key=version_key)
        return render_json(cells, context, {"versions": versions, "baseline": cells[0]["baseline"] if cells else None})
    if fmt == "csv":
        return render_csv(cells)
    raise ValueError(fmt)
