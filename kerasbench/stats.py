"""The estimators the verdict rule (kerasbench.rule) is built on: a growth per iteration with its confidence
interval (Theil-Sen, Kendall's trend test), where a series' warm-up ends (MSER-5), and where the GC took back what
piled up (its teeth). Pure, no verdict: kerasbench.rule judges.
"""

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

ALPHA = 0.05  # the confidence of an interval: 95 %
# Theil-Sen keeps every pairwise slope: n points cost n(n-1)/2 of them (10,000 iterations: 2.5 GB in
# the parent). Longer series are fitted through the medians of MAX_POINTS equal bins instead, which
# keeps the fit under ~50 MB at any length; series up to MAX_POINTS are fitted exactly as they are.
MAX_POINTS = 1000
MIN_WINDOW = 8  # the warm-up rule keeps at least this many iterations (and at most cuts half)
MSER_BATCH = 5  # MSER-5: the truncation rule on batch means of 5 (MSER on single values under 100 differences)
MSER_GAIN = 2.0  # a cut must at least halve the statistic: on white noise a cut of n/4 or more then happens < 5 %
LATE_OF_WINDOW = 0.75  # a late rate within a quarter of the whole's is the same rate (the warm-up rule, persistence)
TOOTH_OVER_TYPICAL = 3.0  # a fall of the heap this many times its median difference is one of the GC's teeth


@dataclass(frozen=True)
class Fit:
    """A robust line through a series: Theil-Sen slope, its confidence interval, trend p-value."""

    slope: float
    low: float
    high: float
    p_trend: float
    n: int


NAN_FIT = Fit(float("nan"), float("nan"), float("nan"), float("nan"), 0)


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
    # the bins are of two lengths at most (floor and ceil of n / points): each length's bins as the rows of one
    # array, one median call for them all (the same numbers as a median per bin, ~100× fewer calls)
    starts, sizes, medians = edges[:-1], np.diff(edges), np.empty(points)
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        medians[rows] = np.median(y[starts[rows, None] + np.arange(size)], axis=1)
    return x, medians


def steady_start(values: Sequence[float], keep: int = MIN_WINDOW) -> Tuple[int, bool]:
    """(iterations to discard as warm-up, whether the rule found no steady state in the allowed range).

    MSER-5 (White 1997; Hoad, Robinson & Davies 2010) on the series' first differences: the truncation point d
    that minimises the standard error of the mean of what is kept, var(z[d:]) / len(z[d:]). On the differences,
    not the levels, because the steady state of a leak is a constant slope, not a constant level: a leak's
    differences are stationary from the start, a warm-up's decay to it, a step is one outlier. Batches of 5
    (single values under 100 differences); at most half the series is cut, at least `keep` iterations stay, and
    a cut must at least halve the statistic (MSER_GAIN: noise alone wins a little by cutting anywhere). A
    minimum at the limit means the series was still changing there (the second value: True).

    A cut whose discarded differences average within a quarter of the kept ones' rate is no warm-up (0, False): the
    persistence test calls a late half that keeps 3/4 of the rate steady, and this rule agrees with it. MSER alone
    is scale-free: a leak's heap rising +2737, +2678, +2643 KiB then +2636 ± 10 an iteration halves the statistic
    by cutting its first 10 of 20 iterations, at the limit, and a steady +2.6 MiB/iteration leak read "no steady
    state in the first half" (`settling`, not `leak`).
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    limit = min(n // 2, n - keep)
    if limit <= 0 or not np.all(np.isfinite(y)):
        return 0, False
    z = np.diff(y)
    batch = MSER_BATCH if len(z) >= 20 * MSER_BATCH else 1
    m = len(z) // batch
    means = z[: m * batch].reshape(m, batch).mean(axis=1)
    cuts = limit // batch  # batches that may be cut
    # var of every tail means[d:], d = 0 .. cuts, from suffix sums (linear, not quadratic, in the length)
    s1 = np.cumsum(means[::-1])[::-1]
    s2 = np.cumsum((means * means)[::-1])[::-1]
    length = np.arange(m, 0, -1, dtype=float)
    d = np.arange(cuts + 1)
    var = np.maximum(s2[d] / length[d] - (s1[d] / length[d]) ** 2, 0.0)
    mser = var / length[d]
    best = int(np.argmin(mser + 1e-12 * np.abs(mser).max() * d))  # ties: the shortest cut
    if mser[best] > mser[0] / MSER_GAIN:  # noise alone often wins a little by cutting: a warm-up wins a lot
        return 0, False
    kept_rate = float(means[best:].mean())
    if best and abs(float(means[:best].mean()) - kept_rate) < (1 - LATE_OF_WINDOW) * abs(kept_rate):
        return 0, False  # the same rate before and after the cut: steady already
    # still changing at the limit: only where the limit is half the series (under 2 × keep, `keep` sets it instead)
    return best * batch, cuts > 0 and best == cuts and limit == n // 2


def gc_teeth(values: Sequence[float]) -> np.ndarray:
    """Where a series falls by TOOTH_OVER_TYPICAL times its median difference (a bool per difference): in a heap
    reading, the GC taking back what piled up since its last collection (a slow pair's heap rises ~7 MiB an
    iteration and falls ~26 MiB every ~9)."""
    diffs = np.diff(np.asarray(values, dtype=float))
    if len(diffs) < 2 or not np.all(np.isfinite(diffs)):
        return np.zeros(len(diffs), dtype=bool)
    return diffs < -TOOTH_OVER_TYPICAL * float(np.median(np.abs(diffs)))


def between_teeth(values: np.ndarray, teeth: Optional[np.ndarray], slope: float) -> float:
    """The rate at which `values` rise between the teeth (`teeth`: a bool per difference, gc_teeth's): Theil-Sen
    over the pairs no tooth separates; `slope` (the plain fit's) where there is no tooth."""
    if teeth is None or not teeth.any():
        return slope
    if len(values) > MAX_POINTS:  # pairs grow as n²: a long half's rate is the median of its differences off the teeth
        return float(np.median(np.diff(values)[~teeth]))
    segment = np.concatenate(([0], np.cumsum(teeth)))
    i, j = np.triu_indices(len(values), 1)
    same = segment[i] == segment[j]
    if not same.any():
        return slope
    i, j = i[same], j[same]
    return float(np.median((values[j] - values[i]) / (j - i)))
