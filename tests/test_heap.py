"""The heap probe against native leaks of known size, under each allocator (fresh processes, LD_PRELOAD)."""

import json
import os
import subprocess
import sys

import pytest

from kerasbench import allocators, probes, rule, stats

KIB = 1024

# A worker-like loop in a fresh process: the heap probe around iterations that each leak `leak` bytes
# natively (ctypes malloc, never freed) or keep a numpy buffer of that size; prints the heap fit.
CHILD = r"""
import ctypes, json, sys, time, types
import numpy as np
from kerasbench import allocators, probes, stats
kind, leak, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
kept = []
context = probes.ProbeContext(tf_loaded=False, in_process=True, device="cpu", trim_before_read=False,
                              counts_steps=False, pair=types.SimpleNamespace(child_peaks=[],
                              child_gpu_alloc_peaks=[], child_gpu_reserved_peaks=[]))
stack = probes.ProbeStack(context)
stack.start()
for i in range(n):
    stack.before_iteration()
    if kind == "malloc":
        p = libc.malloc(leak)
        ctypes.memset(p, 1, leak)
    else:
        kept.append(np.ones(leak // 8))
    stack.after_iteration()
stack.stop()
stack.after_cleanup()
fields = stack.fields()
reader = allocators.heap_reader()
costs = []  # the fastest of 5 batches: the reading's own cost, not the machine's load
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(200):
        reader.read()
    costs.append((time.perf_counter() - t0) / 200)
cost = min(costs)
fit = stats.fit_growth(stack.series["heap"]) if "heap" in stack.series else None
print(json.dumps({"in_use": allocators.allocator_in_use(), "source": fields["heap_source"],
                  "unavailable": fields["heap_unavailable"], "slope": fit.slope if fit else None,
                  "cost": cost, "blocks": (fields["py_blocks_after"] - fields["py_blocks_before"]) / n}))
"""


def _run(allocator, kind, leak, n=30):
    a = allocators.get_allocator(allocator)
    if a.preload and not allocators.library_present(a.preload):
        pytest.skip(f"{a.preload} is not installed ({a.package})")
    env = allocators.apply_env(allocator, dict(os.environ))
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(leak), str(n)], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    return json.loads(out.stdout)


@pytest.mark.parametrize("allocator", ["glibc", "tcmalloc", "jemalloc"])
@pytest.mark.parametrize("kind", ["malloc", "numpy"])
@pytest.mark.parametrize("leak", [4 * KIB, 256 * KIB])
def test_heap_slope_is_the_leak(allocator, kind, leak):
    got = _run(allocator, kind, leak)
    assert got["in_use"] == allocators.get_allocator(allocator).detects
    assert got["source"] and got["unavailable"] is None
    # within 5 % (+-64 bytes): size classes round a request up; the loop's own small objects come and go
    assert 0.95 * leak - 64 <= got["slope"] <= 1.05 * leak + 64, got
    assert got["cost"] < 50e-6, got  # the per-reading budget


def test_python_blocks_count_objects_kept():
    got = _run("glibc", "numpy", 4 * KIB)
    assert got["blocks"] >= 1  # one array object kept per iteration (its buffer is not a block)


def test_no_heap_reader_is_na_with_a_reason_never_zero():
    context = probes.ProbeContext(tf_loaded=False, in_process=True, device="cpu", trim_before_read=False,
                                  counts_steps=False)
    reader = allocators.HeapReader(None, "no reader here")
    probe = probes.HeapProbe(context, reader)
    probe.series = {}
    assert probe.SERIES == ()
    probe.start()
    probe.after_iteration()
    probe.stop()
    probe.after_cleanup()
    fields = probe.fields()
    assert fields["heap_baseline"] is None and fields["heap_peak"] is None and fields["heap_final"] is None
    assert fields["heap_source"] is None and fields["heap_unavailable"] == "no reader here"
    assert fields["py_blocks_before"] > 0 and fields["py_blocks_after"] > 0


def test_a_reader_that_fails_mid_run_leaves_none_and_says_why():
    context = probes.ProbeContext(tf_loaded=False, in_process=True, device="cpu", trim_before_read=False,
                                  counts_steps=False)
    readings = iter([100, 200])

    def read():
        value = next(readings, None)
        if value is None:
            raise OSError("gone")
        return value

    probe = probes.HeapProbe(context, allocators.HeapReader("fake", None, read))
    probe.series = {"heap": []}
    probe.start()
    probe.after_iteration()
    probe.after_iteration()
    probe.after_cleanup()
    fields = probe.fields()
    assert probe.series["heap"] == [200, None]
    assert fields["heap_unavailable"] == "fake: gone" and fields["heap_peak"] is None


