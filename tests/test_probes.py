"""Probes read in this process, against allocations of known size."""

import numpy as np

from kerasbench import allocators, counters, probes

MIB = 1024**2


def test_rss_sees_a_written_buffer():
    before = probes.rss_bytes()
    buffer = np.ones(64 * MIB // 8)
    grown = probes.rss_bytes() - before
    assert 0.9 * 64 * MIB <= grown <= 1.1 * 64 * MIB
    del buffer


def test_peak_tracker_catches_a_spike_that_is_gone_by_the_end():
    tracker = probes.PeakTracker().start()
    start = probes.rss_bytes()
    spike = np.ones(128 * MIB // 8)
    del spike
    peak = tracker.stop()
    assert tracker.method in ("vmhwm", "sampler")
    assert peak - start >= 0.9 * 128 * MIB


def test_sampler_fallback_also_catches_it(monkeypatch):
    real_open = open

    def no_clear_refs(path, *args, **kwargs):
        if path == "/proc/self/clear_refs":
            raise PermissionError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_clear_refs)
    tracker = probes.PeakTracker(interval=0.001).start()
    assert tracker.method == "sampler"
    start = probes.rss_bytes()
    spike = np.ones(128 * MIB // 8)
    import time

    time.sleep(0.05)
    del spike
    assert tracker.stop() - start >= 0.9 * 128 * MIB


def test_trace_counters():
    before = counters.traces("train_step")
    counters.count_trace("train_step")
    assert counters.traces("train_step") == before + 1


def test_allocator_is_named():
    assert allocators.allocator_in_use() in ("glibc", "tcmalloc", "jemalloc", "unknown")
