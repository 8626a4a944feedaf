"""The time-budgeted, sequential protocol: the warm-up found in the data, one series judged (leak, step, settling,
noise: synthetic series with known answers), the error rate over many looks, and the worker's stop reasons."""

import dataclasses

import numpy as np
import pytest

from kerasbench import metrics, rule, stats, worker
from kerasbench.runner import RunSpec, measure

KIB, MIB = 1024, 1024**2
LEVEL = rule.alpha_for(rule.planned_looks(8, 5000, True))  # the default profile's per-look level


def sequential(series, margin, resolution=0.0, first=8):
    """What a sequential run of `series` decides: (verdict at the stop, iterations measured), looking where a run
    looks and stopping as the Decider stops (rule.early_stop); the run's end is its last look."""
    previous = None
    for n in rule.look_points(first, len(series)):
        judged = rule.judge(series[:n], margin, resolution, LEVEL)
        if rule.early_stop(judged, previous):
            return judged.verdict, n
        previous = judged
    return rule.judge(series, margin, resolution, LEVEL).verdict, len(series)


# ---------------------------------------------------------------- the look plan


def test_looks_are_geometric_and_the_level_is_shared_among_them():
    assert rule.look_points(8, 100) == [8, 12, 18, 27, 41, 62, 93]
    assert rule.planned_looks(8, 100, sequential=True) == 8  # the 7 looks and the run's end
    assert rule.planned_looks(8, 100, sequential=False) == 1  # a fixed count: one look, at its end
    assert rule.alpha_for(8) == pytest.approx(0.05 / 8)
    fixed = RunSpec("control", "control_noop", iterations=30)
    budgeted = RunSpec("control", "control_noop", iterations=100, min_iterations=8, budget=5, sequential=True)
    assert rule.alpha(fixed) == 0.05 and rule.alpha(budgeted) == pytest.approx(0.05 / 8)


# ---------------------------------------------------------------- the warm-up, found in the data


def test_mser_finds_a_warm_up_of_known_length():
    rng = np.random.default_rng(0)
    warm = 500 * MIB + np.minimum(np.arange(200), 30) * 256 * KIB  # rises for 30 iterations, then flat
    start, unsettled = stats.steady_start(warm + rng.normal(0, 8 * KIB, 200))
    assert 25 <= start <= 40 and not unsettled  # MSER-5: to within a batch or two of the knee


def test_a_leak_keeps_its_data_and_a_constant_series_is_cut_nowhere():
    rng = np.random.default_rng(1)
    leak = 500 * MIB + 64 * KIB * np.arange(120) + rng.normal(0, 16 * KIB, 120)
    assert stats.steady_start(leak)[0] <= 10  # a leak's differences are stationary from the start
    assert stats.steady_start([7.0] * 50) == (0, False)


def test_a_leak_whose_rate_eases_by_a_few_percent_is_steady_not_settling():
    # The heap of kfold × clear_session on TF 2.21.0 over its first 20 measured iterations (docs/reference/
    # tf-2.21.0.json, repeat 1: these differences, KiB): +2.6 MiB/iteration, easing 4 % over the first three. MSER
    # alone cut 10 of 20, at its limit ("no steady state in the first half": `settling`); the long run says leak.
    diffs = [2737, 2678, 2643, 2644, 2637, 2641, 2652, 2636, 2636, 2735, 2645, 2647, 2636, 2640, 2638, 2639, 2638,
             2636, 2635]
    heap = 900 * MIB + KIB * np.concatenate(([0], np.cumsum(diffs)))
    assert stats.steady_start(heap) == (0, False)
    judged = rule.judge(heap, 4 * KIB, 0, rule.alpha_for(rule.planned_looks(8, 20000, True)))
    assert judged.verdict == "grows" and judged.shape == "grows"
    assert judged.fit.slope == pytest.approx(2640 * KIB, rel=0.01)
    # a warm-up that changes the rate (a leak starting at +5.6 MiB/iteration, then +200 KiB) is still cut
    rng = np.random.default_rng(3)
    warm = np.concatenate((np.full(10, 5600.0), np.full(40, 200.0))) * KIB + rng.normal(0, 8 * KIB, 50)
    assert 8 <= stats.steady_start(np.cumsum(warm))[0] <= 12


