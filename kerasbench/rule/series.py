"""One series judged: its verdict, its shape, repeats combined, the pair's one verdict and what grew.

Protocol 9 separates two numbers the rule used to confuse. The **margin** is what counts as growth: a rate per
iteration that does not depend on how long a series was measured (the user's `max_growth` / `--floor-kib`, else
MARGINS' default for the series). The **resolution** is what a count of iterations can tell apart: the calibrated
floor at that count (the allocator's calibration, TF's own heap settling), which widens the slope's interval (a
slope can be off by that much for reasons the interval does not model: page staircases, glibc's sawtooth, TF
still settling). Then `grows` = the widened interval wholly at or above the margin (and a rising trend), `flat` =
wholly below it, else `inconclusive`, saying the count that would decide. A longer run narrows the interval and
the resolution, so it can turn `inconclusive` into a verdict, never `flat` into `grows` (except a slope within the
resolution of the margin): equivalence testing, two one-sided tests, as pytest-memray's fixed limit reads.

A `grows` also needs growth that persists past the warm-up (shape rules: warm-up, step, settling), unless the
widened interval lies at many times the margin and the window's late half still grows that fast: a shape can
qualify a verdict near the margin, never hide a large leak. The estimators (Theil-Sen, MSER-5, the GC's teeth) are
kerasbench.stats'; docs/protocol.md says why each rule is so.
"""

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from ..stats import ALPHA, LATE_OF_WINDOW, NAN_FIT, Fit, between_teeth, fit_growth, steady_start
from ..units import KIB, floor_kib

# What counts as growth by default, per series (docs/protocol.md, "The margin and the resolution"): a rate per
# iteration, whatever the count. The heap's 8 KiB: over the largest slope of any reused model on either reference
# (+1.1 ... +2.9 KiB/iteration on TF 2.21.0: predict, model(x), the slow loops' reused models: the negative
# controls) plus what the default profile's counts resolve (≤ 4 KiB from 20 iterations), under the 16 KiB a call
# keeper; TF 2.12.1's full cleanup keeps +4.4 ... +7.4 per model built (4-7 MB over 1,000 models) under it. RSS's
# 128 KiB: what glibc's RSS resolves at 8 iterations, 4× what it resolves from 30 (RSS moves in pages and glibc's
# sawtooth), 1.3 GB over 10,000 iterations; the heap tells a leak under it apart. Python's blocks have no verdict of
# their own: they explain RSS growth (growth_kind), at RSS's margin. Replayed on both references at the default
# profile (score --replay): decided pairs agree 100 %; RSS undecided 2-7 % (64 KiB / 4 KiB: 8-25 %), what grew
# 2-3 % on TF 2.21.0 and 23-25 % on 2.12.1, whose full cleanup sits near the heap's margin.
MARGINS = {"rss": 128 * KIB, "heap": 8 * KIB}

# The resolution where no calibration fits (floors.floor_for's default), by count: the shipped glibc calibration's
# (docs/calibration/glibc-*-py3.11.json: RSS 128 KiB at 8 iterations, 32 from 30; the heap 0.5 KiB), between and
# beyond its counts as a calibration's (counts.floor_between); said as the default wherever it is used.
DEFAULT_RESOLUTION = {"rss": ((8, 128 * KIB), (30, 32 * KIB), (60, 32 * KIB)), "heap": ((8, 512.0), (60, 512.0))}

# The floor a calibration detects against (calibration.py: a rate counts as detected at half of it) when it tests
# none: what `resolve=True` judges at. Not a margin: protocols up to 8 judged every series at it by default.
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
PERSIST_SHARE = 0.5  # each half of the window grows by at least this share of the margin ...

DECELERATION = 2.0  # ... and the late half at least 1/2 of the early half's rate: else it is settling

STEP_SHARE = 0.5  # one difference carrying more than this share of the window's rise is a step ...

STEP_OVER_TYPICAL = 4.0  # ... and this many times the typical (median) difference: not one tooth of a sawtooth

LATE_MIN = 6  # a flat window's late half is judged on its own from this many iterations (a growth that starts late)

NET_TEETH = 2  # a half whose fit spans this many teeth nets them out; with fewer it reads the phase of its teeth

# A growth no shape rule holds back: the window's widened interval at or above this many times the margin, and its
# late half (3 iterations or more) still growing that fast. A cache that fills and stops has a flat late half; a heap
# still settling at 2.5× the margin in its last period is left to the period's test.
CLEAR_OVER_MARGIN = 16.0

# How far `needed` looks for the count that would decide (counts.look_points' steps from the count measured).
NEEDED_MOST = 100_000
NEEDED_POWER = 1.5  # a slope's interval narrows as n^-1.5 on independent noise (a line's slope: its standard error)


