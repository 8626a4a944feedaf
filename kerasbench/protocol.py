"""The verdicts of a measured pair, judged once: at a budgeted run's looks (the runner) and in its record.

A series (RSS, the heap) is judged with kerasbench.stats.judge after its warm-up, at the floor of the
iterations actually judged (calibrated per count: floors follow the window's length), at the level of one
look of the run's plan (stats.alpha_for: Bonferroni over the planned looks). The runner's `Decider` answers
the worker's looks with the same judgement the record's summary makes of the same readings, so a run that
stopped as decided is recorded with the verdicts it stopped on. docs/protocol.md says why each rule is so.
"""

from __future__ import annotations

import functools
import math
from array import array
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import stats

SERIES = ("rss", "heap")
GIVEN_FLOOR = "given (--floor-kib or RunSpec.floor)"


FloorAt = Callable[[int], Tuple[float, str]]  # the floor (bytes/iteration) of a window of n iterations, and its source


def floor_at(spec: Any, series: str = "rss", versions: Optional[Dict[str, Any]] = None) -> FloorAt:
    """(floor, where it came from) of `series` ("rss" or "heap") for a window of n iterations, as a function of n.

    As given (spec.floor: both series), else the allocator's calibration of that series at n (between two
    calibrated counts, stats.floor_between), else the default; the heap of a process running TensorFlow at no less
    than TF's own settling over n iterations (kerasbench.settling), doubled where the measured TF/Keras
    (`versions`: the worker environment's "tensorflow" and "keras"; None: not known) is not one it was made on.
    The function's `stamp(n)` says, as data, which file gave the floor at n (what a record keeps: floors_from).
    """
    if spec.floor is not None:
        source = spec.floor_source or GIVEN_FLOOR
        def given(n: int) -> Tuple[float, str]:
            return spec.floor, source

        given.stamp = lambda n: {"kind": "given", "source": source}
        return given
    from . import floors, settling

    settles = series == settling.SERIES and settling.applies(spec)

    @functools.lru_cache(maxsize=None)
    def chosen(n: int) -> Tuple[float, str, dict]:
        value, source = floors.floor_for(spec.allocator, n, series=series)
        if settles:
            tf = settling.floor(n, versions)
            if tf is not None and tf[0] > value:
                return tf[0], tf[1], settling.stamp(versions)
        return value, source, floors.floor_stamp(spec.allocator, n, series)

    def at(n: int) -> Tuple[float, str]:
        return chosen(n)[:2]

    at.stamp = lambda n: chosen(n)[2]
    return at


def spec_floors(spec: Any, environment: Optional[Dict[str, Any]] = None) -> Dict[str, FloorAt]:
    """The floors a spec's series are judged at, by series name (floor_at of each; a calibration is read lazily,
    once per count), for a worker whose environment (a record's) is `environment` when known. The runner resolves
    them; kerasbench.summary is given them."""
    versions = None if environment is None else {k: environment.get(k) for k in ("tensorflow", "keras")}
    return {name: floor_at(spec, name, versions) for name in SERIES}


def fixed_floors(floors: Dict[str, float], source: str) -> Dict[str, FloorAt]:
    """Floors that do not depend on the count ({"rss": bytes, "heap": bytes}), each with where it came from."""
    made = {}
    for name, floor in floors.items():
        made[name] = (lambda n, floor=floor: (floor, source))
        made[name].stamp = lambda n: {"kind": "given", "source": source}
    return made


def floor_stamp(at: FloorAt, n: int) -> Optional[dict]:
    """Which file gave the floor `at` gives at n, as data (floor_at's stamp); None for a floor function without."""
    stamp = getattr(at, "stamp", None)
    return stamp(n) if stamp else None


def version_of(summary: Optional[dict]) -> Optional[int]:
    """The protocol a record's summary was judged by; None for a record from before the stamp (protocol 7 or
    older: records carried only kerasbench's version, 0.1.0 since the first commit)."""
    value = (summary or {}).get("protocol")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def version_text(version: Optional[int]) -> str:
    """'protocol 8', or 'protocol 7 or older (unstamped)' for a record without a stamp."""
    return f"protocol {version}" if version is not None else "protocol 7 or older (unstamped)"


