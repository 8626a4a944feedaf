"""When a budgeted run looks at its series and when it stops: the look points and their level, the plan a run
makes at its first look, the runner's Decider and the one stop rule of a measured loop (the worker's and score's
replay of a reference alike). docs/protocol.md, "Looks".
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

from .. import stats
from .counts import alpha, alpha_for, look_points
from .floors import floor_at, spec_floors
from .pair import period_of
from .series import SERIES, Judgement, judge, margin_for

if TYPE_CHECKING:  # the type only
    from .run import RunLike

PLAN_SLACK = 1.5  # a run plans its looks up to 1.5× the count its first look's speed projects for the budget
# A run looks first once it has its first count and its least seconds, or RSS grew this much over its baseline,
# whichever comes first: a microsecond loop keeping 200 KiB an iteration is judged after 32 MiB, not after its
# least seconds' thousands of iterations (protocol 9; protocol 8 looked first at 2,345 iterations, 458 MiB).
LOOK_GROWTH = 32 * 1024 * 1024


class LookPlan:
    """When a budgeted sequential run looks at its series, planned at its first look from the pair's own speed.

    The first look comes at the first count of at least spec.first_count iterations and spec.min_seconds of loop,
    or of LOOK_GROWTH of RSS over its baseline, whichever first (looks by memory as well as by time). There the run
    knows its seconds per iteration and plans: looks at look_points from that count up to
    the count the budget projects at that speed (×PLAN_SLACK: iterations that speed up a little still reach the
    last planned look; the spec's most iterations at most), and its end, one more look. Every look, the first
    included, is tested at the level of that plan (alpha_for: Bonferroni over the planned looks): a pair of
    1 s per iteration under a 6 s budget looks 2-3 times at 0.05/3, not 15 at 0.05/15 because a 1 ms one could.
    The plan is fixed before any verdict is read and depends only on time, so the union bound holds. A run that
    outlasts its projection takes no more looks: it runs on to its budget and is judged at its end.
    """

    def __init__(self, spec: RunLike):
        self.spec = spec
        self.points: Optional[frozenset] = None
        self.looks: Optional[int] = None  # planned, its end included; None until the first look
        self.last: Optional[int] = None  # the count the plan projects the run to end at

    def due(self, k: int, elapsed: float, growth: Optional[float] = None) -> bool:
        """Whether the run looks after its k-th iteration, `elapsed` seconds of loop in, RSS `growth` bytes over its
        baseline (None: not read; the plan made at the first)."""
        spec = self.spec
        if not (spec.sequential and spec.min_iterations):
            return False
        if self.points is None:
            grown = growth is not None and growth >= LOOK_GROWTH
            if k < min(spec.min_iterations, spec.iterations) or (elapsed < spec.min_seconds and not grown):
                return False
            last = spec.iterations
            if spec.budget and elapsed > 0:
                last = max(k + 1, min(last, math.ceil(k * spec.budget / elapsed * PLAN_SLACK)))
            self.points = frozenset(look_points(k, last))
            self.looks, self.last = len(self.points) + 1, last
        return k in self.points

    def fields(self) -> dict:
        """What a result records of the plan (nothing when the run never looked)."""
        return {} if self.looks is None else {"planned_looks": self.looks, "planned_last": self.last}


def early_stop(judgement: Judgement, previous: Optional[Judgement] = None) -> bool:
    """Whether a sequential run may stop on this judgement: `grows` at two looks running (this one and `previous`,
    the look before it), or `flat`: its interval, widened by this count's resolution, is under the margin, and a
    longer run only narrows both (it could turn flat into grows only for a slope within the resolution of the
    margin).

    `grows` waits for the next look (×1.5 the count) because a growth that stops is not a leak: a cache that fills
    over the first 8 iterations reads `grows` at 8 and no longer at 12. Asking two looks only makes `grows` rarer,
    so the error rate of the union bound still holds; a true leak costs one look more. It sees no further than the
    next look: a growth that lasts N iterations still reads `grows` at two looks before about 1.5 N."""
    if judgement.verdict == "grows":
        return previous is not None and previous.verdict == "grows"
    return judgement.verdict == "flat"


def held_flat(rss_verdict: str, heap_verdict: Optional[str], heap_slope: float, rss_margin: float) -> bool:
    """Whether a look's RSS `flat` may be only RSS not caught up yet: the heap grows faster than RSS's margin. Free
    pages the allocator holds absorb a leak for a while (inference × gc_collect_only: a heap leak of 144
    KiB/iteration under RSS flat for ~10 iterations, then RSS grows at its rate), so the Decider measures on. Not a
    rule for the record: inference × varying_batch_shapes' heap grows +110 KiB/iteration for 3000 iterations under
    a flat RSS (freed memory handed out again, not new pages), and its long run says RSS flat."""
    return rss_verdict == "flat" and heap_verdict == "grows" and heap_slope >= rss_margin


class Decider:
    """The runner's side of a sequential run's looks: it keeps the readings each look sends and says whether both
    verdicts are decided, judged as the record will judge them (judge_results' rules, one repeat).

    A verdict stops the run when it is `grows` at two looks running, or `flat` (early_stop).
    """

    def __init__(self, spec: RunLike):
        self.spec = spec
        # Every reading the looks sent, 8 bytes each (a budget of microsecond iterations sends millions); judged as
        # stats reads any series, through numpy.asarray(values, dtype=float): the numbers of the lists they were.
        self.series: Dict[str, array] = {name: array("d") for name in SERIES}
        self.gaps: set = set()  # series a None came in (a reader that failed): never judged again, nor kept
        self.level = alpha(spec)
        self.period = period_of(spec)
        self.at = spec_floors(spec)
        self.margins = {name: margin_for(spec, name)[0] for name in SERIES}
        self.last: Dict[str, Judgement] = {}

    def plan(self, looks: int, last: int, versions: Optional[dict] = None) -> None:
        """The run's LookPlan, sent with its first look: each look at its level. `versions` (the worker's TF and
        Keras, sent with it) choose TF's settling resolution as the record will. `last`: the count the plan
        projects (kept in the record; the verdicts no longer depend on it)."""
        self.level = alpha_for(looks)
        if versions is not None:
            self.at = {name: floor_at(self.spec, name, versions) for name in SERIES}

    def look(self, readings: Dict[str, List[Optional[float]]], plan: Optional[dict] = None) -> bool:
        """Take a look's new readings (and, at the first look, the run's plan: LookPlan.fields); True when every
        series read is decided."""
        if plan and plan.get("planned_looks"):
            self.plan(plan["planned_looks"], plan.get("planned_last") or self.spec.iterations, plan.get("versions"))
        for name, values in readings.items():
            if name in self.series and name not in self.gaps:
                if any(v is None for v in values):
                    self.gaps.add(name)
                    self.series[name] = array("d")
                else:
                    self.series[name].extend(values)
        decided, now = True, {}
        for name, values in self.series.items():
            if name in self.gaps:
                continue  # a reader that failed: that series cannot be judged, nor hold the run
            if not values and name != "rss":
                continue  # no heap reader: RSS alone decides
            heap = self.series["heap"]
            teeth = stats.gc_teeth(heap) if heap and len(heap) == len(values) and "heap" not in self.gaps else None
            judgement = judge(values, self.margins[name], self.at[name], self.level, teeth, self.period)
            previous, self.last[name] = self.last.get(name), judgement
            now[name] = judgement
            decided = decided and early_stop(judgement, previous)
        rss, heap = now.get("rss"), now.get("heap")
        if rss is not None and heap is not None and held_flat(rss.verdict, heap.verdict, heap.fit.slope,
                                                              self.margins["rss"]):
            decided = False
        return decided


class StopRule:
    """When a budgeted loop stops, asked after each iteration: the one rule of the worker's measured loop and of
    score's replay of a reference (the same spec stops both at the same iteration on the same readings).

    After spec.first_count iterations (spec.min_iterations where the spec has no first_count) it stops at the first
    of: RSS grown by spec.max_growth ("growth"); a look LookPlan plans (by count; its first by time or growth) where
    `ask(k, new readings, plan)` says both verdicts are decided ("decided"; the plan's fields go with the first
    look); the budget's seconds of loop spent, and spec.min_seconds ("budget"). A loop that runs out of iterations
    first ends "iterations" (budgeted) or "count" (a fixed count): `reason`. `elapsed` is the loop's own seconds:
    time spent waiting on a look is not.
    """

    def __init__(self, spec: RunLike, ask: Optional[Callable[[int, dict, Optional[dict]], bool]]):
        self.spec = spec
        self.ask = ask
        self.first = getattr(spec, "first_count", None) or spec.min_iterations
        self.plan = LookPlan(spec) if ask is not None and spec.sequential else None
        self.looks = 0

    def after(self, k: int, elapsed: float, rss_growth: Optional[float],
              readings: Callable[[], Dict[str, List[Optional[float]]]]) -> Optional[str]:
        """Why the loop stops after its k-th iteration (`rss_growth`: RSS over its baseline now; `readings()`: the
        series since the last look), or None to go on."""
        spec = self.spec
        if not getattr(spec, "budgeted", True) or k < self.first:
            return None
        if spec.max_growth and rss_growth is not None and rss_growth >= spec.max_growth:
            return "growth"
        if self.plan is not None and self.plan.due(k, elapsed, rss_growth):
            self.looks += 1
            if self.ask(k, readings(), self.plan.fields() if self.looks == 1 else None):
                return "decided"
        if spec.budget and elapsed >= spec.budget and elapsed >= spec.min_seconds:
            return "budget"
        return None

    def reason(self, stop: Optional[str]) -> str:
        """The stop reason of a loop that ended (`stop`: what `after` said last, None when it ran out)."""
        return stop or ("iterations" if getattr(self.spec, "budgeted", True) else "count")

    def fields(self) -> dict:
        """What a result records of the plan (LookPlan.fields; nothing without looks)."""
        return self.plan.fields() if self.plan is not None else {}
