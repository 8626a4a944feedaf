"""Growth per iteration with a confidence interval, and a verdict that needs an effect size.

A p-value alone over-calls leaks: with 60-100 iterations a trend test finds page-sized
staircases "significant". So `grows` needs the whole picture: a rising trend (Kendall's tau),
a confidence interval above zero, and a slope at least the floor. `flat` needs the interval to
rule out a slope of the floor's size. Anything else is `inconclusive`: run more iterations.
"""

import math
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from .units import KIB

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
# What grew, from the RSS and heap judgements (the heap is the allocator's count of bytes in use):
GROWTH_KINDS = {
    "leak": "the heap (or Python's blocks) grows, and keeps growing after the warm-up: memory handed out and not "
            "given back",
    "retention": "RSS keeps growing while the heap and Python's blocks are flat: the allocator keeps freed memory "
                 "(retention/fragmentation)",
    "step": "one jump, flat before and after it: not a growth per iteration (measure longer to see whether it "
            "repeats)",
    "settling": "growth that slows down: still warming up when the measurement ended (measure longer)",
    "flat": "heap and RSS both flat after the warm-up",
    "inconclusive": "the heap or RSS fit cannot tell (more time or repeats)",
}
# The shape of one series after its warm-up: grows and flat are decided; the others are not.
SHAPES = ("grows", "flat", "step", "settling", "inconclusive")

# The sequential protocol (docs/protocol.md): a budgeted run looks at its series at these counts and stops once
# both verdicts are decided. Each look is a test, so each is made at ALPHA / (planned looks): a union bound keeps
# the chance of any false call over all looks at or below ALPHA, however many looks the run takes.
LOOK_RATIO = 1.5  # looks at first, ×1.5, ×1.5² …: few looks (log of the span), each after a third more data
MIN_WINDOW = 8  # the warm-up rule keeps at least this many iterations (and at most cuts half)
MSER_BATCH = 5  # MSER-5: the truncation rule on batch means of 5 (MSER on single values under 100 differences)
MSER_GAIN = 2.0  # a cut must at least halve the statistic: on white noise a cut of n/4 or more then happens < 5 %
PERSIST_SHARE = 0.5  # each half of the window grows by at least this share of the floor ...
DECELERATION = 2.0  # ... and the late half at least 1/2 of the early half's rate: else it is settling
LATE_OF_WINDOW = 0.75  # ... or at least 3/4 of the whole window's (a sawtooth's early half can read twice its net)
STEP_SHARE = 0.5  # one difference carrying more than this share of the window's rise is a step ...
STEP_OVER_TYPICAL = 4.0  # ... and this many times the typical (median) difference: not one tooth of a sawtooth
LATE_MIN = 6  # a flat window's late half is judged on its own from this many iterations (a growth that starts late)
TOOTH_OVER_TYPICAL = 3.0  # a fall of the heap this many times its median difference is one of the GC's teeth
NET_TEETH = 2  # a half whose fit spans this many teeth nets them out; with fewer it reads the phase of its teeth


def look_points(first: int, last: int) -> List[int]:
    """The counts at which a sequential run looks at its series: `first`, then ×LOOK_RATIO (rounded up), below `last`.

    A run's end (its count, budget or growth cap) is one more look: the final verdict is judged there.
    """
    points, n = [], max(1, int(first))
    while n < last:
        points.append(n)
        n = max(n + 1, math.ceil(n * LOOK_RATIO))
    return points


def planned_looks(first: int, last: int, sequential: bool) -> int:
    """How many looks a run plans: its sequential looks (none for a fixed count) and its end."""
    return (len(look_points(first, last)) if sequential else 0) + 1


def alpha_for(looks: int) -> float:
    """The level each look is tested at, so that all `looks` together keep the error rate at ALPHA (Bonferroni)."""
    return ALPHA / max(1, int(looks))


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
    return x, np.array([np.median(y[a:b]) for a, b in zip(edges[:-1], edges[1:])])


def verdict(fit: Fit, floor: float = DEFAULT_FLOOR, alpha: float = ALPHA) -> str:
    """'grows', 'flat' or 'inconclusive' for one fit, given the smallest slope worth calling a leak."""
    if not np.isfinite(fit.slope):
        return "inconclusive"
    if fit.slope >= floor and fit.low > 0 and fit.p_trend < alpha:
        return "grows"
    if fit.high < floor:
        return "flat"
    return "inconclusive"