def one_version(items: Iterable[Tuple[dict, str]]) -> Optional[int]:
    """The one protocol a set of (record, path) was judged by; a UsageError naming a path of each when they mix
    (their verdicts are not one rule's: `--rejudge` judges the older ones again from their series)."""
    from .errors import UsageError
    from .profiles import PROTOCOL_VERSION

    seen: Dict[Optional[int], str] = {}
    for record, path in items:
        seen.setdefault(version_of(record.get("summary")), path)
    if len(seen) > 1:
        (a, pa), (b, pb) = sorted(seen.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))[-2:]
        raise UsageError(f"Records of two verdict rules: {pb} was judged by {version_text(b)}, {pa} by "
                         f"{version_text(a)}; their verdicts are not one rule's. Measure again, or give --rejudge "
                         f"to judge every record again from its stored series by protocol {PROTOCOL_VERSION} "
                         "(docs/protocol.md, \"Versions\": what a re-judgement can and cannot change).")
    return next(iter(seen), None)


PLAN_SLACK = 1.5  # a run plans its looks up to 1.5× the count its first look's speed projects for the budget


class LookPlan:
    """When a budgeted sequential run looks at its series, planned at its first look from the pair's own speed.

    The first look comes at the first count of at least spec.first_count iterations and spec.min_seconds of loop.
    There the run knows its seconds per iteration and plans: looks at stats.look_points from that count up to
    the count the budget projects at that speed (×PLAN_SLACK: iterations that speed up a little still reach the
    last planned look; the spec's most iterations at most), and its end, one more look. Every look, the first
    included, is tested at the level of that plan (stats.alpha_for: Bonferroni over the planned looks): a pair of
    1 s per iteration under a 6 s budget looks 2-3 times at 0.05/3, not 15 at 0.05/15 because a 1 ms one could.
    The plan is fixed before any verdict is read and depends only on time, so the union bound holds. A run that
    outlasts its projection takes no more looks: it runs on to its budget and is judged at its end.
    """

    def __init__(self, spec: Any):
        self.spec = spec
        self.points: Optional[frozenset] = None
        self.looks: Optional[int] = None  # planned, its end included; None until the first look
        self.last: Optional[int] = None  # the count the plan projects the run to end at

    def due(self, k: int, elapsed: float) -> bool:
        """Whether the run looks after its k-th iteration, `elapsed` seconds of loop in (the plan made at the first)."""
        spec = self.spec
        if not (spec.sequential and spec.min_iterations):
            return False
        if self.points is None:
            if k < min(spec.min_iterations, spec.iterations) or elapsed < spec.min_seconds:
                return False
            last = spec.iterations
            if spec.budget and elapsed > 0:
                last = max(k + 1, min(last, math.ceil(k * spec.budget / elapsed * PLAN_SLACK)))
            self.points = frozenset(stats.look_points(k, last))
            self.looks, self.last = len(self.points) + 1, last
        return k in self.points

    def fields(self) -> dict:
        """What a result records of the plan (nothing when the run never looked)."""
        return {} if self.looks is None else {"planned_looks": self.looks, "planned_last": self.last}


def alpha(spec: Any, result: Optional[dict] = None) -> float:
    """The level each of the spec's planned looks is tested at (one look, ALPHA, for a fixed count): the plan a
    result recorded (LookPlan) where it has one, else the plan a spec makes without knowing its speed (its first
    count to its most iterations: what records before protocol 5, and a run stopped before its first look, used).

    `spec` is a runner.RunSpec, or anything with its count fields (a spec without min_iterations: a fixed count).
    """
    if result and result.get("planned_looks"):
        return stats.alpha_for(result["planned_looks"])
    first = getattr(spec, "min_iterations", 0)
    sequential = bool(getattr(spec, "sequential", False) and first)
    return stats.alpha_for(stats.planned_looks(min(first, spec.iterations) if first else spec.iterations,
                                               spec.iterations, sequential))


def _complete(result: dict, series: str) -> Optional[List[float]]:
    values = (result.get("series") or {}).get(series)
    return values if values and all(v is not None for v in values) else None


def _teeth(result: dict) -> Optional[Any]:
    heap = _complete(result, "heap")
    return stats.gc_teeth(heap) if heap else None


@dataclass(frozen=True)
class Judged:
    """One series over a pair's repeats: each repeat's judgement and what they say together."""

    judgements: List[stats.Judgement]
    fit: stats.Fit
    verdict: str
    shape: str
    why: str
    count: int  # the count every repeat's floor was taken at: the shortest repeat's

    @property
    def floor(self) -> Tuple[float, str]:
        """The largest floor a repeat was judged with (the coarsest resolution of them), and its source."""
        worst = max(self.judgements, key=lambda j: j.floor)
        return worst.floor, worst.floor_source