def test_the_warm_up_rule_keeps_at_least_a_window_and_cuts_at_most_half():
    series = list(range(8)) + [8] * 2
    assert stats.steady_start(series)[0] <= 2  # 10 points: at most 2 cut (8 are kept)
    assert stats.steady_start(list(range(100)) + [100] * 100)[0] <= 100  # at most half
    assert stats.steady_start([1.0, 2.0, 3.0]) == (0, False)


# ---------------------------------------------------------------- one series judged


def test_a_leak_is_grows_with_its_slope():
    rng = np.random.default_rng(2)
    series = 500 * MIB + 256 * KIB * np.arange(60) + rng.normal(0, 200 * KIB, 60)
    judged = rule.judge(series, 64 * KIB, 0, LEVEL)
    assert (judged.verdict, judged.shape) == ("grows", "grows")
    assert abs(judged.fit.slope - 256 * KIB) < 0.05 * 256 * KIB
    assert judged.fit.low < 256 * KIB < judged.fit.high


def test_a_step_in_the_second_half_is_a_step_not_a_leak():
    # RSS that jumps once and stays, as the issue saw it: ▁▁▁▁▇▇▇█ read "grows (leak)" at 8 iterations
    series = [500 * MIB] * 10 + [505 * MIB] * 5 + [505 * MIB + 4 * KIB]
    judged = rule.judge(series, 128 * KIB, 0, LEVEL)
    assert judged.verdict == "inconclusive" and judged.shape == "step"
    assert "one step of +5120 KiB at iteration 10" in judged.why


def test_a_growing_sawtooth_is_neither_a_step_nor_settling():
    # sweep × reuse_model's heap at quick: +250 KiB an iteration, freed by the GC every few; one tooth is no step
    # (sweep's, 20 iterations; protocol 4 called it a step, then settling: the halves hold different teeth)
    diffs = [250, 255, 254, 252, -1042, 247, 243, 250, 81, 249, 245, -1048, 252, 243, 250, 246, 244, -1084, 81]
    series = 100 * MIB + KIB * np.r_[0, np.cumsum(diffs)]
    judged = rule.judge(series, 8 * KIB, 0, 0.05 / 15)
    assert judged.verdict == "inconclusive" and judged.shape == "inconclusive", judged
    assert "step" not in judged.why and "slows" not in judged.why


def test_steady_growth_the_test_cannot_pass_says_the_count_needed_not_unsteady():
    # sweep × clear_kernel_cache_only's heap at quick: +6 MiB an iteration, the GC's drop at the end, 9 points at a
    # look's level of 0.0033: the interval reaches below zero, yet both halves grow alike (its long run: grows)
    diffs = [5878, 6095, 6015, 6084, 5885, 6094, 5884, -20828]
    series = 100 * MIB + KIB * np.r_[0, np.cumsum(diffs)]
    judged = rule.judge(series, rule.MARGINS["heap"], 16 * KIB, 0.05 / 15)
    assert judged.verdict == "inconclusive" and "not steady" not in judged.why and judged.shape == "inconclusive"
    assert judged.needed and f"above it needs about {judged.needed} iterations" in judged.why, judged.why


def test_a_step_in_the_first_half_is_warm_up_and_the_rest_is_flat():
    series = [500 * MIB] * 4 + [505 * MIB] * 36
    judged = rule.judge(series, 32 * KIB, 0, LEVEL)
    assert judged.start >= 4 and judged.verdict == "flat"