def test_unknown_allocator_has_no_reader():
    reader = allocators.heap_reader("mimalloc")
    assert reader.source is None and "mimalloc" in reader.unavailable and reader.read() is None


def test_fit_of_heap_series_is_stats_fit():
    assert stats.fit_growth([0, 4096, 8192, 12288]).slope == 4096


# ---------------------------------------------------------------- metrics and the verdict kind


def test_growth_kind_says_what_grew():
    assert rule.growth_kind("grows", "grows") == "leak"
    assert rule.growth_kind("flat", "grows") == "leak"  # a small leak filling holes: RSS flat, heap grows
    assert rule.growth_kind("grows", "flat") == "retention"
    assert rule.growth_kind("flat", "flat") == "flat"
    assert rule.growth_kind("inconclusive", "flat") == "inconclusive"
    assert rule.growth_kind("grows", "inconclusive") == "inconclusive"
    assert rule.growth_kind("grows", None) is None
    # undecided series say what they look like
    assert rule.growth_kind("inconclusive", "flat", rss_shape="step") == "step"
    assert rule.growth_kind("flat", "inconclusive", heap_shape="settling") == "settling"
    # Python objects live in pymalloc arenas, mmapped outside malloc's count: blocks that pile up are a leak when
    # they can hold half the RSS growth (at most 512 bytes a block), retention when they cannot
    kib64 = 64 * 1024
    assert rule.growth_kind("grows", "flat", rss_slope=kib64, py_blocks_per_iter=400) == "leak"  # 200 KiB max
    assert rule.growth_kind("grows", "flat", rss_slope=kib64, py_blocks_per_iter=3) == "retention"  # 1.5 KiB
    assert rule.growth_kind("grows", "flat", rss_slope=kib64, py_blocks_per_iter=60) == "retention"  # 30 < 32 KiB
def _summary(rss_slope, heap_slope, heap=True, n=40, repeats=2, floor=16 * KIB):
    """summarize() of synthetic repeats whose RSS and heap series have known slopes (RSS noisy, heap quiet)."""
    import types

    import numpy as np

    from kerasbench.summary import summarize

    rng = np.random.default_rng(3)
    reps = []
    for r in range(repeats):
        rss = [int(500 * 2**20 + rss_slope * i + rng.normal(0, 32 * KIB)) for i in range(n)]
        series = {"rss": rss, "seconds": [0.1] * n, "train_traces": [0] * n, "predict_traces": [0] * n,
                  "function_traces": [0] * n}
        result = {"series": series, "baseline_rss": rss[0], "final_rss": rss[-1], "peak_loop_rss": max(rss),
                  "loop_seconds": 0.1 * n, "objects_before": 0, "objects_after": 0, "train_traces": 0,
                  "predict_traces": 0, "function_traces": 0, "models_built": 1, "graph_build_seconds": None,
                  "tf_alloc_peak": None, "child_peaks": [], "py_blocks_before": 1000, "py_blocks_after": 1000 + 3 * n}
        if heap:
            series["heap"] = [int(100 * 2**20 + heap_slope * i + rng.normal(0, 256)) for i in range(n)]
            result.update(heap_baseline=series["heap"][0], heap_final=series["heap"][0] + 5 * 2**20,
                          heap_peak=max(series["heap"]), heap_source="fake", heap_unavailable=None)
        else:
            result.update(heap_baseline=None, heap_final=None, heap_peak=None, heap_source=None,
                          heap_unavailable="no reader")
        reps.append({"repeat": r, "status": "ok", "reason": None, "result": result, "environment": None})
    spec = types.SimpleNamespace(floor=floor, floor_source="given", iterations=n)
    from kerasbench import rule

    # the given floor is the margin; the resolution fixed (RSS 8 KiB, heap 0.5 KiB: no calibration read)
    return summarize(reps, spec, rule.fixed_floors({"rss": 8 * KIB, "heap": 512.0}, "test"))


