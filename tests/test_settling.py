"""TF's own heap settling: the floor per count derived from the reference's flat TF pairs (synthetic records with
known answers), the floor a TF pair's heap is judged at, and the counts of a strategy whose inputs repeat late."""

import json
import math

import numpy as np
import pytest

from kerasbench import rule, stats
from kerasbench.profiles import PROFILES
from kerasbench.rule import PROTOCOL_VERSION
from kerasbench.spec import RunSpec, settling_candidate
from kerasbench.strategies import get_strategy

KIB, MIB = 1024, 1024**2
CONTROL = 512.0  # the TF-free control's heap floor (glibc, from 12 iterations)


def record(loop, strategy, heaps):
    return {"status": "ok", "loop": loop, "strategy": strategy, "spec": {"allocator": "glibc", "device": "cpu"},
            "environment": {"tensorflow": "2.21.0", "keras": "3.13.2"},
            "repeats": [{"repeat": r, "result": {"series": {"heap": [float(v) for v in h]}}}
                        for r, h in enumerate(heaps)]}


def settling_heap(n, start_rate, scale, seed):
    """A heap that grows `start_rate` bytes/iteration at first and settles to nothing (rate decaying over `scale`)."""
    t = np.arange(n)
    rng = np.random.default_rng(seed)
    return 100 * MIB + np.cumsum(start_rate * np.exp(-t / scale)) + rng.normal(0, 64, n)


def derived(records):
    return rule.settling.derive(records, lambda r: CONTROL, settling_candidate)


def test_the_floor_covers_every_negative_at_every_count_and_never_rises_with_the_count():
    records = [record("batch_stream", "stable_batch_shapes", [settling_heap(1200, 4 * KIB, 60, s) for s in (1, 2)]),
               record("tf_data", "reuse_dataset", [settling_heap(1200, 3 * KIB, 90, s) for s in (3, 4)]),
               record("inference", "release_outputs", [settling_heap(1200, 2 * KIB, 120, 5)])]
    cal = derived(records)
    assert len(cal["negatives"]) == 5
    floors = {int(n): v for n, v in cal["floors"].items()}
    counts = sorted(floors)
    assert counts[0] == 8 and max(counts) <= 600  # prefixes of at most half the long runs
    assert all(floors[a] >= floors[b] for a, b in zip(counts, counts[1:]))  # a longer run resolves at least as much
    for n in counts:
        top = cal["counts"][str(n)]["largest_ci_top"]
        assert floors[n] >= top and np.log2(floors[n]) == int(np.log2(floors[n]))  # covers it, a power of two
        for rec in records:  # every negative judged at its count's floor is not `grows`
            for rep in rec["repeats"]:
                judged = rule.judge(rep["result"]["series"]["heap"][:n], floors[n], alpha=cal["level"], resolve=True)
                assert judged.verdict != "grows"
    assert floors[8] > floors[counts[-1]]  # settling is steeper early


def test_leaks_controls_isolation_and_late_repeating_inputs_are_not_negatives():
    leak = 100 * MIB + 2 * KIB * np.arange(1200)
    flat_heap = settling_heap(1200, 2 * KIB, 60, 7)
    records = [record("inference", "reuse_model", [leak]),  # grows in the long run
               record("control", "control_noop", [flat_heap]),  # no TensorFlow
               record("sweep", "process_isolation", [flat_heap]),  # the parent never imports TF
               record("batch_stream", "varying_batch_shapes", [flat_heap]),  # new inputs for 120 iterations
               record("tf_data", "reuse_dataset", [flat_heap[:150]])]  # too short to hold prefixes
    cal = derived(records)
    assert cal["negatives"] == [] and cal["floors"] == {}


