"""The heap probe against native leaks of known size, under each allocator (fresh processes, LD_PRELOAD)."""

import json
import os
import subprocess
import sys

import pytest

from kerasbench import allocators, probes, stats

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
t0 = time.perf_counter()
for _ in range(1000):
    reader.read()
cost = (time.perf_counter() - t0) / 1000
fit = stats.fit_growth(stack.series["heap"]) if "heap" in stack.series else None
print(json.dumps({"in_use": allocators.allocator_in_use(), "source": fields["heap_source"],
                  "unavailable": fields["heap_unavailable"], "slope": fit.slope if fit else None,
                  "cost": cost, "blocks": stats.fit_growth(stack.series["py_blocks"]).slope}))
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
    probe.series = {"py_blocks": []}
    assert probe.SERIES == ("py_blocks",)
    probe.start()
    probe.after_iteration()
    probe.after_cleanup()
    fields = probe.fields()
    assert fields["heap_baseline"] is None and fields["heap_peak"] is None and fields["heap_final"] is None
    assert fields["heap_source"] is None and fields["heap_unavailable"] == "no reader here"
    assert len(probe.series["py_blocks"]) == 1


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
    probe.series = {"heap": [], "py_blocks": []}
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
