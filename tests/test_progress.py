"""Progress lines: a pair's place in the run ([i/N]) beside the count of pairs done, the time and what is left."""

import io

from kerasbench.console import Progress, clock_text


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _record(status="ok"):
    summary = {"verdict": "flat", "heap_verdict": "flat", "growth_kind": "flat", "growth_per_iter": 0.0,
               "measured": [8]}
    return {"status": status, "reason": "", "summary": summary, "repeats": []}


def test_lines_count_the_pairs_done_not_the_pair_s_place_and_estimate_the_rest_from_the_pace():
    stream, clock = io.StringIO(), Clock()
    run = Progress(stream, 4, 1, clock=clock)
    last = run.pair(4, "control", "control_noop", 8)  # the last pair starts first (isolation pairs do)
    last({"event": "start", "repeat": 0})
    clock.now += 45
    first = run.pair(1, "control", "clear_session", 8)
    first({"event": "start", "repeat": 0})
    last.done(_record())
    clock.now += 15
    first.done(_record())
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[4/4] control × control_noop: starting a fresh worker (0 of 4 done, 0:00 elapsed)"
    assert lines[1] == "[1/4] control × clear_session: starting a fresh worker (0 of 4 done, 0:45 elapsed)"
    assert lines[2].endswith("8 iterations (1 of 4 done, 0:45 elapsed, ~2:15 left)")
    assert lines[3].endswith("(2 of 4 done, 1:00 elapsed, ~1:00 left)")


def test_the_last_pair_says_nothing_is_left():
    stream = io.StringIO()
    run = Progress(stream, 1, 0, clock=Clock())
    run.start(1, "control", "control_noop", 2)
    run.done(_record())
    assert stream.getvalue().rstrip().endswith("(1 of 1 done, 0:00 elapsed)")


def test_clock_text():
    assert [clock_text(s) for s in (0, 44.6, 61, 3599, 3600, 3729)] == ["0:00", "0:45", "1:01", "59:59", "1:00:00",
                                                                       "1:02:09"]


def test_a_bound_total_says_at_most():
    """triage's steps: at most N (a bisection may end sooner), so the estimate is the most left."""
    stream, clock = io.StringIO(), Clock()
    run = Progress(stream, 5, 0, clock=clock, at_most=True)
    run.start(1, "control", "control_noop", 2)
    clock.now += 30
    run.done(_record())
    assert stream.getvalue().rstrip().endswith("(1 of ≤5 done, 0:30 elapsed, ≤~2:00 left)")
