"""Growth per iteration with a confidence interval, and a verdict that needs an effect size.

A p-value alone over-calls leaks: with 60-100 iterations a trend test finds page-sized
staircases "significant". So `grows` needs the whole picture: a rising trend (Kendall's tau),
a confidence interval above zero, and a slope at least the floor. `flat` needs the interval to
rule out a slope of the floor's size. Anything else is `inconclusive`: run more iterations.
"""

from dataclasses import asdict, dataclass
from typing import Iterable, Optional, Sequence, Tuple

import numpy as np

# Smallest growth per iteration worth calling a leak by default. 64 KiB/iteration is 640 MB over
# 10,000 iterations; on glibc, RSS noise in a TF loop is a sawtooth of megabytes, so smaller floors
# need more iterations or a quieter allocator (`kerasbench calibrate` measures and stores a floor).
DEFAULT_FLOOR = 64 * 1024
ALPHA = 0.05
# Theil-Sen keeps every pairwise slope: n points cost n(n-1)/2 of them (10,000 iterations: 2.5 GB in
# the parent). Longer series are fitted through the medians of MAX_POINTS equal bins instead, which
# keeps the fit under ~50 MB at any length; series up to MAX_POINTS are fitted exactly as they are.
MAX_POINTS = 1000
VERDICTS = ("grows", "flat", "inconclusive")
# What grew, from the RSS verdict and the heap verdict (the allocator's count of bytes in use):
GROWTH_KINDS = {
    "leak": "the heap (or Python's blocks) grows: memory handed out and not given back",
    "retention": "RSS grows while the heap and Python's blocks are flat: the allocator keeps freed memory "
                 "(retention/fragmentation)",
    "flat": "heap and RSS both flat",
    "inconclusive": "the heap or RSS fit cannot tell (more iterations or repeats)",
}


@dataclass(frozen=True)
class Fit:
    """A robust line through a series: Theil-Sen slope, its confidence interval, trend p-value."""

    slope: float
    low: float
    high: float
    p_trend: float
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


def fit_growth(values: Sequence[float], confidence: float = 1 - ALPHA) -> Fit:
    """Theil-Sen slope of `values` against their index, with a `confidence` interval.

    The trend p-value is Kendall's tau between index and value (the Mann-Kendall test).
    Series shorter than 3 points give NaN, which every verdict reads as inconclusive.
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    if n < 3 or not np.all(np.isfinite(y)):
        nan = float("nan")
        return Fit(nan, nan, nan, nan, n)
    from scipy import stats  # here, not at the top: workers import this module and never fit (scipy costs seconds)

    x, y = _binned(y)
    slope, _, low, high = stats.theilslopes(y, x, alpha=confidence)
    if np.ptp(y) == 0:
        p = 1.0
    else:
        p = float(stats.kendalltau(x, y).pvalue)
    return Fit(float(slope), float(low), float(high), p, n)


def _binned(y: np.ndarray, points: int = MAX_POINTS) -> Tuple[np.ndarray, np.ndarray]:
    """(x, y) of the series, or of the medians of `points` equal bins (x at each bin's centre) when it is longer."""
    n = len(y)
    if n <= points:
        return np.arange(n, dtype=float), y
    edges = np.linspace(0, n, points + 1).astype(int)
    x = (edges[:-1] + edges[1:] - 1) / 2.0
    return x, np.array([np.median(y[a:b]) for a, b in zip(edges[:-1], edges[1:])])


def verdict(fit: Fit, floor: float = DEFAULT_FLOOR) -> str:
    """'grows', 'flat' or 'inconclusive' for one fit, given the smallest slope worth calling a leak."""
    if not np.isfinite(fit.slope):
        return "inconclusive"
    if fit.slope >= floor and fit.low > 0 and fit.p_trend < ALPHA:
        return "grows"
    if fit.high < floor:
        return "flat"
    return "inconclusive"


def combine(fits: Iterable[Fit], floor: float = DEFAULT_FLOOR) -> Tuple[Fit, str]:
    """One fit and verdict from repeats in fresh processes.

    The slope is the median of the repeats'; the interval spans all of theirs (conservative);
    the verdict is `grows` or `flat` only when every repeat agrees.
    """
    fits = [f for f in fits if f is not None]
    if not fits:
        nan = float("nan")
        return Fit(nan, nan, nan, nan, 0), "inconclusive"
    verdicts = {verdict(f, floor) for f in fits}
    combined = Fit(
        slope=float(np.median([f.slope for f in fits])),
        low=float(min(f.low for f in fits)),
        high=float(max(f.high for f in fits)),
        p_trend=float(max(f.p_trend for f in fits)),
        n=sum(f.n for f in fits),
    )
    return combined, verdicts.pop() if len(verdicts) == 1 else "inconclusive"


def growth_kind(rss_verdict: str, heap_verdict: Optional[str], py_blocks_per_iter: Optional[float] = None,
                min_blocks: float = 25) -> Optional[str]:
    """What grew (a key of GROWTH_KINDS) from the RSS and heap verdicts; None when the heap was not read.

    The heap decides whether it is a leak, also when RSS is flat (a small leak fills holes the allocator
    already holds). With the heap flat, growing RSS is the allocator keeping pages, unless Python's
    blocks grow by `min_blocks` or more per iteration: pymalloc's arenas are mmapped outside malloc's
    count, so Python objects that pile up grow RSS and the blocks, not the heap reading: a leak too.
    """
    if heap_verdict is None:
        return None
    if heap_verdict == "grows":
        return "leak"
    if heap_verdict == "flat":
        if rss_verdict == "grows" and py_blocks_per_iter is not None and py_blocks_per_iter >= min_blocks:
            return "leak"
        return {"grows": "retention", "flat": "flat"}.get(rss_verdict, "inconclusive")
    return "inconclusive"