def test_a_tf_pairs_heap_is_judged_at_no_less_than_tfs_settling(tmp_path, monkeypatch):
    records = [record("batch_stream", "stable_batch_shapes", [settling_heap(1200, 4 * KIB, 60, s) for s in (1, 2)]),
               record("tf_data", "reuse_dataset", [settling_heap(1200, 3 * KIB, 90, s) for s in (3, 4, 5)])]
    cal = derived(records)
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    (tmp_path / rule.settling.NAME).write_text(json.dumps(cal))
    monkeypatch.setattr("kerasbench.rule.floors.floor_for", lambda allocator, n, series="rss", **_: (
        CONTROL if series == "heap" else 32 * KIB, "the control's calibration"))
    rule.settling._read.cache_clear()
    try:
        here = {"tensorflow": "2.21.0", "keras": "3.13.2"}  # what the negatives ran on
        assert cal["made_on"] == [here] and cal["derived_by"] == PROTOCOL_VERSION
        assert cal["protocol"] is None  # its records carry no stamp: measured by protocol 7 or older
        tf = rule.floor_at(RunSpec("inference", "reuse_model", iterations=100), "heap", here)
        control = rule.floor_at(RunSpec("control", "control_noop", iterations=100), "heap")
        isolated = rule.floor_at(RunSpec("inference", "process_isolation", iterations=10), "heap")
        rss = rule.floor_at(RunSpec("inference", "reuse_model", iterations=100), "rss")
        assert tf(8)[0] == cal["floors"]["8"] > control(8)[0] and "settling" in tf(8)[1]
        assert "settling" not in control(8)[1] and "settling" not in isolated(8)[1] and "settling" not in rss(8)[1]
        assert tf(100000)[0] == control(100000)[0]  # past the settling, the control's floor again
        assert tf.stamp(8) == {"kind": "settling", "file": rule.settling.NAME, "protocol": None,
                               "made_on": [here], "foreign": False}
        # another Keras (or one not known): the floor doubled, and the source and the stamp say so
        for versions in ({"tensorflow": "2.21.0", "keras": "3.15.1"}, None):
            other = rule.floor_at(RunSpec("inference", "reuse_model", iterations=100), "heap", versions)
            assert other(8)[0] == 2 * tf(8)[0] and "another: ×2" in other(8)[1] and other.stamp(8)["foreign"]
        # between two calibrated counts, no step: the floor falls geometrically from one count's to the next's
        floors = sorted((int(c), f) for c, f in cal["floors"].items())
        (c0, f0), (c1, f1) = next((a, b) for a, b in zip(floors, floors[1:]) if b[1] < a[1])
        n = c1 - 1
        assert tf(n)[0] == pytest.approx(f0 * (f1 / f0) ** (math.log(n / c0) / math.log(c1 / c0)))
        assert f0 > tf(n)[0] > f1 == tf(c1)[0] and f"{n} iterations, between its {c0} and {c1}" in tf(n)[1]
    finally:
        rule.settling._read.cache_clear()


def test_a_bad_settling_file_is_one_line_naming_it(tmp_path, monkeypatch):
    from kerasbench.errors import UsageError

    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    (tmp_path / rule.settling.NAME).write_text(json.dumps({"schema": 1, "floors": {"8": "Infinity"}}))
    rule.settling._read.cache_clear()
    try:
        with pytest.raises(UsageError, match=rule.settling.NAME):
            rule.settling.floor(8)
    finally:
        rule.settling._read.cache_clear()


def test_the_shipped_settling_floor_is_what_the_shipped_references_give(monkeypatch):
    """docs/calibration/tf-settling.json is remade by `kerasbench calibrate --settling
    docs/reference/protocol8/*.json` (the references measured by the protocol it judges)."""
    import os

    from kerasbench import calibration_store
    from kerasbench.loading import load_records

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "docs")
    # the conftest hides it
    monkeypatch.setattr("kerasbench.calibration_store.SHIPPED", os.path.join(root, "calibration"))
    refs = sorted(os.path.join(root, "reference", "protocol8", n)
                  for n in os.listdir(os.path.join(root, "reference", "protocol8"))
                  if n.endswith(".json"))
    with open(os.path.join(calibration_store.SHIPPED, rule.settling.NAME)) as f:
        shipped = json.load(f)
    again = rule.settling.derive([r for r, _, _ in load_records(refs)],
                                 lambda r: (lambda n: rule.floor_for("glibc", n, series="heap", beyond=False)),
                                 settling_candidate, sources=[os.path.basename(p) for p in refs])
    assert again["floors"] == shipped["floors"] and again["negatives"] == shipped["negatives"]
    assert shipped["protocol"] == again["protocol"] == 8  # measured by protocol 8, as it judges


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_strategy_whose_inputs_repeat_late_measures_past_two_periods(profile):
    p = PROFILES[profile]
    varying, stable = get_strategy("varying_batch_shapes"), get_strategy("stable_batch_shapes")
    assert varying.period == 120 and stable.period == 1
    assert len({varying.batch_size(i, 32) for i in range(varying.period)}) == varying.period  # all new in a period
    counts = p.counts_for(varying)
    assert counts["min_iterations"] >= 2 * varying.period + stats.MIN_WINDOW
    assert counts["iterations"] >= counts["min_iterations"]
    assert p.counts_for(stable)["min_iterations"] == p.min_iterations
