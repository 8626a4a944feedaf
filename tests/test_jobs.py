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


def test_default_jobs_are_the_usable_cores_unless_set(monkeypatch):
    from kerasbench import runner
    from kerasbench.errors import UsageError

    monkeypatch.delenv("KERASBENCH_JOBS", raising=False)
    monkeypatch.setattr(runner.os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert runner.default_jobs() == 3
    monkeypatch.setenv("KERASBENCH_JOBS", "1")
    assert runner.default_jobs() == 1
    for bad in ("0", "1.5", "many"):
        monkeypatch.setenv("KERASBENCH_JOBS", bad)
        with pytest.raises(UsageError, match="KERASBENCH_JOBS"):
            runner.default_jobs()


def test_the_memory_gate_holds_a_pair_that_would_not_fit():
    """Two pairs expected at 1 GiB each with 1.5 GiB free: the second waits until the first has ended."""
    import threading

    from kerasbench.runner import EXPECTED_PEAK_TF, MemoryGate

    gate, stop = MemoryGate(free=int(1.5 * EXPECTED_PEAK_TF)), threading.Event()
    sweep = RunSpec("sweep", "reuse_model")
    first = gate.enter(sweep, stop)
    assert first == EXPECTED_PEAK_TF
    entered = threading.Event()
    thread = threading.Thread(target=lambda: (gate.enter(sweep, stop), entered.set()))
    thread.start()
    assert not entered.wait(0.5)  # held: 2 GiB expected, 1.5 free
    control = RunSpec("control", "control_noop")  # small: fits beside the first
    assert gate.enter(control, stop) is not None
    gate.leave(sweep, first, {"repeats": [{"max_tree_rss": 600 * 1024 * KIB}]})
    assert entered.wait(5)
    thread.join()
    assert gate.waited == 1
    assert gate.expected(sweep) == int(600 * 1024 * KIB * 1.25)  # learnt from the pair that ran


def test_a_pair_larger_than_free_memory_still_runs_alone():
    import threading

    from kerasbench.runner import MemoryGate

    gate = MemoryGate(free=1)
    assert gate.enter(RunSpec("sweep", "reuse_model"), threading.Event()) is not None


def test_pairs_that_spawn_per_iteration_start_first_and_records_keep_the_named_order(monkeypatch):
    from kerasbench import runner

    started = []

    def fake_measure(spec, progress=None):
        started.append(spec.strategy)
        return {"loop": spec.loop, "strategy": spec.strategy, "status": "ok", "repeats": []}

    monkeypatch.setattr(runner, "measure", fake_measure)
    pairs = [("sweep", "reuse_model"), ("sweep", "clear_session"), ("sweep", "process_isolation")]
    base = RunSpec("sweep", "reuse_model", jobs=2).validate()
    records = runner.measure_pairs(base, pairs, lambda strategy: 5)
    assert "process_isolation" in started[:2]  # among the first two started (named last: it would start third)
    assert [r["strategy"] for r in records] == ["reuse_model", "clear_session", "process_isolation"]


def test_one_pair_alone_is_recorded_at_jobs_1():
    """Asked for 2 at once with one pair: nothing ran beside it, so its time per iteration is not marked contended."""
    base = RunSpec("control", "control_noop", iterations=5, warmup=1, jobs=2).validate()
    (record,) = measure_pairs(base, [("control", "control_noop")], lambda strategy: 5)
    assert record["spec"]["jobs"] == 1


@pytest.mark.parametrize("metric, given_cap, at_once", [("growth_per_iter", 0, 2), ("seconds_per_iter", 0, 1),
                                                         ("growth_per_iter", 3 << 30, 2)])
def test_measure_specs_decides_how_many_at_once_the_records_jobs_and_the_shared_cap(monkeypatch, metric, given_cap,
                                                                                      at_once):
    """The one runner call triage, attribute, run and ablate measure through: at most the specs that start a worker
    at once, a time measured alone; the records say that many jobs, the default memory cap shared between them."""
    from kerasbench import runner
    from kerasbench.spec import shared_memory_cap

    monkeypatch.delenv("KERASBENCH_MEMORY_CAP", raising=False)
    seen = []

    def fake_measure(spec, progress=None):
        seen.append(spec)
        return {"loop": spec.loop, "strategy": spec.strategy, "status": "ok", "repeats": [],
                "spec": {"jobs": spec.jobs}}

    at_once_calls = []
    real_at_once = runner.measure_at_once
    monkeypatch.setattr(runner, "measure", fake_measure)
    monkeypatch.setattr(runner, "measure_at_once", lambda specs, jobs, progress, finished, repro_raises=True:
                        at_once_calls.append(jobs) or real_at_once(specs, jobs, progress, finished))
    template = RunSpec("sweep", "reuse_model", iterations=5, memory_cap=given_cap).validate()  # jobs 1, its cap
    skipped = dataclasses.replace(template, loop="control", strategy="reuse_model")  # does not apply: no worker
    specs = [template, dataclasses.replace(template, strategy="clear_session"), skipped]
    records = runner.measure_specs(specs, 4, metric=metric)
    assert len(records) == 3 and at_once_calls == ([2] if at_once > 1 else [])
    assert {s.jobs for s in seen} == {at_once}  # 4 asked, 2 start a worker; a time: one at a time
    assert {s.memory_cap for s in seen} == {given_cap or shared_memory_cap(at_once)}