def test_a_growth_that_starts_late_is_never_flat():
    # a 64 KiB/iteration leak that glibc's free heap pages absorb for 33 iterations (a worker whose imports left
    # holes), as a control read it: Theil-Sen over the whole window is under the floor, the late half is not
    rng = np.random.default_rng(5)
    series = 500 * MIB + 64 * KIB * np.maximum(np.arange(60) - 33, 0) + rng.normal(0, 4 * KIB, 60)
    judged = rule.judge(series, 32 * KIB, 0, LEVEL)
    assert judged.verdict == "inconclusive" and "flat at first, then +6" in judged.why
    longer = 500 * MIB + 64 * KIB * np.maximum(np.arange(400) - 33, 0) + rng.normal(0, 4 * KIB, 400)
    assert rule.judge(longer, 32 * KIB, 0, LEVEL).verdict == "grows"  # measured longer, the leak is called


def test_a_settling_curve_is_not_a_leak_and_reads_flat_once_settled():
    # growth that decays to nothing (TF's own caches filling): +37 KiB over ~15 iterations, then flat
    t = np.arange(400)
    heap = 100 * MIB + 40 * KIB * (1 - np.exp(-t / 5.0))
    early = rule.judge(heap[:12], 512, 0, LEVEL)
    assert early.verdict != "grows"  # the heap floor is 0.5 KiB: the first 12 iterations grow ~3 KiB/iteration
    assert early.shape in ("settling", "inconclusive")
    late = rule.judge(heap, 512, 0, LEVEL)
    assert late.verdict == "flat" and late.start > 0


def test_a_leak_that_starts_steeper_still_grows():
    # a sweep's first models cost more: +8 MiB/iteration, then +1.3 MiB/iteration for good (the late half grows alone)
    rng = np.random.default_rng(8)
    steps = np.r_[[8 * MIB] * 6, [1.3 * MIB] * 14] + rng.normal(0, 64 * KIB, 20)
    series = 500 * MIB + np.cumsum(steps)
    judged = rule.judge(series[:12], 64 * KIB, 0, LEVEL)
    assert judged.verdict == "grows", judged.why
    # the same start, then nothing: a fill, not a leak
    fill = 500 * MIB + np.cumsum(np.r_[[8 * MIB] * 6, [0] * 14] + rng.normal(0, 64 * KIB, 20))
    assert rule.judge(fill[:12], 64 * KIB, 0, LEVEL).verdict != "grows"


def test_growth_that_keeps_slowing_past_the_half_is_settling_not_a_leak():
    # batch_stream × varying_batch_shapes on TF 2.12.1: +590 KiB per new batch size for 116 iterations, then a heap
    # that settles for hundreds more (+30 KiB/iteration decaying), then nothing
    t = np.arange(3000)
    rate = np.where(t < 116, 590 * KIB, 30 * KIB * np.exp(-(t - 116) / 150.0))
    heap = 100 * MIB + np.cumsum(rate) + np.random.default_rng(9).normal(0, 8 * KIB, 3000)
    early = rule.judge(heap[:248], rule.MARGINS["heap"], 512, LEVEL)
    assert early.verdict != "grows" and early.shape == "settling", early
    assert "no steady state" in early.why
    assert rule.judge(heap, rule.MARGINS["heap"], 512, LEVEL).verdict == "flat"  # the long run: flat past it


def test_noise_is_flat_or_inconclusive_never_grows():
    rng = np.random.default_rng(3)
    verdicts = [rule.judge(500 * MIB + rng.normal(0, MIB, 30), 64 * KIB, 0, LEVEL).verdict for _ in range(200)]
    assert verdicts.count("grows") == 0
    assert verdicts.count("flat") > 50


def test_a_sawtooth_is_not_a_leak():
    # glibc: RSS climbs 600 KiB an iteration for 5 iterations, then the allocator hands it back
    for phase in range(6):
        i = np.arange(120) + phase
        series = 500 * MIB + 600 * KIB * (i % 6)
        assert rule.judge(series, 64 * KIB, 0, LEVEL).verdict != "grows"


def test_a_sawtooth_over_a_rising_base_grows_at_the_base_rate():
    # the heap of a predict loop: +110 KiB/iteration, freed every 11 iterations, over a base rising 10 KiB/iteration
    i = np.arange(200)
    heap = 100 * MIB + 110 * KIB * (i % 11) + 10 * KIB * i
    judged = rule.judge(heap, 512, 0, LEVEL)
    assert judged.verdict == "grows" and 5 * KIB < judged.fit.slope < 20 * KIB