# ---------------------------------------------------------------- the warm-up, found in the data


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


# ---------------------------------------------------------------- one series judged


@dataclass(frozen=True)
class Judgement:
    """One series judged after its warm-up: the fit of the steady window, the verdict, its shape and why."""

    fit: Fit
    verdict: str  # VERDICTS
    shape: str  # SHAPES
    start: int  # iterations discarded as warm-up by steady_start (the run's own --warmup came before)
    floor: float
    floor_source: str = ""
    why: str = ""

    @property
    def decided(self) -> bool:
        return self.verdict in ("grows", "flat")


Floor = Union[float, Callable[[int], Tuple[float, str]]]


def _floor_at(floor: Floor, n: int) -> Tuple[float, str]:
    return floor(n) if callable(floor) else (float(floor), "")


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


def judge(values: Sequence[float], floor: Floor = DEFAULT_FLOOR, alpha: float = ALPHA,
          teeth: Optional[np.ndarray] = None) -> Judgement:
    """The verdict of one series: its warm-up cut (steady_start), the rest fitted and judged at `floor`.

    `floor` is bytes/iteration, or a function of the measured count giving (floor, where it came from): floors
    follow the iterations actually measured (a calibration judges its counts with this same rule). `grows` needs
    the verdict's three conditions (trend, CI above zero, slope at least the floor) on the window, and growth
    that persists through it: the warm-up rule found a steady state, each half grows by at least half the floor,
    and the late half at no less than half the early half's rate or `grows` on its own (at its own count's floor).
    A window whose growth fails that is a `step` (one difference carries most of the rise, many times the typical
    one) or `settling` (it slows down, the halves' intervals apart, or no steady state was found), and
    inconclusive. `flat` must hold through it too: a window whose late half alone `grows` (at the late half's
    floor) is inconclusive, a growth that starts late (glibc's free heap pages absorb a leak until they are used up).
    `teeth` (gc_teeth of the pair's heap, a bool per difference) marks the GC's falls: the halves' rates for the
    persistence test are taken between them (between_teeth).
    """
    y = np.asarray(values, dtype=float)
    start, unsettled = steady_start(y)
    window = y[start:]
    floor_value, source = _floor_at(floor, len(y))  # the count measured, as a calibration measures its counts
    fit = fit_growth(window, 1 - alpha)
    found = verdict(fit, floor_value, alpha)
    late_fit = _late_fit(window, floor, alpha)  # the late half judged alone, when it grows on its own
    if found == "flat" and late_fit is None:  # flat must hold through the window: not a growth that starts late
        return Judgement(fit, found, "flat", start, floor_value, source)
    early = late = float("nan")
    slows = toothed = False
    if len(window) >= 6:
        half = len(window) // 2
        first, second = fit_growth(window[:half], 1 - alpha), fit_growth(window[half:], 1 - alpha)
        cut = None if teeth is None or len(teeth) != len(y) - 1 else np.asarray(teeth, dtype=bool)[start:]
        early, late = first.slope, second.slope
        if cut is not None and cut.any() and min(cut[:half - 1].sum(), cut[half:].sum()) < NET_TEETH:
            early, late = between_teeth(window[:half], cut[:half - 1], early), between_teeth(window[half:],
                                                                                            cut[half:], late)
            toothed = True
        slows = first.low > second.high  # the halves' intervals apart: a slowing the data shows, not a GC's tooth
    # Growth persists when the window is past the warm-up (the rule found a steady state), each half grows by half
    # the floor, and the late half does not slow to under half the early rate or, slower, still grows on its own at
    # its floor: a leak that starts steeper still leaks; a cache that fills and stops, or TF settling for hundreds of
    # iterations after its last new trace, does not.
    # A half holding fewer than two of the GC's teeth (`teeth`, found in the heap and given for RSS too) reads the
    # phase of its teeth, not a rate: 10 iterations of a slow pair hold one, and the half it falls in reads the fall
    # (+7 MiB/iteration, then -2.6). Such halves are compared at their rates between the teeth (whether the heap
    # still piles up between collections; whether it grows net is the window's own fit). Halves that span two or
    # more teeth net them out in their plain fits, which still see a settling curve under its teeth.
    # Or the late half keeps 3/4 of the window's own rate: a heap the GC cuts every 9 iterations reads +7225 in the
    # half whose tooth falls late and +3296 in the other (a net +3456, the window's; +3391 over 150 iterations), a
    # phase of the teeth, not a slowing (a settling heap reads +1112, +346 and +539: still settling).
    persists = (not unsettled and min(early, late) >= PERSIST_SHARE * floor_value
                and (late * DECELERATION >= early or late >= LATE_OF_WINDOW * fit.slope or late_fit is not None))
    if found == "grows" and persists:
        return Judgement(fit, found, "grows", start, floor_value, source)
    starts_late = _starts_late(late_fit, len(window) - len(window) // 2) if found != "grows" else ""
    # not decided: say what it looks like (growth that fails the persistence test is never `grows`)
    found, shape, why = "inconclusive", "inconclusive", ""
    rise = float(np.median(window[-3:]) - np.median(window[:3])) if len(window) >= 3 else 0.0
    jump = int(np.argmax(np.diff(window))) if len(window) >= 2 else 0
    diffs = np.diff(window)
    if rise >= floor_value and diffs[jump] > STEP_SHARE * rise \
            and diffs[jump] > STEP_OVER_TYPICAL * float(np.median(np.abs(diffs))):
        shape = "step"
        why = (f"one step of {rise / KIB:+.0f} KiB at iteration {start + jump + 1}, flat around it: measure longer "
               "to see whether it repeats")
    elif slows and early > max(late, 0) * DECELERATION and early >= PERSIST_SHARE * floor_value:
        shape, why = "settling", (f"growth slows from {early / KIB:+.1f} to {late / KIB:+.1f} KiB/iteration "
                                  "between the halves: still settling, measure longer")
    elif starts_late:
        why = starts_late
    elif unsettled:
        shape, why = "settling", "the warm-up rule found no steady state in the first half: measure longer"
    elif fit.slope >= floor_value and np.isfinite(early) and persists:
        # steady, at the floor in both halves: what failed is the test, too few points for this look's level (a
        # heap the GC frees every few iterations, 9 iterations of a slow pair judged at a look's level of 0.003)
        why = (f"steady {early / KIB:+.1f}, then {late / KIB:+.1f} KiB/iteration{_BETWEEN if toothed else ''}, but "
               f"{len(window)} iterations "
               f"cannot exclude no growth at this look's level ({alpha:.2g}): interval [{fit.low / KIB:+.1f}, "
               f"{fit.high / KIB:+.1f}], trend p {fit.p_trend:.2g}; measure longer")
    elif fit.slope >= floor_value and np.isfinite(early):
        why = (f"growth not steady ({early / KIB:+.1f}, then {late / KIB:+.1f} KiB/iteration"
               f"{_BETWEEN if toothed else ''})")
    return Judgement(fit, found, shape, start, floor_value, source, why)


_BETWEEN = " between the GC's teeth"


def _late_fit(window: np.ndarray, floor: Floor, alpha: float) -> Optional[Fit]:
    """The fit of the window's late half when that half alone `grows` (judged at its own count's floor), else None."""
    late = window[len(window) // 2:]
    if len(late) < LATE_MIN:
        return None
    fit = fit_growth(late, 1 - alpha)
    return fit if verdict(fit, _floor_at(floor, len(late))[0], alpha) == "grows" else None


def _starts_late(late_fit: Optional[Fit], n: int) -> str:
    """Why a window that is not `grows` is not flat either when its late half (`n` iterations) grows alone, else ''."""
    if late_fit is None:
        return ""
    return (f"flat at first, then {late_fit.slope / KIB:+.1f} KiB/iteration over the last {n} iterations (a "
            "growth that starts late: free memory used up first?): measure longer")


def early_stop(judgement: Judgement, best_floor: float, previous: Optional[Judgement] = None) -> bool:
    """Whether a sequential run may stop on this judgement: `grows` at two looks running (this one and `previous`,
    the look before it), or `flat` even at the smallest floor a longer run would be judged with (`best_floor`), so
    that measuring longer could not turn flat into grows.

    `grows` waits for the next look (×1.5 the count) because a growth that stops is not a leak: a cache that fills
    over the first 8 iterations reads `grows` at 8 and no longer at 12. Asking two looks only makes `grows` rarer,
    so the error rate of the union bound still holds; a true leak costs one look more. It sees no further than the
    next look: a growth that lasts N iterations still reads `grows` at two looks before about 1.5 N."""
    if judgement.verdict == "grows":
        return previous is not None and previous.verdict == "grows"
    return judgement.verdict == "flat" and judgement.fit.high < best_floor


def combine(judgements: Iterable[Judgement]) -> Tuple[Fit, str, str, str]:
    """(fit, verdict, shape, why) of repeats in fresh processes.

    The slope is the median of the repeats'; the interval spans all of theirs (conservative); the verdict is
    `grows` or `flat` only when every repeat says so, and repeats that disagree say so.
    """
    judgements = [j for j in judgements if j is not None]
    if not judgements:
        return NAN_FIT, "inconclusive", "inconclusive", "no measured series"
    fits = [j.fit for j in judgements]
    combined = Fit(
        slope=float(np.median([f.slope for f in fits])),
        low=float(min(f.low for f in fits)),
        high=float(max(f.high for f in fits)),
        p_trend=float(max(f.p_trend for f in fits)),
        n=sum(f.n for f in fits),
    )
    verdicts = [j.verdict for j in judgements]
    shapes = {j.shape for j in judgements}
    if len(set(verdicts)) > 1:
        counts = ", ".join(f"{v} ×{verdicts.count(v)}" for v in VERDICTS if v in verdicts)
        return combined, "inconclusive", shapes.pop() if len(shapes) == 1 else "inconclusive", \
            f"repeats disagree ({counts})"
    why = next((j.why for j in judgements if j.why), "")
    return combined, verdicts[0], shapes.pop() if len(shapes) == 1 else "inconclusive", why


def pair_verdict(summary: dict) -> str:
    """A pair's one verdict from its record's summary, RSS and heap together: `grows` when either grows (a leak or
    retention), `flat` when both are flat (RSS alone where the heap is not read), else `inconclusive`. What the run
    table, ablate, `Results.verdicts()` and `assert_no_growth` go by."""
    rss, heap = summary.get("verdict"), summary.get("heap_verdict")
    if "grows" in (rss, heap):
        return "grows"
    if rss == "flat" and heap in ("flat", None):
        return "flat"
    return "inconclusive"


# pymalloc hands out blocks of at most 512 bytes (SMALL_REQUEST_THRESHOLD): Python's blocks can hold at most this
# many bytes each, so blocks/iteration × PY_BLOCK_MAX bounds the RSS growth Python objects can explain.
PY_BLOCK_MAX = 512


def growth_kind(rss_verdict: str, heap_verdict: Optional[str], rss_shape: str = "", heap_shape: str = "",
                rss_slope: Optional[float] = None, py_blocks_per_iter: Optional[float] = None) -> Optional[str]:
    """What grew (a key of GROWTH_KINDS) from the RSS and heap judgements; None when the heap was not read.

    The heap decides whether it is a leak, also when RSS is flat (a small leak fills holes the allocator
    already holds). With the heap flat, growing RSS is the allocator keeping pages, unless Python's blocks
    grow enough to explain it: pymalloc's arenas are mmapped outside malloc's count, so Python objects that
    pile up grow RSS and the blocks, not the heap reading. They explain it when blocks/iteration × 512 bytes
    (the largest block) reaches half the RSS slope. Undecided series name their shape (a step, settling).
    """
    if heap_verdict is None:
        return None
    if heap_verdict == "grows":
        return "leak"
    if heap_verdict == "flat":
        if rss_verdict == "grows":
            python_bytes = None if py_blocks_per_iter is None else py_blocks_per_iter * PY_BLOCK_MAX
            if python_bytes is not None and rss_slope is not None and python_bytes >= rss_slope / 2:
                return "leak"
            return "retention"
        if rss_verdict == "flat":
            return "flat"
        return rss_shape if rss_shape in ("step", "settling") else "inconclusive"
    return heap_shape if heap_shape in ("step", "settling") else "inconclusive"


# ---------------------------------------------------------------- a middle measurement on the scale of a change

# Where a middle build (a release between two ends, a bridge, one package moved) lies on the change from a good end to
# a bad one (docs/commands.md, "Triage"): position 0 is the good end, 1 the bad one. It is like an end when its whole
# 95 % interval lies within SCALE_NEAR of it, or beyond it (a middle past the good end, away from the bad one, is on
# the good side); between when the whole interval lies in the middle; undecided otherwise. 0.25 leaves the middle
# half of the change to "between": TF 2.16.1 with tf_keras read -83.9 MiB of peak over setup from TF 2.15.1 where
# TF 2.16.1 read +2.6 GB (-3 %; 14 times the noise, so compare calls it a change), and +1.2 MiB in another run (0 %):
# the good end's both times, as the share of the change says, however many times the noise the difference is.
SCALE_NEAR = 0.25
SCALE_Z = 1.96  # the position's interval: ±1.96 standard uncertainties (95 %)


@dataclass(frozen=True)
class Position:
    """Where a middle measurement lies on the scale good (0) -> bad (1): `position` with its 95 % interval `low` ..
    `high`, and `kind`: 'good', 'bad', 'between' or 'undecided' (`why` says why it cannot be placed, if it cannot)."""

    position: float
    low: float
    high: float
    kind: str
    why: str = ""

    def text(self, good: str = "the good end", bad: str = "the bad end") -> str:
        """'like 2.15.1 (-3.2 % of the way to 2.16.1, ±0.5 %)', 'like 2.16.1 (97 % of the way from 2.15.1, ±2 %)',
        'between 2.15.1 and 2.16.1 (48 % of the way, ±5 %)', 'neither like 2.15.1 nor like 2.16.1 for certain (…)'."""
        if not math.isfinite(self.position):
            return f"neither like {good} nor like {bad} for certain: {self.why}"
        half = (self.high - self.low) / 2
        digits = 0 if half >= 0.01 else 1

        def share(where: str) -> str:
            return f"{self.position * 100:.{digits}f} % of the way{where}, ±{half * 100:.{digits}f} %"

        if self.kind == "good":  # past the good end, away from the bad one, by more than `near`: said so
            return f"like {good} ({'beyond it: ' * (self.position < -SCALE_NEAR)}{share(f' to {bad}')})"
        if self.kind == "bad":
            return f"like {bad} ({'beyond it: ' * (self.position > 1 + SCALE_NEAR)}{share(f' from {good}')})"
        if self.kind == "between":
            return f"between {good} and {bad} ({share('')})"
        return (f"neither like {good} nor like {bad} for certain ({share(f' from {good} to {bad}')}: too "
                f"uncertain to place; like {good} needs the interval under {SCALE_NEAR * 100:.0f} % of the way, "
                f"like {bad} over {(1 - SCALE_NEAR) * 100:.0f} %, between them inside both)")


def place(good: Tuple[float, float], bad: Tuple[float, float], middle: Tuple[float, float],
          near: float = SCALE_NEAR, z: float = SCALE_Z) -> Position:
    """A middle measurement placed on the scale of the change from `good` to `bad`: each a (value, standard
    uncertainty) pair on the metric's own scale (bytes, bytes/iteration …; the uncertainty of one measurement of it:
    the spread of its repeats or its series, a slope's CI half-width over its z).

    position = (middle - good) / (bad - good). Its standard uncertainty is propagated to first order (the delta
    method, the good end counted once although it is in both differences):
    var = (s_middle² + (1 - position)² s_good² + position² s_bad²) / (bad - good)². The interval is position ± z of
    it. Not placed (undecided) when the ends' difference is within 2z of its own uncertainty: a ratio over a
    denominator that near zero has no usable interval (Fieller), and the ends do not differ enough to say.
    """
    (g, sg), (b, sb), (m, sm) = good, bad, middle
    if not all(math.isfinite(v) for v in (g, b, m, sg, sb, sm)):
        nan = float("nan")
        return Position(nan, nan, nan, "undecided", "a value or its uncertainty is unknown")
    span = b - g
    if span == 0 or abs(span) <= 2 * z * math.hypot(sg, sb):
        nan = float("nan")
        return Position(nan, nan, nan, "undecided", "the ends do not differ by more than their own uncertainty")
    p = (m - g) / span
    sd = math.sqrt(sm ** 2 + (1 - p) ** 2 * sg ** 2 + p ** 2 * sb ** 2) / abs(span)
    low, high = p - z * sd, p + z * sd
    if high <= near:
        kind = "good"
    elif low >= 1 - near:
        kind = "bad"
    elif low > near and high < 1 - near:
        kind = "between"
    else:
        kind = "undecided"
    return Position(p, low, high, kind)
