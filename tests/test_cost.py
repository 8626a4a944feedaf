"""What the harness costs as runs grow (#26), checked by structure, never by time: the runner keeps a worker's
readings in compact arrays (bytes per reading bounded) and the record gets the same series and the same verdicts;
the probes read nothing per iteration that walks every live object, and still see a leak of known size."""

import copy
import gc
import json
import math
import random
import sys
import types
from array import array

import pytest

from kerasbench import allocators, metrics, probes, record, rule, runner, stats, summary
from kerasbench.spec import RunSpec
from kerasbench.rule import look_points
from kerasbench.units import KIB


def _synthetic_series(n=3000, seed=3):
    """A worker's series as run_protocol makes them: a leak with noise, a heap with the GC's teeth, counters."""
    rnd = random.Random(seed)
    rss = [500_000_000 + 8 * KIB * i + 4096 * rnd.randrange(0, 64) for i in range(n)]
    heap = [90_000_000 + 6 * KIB * (i % 9) + 512 * i + rnd.randrange(0, 4096) for i in range(n)]  # teeth every 9
    return {
        "seconds": [rnd.uniform(1e-6, 3e-5) for _ in range(n)],
        "rss": rss,
        "heap": heap,
        "train_traces": [0] * n,
        "predict_traces": [0] * n,
        "function_traces": [0] * n,
        "all_traces": [0] * n,
        "train_path_traces": [i // 100 for i in range(n)],
        "predict_path_traces": [0] * n,
    }


def _sent_and_read(series):
    """The series as the worker's done event carries them through the pipe, and as the runner reads them."""
    line = json.dumps({"event": "done", "result": {"series": record.wire_series(series)}})
    return record.series_arrays(json.loads(line)["result"]["series"])


def test_the_runner_keeps_readings_in_arrays_of_8_bytes_a_reading():
    series = _synthetic_series(20_000)
    kept = _sent_and_read(series)
    for name, values in kept.items():
        assert isinstance(values, array) and values.itemsize == 8, name
        assert sys.getsizeof(values) <= 9 * len(values) + 1024, name  # bytes per reading bounded: no objects
    assert kept["seconds"].typecode == "d" and kept["rss"].typecode == "q"


def test_the_done_line_is_a_few_bytes_a_reading_not_a_json_number_each():
    n = 100_000
    flat = {"rss": [500_000_000] * n, "train_traces": [0] * n, "seconds": [random.random() for _ in range(n)]}
    sent = record.wire_series(flat)
    assert len(json.dumps(sent["rss"])) < 0.1 * n and len(json.dumps(sent["train_traces"])) < 0.1 * n
    assert len(json.dumps(sent["seconds"])) < 11 * n  # 8 bytes a float in base64: 10.7 a reading at most


def test_the_record_gets_the_series_it_got_before():
    series = {**_synthetic_series(500), "gpu_alloc": [None] * 500, "gpu_reserved": [None, 1, 2] + [3] * 497,
              "graph_ops": [], "big": [2**70, 1], "mixed": [1, 2.5], "nan": [float("nan"), float("inf"), 1.5]}
    repeat = {"repeat": 0, "status": "ok", "result": {"series": _sent_and_read(series)}}
    listed = record.listed_repeats([repeat])[0]["result"]["series"]
    assert set(listed) == set(series)
    for name, values in series.items():
        got = listed[name]
        assert type(got) is list and len(got) == len(values), name
        assert [type(v) for v in got] == [type(v) for v in values], name  # ints stay ints, floats floats
        assert all(a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)) for a, b in zip(got, values))
    assert json.dumps(listed, allow_nan=True) == json.dumps(series, allow_nan=True)  # the record's file, byte for byte