def widened(fit: Fit, resolution: float = 0.0) -> Tuple[float, float]:
    """The slope's interval widened by the resolution: (low, high), at least the slope ± `resolution`."""
    return min(fit.low, fit.slope - resolution), max(fit.high, fit.slope + resolution)


def verdict(fit: Fit, margin: float = MARGINS["rss"], resolution: float = 0.0, alpha: float = ALPHA) -> str:
    """'grows', 'flat' or 'inconclusive' for one fit: its interval widened by the `resolution` (widened) wholly at
    or above the `margin` with a rising trend at `alpha` (grows), wholly below it (flat), else across it."""
    if not np.isfinite(fit.slope):
        return "inconclusive"
    low, high = widened(fit, resolution)
    if low >= margin and fit.p_trend < alpha:
        return "grows"
    return "flat" if high < margin else "inconclusive"


def detects(fit: Fit, floor: float, alpha: float = ALPHA) -> str:
    """The detection a calibration measures resolutions by (protocols up to 8 judged every series so): 'grows' when
    the slope is at least `floor` with its interval above zero and a rising trend, 'flat' when the interval's top is
    under `floor`. A calibration asks which rates a count detects; a run asks whether a margin is crossed."""
    if not np.isfinite(fit.slope):
        return "inconclusive"
    if fit.slope >= floor and fit.low > 0 and fit.p_trend < alpha:
        return "grows"
    return "flat" if fit.high < floor else "inconclusive"


@dataclass(frozen=True)
class Judgement:
    """One series judged after its warm-up: the fit of the steady window, the verdict, its shape and why."""

    fit: Fit
    verdict: str  # VERDICTS
    shape: str  # SHAPES
    start: int  # iterations discarded as warm-up by steady_start (the run's own --warmup came before)
    floor: float  # the resolution at the count judged (bytes/iteration): what widened the interval
    floor_source: str = ""
    why: str = ""
    margin: float = float("nan")  # what counts as growth (bytes/iteration); nan: judged by `detects` (resolve)
    needed: Optional[int] = None  # an undecided series: the count about which would decide it (None: none found)

    @property
    def decided(self) -> bool:
        return self.verdict in ("grows", "flat")


Floor = Union[float, Callable[[int], Tuple[float, str]]]

FloorAt = Callable[[int], Tuple[float, str]]  # the floor (bytes/iteration) of a window of n iterations, and its source

SERIES = ("rss", "heap")
GIVEN_FLOOR = "given (--floor-kib or RunSpec.floor)"
DEFAULT_MARGIN = "default margin"  # where a margin came from when none was given
# A given margin under this is the heap's; RSS is judged against this one (margin_for): twice what glibc's RSS
# resolves from 30 iterations (32 KiB).
RSS_LEAST_MARGIN = 64 * 1024


def margin_for(spec: Any, series: str = "rss") -> Tuple[float, str]:
    """(margin in bytes/iteration, where it came from) of `series` for `spec`: what counts as growth, the same at
    every count. The given one (spec.floor: --floor-kib, max_growth, floor_kib), else MARGINS'. RSS is judged against
    no less than its default (RSS_LEAST_MARGIN): it moves in pages, and glibc's resolves ~32 KiB/iteration from 30
    iterations on, so a smaller margin is the heap's (what pytest-memray's limit counts: memory not given back)."""
    given = getattr(spec, "floor", None)
    if given is not None:
        source = getattr(spec, "floor_source", "") or GIVEN_FLOOR
        if series == "rss" and given < RSS_LEAST_MARGIN:
            return float(RSS_LEAST_MARGIN), f"{source}; RSS at no less than {RSS_LEAST_MARGIN // 1024} KiB"
        return float(given), source
    return float(MARGINS.get(series, MARGINS["rss"])), DEFAULT_MARGIN


def _floor_at(floor: Floor, n: int) -> Tuple[float, str]:
    return floor(n) if callable(floor) else (float(floor), "")


