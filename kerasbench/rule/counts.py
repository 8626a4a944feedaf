"""What depends on a count alone: the counts a sequential run looks at and the level of each look (Bonferroni over
the planned looks), and the floor between two calibrated counts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from ..stats import ALPHA

if TYPE_CHECKING:  # the type only
    from .run import RunLike

# The sequential protocol (docs/protocol.md): a budgeted run looks at its series at these counts and stops once
# both verdicts are decided. Each look is a test, so each is made at ALPHA / (planned looks): a union bound keeps
# the chance of any false call over all looks at or below ALPHA, however many looks the run takes.
LOOK_RATIO = 1.5  # looks at first, ×1.5, ×1.5² …: few looks (log of the span), each after a third more data
# Beyond its last calibrated count a resolution falls as (last / n) ** BEYOND_POWER (protocol 9): as the square root,
# slower than the 1/n a bounded noise (page staircases, glibc's sawtooth) allows a slope. The references' RSS of flat
# TF pairs (docs/protocol.md) strays from its long-run slope by at most 1.1 KiB/iteration over 710 iterations
# (3.6 for a period still settling), where this gives 9.3 from the glibc calibration's 32 KiB at 60.
BEYOND_POWER = 0.5


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



def floor_between(points: Sequence[Tuple[int, float]], n: int,
                  beyond: bool = True) -> Optional[Tuple[float, int, Optional[int]]]:
    """The floor of a window of `n` iterations from floors calibrated at some counts (`points`: (count, floor)):
    (floor, the count at or below n, the count above it or None), None when every count is above n.

    Between two calibrated counts the floor falls geometrically with the count (a straight line in log-log, as a
    slope's noise falls as a power of the count), never below the next count's floor: a run of 93 iterations and
    one of 89 are judged at floors 4 % apart, not 1 and 2 KiB (a step at each calibrated count flipped repeats that
    read the same slope). At the last count, its floor; beyond it, falling as (last / n) ** BEYOND_POWER (`beyond`;
    else the last count's floor, as protocols up to 8 read it: what the settling calibration was derived with).
    """
    below = [(c, f) for c, f in points if c <= n and f is not None]
    if not below:
        return None
    c0, f0 = max(below)
    above = sorted((c, f) for c, f in points if c > n and f is not None)
    if not above:
        return f0 * (c0 / n) ** BEYOND_POWER if n > c0 and beyond else f0, c0, None
    c1, f1 = above[0]
    if f1 >= f0 or f0 <= 0 or f1 <= 0:
        return f0, c0, c1
    share = (math.log(n) - math.log(c0)) / (math.log(c1) - math.log(c0))
    return f0 * (f1 / f0) ** share, c0, c1


def alpha(spec: RunLike, result: Optional[dict] = None) -> float:
    """The level each of the spec's planned looks is tested at (one look, ALPHA, for a fixed count): the plan a
    result recorded (LookPlan) where it has one, else the plan a spec makes without knowing its speed (its first
    count to its most iterations: what records before protocol 5, and a run stopped before its first look, used).

    `spec` is a kerasbench.spec.RunSpec (RunLike), or anything with its count fields (a spec without
    min_iterations: a fixed count).
    """
    if result and result.get("planned_looks"):
        return alpha_for(result["planned_looks"])
    first = getattr(spec, "min_iterations", 0)
    sequential = bool(getattr(spec, "sequential", False) and first)
    return alpha_for(planned_looks(min(first, spec.iterations) if first else spec.iterations,
                                               spec.iterations, sequential))
