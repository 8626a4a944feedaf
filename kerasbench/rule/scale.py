"""A middle measurement placed on the scale of a change (triage's and attribute's classes): where a release between
two ends, a bridge or one package moved lies from the good end (0) towards the bad one (1), with its interval."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

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
