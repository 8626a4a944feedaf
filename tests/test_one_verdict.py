"""One verdict, whatever the count (protocol 9): known leaks over the references' own noise, judged at counts from
10 to 2,000 iterations, may move from inconclusive to decided, never between flat and grows."""

import functools
import json
import pathlib

import numpy as np
import pytest

from kerasbench import rule
from kerasbench.spec import RunSpec

KIB = 1024
REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference" / "protocol8" / "tf-2.21.0.json"
COUNTS = (10, 20, 40, 80, 150, 300, 600, 1000, 2000)
LEVEL = rule.alpha_for(rule.planned_looks(8, 5000, True))  # the default profile's per-look level


@functools.lru_cache(maxsize=None)
def negatives(series: str):
    """The reference's long runs of TF pairs in process, inputs that repeat every iteration, both verdicts flat:
    their `series` readings are what a TF loop that keeps nothing looks like on this machine (the settling
    calibration's negatives)."""
    data = json.loads(REFERENCE.read_text())
    found = []
    for record in data["records"]:
        s = record["summary"]
        if record["status"] != "ok" or record["loop"] not in ("batch_stream", "tf1_graph", "tf_data") \
                or record["strategy"] == "varying_batch_shapes" \
                or (s["verdict"], s["heap_verdict"]) != ("flat", "flat"):
            continue
        for repeat in record["repeats"]:
            values = repeat["result"]["series"][series]
            if len(values) >= 500:
                found.append((f"{record['loop']} × {record['strategy']}", np.asarray(values, dtype=float)))
    return found


def verdicts(values, margin, at):
    return "".join(rule.judge(values[:n], margin, at, LEVEL).verdict[0] for n in COUNTS if n <= len(values))


@pytest.mark.parametrize("series, rates_kib, margin", [
    ("heap", (0, 0.5, 1, 2, 4, 8, 16, 64), rule.MARGINS["heap"]),
    ("rss", (0, 16, 32, 64, 128, 256, 512), rule.MARGINS["rss"]),
])
def test_known_leaks_over_real_noise_never_flip_between_flat_and_grows(series, rates_kib, margin):
    spec = RunSpec("batch_stream", "stable_batch_shapes").validate()
    at = rule.floor_at(spec, series, {"tensorflow": "2.21.0", "keras": "3.13.2"})
    found = negatives(series)
    assert len(found) >= 6, [name for name, _ in found]
    for rate in rates_kib:
        for name, noise in found:
            seen = verdicts(noise + np.arange(len(noise)) * rate * KIB, margin, at)
            assert not ("f" in seen and "g" in seen), (series, rate, name, seen)  # never both
            if rate * KIB <= margin / 2:
                assert "g" not in seen and seen.endswith("f"), (series, rate, name, seen)
            if rate * KIB >= 2 * margin:
                assert "f" not in seen and seen.endswith("g"), (series, rate, name, seen)
            # (a shape rule may still hold a verdict back for a look near the margin: TF's RSS warm-up, +300
            # KiB/iteration over its first ~60 iterations of function_in_loop, reads `settling` under a 128 KiB leak)


# ---------------------------------------------------------------- every door reads one verdict


def test_two_runs_of_one_ramp_are_not_a_regression():
    """compare between two identical runs of `rebuild_no_clear` (protocol 8: "regressed ×1.83", CI [+488, +568] vs
    [+174, +464] KiB/iter at 12-14 iterations, heaps +380.2 and +380.0): each interval widened by its count's
    resolution (84 KiB at 12 iterations of glibc RSS) overlaps the other: not a change."""
    from kerasbench import compare

    def side(value, low, high):
        return {"value": value * KIB, "low": low * KIB, "high": high * KIB, "floor": 84 * KIB,
                "margin": rule.MARGINS["rss"], "verdict": "grows", "bare": "grows", "series": "RSS"}

    verdict, why = compare._slope_ci(side(319, 174, 464), side(528, 488, 568))
    assert verdict == "inconclusive" and "CI and resolution" in why, why
    # a change the resolution cannot hide is one: +3,650 against +560 KiB/iteration at 150 iterations
    far = {**side(3650, 3649, 3651), "floor": 32 * KIB}
    assert compare._slope_ci({**side(560, 430, 690), "floor": 32 * KIB}, far)[0] == "regressed"
    # the same growth twice: unchanged, within the margin
    assert compare._slope_ci(far, {**far, "value": 3655 * KIB})[0] == "unchanged"


def test_triage_classes_a_release_by_the_verdict_run_prints_where_the_ends_differ():
    """A release whose own record reads inconclusive is never 'good' because its slope sits near the good end's: it
    is unclear, and measuring it longer decides it (protocol 8 classed TF 2.15.1 `good` while run read `grows`)."""
    from kerasbench import triage

    def side(bare):
        return {"bare": bare, "series": "RSS"}

    names = ("TF 2.21.0", "TF 2.13.1")
    assert triage._by_verdict({"good": side("flat"), "bad": side("grows"), "record": side("grows")}, names)[0] == "bad"
    assert triage._by_verdict({"good": side("flat"), "bad": side("grows"), "record": side("flat")}, names)[0] == "good"
    unclear = triage._by_verdict({"good": side("flat"), "bad": side("grows"), "record": side("inconclusive")}, names)
    assert unclear[0] == "unclear" and "measure it longer" in unclear[1]
    # ends that read alike are placed on the scale of the change (rule.place), not by verdict
    assert triage._by_verdict({"good": side("grows"), "bad": side("grows"), "record": side("grows")}, names) is None