def judge(values: Sequence[float], margin: Floor = MARGINS["rss"], resolution: Floor = 0.0, alpha: float = ALPHA,
          teeth: Optional[np.ndarray] = None, period: int = 1, resolve: bool = False) -> Judgement:
    """The verdict of one series: its warm-up cut (steady_start), the rest fitted and judged against `margin`.

    `margin` is what counts as growth (bytes/iteration); `resolution` what the count measured can tell apart, a
    number or a function of the count giving (resolution, where it came from): it widens the interval (verdict).
    `grows` needs the verdict on the window and growth that persists through it: the warm-up rule found a steady
    state, each half grows by at least half the margin, and the late half at no less than half the early half's
    rate or `grows` on its own (at its own count's resolution). A window whose growth fails that is a `step` (one
    difference carries most of the rise, many times the typical one) or `settling` (it slows down, the halves'
    intervals apart, or no steady state was found), and inconclusive; unless it is clear (CLEAR_OVER_MARGIN: the
    widened interval many times the margin, the late half still that fast): a shape rule never hides a large leak.
    `flat` must hold through the window too: a window whose late half alone `grows` is inconclusive, a growth that
    starts late (glibc's free heap pages absorb a leak until they are used up). An undecided series says the count
    that would decide it (`needed`). `teeth` (gc_teeth of the pair's heap, a bool per difference) marks the GC's
    falls: the halves' rates for the persistence test are taken between them (between_teeth). `period`: iterations
    before the inputs repeat (a varying strategy's batch sizes); from three periods measured, growth persists only
    if the last period's rate is not under half the one before it (period_slows).

    `resolve=True`: the calibration's detection instead (detects), `margin` then the floor by count, as protocols up
    to 8 judged: what a calibration measures a count's resolution with.
    """
    y = np.asarray(values, dtype=float)
    start, unsettled = steady_start(y)
    window = y[start:]
    if resolve:
        margin_value, source = _floor_at(margin, len(y))
        res_value = 0.0
        def read(fit: Fit, n: int) -> str:
            return detects(fit, _floor_at(margin, n)[0], alpha)
    else:
        margin_value = float(margin)
        res_value, source = _floor_at(resolution, len(y))  # the count measured, as a calibration measures its counts
        def read(fit: Fit, n: int) -> str:
            return verdict(fit, margin_value, _floor_at(resolution, n)[0], alpha)
    fit = fit_growth(window, 1 - alpha)
    found = read(fit, len(y))
    late = window[len(window) // 2:]
    late_own = fit_growth(late, 1 - alpha) if len(late) >= 3 else NAN_FIT
    late_grows = len(late) >= 3 and read(late_own, len(late)) == "grows"  # the late half alone
    late_fit = late_own if late_grows and len(late) >= LATE_MIN else None
    made = dict(start=start, floor=res_value, floor_source=source,
                margin=float("nan") if resolve else margin_value)
    if found == "flat" and late_fit is None:  # flat must hold through the window: not a growth that starts late
        return Judgement(fit, found, "flat", **made)
    clear = (found == "grows" and not resolve and len(late) >= 3
             and widened(fit, res_value)[0] >= CLEAR_OVER_MARGIN * margin_value
             and late_own.slope >= CLEAR_OVER_MARGIN * margin_value)
    early = late_rate = float("nan")
    slows = toothed = False
    if len(window) >= 6:
        half = len(window) // 2
        first, second = fit_growth(window[:half], 1 - alpha), fit_growth(window[half:], 1 - alpha)
        cut = None if teeth is None or len(teeth) != len(y) - 1 else np.asarray(teeth, dtype=bool)[start:]
        early, late_rate = first.slope, second.slope
        if cut is not None and cut.any() and min(cut[:half - 1].sum(), cut[half:].sum()) < NET_TEETH:
            early, late_rate = between_teeth(window[:half], cut[:half - 1], early), \
                between_teeth(window[half:], cut[half:], late_rate)
            toothed = True
        slows = first.low > second.high  # the halves' intervals apart: a slowing the data shows, not a GC's tooth
    # Growth persists when the window is past the warm-up (the rule found a steady state), each half grows by half
    # the margin, and the late half does not slow to under half the early rate or, slower, still grows on its own:
    # a leak that starts steeper still leaks; a cache that fills and stops, or TF settling for hundreds of
    # iterations after its last new trace, does not.
    # A half holding fewer than two of the GC's teeth (`teeth`, found in the heap and given for RSS too) reads the
    # phase of its teeth, not a rate: 10 iterations of a slow pair hold one, and the half it falls in reads the fall
    # (+7 MiB/iteration, then -2.6). Such halves are compared at their rates between the teeth (whether the heap
    # still piles up between collections; whether it grows net is the window's own fit). Halves that span two or
    # more teeth net them out in their plain fits, which still see a settling curve under its teeth.
    # Or the late half keeps 3/4 of the window's own rate: a heap the GC cuts every 9 iterations reads +7225 in the
    # half whose tooth falls late and +3296 in the other (a net +3456, the window's; +3391 over 150 iterations), a
    # phase of the teeth, not a slowing (a settling heap reads +1112, +346 and +539: still settling).
    persists = (not unsettled and min(early, late_rate) >= PERSIST_SHARE * margin_value
                and (late_rate * DECELERATION >= early or late_rate >= LATE_OF_WINDOW * fit.slope
                     or late_fit is not None))
    by_period = period_slows(y, period) if found == "grows" and persists else None
    if by_period is not None:
        persists = False
    if found == "grows" and (persists or clear):
        return Judgement(fit, found, "grows", **made)
    starts_late = _starts_late(late_fit, len(late)) if found != "grows" else ""
    # not decided: say what it looks like (growth that fails the persistence test is never `grows`)
    read_as, found, shape, why = found, "inconclusive", "inconclusive", ""
    rise = float(np.median(window[-3:]) - np.median(window[:3])) if len(window) >= 3 else 0.0
    jump = int(np.argmax(np.diff(window))) if len(window) >= 2 else 0
    diffs = np.diff(window)
    if rise >= margin_value and len(diffs) and diffs[jump] > STEP_SHARE * rise \
            and diffs[jump] > STEP_OVER_TYPICAL * float(np.median(np.abs(diffs))):
        shape = "step"
        why = (f"one step of {rise / KIB:+.0f} KiB at iteration {start + jump + 1}, flat around it: measure longer "
               "to see whether it repeats")
    elif by_period is not None:
        shape, why = "settling", (f"growth slows from {by_period[0] / KIB:+.1f} to {by_period[1] / KIB:+.1f} "
                                  f"KiB/iteration between the last two periods of its {period} inputs: still "
                                  "settling, measure longer")
    elif slows and early > max(late_rate, 0) * DECELERATION and early >= PERSIST_SHARE * margin_value:
        shape, why = "settling", (f"growth slows from {early / KIB:+.1f} to {late_rate / KIB:+.1f} KiB/iteration "
                                  "between the halves: still settling, measure longer")
    elif starts_late:
        why = starts_late
    elif unsettled and not (np.isfinite(fit.slope) and fit.slope < margin_value):
        shape, why = "settling", "the warm-up rule found no steady state in the first half: measure longer"
    elif read_as == "grows" and np.isfinite(early):
        why = (f"growth not steady ({early / KIB:+.1f}, then {late_rate / KIB:+.1f} KiB/iteration"
               f"{_BETWEEN if toothed else ''}): measure longer")
    needed = None
    if not resolve and np.isfinite(fit.slope):
        longer = getattr(resolution, "uncapped", resolution)  # a pair's repeats share one count's: not a longer run's
        needed = needed_count(fit, len(y), margin_value, longer)
        if not why:
            why = across_text(fit, len(y), margin_value, res_value, needed, longer)
    return Judgement(fit, found, shape, why=why, needed=needed, **made)


def needed_count(fit: Fit, n: int, margin: float, resolution: Floor) -> Optional[int]:
    """About how many iterations would decide a series whose slope reads `fit` at `n` against `margin`: the first
    count (×1.5 steps) whose resolution and projected interval (its half-width on the side facing the margin,
    narrowing as n^-1.5) both fit between the slope and the margin; None when none up to NEEDED_MOST does (the
    slope within the resolution of the margin) or the slope is on the margin."""
    distance = abs(fit.slope - margin)
    if not math.isfinite(distance) or distance == 0 or n < 1:
        return None
    half = fit.slope - fit.low if fit.slope > margin else fit.high - fit.slope
    half = half if math.isfinite(half) else 0.0
    count = max(n, 3)
    while count <= NEEDED_MOST:
        if count > n and _floor_at(resolution, count)[0] < distance and \
                half * (n / count) ** NEEDED_POWER < distance:
            return count
        count = max(count + 1, math.ceil(count * 1.5))
    return None


def across_text(fit: Fit, n: int, margin: float, resolution: float, needed: Optional[int],
                at: Floor = 0.0) -> str:
    """Why a slope is undecided against its margin: where it lies, and the count that would decide it."""
    low, high = widened(fit, resolution)
    where = "above" if fit.slope >= margin else "below"
    said = (f"{fit.slope / KIB:+.1f} KiB/iteration, interval [{low / KIB:+.1f}, {high / KIB:+.1f}] with the "
            f"resolution of {n} iterations (±{floor_kib(resolution)}), across the {floor_kib(margin)} KiB margin")
    if needed is not None:
        return f"{said}: {where} it needs about {needed} iterations or more here"
    if fit.slope == margin:
        return f"{said}: on the margin, no count decides it"
    finest = _floor_at(at, NEEDED_MOST)[0]
    return (f"{said}: within the resolution of the margin (the finest here is ±{floor_kib(finest)} KiB/iteration): "
            "no count this machine resolves decides it")


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
