"""The cells of a comparison: every (loop, strategy, metric, TF version) judged against the baseline version
(judging.py judges one), its ratio and difference, the hardware its two records ran on; the order of pairs and
of verdicts. Pure: groups of records in, cells out.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import machine as machines
from ..errors import UsageError
from ..metrics import METRICS, headline_metrics
from ..record import Record
from ..versions import version_key
from .judging import status_of, cell_side, judge

VERDICTS = ("regressed", "improved", "inconclusive", "not comparable", "unchanged", "n/a")  # also the output order

Groups = Dict[str, Dict[Tuple[str, str], Tuple[Record, str]]]  # {version: {(loop, strategy): (record, path)}}
Cell = Dict[str, Any]  # one row of the comparison (FIELDS)
FIELDS = ("loop", "strategy", "metric", "unit", "baseline", "version", "baseline_value", "value", "ratio",
          "difference", "verdict", "why", "baseline_repeats", "repeats", "baseline_ci_low", "baseline_ci_high",
          "ci_low", "ci_high", "noise", "beside", "baseline_beside_value", "beside_value",
          "machines", "hardware", "figures_verdict")


def _finite(v):
    return v if v is None or math.isfinite(v) else None


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
                if verdict == "n/a" and (status_of(base_rec) != "ok" or status_of(rec) != "ok"):
                    why = f"status {status_of(base_rec)} / {status_of(rec)}"
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
    from ..loops import LOOPS
    from ..strategies import STRATEGIES

    loops, strategies = list(LOOPS), list(STRATEGIES)
    return (loops.index(pair[0]) if pair[0] in loops else len(loops), pair[0],
            strategies.index(pair[1]) if pair[1] in strategies else len(strategies), pair[1])