def test_a_flat_rss_lists_few_ints_and_series_stay_apart():
    n = 10_000
    series = {"rss": [500_000_000 + 4096 * (i // 5000) for i in range(n)], "train_traces": [0] * n,
              "predict_traces": [0] * n, "all_traces": [1] * n}
    repeat = {"repeat": 0, "status": "ok", "result": {"series": _sent_and_read(series)}}
    listed = record.listed_repeats([repeat])[0]["result"]["series"]
    assert listed["train_traces"] is not listed["predict_traces"]  # equal readings, but a list each: no aliasing
    assert len({id(v) for v in listed["rss"]}) == 2  # one object per distinct reading
    assert listed == series


@pytest.mark.parametrize("bad", [
    {"typecode": "x", "length": 1, "zlib_base64": ""},
    {"typecode": "q", "length": 2, "zlib_base64": "eJxjYGBgAAAABAAB"},  # 8 bytes for 2 readings
    {"typecode": "q", "length": 1, "zlib_base64": "not base64!"},
    {"typecode": "q", "length": True, "zlib_base64": ""},
])
def test_a_sent_series_that_is_not_one_is_refused(bad):
    with pytest.raises(ValueError):
        record.series_arrays({"rss": bad})


def _same(a, b):
    """Equal, NaN equal to NaN (a summary of few iterations holds NaN fits)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _result(series, n):
    return {"iterations_done": n, "stop_reason": "count", "looks": 0, "series": series,
            "baseline_rss": series["rss"][0], "peak_loop_rss": max(series["rss"]), "peak_method": "vmhwm",
            "final_rss": series["rss"][-1],
            "loop_seconds": sum(series["seconds"]), "objects_before": 100, "objects_after": 100,
            "graph_build_seconds": None, "tf_alloc_peak": None, "child_peaks": [], "train_traces": 0,
            "predict_traces": 0, "function_traces": 0, "models_built": 0, "heap_baseline": series["heap"][0],
            "heap_peak": max(series["heap"]), "heap_final": series["heap"][-1], "heap_source": "glibc mallinfo2",
            "heap_unavailable": None, "py_blocks_before": 1000, "py_blocks_after": 1000 + 3 * n,
            "py_blocks_samples": [[k, 1000 + 3 * k] for k in look_points(1, n + 1)]}


@pytest.mark.parametrize("n", [40, 3000])
def test_the_record_built_from_sent_series_has_the_same_summary(n):
    spec = RunSpec("control", "control_noop", iterations=n, warmup=0).validate()
    floors = rule.spec_floors(spec)
    repeats = [{"repeat": r, "status": "ok", "reason": None, "result": _result(_synthetic_series(n, seed=r), n),
                "environment": None} for r in range(2)]
    before = summary.make_record(spec, copy.deepcopy(repeats), floors)
    for repeat in repeats:  # through the pipe as the worker sends them, kept as the runner keeps them, then listed
        repeat["result"]["series"] = _sent_and_read(repeat["result"]["series"])
    after = summary.make_record(spec, record.listed_repeats(repeats), floors)
    assert _same(after, before)
    # RSS +8 KiB/iteration under its 128 KiB margin: flat at 40 iterations and at 3000 alike
    assert after["summary"]["verdict"] == "flat"


def test_the_deciders_arrays_judge_as_the_lists_did():
    spec = RunSpec("control", "control_noop", iterations=5000, warmup=0, min_iterations=8, sequential=True,
                   floor=4 * KIB).validate()
    decider = rule.Decider(spec)
    series = _synthetic_series(600)
    sent = 0
    for k in look_points(8, 600) + [600]:  # several looks: the arrays grow between judgements
        decider.look({name: series[name][sent:k] for name in ("rss", "heap")})
        sent = k
        for name in ("rss", "heap"):
            assert isinstance(decider.series[name], array) and decider.series[name].itemsize == 8
            values = series[name][:k]
            teeth = stats.gc_teeth(series["heap"][:k])
            assert decider.last[name] == rule.judge(values, decider.margins[name], decider.at[name], decider.level,
                                                    teeth), (name, k)  # a given floor: the margin


def test_a_heap_reader_that_failed_leaves_the_decider_judging_rss_alone():
    spec = RunSpec("control", "control_noop", iterations=5000, warmup=0, min_iterations=8, sequential=True,
                   floor=64 * KIB).validate()
    decider = rule.Decider(spec)
    rss = [1000 + 64 * (i % 3) for i in range(40)]
    decider.look({"rss": rss[:20], "heap": [5] * 10 + [None] * 10})
    decider.look({"rss": rss[20:], "heap": [None] * 20})
    assert "heap" not in decider.last and len(decider.series["heap"]) == 0
    assert decider.last["rss"].verdict == "flat" and len(decider.series["rss"]) == 40


def test_a_worker_sends_its_series_and_the_record_lists_them():
    """One real worker of the control loop (no TF): its outcome holds arrays, the record built of it lists."""
    spec = RunSpec("control", "control_leak_python", iterations=40, warmup=1, leak_bytes=64 * KIB).validate()
    outcome = runner.run_worker(spec)
    assert outcome["status"] == "ok", outcome["reason"]
    series = outcome["result"]["series"]
    assert isinstance(series["rss"], array) and isinstance(series["seconds"], array) and len(series["rss"]) == 40
    built = runner.measure(spec)
    assert built["status"] == "ok"
    listed = built["repeats"][0]["result"]["series"]
    assert all(type(v) is list and len(v) == 40 for v in listed.values())
    json.dumps(built)  # a plain JSON-ready dict


# ---------------------------------------------------------------- the probes: nothing per iteration walks the heap


def _stack(n):
    pair = types.SimpleNamespace(child_peaks=[], child_gpu_alloc_peaks=[], child_gpu_reserved_peaks=[])
    context = probes.ProbeContext(tf_loaded=False, in_process=True, device="cpu", trim_before_read=False,
                                  counts_steps=True, pair=pair, block_samples=frozenset(look_points(1, n + 1)))
    return probes.ProbeStack(context)


def _count_calls(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_no_probe_walks_the_live_objects_per_iteration(monkeypatch):
    n = 500
    stack = _stack(n)
    probes.gc_barrier()
    stack.start()
    objects = _count_calls(monkeypatch, gc, "get_objects")
    blocks = _count_calls(monkeypatch, sys, "getallocatedblocks")
    collections = _count_calls(monkeypatch, gc, "collect")
    for _ in range(n):
        stack.before_iteration()
        stack.after_iteration()
    assert objects == []  # live_objects and the GC barrier: at the loop's ends only
    assert collections == [1] * n  # the young generations before each reading (probes.CollectProbe), never a full one
    # Python's blocks (sys.getallocatedblocks walks every pymalloc pool): at the geometric samples only, ~log n
    assert len(blocks) == len(look_points(1, n + 1)) < 20
    stack.stop()
    assert len(blocks) == len(look_points(1, n + 1)) + 1 and len(objects) == 1  # the loop's end: blocks, objects


def test_the_probes_still_see_a_leak_of_known_size():
    """Python objects of known count and native bytes of known size kept every iteration: the blocks samples and
    the heap series see them (the readings the verdicts and python_blocks_per_iter use)."""
    n, items, native = 60, 500, 32 * KIB
    kept = []
    stack = _stack(n)
    probes.gc_barrier()
    stack.start()
    for i in range(n):
        stack.before_iteration()
        kept.append([(kept, i, None) for _ in range(items)])  # a list and 500 tuples: 501 blocks of pymalloc
        kept.append(bytes(native))  # above pymalloc's 512 bytes: malloc's heap
        stack.after_iteration()
    stack.stop()
    stack.after_cleanup()
    fields = stack.fields()
    fields["series"] = stack.series
    fields["iterations_done"] = n
    per_iter = metrics.python_blocks_per_iter(fields, 0)
    assert abs(per_iter - (items + 1)) <= 0.05 * items  # the tuples and their list (the bytes are malloc's)
    assert [k for k, _ in fields["py_blocks_samples"]] == look_points(1, n + 1)
    if stack.series.get("heap") and allocators.heap_reader().source:
        heap = stack.series["heap"]
        growth = stats.fit_growth(heap).slope
        assert abs(growth - (native + 8 * items)) <= 2 * KIB  # the bytes and the list's array of 500 pointers
    del kept


def test_records_are_written_streamed_and_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    import json as json_module

    from kerasbench import files

    path = tmp_path / "r.json"
    files.write_json(str(path), {"records": [1]})
    monkeypatch.setattr(json_module, "dumps", lambda *a, **k: pytest.fail("the whole text was built in memory"))
    files.write_json(str(path), {"records": [{"series": {"rss": list(range(1000))}}]})
    assert json_module.loads(path.read_text())["records"][0]["series"]["rss"][-1] == 999
    with pytest.raises(TypeError):  # a payload that is not JSON fails half-way through the stream
        files.write_json(str(path), {"records": [1, object()]})
    assert json_module.loads(path.read_text())["records"][0]["series"]["rss"][-1] == 999  # the old file stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary file left