def judge_results(results: Sequence[dict], spec: Any, series: str, at: FloorAt) -> Optional[Judged]:
    """The judgement of `series` over the repeats' results at the floors `at` gives; None when a repeat lacks the
    series or has a gap in it."""
    values = [_complete(r, series) for r in results]
    if not results or any(v is None for v in values):
        return None
    teeth = [_teeth(r) for r in results]
    # Every repeat at one floor, the shortest's: repeats that read the same slope read the same verdict, whichever
    # count their budget let them reach (a half-window's own, shorter count keeps its own floor).
    count = min(len(v) for v in values)
    def common(n: int) -> Tuple[float, str]:
        return at(min(n, count))

    limit = getattr(spec, "floor", None) is not None  # a given floor is the user's threshold (stats.verdict)
    judgements = [stats.judge(v, common, alpha(spec, r), t, limit) for v, r, t in zip(values, results, teeth)]
    fit, verdict, shape, why = stats.combine(judgements)
    return Judged(judgements, fit, verdict, shape, why, count)


def held_flat(rss_verdict: str, heap_verdict: Optional[str], heap_slope: float, rss_floor: float) -> bool:
    """Whether a look's RSS `flat` may be only RSS not caught up yet: the heap grows faster than RSS's floor. Free
    pages the allocator holds absorb a leak for a while (inference × gc_collect_only: a heap leak of 144
    KiB/iteration under RSS flat for ~10 iterations, then RSS grows at its rate), so the Decider measures on. Not a
    rule for the record: inference × varying_batch_shapes' heap grows +110 KiB/iteration for 3000 iterations under
    a flat RSS (freed memory handed out again, not new pages), and its long run says RSS flat."""
    return rss_verdict == "flat" and heap_verdict == "grows" and heap_slope >= rss_floor


def python_blocks_per_iter(result: dict, start: int) -> Optional[float]:
    """Python's blocks per iteration over the steady window (from iteration `start`): from the first sample at or
    after it to the loop's end; the whole loop's when no sample falls in the window (records before samples)."""
    before, after = result.get("py_blocks_before"), result.get("py_blocks_after")
    n = result.get("iterations_done") or len((result.get("series") or {}).get("rss") or ())
    if before is None or after is None or not n:
        return None
    samples = [(k, b) for k, b in result.get("py_blocks_samples") or () if k >= max(start, 1) and k < n]
    if samples:
        k, blocks = samples[0]
        return (after - blocks) / (n - k)
    return (after - before) / n


class Decider:
    """The runner's side of a sequential run's looks: it keeps the readings each look sends and says whether both
    verdicts are decided, judged as the record will judge them (judge_results' rules, one repeat).

    A verdict stops the run when it is `grows` at two looks running, or `flat` at the smallest floor the run could
    still reach (its largest count's): measuring longer could not then turn it into `grows` (stats.early_stop).
    """

    def __init__(self, spec: Any):
        self.spec = spec
        # Every reading the looks sent, 8 bytes each (a budget of microsecond iterations sends millions); judged as
        # stats reads any series, through numpy.asarray(values, dtype=float): the numbers of the lists they were.
        self.series: Dict[str, array] = {name: array("d") for name in SERIES}
        self.gaps: set = set()  # series a None came in (a reader that failed): never judged again, nor kept
        self.level = alpha(spec)
        self.at = spec_floors(spec)
        self.best = {name: self.at[name](spec.iterations)[0] for name in SERIES}
        self.last: Dict[str, stats.Judgement] = {}

    def plan(self, looks: int, last: int, versions: Optional[dict] = None) -> None:
        """The run's LookPlan, sent with its first look: each look at its level; `flat` decided at the floor of the
        count the plan projects (the smallest a run of this speed reaches), not of the most iterations. `versions`
        (the worker's TF and Keras, sent with it) choose TF's settling floor as the record will."""
        self.level = stats.alpha_for(looks)
        if versions is not None:
            self.at = {name: floor_at(self.spec, name, versions) for name in SERIES}
        self.best = {name: self.at[name](max(1, min(last, self.spec.iterations)))[0] for name in SERIES}

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
            judgement = stats.judge(values, self.at[name], self.level, teeth, self.spec.floor is not None)
            previous, self.last[name] = self.last.get(name), judgement
            now[name] = judgement
            decided = decided and stats.early_stop(judgement, self.best[name], previous)
        rss, heap = now.get("rss"), now.get("heap")
        if rss is not None and heap is not None and held_flat(rss.verdict, heap.verdict, heap.fit.slope,
                                                              self.best["rss"]):
            decided = False
        return decided
