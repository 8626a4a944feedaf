"""One series judged: its verdict, its shape, repeats combined, the pair's one verdict and what grew.

A p-value alone over-calls leaks: with 60-100 iterations a trend test finds page-sized staircases "significant".
So `grows` needs the whole picture: a rising trend (Kendall's tau), a confidence interval above zero, a slope at
least the floor, and growth that persists past the warm-up. `flat` needs the interval to rule out a slope of the
floor's size. Anything else is `inconclusive`: run more iterations. The estimators (Theil-Sen, MSER-5, the GC's
teeth) are kerasbench.stats'; docs/protocol.md says why each rule is so.
"""

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from ..stats import ALPHA, LATE_OF_WINDOW, NAN_FIT, Fit, between_teeth, fit_growth, steady_start
from ..units import KIB, floor_kib

# Smallest growth per iteration worth calling a leak by default. 64 KiB/iteration is 640 MB over
# 10,000 iterations; on glibc, RSS noise in a TF loop is a sawtooth of megabytes, so smaller floors
# need more iterations or a quieter allocator (`kerasbench calibrate` measures and stores a floor).
DEFAULT_FLOOR = 64 * 1024

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
# The persistence test of a growth (judge):
PERSIST_SHARE = 0.5  # each half of the window grows by at least this share of the floor ...

DECELERATION = 2.0  # ... and the late half at least 1/2 of the early half's rate: else it is settling

STEP_SHARE = 0.5  # one difference carrying more than this share of the window's rise is a step ...

STEP_OVER_TYPICAL = 4.0  # ... and this many times the typical (median) difference: not one tooth of a sawtooth

LATE_MIN = 6  # a flat window's late half is judged on its own from this many iterations (a growth that starts late)

NET_TEETH = 2  # a half whose fit spans this many teeth nets them out; with fewer it reads the phase of its teeth


def verdict(fit: Fit, floor: float = DEFAULT_FLOOR, alpha: float = ALPHA, limit: bool = False) -> str:
    """'grows', 'flat' or 'inconclusive' for one fit, given the smallest slope worth calling a leak.

    With `limit` the floor is a user's threshold (a given floor: max_growth, --floor-kib): `grows` needs the whole
    interval at or above it (confidently above), `flat` the whole interval below it; an interval across it is
    `inconclusive` (cannot tell). A calibrated floor is the smallest rate the data resolve: there a slope at the
    floor with an interval above zero is growth."""
    if not np.isfinite(fit.slope):
        return "inconclusive"
    if limit:
        return "grows" if fit.low >= floor and fit.p_trend < alpha else "flat" if fit.high < floor else "inconclusive"
    if fit.slope >= floor and fit.low > 0 and fit.p_trend < alpha:
        return "grows"
    if fit.high < floor:
        return "flat"
    return "inconclusive"


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


def judge(values: Sequence[float], floor: Floor = DEFAULT_FLOOR, alpha: float = ALPHA,
          teeth: Optional[np.ndarray] = None, limit: bool = False, period: int = 1) -> Judgement:
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
    persistence test are taken between them (between_teeth). `limit`: the floor is a user's threshold (verdict's).
    `period`: iterations before the inputs repeat (a varying strategy's batch sizes); from three periods measured,
    growth persists only if the last period's rate is not under half the one before it (period_slows): TF 2.12's
    heap still settles through the second period of 120 batch sizes, after the halves' test has passed.
    """
    y = np.asarray(values, dtype=float)
    start, unsettled = steady_start(y)
    window = y[start:]
    floor_value, source = _floor_at(floor, len(y))  # the count measured, as a calibration measures its counts
    fit = fit_growth(window, 1 - alpha)
    found = verdict(fit, floor_value, alpha, limit)
    late_fit = _late_fit(window, floor, alpha, limit)  # the late half judged alone, when it grows on its own
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
    by_period = period_slows(y, period) if found == "grows" and persists else None
    if by_period is not None:
        persists = False
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
    elif by_period is not None:
        shape, why = "settling", (f"growth slows from {by_period[0] / KIB:+.1f} to {by_period[1] / KIB:+.1f} "
                                  f"KiB/iteration between the last two periods of its {period} inputs: still "
                                  "settling, measure longer")
    elif slows and early > max(late, 0) * DECELERATION and early >= PERSIST_SHARE * floor_value:
        shape, why = "settling", (f"growth slows from {early / KIB:+.1f} to {late / KIB:+.1f} KiB/iteration "
                                  "between the halves: still settling, measure longer")
    elif starts_late:
        why = starts_late
    elif unsettled:
        shape, why = "settling", "the warm-up rule found no steady state in the first half: measure longer"
    elif limit and np.isfinite(fit.slope) and fit.low < floor_value <= fit.high:
        why = (f"cannot tell: {fit.slope / KIB:+.1f} KiB/iteration, interval [{fit.low / KIB:+.1f}, "
               f"{fit.high / KIB:+.1f}] spans the limit {floor_kib(floor_value)} KiB/iteration; measure longer")
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


def period_slows(values: np.ndarray, period: int) -> Optional[Tuple[float, float]]:
    """(the previous period's rate, the last one's) when the last `period` iterations grow at under half the rate of
    the `period` before them, their intervals apart; None when not, or when fewer than three periods were measured
    (the one before the last would hold the first period's new inputs: a slowing any series of new shapes shows)."""
    n = len(values)
    if period <= 1 or n < 3 * period + 1:
        return None
    before = fit_growth(values[n - 1 - 2 * period:n - period], 1 - ALPHA)
    last = fit_growth(values[n - 1 - period:], 1 - ALPHA)
    if before.low > last.high and before.slope > max(last.slope, 0.0) * DECELERATION:
        return before.slope, last.slope
    return None


def _late_fit(window: np.ndarray, floor: Floor, alpha: float, limit: bool = False) -> Optional[Fit]:
    """The fit of the window's late half when that half alone `grows` (judged at its own count's floor), else None."""
    late = window[len(window) // 2:]
    if len(late) < LATE_MIN:
        return None
    fit = fit_growth(late, 1 - alpha)
    return fit if verdict(fit, _floor_at(floor, len(late))[0], alpha, limit) == "grows" else None


def _starts_late(late_fit: Optional[Fit], n: int) -> str:
    """Why a window that is not `grows` is not flat either when its late half (`n` iterations) grows alone, else ''."""
    if late_fit is None:
        return ""
    return (f"flat at first, then {late_fit.slope / KIB:+.1f} KiB/iteration over the last {n} iterations (a "
            "growth that starts late: free memory used up first?): measure longer")


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