# ---------------------------------------------------------------- many looks, one error rate


def test_the_sequential_rule_keeps_false_grows_rare_over_every_look():
    rng = np.random.default_rng(4)
    false = [sequential(500 * MIB + rng.normal(0, 2 * MIB, 400), 64 * KIB)[0] == "grows" for _ in range(200)]
    assert sum(false) <= 10  # <= 5 % over all looks (Bonferroni: each look at 0.05 / looks)


def test_the_sequential_rule_finds_a_leak_twice_the_floor_and_stops_early():
    rng = np.random.default_rng(5)
    outcomes = [sequential(500 * MIB + 128 * KIB * np.arange(400) + rng.normal(0, 64 * KIB, 400), 64 * KIB)
                for _ in range(100)]
    assert sum(v == "grows" for v, _ in outcomes) >= 95
    assert np.median([n for _, n in outcomes]) <= 27  # decided within the first few looks, not at the end


def test_grows_is_decided_at_two_looks_running():
    rng = np.random.default_rng(7)  # a cache that fills over the first 8 iterations (256 KiB each), then stays
    filling = 500 * MIB + np.minimum(np.arange(400), 8) * 256 * KIB + rng.normal(0, 16 * KIB, 400)
    first = rule.judge(filling[:8], 32 * KIB, 0, LEVEL)
    assert first.verdict == "grows" and not rule.early_stop(first)  # what the first look sees
    assert rule.judge(filling[:12], 32 * KIB, 0, LEVEL).verdict != "grows"  # the next look: it stopped
    verdict, n = sequential(filling, 32 * KIB)
    assert verdict == "flat" and n > 12
    leak = 500 * MIB + 256 * KIB * np.arange(400) + rng.normal(0, 16 * KIB, 400)
    assert sequential(leak, 32 * KIB) == ("grows", 12)  # a leak costs one look more


def test_a_verdict_sharpens_with_the_count_and_never_flips():
    """Protocol 8 called 40 KiB/iteration `flat` at 8 iterations (under a floor of 128) and `grows` at 30 (over 32):
    the margin moved with the count. Now the margin stays (64 KiB) and the count's resolution widens the interval:
    a slope under the margin reads inconclusive, then flat; one over it inconclusive, then grows; never both."""
    resolution = lambda n: (128 * KIB * (8 / n) ** 0.75, "falls with the count")  # noqa: E731
    rng = np.random.default_rng(12)
    for rate, decided in ((40 * KIB, "flat"), (100 * KIB, "grows")):
        series = 500 * MIB + rate * np.arange(2000.0) + rng.normal(0, 8 * KIB, 2000)
        seen = [rule.judge(series[:n], 64 * KIB, resolution, LEVEL).verdict for n in (8, 12, 18, 27, 41, 62, 93,
                                                                                       140, 210, 315, 1000, 2000)]
        assert set(seen) == {"inconclusive", decided}, seen
        assert seen[-1] == decided and seen.index(decided) > 0
        first = seen.index(decided)
        assert set(seen[first:]) == {decided}, seen  # once decided, decided alike
    # a run stops on flat at once: measuring longer narrows the interval, it cannot move it over the margin
    flat = rule.judge(500 * MIB + rng.normal(0, 4 * KIB, 60), 64 * KIB, 16 * KIB, LEVEL)
    assert flat.verdict == "flat" and rule.early_stop(flat)


# ---------------------------------------------------------------- repeats, and the pair's one verdict


def test_pair_verdict_is_rss_and_heap_together():
    assert rule.pair_verdict({"verdict": "flat", "heap_verdict": "grows"}) == "grows"  # a leak under flat RSS
    assert rule.pair_verdict({"verdict": "grows", "heap_verdict": "flat"}) == "grows"  # retention
    assert rule.pair_verdict({"verdict": "flat", "heap_verdict": "flat"}) == "flat"
    assert rule.pair_verdict({"verdict": "flat", "heap_verdict": None}) == "flat"  # no heap reader: RSS alone
    assert rule.pair_verdict({"verdict": "flat", "heap_verdict": "inconclusive"}) == "inconclusive"


