"""Probes read in this process, against allocations of known size."""

import types

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


# The worker's result fields besides iterations_done, series and timing: the record's keys must not move.
RESULT_FIELDS = {
    "baseline_rss", "peak_loop_rss", "peak_method", "final_rss", "loop_seconds", "objects_before", "objects_after",
    "graph_build_seconds", "tf_alloc_peak", "child_peaks", "gpu_alloc_baseline", "gpu_alloc_peak", "gpu_alloc_final",
    "gpu_reserved_baseline", "gpu_reserved_peak", "gpu_reserved_final", "gpu_reserved_source",
    "child_gpu_alloc_peaks", "child_gpu_reserved_peaks", "train_traces", "predict_traces", "function_traces",
    "models_built", "heap_baseline", "heap_peak", "heap_final", "heap_source", "heap_unavailable",
    "py_blocks_before", "py_blocks_after", "py_blocks_samples", "train_path_traces", "predict_path_traces",
    "all_traces", "functions", "trace_hook", "compilations", "collect_generation", "collect_seconds",
}


def _cpu_context(**overrides):
    pair = types.SimpleNamespace(child_peaks=[], child_gpu_alloc_peaks=[], child_gpu_reserved_peaks=[])
    settings = dict(tf_loaded=False, in_process=True, device="cpu", trim_before_read=False, counts_steps=True,
                    pair=pair)
    return probes.ProbeContext(**{**settings, **overrides})


def test_probes_nest_like_context_managers(monkeypatch):
    calls = []
    for name, kind in probes.PROBES.items():
        for hook in ("start", "before_iteration", "after_iteration", "stop", "after_cleanup"):
            real = getattr(kind.probe, hook)

            def logged(self, name=name, hook=hook, real=real):
                calls.append((hook, name))
                real(self)

            monkeypatch.setattr(kind.probe, hook, logged)
    stack = probes.ProbeStack(_cpu_context())
    stack.start()
    stack.before_iteration()
    stack.after_iteration()
    stack.stop()
    stack.after_cleanup()
    names = list(stack.probes)  # innermost first
    assert names == [n for n in probes.PROBES if n in names]
    assert [n for h, n in calls if h == "start"] == names[::-1]
    assert [n for h, n in calls if h == "stop"] == names
    assert [n for h, n in calls if h == "after_cleanup"] == names
    assert [n for h, n in calls if h == "after_iteration"][0] == "loop_timer"  # t1 first, right after the iteration
    assert [n for h, n in calls if h == "before_iteration"][-1] == "loop_timer"  # t0 last, right before it


def test_inactive_probes_leave_their_fields_none_and_add_no_series():
    stack = probes.ProbeStack(_cpu_context())
    assert set(stack.probes) == {"loop_timer", "peak_rss", "collect", "rss", "heap", "traces", "child_peaks",
                                  "live_objects"}
    stack.start()
    stack.before_iteration()
    stack.after_iteration()
    stack.stop()
    stack.after_cleanup()
    fields = stack.fields()
    assert set(fields) == RESULT_FIELDS
    assert all(fields[k] is None for k in ("tf_alloc_peak", "graph_build_seconds", "gpu_alloc_peak",
                                           "gpu_reserved_source"))
    assert set(stack.series) == {"seconds", "rss", "heap", "train_traces", "predict_traces", "function_traces",
                                 "all_traces", "train_path_traces", "predict_path_traces"}
    assert all(len(values) == 1 for values in stack.series.values())


def test_graph_ops_probe_only_where_the_loop_shape_asks_and_in_process():
    assert "graph_ops" not in probes.ProbeStack(_cpu_context()).probes
    assert "graph_ops" in probes.ProbeStack(_cpu_context(extra_probes=("graph_ops",))).probes
    assert "graph_ops" not in probes.ProbeStack(_cpu_context(extra_probes=("graph_ops",), in_process=False)).probes


def test_loop_shapes_name_registered_probes_and_cleanups():
    from kerasbench import CLEANUPS, LOOPS

    for shape in LOOPS.values():
        assert set(shape.extra_probes) <= {n for n, kind in probes.PROBES.items() if kind.on_request}, shape.name
        assert shape.teardown_cleanup in CLEANUPS, shape.name