def test_the_first_look_comes_by_memory_as_well_as_by_time():
    """A microsecond loop keeping 200 KiB an iteration looked first after its least seconds (protocol 8: at
    iteration 2,345, 458 MiB kept); now once RSS grew rule.LOOK_GROWTH over its baseline, whichever first."""
    spec = RunSpec("control", "control_leak_native", iterations=5000, min_iterations=8, budget=20, min_seconds=3,
                   sequential=True)
    slow = rule.LookPlan(spec)
    assert not slow.due(160, 0.01, growth=160 * 200 * KIB - 1)  # 3 s not spent, under 32 MiB kept: no look yet
    fast = rule.LookPlan(spec)
    assert fast.due(164, 0.01, growth=164 * 200 * KIB)  # 32.03 MiB: the first look, the plan made there
    assert fast.looks == len(rule.look_points(164, 5000)) + 1 and fast.due(246, 0.02)
    assert not rule.LookPlan(spec).due(4, 0.001, growth=10**9)  # never before the first count


def test_no_shape_rule_hides_a_large_leak(monkeypatch):
    """sweep × rebuild_no_clear at 20 iterations on TF 2.21.0 (protocol 8: RSS +8,404 KiB/iteration, interval
    [+7,335, +8,523], "settling: no steady state in the first half"): a growth many times the margin whose late half
    still grows that fast is `grows`, whatever its warm-up looks like."""
    rng = np.random.default_rng(3)
    steps = 1024 * KIB * np.array([24, 20, 16, 13, 11, 10, 9.5, 9, 8.8, 8.6] + [8.4] * 9) + rng.normal(0, 200 * KIB, 19)
    series = 600 * 1024 * KIB + np.r_[0, np.cumsum(steps)]
    judged = rule.judge(series, rule.MARGINS["rss"], 84 * KIB, LEVEL)
    assert judged.verdict == "grows" and 7 * 1024 * KIB < judged.fit.slope < 10 * 1024 * KIB, judged
    monkeypatch.setattr(rule.series, "CLEAR_OVER_MARGIN", 1e9)  # the shape rules alone: what protocol 8 said
    held = rule.judge(series, rule.MARGINS["rss"], 84 * KIB, LEVEL)
    assert (held.verdict, held.shape) == ("inconclusive", "settling"), held
    # a cache that fills fast and stops is not held for a leak: its late half is flat
    fill = 600 * 1024 * KIB + np.r_[0, np.cumsum(np.r_[[8 * 1024 * KIB] * 8, [0] * 11])] + rng.normal(0, 8 * KIB, 20)
    assert rule.judge(fill, rule.MARGINS["rss"], 84 * KIB, LEVEL).verdict != "grows"


def test_what_piles_up_in_a_growing_pair_is_not_compared_across_lengths():
    """Two default runs of inference × rebuild_no_clear (+380 KiB/iteration of heap) stopped at 42 and 80 iterations:
    protocol 8 called their peak and retained 'regressed ×1.9'; the slope compares them, the peak does not."""
    from kerasbench import compare
    from kerasbench.metrics import METRICS

    how = METRICS["peak_over_baseline"].compare
    base = {"value": 20.0 * 2**20, "noise": 0.0, "repeats": 1, "iterations": 42, "grows": True}
    new = {**base, "value": 38.7 * 2**20, "iterations": 80}
    verdict, why = compare._magnitude(base, new, how)
    assert verdict == "not comparable" and "42 and 80 iterations" in why
    assert compare._magnitude(base, {**new, "iterations": 45}, how)[0] != "not comparable"  # about one length
    flat = {**base, "grows": False}
    assert compare._magnitude(flat, {**flat, "value": 38.7 * 2**20, "iterations": 80}, how)[0] != "not comparable"


def test_two_runs_of_one_sweep_keep_the_same_objects_within_two_percent():
    """Two identical default runs of sweep × malloc_trim: +18,045 and +18,073 objects/iteration, one repeat each
    (protocol 8: 'regressed, +28 obj/iter ≥ the minimum 25'): unchanged; 25 objects over 30 is still a change."""
    from kerasbench import compare
    from kerasbench.metrics import METRICS

    how = METRICS["objects_per_iter"].compare
    side = {"value": 18045.0, "noise": float("nan"), "repeats": 1, "iterations": 12}
    assert compare._magnitude(side, {**side, "value": 18073.0}, how)[0] == "unchanged"
    assert compare._magnitude({**side, "value": 30.0}, {**side, "value": 60.0}, how)[0] == "regressed"