# ---------------------------------------------------------------- the Decider (the runner's side of a look)


def _decider():  # a margin of 192 KiB: RSS at 8 iterations resolves 128 (the default resolution here)
    return rule.Decider(RunSpec("control", "control_noop", iterations=1000, min_iterations=8, budget=10,
                                sequential=True, floor=192 * KIB))


def test_the_decider_stops_only_when_both_series_are_decided():
    rng = np.random.default_rng(6)
    flat = [500 * MIB] * 8
    undecided = _decider()
    assert not undecided.look({"rss": flat, "heap": list(100 * MIB + rng.normal(0, 4 * MIB, 8))})
    assert (undecided.last["rss"].verdict, undecided.last["heap"].verdict) == ("flat", "inconclusive")
    leaking = _decider()  # a heap leak under flat RSS: grows at two looks running, and RSS not decided flat by it
    heap = 100 * MIB + 256 * KIB * np.arange(27)
    assert not leaking.look({"rss": flat, "heap": list(heap[:8])})
    assert (leaking.last["rss"].verdict, leaking.last["heap"].verdict) == ("flat", "grows")
    # 256 KiB/iteration of heap is over RSS's floor: free pages absorb it for a while, RSS cannot stay flat
    assert not leaking.look({"rss": [500 * MIB] * 4, "heap": list(heap[8:12])})
    assert (leaking.last["rss"].verdict, leaking.last["heap"].verdict) == ("flat", "grows")
    heap = 100 * MIB + 256 * KIB * np.arange(200)
    rss = np.r_[[500 * MIB] * 12, 500 * MIB + 256 * KIB * np.arange(1, 189)]  # the free pages used up: RSS grows
    stopped = None
    for a, b in zip(rule.look_points(12, 200), rule.look_points(12, 200)[1:]):
        if leaking.look({"rss": list(rss[a:b]), "heap": list(heap[a:b])}):
            stopped = b
            break
    assert stopped is not None and (leaking.last["rss"].verdict, leaking.last["heap"].verdict) == ("grows", "grows")
    later = _decider()  # readings arrive look by look: the series is what all of them sent
    assert not later.look({"rss": flat, "heap": list(100 * MIB + rng.normal(0, 4 * MIB, 8))})
    assert later.look({"rss": flat * 4, "heap": [100 * MIB] * 32})  # the noisy start is cut as warm-up
    assert len(later.series["rss"]) == len(later.series["heap"]) == 40 and later.last["heap"].start >= 8


def test_the_decider_judges_rss_alone_without_a_heap_reader():
    spec = RunSpec("control", "control_noop", iterations=1000, min_iterations=8, budget=10, sequential=True,
                   floor=64 * KIB)
    decider = rule.Decider(spec)
    rss = 500 * MIB + MIB * np.arange(12)
    assert not decider.look({"rss": list(rss[:8])})  # grows once: wait for the next look
    assert decider.look({"rss": list(rss[8:])})  # grows twice: decided, no heap to wait for


# ---------------------------------------------------------------- the worker's loop: why it stopped


def _run(spec, ask=None):
    events = []
    worker.run_protocol(spec.validate(), lambda event, **f: events.append((event, f)), ask=ask)
    return next(f for e, f in events if e == "done")["result"], events


def test_a_fixed_count_is_exactly_that_many():
    result, _ = _run(RunSpec("control", "control_noop", iterations=25, warmup=0))
    assert (result["iterations_done"], result["stop_reason"], result["looks"]) == (25, "count", 0)
    assert len(result["series"]["rss"]) == 25