def test_heap_metrics_have_the_known_slopes_and_name_what_grew():
    leak = _summary(rss_slope=0, heap_slope=64 * KIB)
    assert leak["growth_kind"] == "leak" and leak["heap_verdict"] == "grows"
    assert abs(leak["heap_growth_per_iter"] - 64 * KIB) < 0.01 * 64 * KIB
    assert leak["heap_growth_ci_low"] <= 64 * KIB <= leak["heap_growth_ci_high"]
    assert leak["heap_retained"] == 5 * 2**20
    assert abs(leak["heap_peak_over_baseline"] - 39 * 64 * KIB) < 4 * KIB
    assert leak["py_blocks_per_iter"] == 3
    kept = _summary(rss_slope=128 * KIB, heap_slope=0)  # 3 Python blocks/iteration: not a Python leak
    assert (kept["verdict"], kept["heap_verdict"], kept["growth_kind"]) == ("grows", "flat", "retention")
    assert _summary(rss_slope=0, heap_slope=0)["growth_kind"] == "flat"


def test_without_a_heap_reader_the_heap_metrics_are_na_never_zero():
    s = _summary(rss_slope=128 * KIB, heap_slope=0, heap=False)
    assert s["verdict"] == "grows"
    assert all(s[k] is None for k in ("heap_growth_per_iter", "heap_growth_ci_low", "heap_retained",
                                      "heap_peak_over_baseline", "heap_verdict", "growth_kind"))


def test_run_table_names_what_grew():
    from kerasbench import runtable

    summary = _summary(rss_slope=128 * KIB, heap_slope=0)
    record = {"loop": "control", "strategy": "noop", "status": "ok", "summary": summary, "spec": {"device": "cpu"},
              "environment": None,
              "repeats": [{"result": {"series": {"rss": [1, 2, 3]}}}]}
    table = runtable.run_table([record])
    assert "what grew" in table and "retention" in table and "heap KiB/iter" in table


def test_the_run_tables_first_verdict_is_the_pairs_with_rss_and_heap_beside_it():
    """A heap that leaks under a flat RSS: the pair's one verdict (rule.pair_verdict, Results.verdicts()) grows, and
    that is the table's first verdict column and the first word of the progress line; RSS's and the heap's are
    beside it, named."""
    import io

    from kerasbench import console, runtable
    from kerasbench.api import Results

    summary = _summary(rss_slope=0, heap_slope=64 * KIB)
    assert (summary["verdict"], summary["heap_verdict"], summary["growth_kind"]) == ("flat", "grows", "leak")
    record = {"loop": "control", "strategy": "noop", "status": "ok", "reason": None, "summary": summary,
              "spec": {"device": "cpu"}, "environment": None, "repeats": [{"result": {"series": {"rss": [1, 2, 3]}}}]}
    header, _, row = runtable.run_table([record]).splitlines()[:3]
    assert header.split()[:6] == ["loop", "strategy", "verdict", "RSS", "heap", "what"]
    assert row.split()[:6] == ["control", "noop", "grows", "flat", "grows", "leak"]
    assert Results([record]).verdicts() == {("control", "noop"): "grows"}
    stream = io.StringIO()
    progress = console.Progress(stream, 1, 0)
    progress.start(1, "control", "noop", 40)
    progress.done(record)
    assert stream.getvalue().startswith("[1/1] control × noop: grows (RSS flat, heap grows; leak), RSS +")
    # no heap reader: the pair's verdict is RSS's, the heap n/a
    alone = {**record, "summary": _summary(rss_slope=0, heap_slope=0, heap=False)}
    row = runtable.run_table([alone]).splitlines()[2]
    assert row.split()[:6] == ["control", "noop", "flat", "flat", "n/a", "n/a"]
    assert console.verdict_text(alone["summary"]) == "flat (RSS flat, heap n/a)"
    # a pair that did not run: its status where the verdict would be, the verdicts beside it empty
    skipped = {**record, "status": "skipped", "reason": "needs a GPU"}
    assert runtable.run_table([skipped]).splitlines()[2].split()[:3] == ["control", "noop", "skipped"]


def test_the_run_table_says_why_a_pair_is_not_decided():
    """A verdict that the data could not decide (a step, settling, repeats that disagree) says why under the table;
    a decided one says nothing."""
    import copy
    import json
    from pathlib import Path

    from kerasbench.runtable import run_table

    fixture = Path(__file__).parent / "fixtures" / "compare" / "tf221.json"
    record = json.loads(fixture.read_text())["records"][0]
    undecided = copy.deepcopy(record)
    undecided["summary"].update(verdict="inconclusive", why="RSS: one step of +5120 KiB at iteration 12, flat around "
                                "it: measure longer to see whether it repeats")
    assert f"{record['loop']} × {record['strategy']}: not decided: RSS: one step" in run_table([undecided])
    assert "not decided" not in run_table([record])
