"""A pair's series judged over its repeats: every repeat against the series' margin at one resolution (its
shortest's count), at its own plan's level, the GC's teeth found in its heap; what the record's summary and
kerasbench score read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from .. import stats
from .counts import alpha
from .series import Fit, FloorAt, Judgement, combine, judge, margin_for

if TYPE_CHECKING:  # the type only
    from .run import RunLike


def _complete(result: dict, series: str) -> Optional[List[float]]:
    values = (result.get("series") or {}).get(series)
    return values if values and all(v is not None for v in values) else None


def _teeth(result: dict) -> Optional[Any]:
    heap = _complete(result, "heap")
    return stats.gc_teeth(heap) if heap else None


def period_of(spec: Any) -> int:
    """Iterations before `spec`'s inputs repeat (RunSpec.period: its strategy's; 1 for a spec that does not say)."""
    return int(getattr(spec, "period", 1) or 1)


@dataclass(frozen=True)
class Judged:
    """One series over a pair's repeats: each repeat's judgement and what they say together."""

    judgements: List[Judgement]
    fit: Fit
    verdict: str
    shape: str
    why: str
    count: int  # the count every repeat's resolution was taken at: the shortest repeat's
    margin: float = float("nan")  # what counts as growth (bytes/iteration)

    @property
    def floor(self) -> Tuple[float, str]:
        """The largest resolution a repeat was judged with (the coarsest of them), and its source."""
        worst = max(self.judgements, key=lambda j: j.floor)
        return worst.floor, worst.floor_source

    @property
    def needed(self) -> Optional[int]:
        """Undecided: about the count that would decide every repeat (the largest they say); None when decided or
        when a repeat finds none."""
        if self.verdict != "inconclusive":
            return None
        counts = [j.needed for j in self.judgements if j.verdict == "inconclusive"]
        return max(counts) if counts and None not in counts else None


def judge_results(results: Sequence[dict], spec: RunLike, series: str, at: FloorAt) -> Optional[Judged]:
    """The judgement of `series` over the repeats' results against its margin (margin_for) at the resolutions `at`
    gives; None when a repeat lacks the series or has a gap in it."""
    values = [_complete(r, series) for r in results]
    if not results or any(v is None for v in values):
        return None
    teeth = [_teeth(r) for r in results]
    # Every repeat at one resolution, the shortest's: repeats that read the same slope read the same verdict,
    # whichever count their budget let them reach (a half-window's own, shorter count keeps its own resolution).
    count = min(len(v) for v in values)
    def common(n: int) -> Tuple[float, str]:
        return at(min(n, count))

    common.uncapped = at  # what a longer run would be judged at: the count needed (series.needed_count)

    margin = margin_for(spec, series)[0]
    period = period_of(spec)
    judgements = [judge(v, margin, common, alpha(spec, r), t, period) for v, r, t in zip(values, results, teeth)]
    fit, verdict, shape, why = combine(judgements)
    return Judged(judgements, fit, verdict, shape, why, count, margin)