def test_a_decided_look_stops_the_loop_and_the_readings_reach_the_runner():
    seen = []

    def ask(k, readings, plan=None):
        seen.append((k, len(readings["rss"]), plan))
        return k >= 18

    spec = RunSpec("control", "control_noop", iterations=500, min_iterations=8, budget=60, sequential=True, warmup=0)
    result, events = _run(spec, ask)
    assert (result["iterations_done"], result["stop_reason"], result["looks"]) == (18, "decided", 3)
    assert [(k, n) for k, n, _ in seen] == [(8, 8), (12, 4), (18, 6)]  # each look sends what the last one did not
    # the first look carries the plan (a fast pair: up to its most iterations), the record keeps it
    plan = seen[0][2]
    assert plan == {"planned_looks": len(rule.look_points(8, 500)) + 1, "planned_last": 500}
    assert [p for _, _, p in seen[1:]] == [None, None]
    assert (result["planned_looks"], result["planned_last"]) == (plan["planned_looks"], 500)


def test_a_slow_pair_plans_the_looks_its_budget_allows():
    """Protocol 5: a pair of 0.5 s per iteration under quick's 6 s budget plans 8 and 12 and its end (0.05 / 3),
    not the 15 looks of 8 ... 2,000 iterations (0.05 / 15) it could never take; a 1 ms pair plans them all."""
    spec = RunSpec("control", "control_noop", iterations=2000, min_iterations=8, budget=6, min_seconds=1,
                   sequential=True)
    slow = rule.LookPlan(spec)
    assert not slow.due(7, 3.5)  # before min_iterations: no plan yet
    assert slow.looks is None and slow.fields() == {}
    assert slow.due(8, 4.0)  # 8 iterations in 4 s: the budget allows 12, ×1.5 of slack is 18
    assert (slow.looks, slow.last) == (3, 18) and sorted(slow.points) == [8, 12]
    assert slow.due(12, 6.0) and not slow.due(18, 9.0)
    assert rule.alpha(spec, slow.fields()) == pytest.approx(0.05 / 3)
    fast = rule.LookPlan(spec)
    assert not fast.due(8, 0.008)  # 8 ms: min_seconds (1 s) holds the first look back
    assert fast.due(1000, 1.0)  # 1 ms per iteration: the budget allows 6,000; its most iterations, 2,000, cap it
    assert fast.last == 2000 and fast.looks == len(rule.look_points(1000, 2000)) + 1
    # a spec that has not looked is judged at the plan of its whole range (records before protocol 5 too)
    assert rule.alpha(spec) == rule.alpha(spec, {}) == rule.alpha_for(rule.planned_looks(8, 2000, True))
    fixed = RunSpec("control", "control_noop", iterations=40)
    assert not rule.LookPlan(fixed).due(40, 10.0) and rule.alpha(fixed) == 0.05


def test_the_decider_and_the_record_judge_at_the_plans_level():
    """A series of 12 readings whose trend p is 0.014 is `grows` at 0.05 / 3 (a plan of 3 looks) and inconclusive at
    0.05 / 15 (protocol 4's plan of quick's whole range): the runner's look and the record judge at the plan's."""
    spec = RunSpec("control", "control_noop", iterations=2000, min_iterations=8, budget=6, min_seconds=1,
                   sequential=True, floor=64 * KIB)
    planned = {"planned_looks": 3, "planned_last": 18}
    decider = rule.Decider(spec)
    decider.look({"rss": [500 * MIB] * 8}, planned)
    assert decider.level == pytest.approx(0.05 / 3)
    assert decider.margins["rss"] == 64 * KIB  # the given floor: the margin
    # (the series of protocol 8's test ×8: Kendall's p and Theil-Sen's interval scale with it: +839 [+76, +1555])
    rss = list(500 * MIB + 800 * KIB * np.arange(12) + np.random.default_rng(2).normal(0, 2400 * KIB, 12))
    calibrated = dataclasses.replace(spec, floor=1 * KIB)  # RSS's margin: its least, 64 KiB; resolution 1 KiB
    at = rule.fixed_floors({"rss": 1 * KIB}, "a calibration")["rss"]
    judged = rule.judge_results([{"series": {"rss": rss}, **planned}], calibrated, "rss", at)
    assert judged.verdict == "grows" and judged.judgements[0].fit.p_trend == pytest.approx(0.014, abs=0.001)
    unplanned = rule.judge_results([{"series": {"rss": rss}}], calibrated, "rss", at)
    assert unplanned.verdict == "inconclusive"


