"""Building a record: a worker's repeats summarized (every metric, the verdicts and how each series was judged)
and wrapped with its spec, status and environment (kerasbench.record says what a record holds).

Each series is judged by kerasbench.rule at the floors the caller gives (the runner: the spec's own, resolved
by rule.spec_floors; kerasbench score: the scored record's), so building a summary reads nothing from disk.
Every derived number comes from kerasbench.metrics, so the runner and compare derive alike.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, List, Mapping, Optional, Sequence

from . import allocators, machine as machines
from .metrics import METRICS
from .protocol import PROTOCOL_VERSION, version_of
from .rule.counts import alpha
from .rule.floors import fixed_floors, floor_stamp, spec_floors
from .rule.pair import judge_results, period_of
from .rule.series import FloorAt, growth_kind, judge, margin_for
from .record import SCHEMA_VERSION, AllocatorCheck, Environment, Record, Repeat, Summary

if TYPE_CHECKING:  # the type only: the runner gives it (the spec module loads the loop shapes)
    from .spec import RunSpec


def summarize(repeats: Sequence[Repeat], spec: RunSpec, floors: Mapping[str, FloorAt]) -> Summary:
    """Every metric of METRICS over the repeats with a result, plus the verdicts, the floors they were judged with
    and how each repeat's series was judged (kerasbench.rule: the same judgement as a sequential run's looks).

    `floors` gives each series' floor by count ({"rss": at, "heap": at}; rule.spec_floors is the spec's own,
    rule.fixed_floors kerasbench score's): the summary reads no calibration itself."""
    from . import stats

    results = [r["result"] for r in repeats if r.get("result")]
    summary = dict.fromkeys(METRICS)
    level = min((alpha(spec, r) for r in results), default=alpha(spec))  # each repeat's plan's
    summary.update(protocol=PROTOCOL_VERSION, verdict=None, p_trend=None, repeats=len(results), alpha=level)
    margin, margin_source = margin_for(spec, "rss")
    summary.update(margin=margin, margin_source=margin_source)
    if not results:
        floor, floor_source = floors["rss"](spec.iterations)
        summary.update(floor=floor, floor_source=floor_source, heap_margin=margin_for(spec, "heap")[0])
        partial = [r["partial_rss"] for r in repeats if r.get("partial_rss")]
        if partial:  # a stopped worker: its growth until the stop is still worth showing
            judged = judge(partial[0], margin, floors["rss"], summary["alpha"], period=period_of(spec))
            summary.update({m.name: getattr(judged.fit, m.rss_fit) for m in METRICS.values() if m.rss_fit})
            summary.update(p_trend=judged.fit.p_trend, verdict=judged.verdict, floor=judged.floor,
                           floor_source=judged.floor_source)
        return summary
    rss = judge_results(results, spec, "rss", floors["rss"])
    heap = judge_results(results, spec, "heap", floors["heap"])  # far quieter than RSS: its own floor
    fit = rss.fit if rss else stats.NAN_FIT
    floor, floor_source = rss.floor if rss else floors["rss"](spec.iterations)
    summary.update(floor=floor, floor_source=floor_source, needed=rss.needed if rss else None)
    stamps = {"rss": floor_stamp(floors["rss"], rss.count if rss else spec.iterations)}
    if heap:
        summary.update(zip(("heap_floor", "heap_floor_source"), heap.floor))
        summary.update(heap_margin=heap.margin, heap_needed=heap.needed)
        stamps["heap"] = floor_stamp(floors["heap"], heap.count)
    summary["floors_from"] = stamps
    summary.update({m.name: m.value(results, spec.iterations, fit, heap and heap.fit) for m in METRICS.values()})
    verdict = rss.verdict if rss else "inconclusive"
    why = [f"{name}: {j.why}" for name, j in (("RSS", rss), ("heap", heap)) if j and j.why]
    summary.update(
        p_trend=fit.p_trend, verdict=verdict, heap_verdict=heap.verdict if heap else None,
        rss_shape=rss.shape if rss else "inconclusive", heap_shape=heap.shape if heap else None,
        growth_kind=growth_kind(verdict, heap.verdict if heap else None, rss.shape if rss else "",
                                     heap.shape if heap else "", fit.slope, summary.get("py_blocks_per_iter")),
        why="; ".join(why),
        measured=[r.get("iterations_done") for r in results],
        stopped=[r.get("stop_reason") or "count" for r in results],
        warmup_found=[j.start for j in rss.judgements] if rss else [],
        heap_warmup_found=[j.start for j in heap.judgements] if heap else [],
    )
    return summary


def allocator_check(spec: RunSpec, environment: Optional[Environment]) -> AllocatorCheck:
    """The allocator requested and the one the worker found in /proc/self/maps, and whether they agree."""
    detected = environment.get("allocator") if environment else None
    expected = allocators.get_allocator(spec.allocator).detects
    return {"requested": spec.allocator, "detected": detected, "matches": detected in (None, expected)}


def make_record(spec: RunSpec, repeats: List[Repeat], floors: Mapping[str, FloorAt]) -> Record:
    """The record of a runner.RunSpec's repeats: the worst status, the first environment, the summary (judged at
    `floors`, as summarize's)."""
    statuses = [r["status"] for r in repeats]
    status = next((s for s in ("failed", "stopped", "skipped") if s in statuses), "ok")
    reason = next((r["reason"] for r in repeats if r["status"] == status), None)
    environment = next((r["environment"] for r in repeats if r["environment"]), None)
    if environment is not None and "machine_name" not in environment:
        environment = {**environment, "machine_name": machines.name()}
    summary = summarize(repeats, spec, floors)
    resolved = ({"floor_source": summary["margin_source"]} if spec.floor is not None
                else {"floor": summary["floor"], "floor_source": summary["floor_source"]})
    return {
        "schema": SCHEMA_VERSION,
        "loop": spec.loop,
        "strategy": spec.strategy,
        # a given floor is the margin and stays as given (--rejudge keeps it); else the resolution it was judged at
        "spec": {**dataclasses.asdict(spec), **resolved},
        "status": status,
        "reason": reason,
        "environment": environment,
        "allocator": allocator_check(spec, environment),
        "repeats": repeats,
        "summary": summary,
    }


def rejudged(record: Record, floors: Optional[Mapping[str, float]] = None,
             margin: Optional[float] = None) -> Record:
    """The record with its summary judged again from its stored series by this kerasbench's rule (a copy; the
    record itself is left as it is): at `floors` ({"rss", "heap"} bytes/iteration) when given, else at its spec's
    floor when that was given, else at the calibrations here, by count. What it cannot change: the readings (a
    record of protocol 7 or older read the heap without the young-generation collection) and where each repeat
    stopped (its own protocol's looks). The summary's `rejudged_from` names the protocol that judged it before.
    `margin` (bytes/iteration, both series): judged against it, as a given floor (another record's question)."""
    from .spec import RunSpec

    spec = dict(record["spec"])
    if margin is not None:
        spec["floor"], spec["floor_source"] = float(margin), "given (the scored record's margin)"
    elif not str(spec.get("floor_source") or "").startswith("given"):
        spec["floor"], spec["floor_source"] = None, ""  # resolved when measured: again, at each repeat's count
    spec.setdefault("allocator", "glibc")
    spec = RunSpec.of_record(spec)
    at = {**spec_floors(spec, record.get("environment")),
          **fixed_floors(dict(floors or {}), "the scored record's")}
    before = version_of(record.get("summary"))
    summary = summarize(record["repeats"], spec, at)
    summary["rejudged_from"] = before if before is not None else "7 or older"
    return {**record, "summary": summary}
