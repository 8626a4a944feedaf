"""Several pairs at once (`--jobs`, runner.measure_pairs): the same memory figures and verdicts as one at a time.

Each pair still runs in workers of its own; only the machine is shared. The controls' leaks are of known size, so
a slope that moved with the number of jobs would show here. (Seconds per iteration do move under contention: the
record's spec says how many pairs ran at once.)
"""

import dataclasses

import pytest

from kerasbench.runner import RunSpec, measure_pairs
from kerasbench.units import KIB

PAIRS = [("control", "control_noop"), ("control", "control_leak_native"), ("control", "control_leak_python")]


def _run(jobs):
    base = RunSpec("control", "control_noop", iterations=30, warmup=2, leak_bytes=256 * KIB, jobs=jobs).validate()
    return measure_pairs(base, PAIRS, lambda strategy: 30)


def test_two_jobs_give_the_verdicts_and_slopes_of_one():
    one, two = _run(1), _run(2)
    assert [(r["loop"], r["strategy"]) for r in two] == PAIRS  # in the order named, whatever finished first
    for a, b in zip(one, two):
        assert a["status"] == b["status"] == "ok"
        assert a["summary"]["verdict"] == b["summary"]["verdict"], a["strategy"]
        assert b["spec"]["jobs"] == 2 and a["spec"]["jobs"] == 1
        slope_a, slope_b = a["summary"]["growth_per_iter"], b["summary"]["growth_per_iter"]
        assert slope_b == pytest.approx(slope_a, rel=0.05, abs=2 * KIB), a["strategy"]
        assert b["summary"]["objects_per_iter"] == pytest.approx(a["summary"]["objects_per_iter"], rel=0.05, abs=5)
    assert [r["summary"]["verdict"] for r in two] == ["flat", "grows", "grows"]


def test_jobs_share_the_default_memory_cap(monkeypatch):
    monkeypatch.delenv("KERASBENCH_MEMORY_CAP", raising=False)
    one = RunSpec("control", "control_noop").validate()
    two = dataclasses.replace(RunSpec("control", "control_noop"), jobs=2).validate()
    assert two.memory_cap == one.memory_cap // 2


def test_jobs_must_be_a_positive_count():
    from kerasbench.errors import UsageError

    with pytest.raises(UsageError, match="jobs"):
        RunSpec("control", "control_noop", jobs=0).validate()