def test_the_budget_and_the_most_iterations_stop_an_undecided_loop():
    spec = RunSpec("control", "control_noop", iterations=10**7, min_iterations=8, budget=0.3, sequential=True,
                   warmup=0)
    result, _ = _run(spec, ask=lambda k, readings, plan=None: False)
    assert result["stop_reason"] == "budget" and result["loop_seconds"] >= 0.3
    spec = RunSpec("control", "control_noop", iterations=40, min_iterations=8, budget=60, sequential=True, warmup=0)
    assert _run(spec, ask=lambda k, readings, plan=None: False)[0]["stop_reason"] == "iterations"


def test_min_seconds_hold_the_looks_back():
    asked = []
    spec = RunSpec("control", "control_noop", iterations=10**7, min_iterations=8, budget=0.5, min_seconds=0.2,
                   sequential=True, warmup=0)
    result, _ = _run(spec, ask=lambda k, readings, plan=None: asked.append(k) or True)
    assert result["stop_reason"] == "decided" and asked and result["loop_seconds"] >= 0.2
    assert asked[0] > 8  # the first look came after 0.2 s of loop, not at 8 iterations


def test_a_large_leak_ends_the_loop_at_the_growth_cap():
    spec = RunSpec("control", "control_leak_native", iterations=10**6, min_iterations=8, budget=60, sequential=True,
                   warmup=0, leak_bytes=4 * MIB, max_growth=64 * MIB)
    result, _ = _run(spec, ask=lambda k, readings, plan=None: False)
    grown = [rss - result["baseline_rss"] for rss in result["series"]["rss"]]
    # the loop stopped at the first reading over the cap: not at a count, since this process's free pages (other
    # tests ran in it) hold the first few buffers without RSS growing
    assert result["stop_reason"] == "growth" and result["iterations_done"] == len(grown) >= 14
    assert grown[-1] >= 64 * MIB and max(grown[:-1]) < 64 * MIB


def test_python_blocks_are_sampled_at_a_few_counts():
    result, _ = _run(RunSpec("control", "control_leak_python", iterations=100, warmup=0, leak_bytes=16 * KIB))
    counts = [k for k, _ in result["py_blocks_samples"]]
    assert counts == rule.look_points(1, 101)[:len(counts)] and counts[-1] <= 100
    blocks = metrics.python_blocks_per_iter(result, start=20)
    assert 100 < blocks < 200  # 16 KiB of 136-byte tuples an iteration: ~120 blocks


# ---------------------------------------------------------------- end to end, through the runner's pipe


def test_a_sequential_run_of_a_leak_is_decided_through_the_runner():
    spec = RunSpec("control", "control_leak_native", iterations=5000, min_iterations=8, budget=30, sequential=True,
                   warmup=1, leak_bytes=1 * MIB, floor=64 * KIB)
    record = measure(spec)
    s, result = record["summary"], record["repeats"][0]["result"]
    assert result["stop_reason"] == "decided" and result["iterations_done"] < 100
    assert s["stopped"] == ["decided"] and (s["verdict"], s["growth_kind"]) == ("grows", "leak")
    assert abs(s["growth_per_iter"] - MIB) < 0.02 * MIB


def test_a_sequential_run_of_nothing_reads_flat_and_says_why_it_stopped():
    spec = RunSpec("control", "control_noop", iterations=3000, min_iterations=8, budget=2, sequential=True,
                   warmup=1, floor=64 * KIB)
    record = measure(spec)
    s = record["summary"]
    assert (s["verdict"], s["heap_verdict"], s["growth_kind"]) == ("flat", "flat", "flat")
    assert s["stopped"][0] in ("decided", "iterations") and s["measured"][0] >= 8
