"""GPU probes and strategies, on a machine without a GPU: fakes stand in for TF's allocator and NVML.

Nothing here runs on a real GPU. TF's get_memory_info/reset_memory_stats are replaced in _compat,
and a fake `pynvml` module goes into sys.modules; the worker's protocol runs in this process.
"""

import io
import os
import re
import sys
import types

import pytest

from kerasbench import LOOPS, METRICS, STRATEGIES, _compat, gpu, loops, runner, summary, worker
from kerasbench.summary import summarize
from kerasbench.runner import RunSpec
from kerasbench.units import MIB
from kerasbench.rule import spec_floors

GPU_STRATEGIES = ["gpu_growth_off", "gpu_growth_on", "gpu_malloc_async", "gpu_jit_compile"]
GPU_METRICS = ["gpu_alloc_peak", "gpu_alloc_growth_per_iter", "gpu_reserved_peak", "gpu_retained",
               "gpu_reserved_retained"]


class FakeDevice:
    """A GPU as TF's allocator and NVML would report it: bytes in use, their peak, bytes reserved."""

    def __init__(self):
        self.current = 8 * MIB
        self.peak = self.current
        self.reserved = 64 * MIB  # NVML: what the process holds
        self.listed = True  # whether NVML lists this pid among the compute processes
        self.calls = []

    def allocate(self, n):
        self.current += n
        self.peak = max(self.peak, self.current)
        while self.reserved < self.current + 48 * MIB:  # reserve in 4 MiB chunks, keep 48 MiB spare
            self.reserved += 4 * MIB

    # the two _compat functions GpuMemoryReader calls
    def memory_info(self, device="CPU:0"):
        self.calls.append(("get_memory_info", device))
        return {"current": self.current, "peak": self.peak} if device == "GPU:0" else None

    def reset_stats(self, device="CPU:0"):
        self.calls.append(("reset_memory_stats", device))
        self.peak = self.current

    def pynvml(self):
        device = self
        lib = types.ModuleType("pynvml")
        lib.nvmlInit = lambda: None
        lib.nvmlDeviceGetHandleByIndex = lambda i: ("index", i)
        lib.nvmlDeviceGetHandleByUUID = lambda u: ("uuid", u)
        lib.nvmlDeviceGetComputeRunningProcesses = lambda h: [
            types.SimpleNamespace(pid=1, usedGpuMemory=999 * MIB),
            *([types.SimpleNamespace(pid=os.getpid(), usedGpuMemory=device.reserved)] if device.listed else []),
        ]
        lib.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=device.reserved + 500 * MIB,
                                                                      total=16 * 1024 * MIB)
        lib.nvmlSystemGetDriverVersion = lambda: "550.54.15"
        lib.nvmlDeviceGetName = lambda h: b"NVIDIA Fake GPU"
        return lib


@pytest.fixture
def device(monkeypatch):
    fake = FakeDevice()
    monkeypatch.setattr(_compat, "tf_memory_info", fake.memory_info)
    monkeypatch.setattr(_compat, "reset_tf_memory_stats", fake.reset_stats)
    monkeypatch.setitem(sys.modules, "pynvml", fake.pynvml())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    gpu.reset_nvml()
    yield fake
    gpu.reset_nvml()


class GpuLeakLoop(loops.LoopRuntime):
    """A fake loop: every iteration keeps 1 MiB on the fake GPU and briefly uses 4 MiB more."""

    fake = None

    def build(self, i):
        return None

    def run(self, model, i, step):
        self.fake.allocate(5 * MIB)
        self.fake.allocate(-4 * MIB)

    def teardown(self):
        self.fake.allocate(-(self.fake.current - 8 * MIB) // 2)  # cleanup frees half of the leak


def measure_in_process(spec, reader=None):
    events = []
    worker.run_protocol(spec, lambda event, **fields: events.append((event, fields)), gpu_reader=reader)
    return events


def test_gpu_numbers_flow_into_the_result_and_the_summary(device, monkeypatch):
    GpuLeakLoop.fake = device
    monkeypatch.setitem(LOOPS, "control", loops.LoopShape("control", "fake GPU leak", GpuLeakLoop, needs_tf=False))
    spec = RunSpec("control", "control_noop", iterations=6, warmup=2).validate()
    events = measure_in_process(spec, gpu.GpuMemoryReader())
    (event, fields), = [e for e in events if e[0] == "done"]
    result = fields["result"]

    # warm-up left 8 + 2 MiB in use; the stats were reset after it, then read once per iteration
    assert ("reset_memory_stats", "GPU:0") in device.calls
    assert result["gpu_alloc_baseline"] == 10 * MIB
    assert result["series"]["gpu_alloc"] == [(10 + k) * MIB for k in range(1, 7)]
    assert result["gpu_alloc_peak"] == (10 + 6 + 4) * MIB  # the last iteration's 4 MiB spike
    assert result["gpu_alloc_final"] == 8 * MIB + 8 * MIB // 2  # teardown freed half of 8 MiB
    assert result["series"]["gpu_reserved"] == sorted(result["series"]["gpu_reserved"])
    assert result["gpu_reserved_peak"] == max(result["series"]["gpu_reserved"]) > result["gpu_reserved_baseline"]
    assert result["gpu_reserved_source"] == "process"

    summary = summarize([{"result": result}], spec, spec_floors(spec))
    assert summary["gpu_alloc_peak"] == 20 * MIB
    assert summary["gpu_alloc_growth_per_iter"] == pytest.approx(1 * MIB)
    assert summary["gpu_reserved_peak"] == result["gpu_reserved_peak"]
    assert summary["gpu_retained"] == 12 * MIB - 10 * MIB
    assert summary["gpu_reserved_retained"] == result["gpu_reserved_final"] - result["gpu_reserved_baseline"]
    assert summary["growth_per_iter"] is not None  # host RSS is measured as on CPU


def test_nvml_falls_back_to_the_device_when_the_pid_is_not_listed(device):
    device.listed = False
    assert gpu.reserved_bytes() == (device.reserved + 500 * MIB, "device")


def test_nvml_follows_cuda_visible_devices(device, monkeypatch):
    seen = []
    lib = sys.modules["pynvml"]
    lib.nvmlDeviceGetComputeRunningProcesses = lambda h: seen.append(h) or []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    gpu.reserved_bytes()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234")
    gpu.reserved_bytes()
    assert seen == [("index", 2), ("uuid", "GPU-1234")]


def test_without_nvml_every_reading_is_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    gpu.reset_nvml()
    try:
        assert gpu.nvml() is None and gpu.reserved_bytes() is None and gpu.driver_details() == {}
        probe = gpu.GpuMemoryReader(allocator=False)
        assert probe.read() == {"alloc": None, "reserved": None} and probe.peak() is None
    finally:
        gpu.reset_nvml()


def test_environment_names_the_driver_gpu_and_cuda(device, monkeypatch):
    monkeypatch.setattr(_compat, "build_info", lambda: {"cuda_version": "12.5.1", "cudnn_version": "9"})
    monkeypatch.setattr(_compat, "gpu_details", lambda: [{"name": "NVIDIA Fake GPU", "compute_capability": (8, 9)}])
    env = worker._gpu_environment()
    assert env["gpu_driver"] == "550.54.15" and env["gpu_name"] == "NVIDIA Fake GPU"
    assert env["cuda_version"] == "12.5.1" and env["gpus"][0]["compute_capability"] == (8, 9)


class FakePool:
    """multiprocessing's spawn Pool, with children that report fixed GPU readings."""

    def __init__(self, *args, **kwargs):
        self.calls = []

    def apply(self, fn, args):
        spec_dict, i = args[:2]  # and the worker's pid, which the child dies with
        self.calls.append(spec_dict)
        return {"peak": 300 * MIB, "traces": {"train_step": 1}, "models": 1, "versions": None,
                "gpu_alloc_peak": (20 + i) * MIB, "gpu_reserved": (200 + i) * MIB}

    def close(self):
        pass

    def join(self):
        pass


def test_isolated_children_get_the_gpu_and_report_their_peaks(monkeypatch):
    pools = []

    def get_context(method):
        assert method == "spawn"
        return types.SimpleNamespace(Pool=lambda *a, **k: pools.append(FakePool()) or pools[-1])

    monkeypatch.setattr(worker.multiprocessing, "get_context", get_context)
    spec = RunSpec("sweep", "process_isolation", iterations=4, warmup=1, device="gpu").validate()
    events = measure_in_process(spec)
    result = next(f["result"] for e, f in events if e == "done")
    assert all(call["device"] == "gpu" for call in pools[0].calls)  # the child runs on the GPU
    assert result["child_gpu_alloc_peaks"] == [(20 + i) * MIB for i in range(1, 5)]
    summary = summarize([{"result": result}], spec, spec_floors(spec))
    assert summary["gpu_alloc_peak"] == 24 * MIB and summary["gpu_reserved_peak"] == 204 * MIB
    assert summary["gpu_alloc_growth_per_iter"] is None  # the TF-free parent reads no GPU series
    assert runner._worker_env(spec).get("CUDA_VISIBLE_DEVICES") != "-1"  # the worker, so its children, see GPUs


def test_gpu_metrics_are_none_on_cpu():
    record = runner.measure(RunSpec("control", "control_noop", iterations=4, warmup=1))
    assert record["status"] == "ok"
    assert all(record["summary"][name] is None for name in GPU_METRICS)
    assert set(GPU_METRICS) <= set(METRICS)


@pytest.mark.tf
@pytest.mark.parametrize("loop,strategy", [("inference", "reuse_model"), ("sweep", "gpu_growth_on")])
def test_device_gpu_without_a_gpu_skips_the_pair(loop, strategy):
    record = runner.measure(RunSpec(loop, strategy, iterations=2, warmup=1, device="gpu"))
    assert record["status"] == "skipped", record["reason"]
    assert "no GPU visible" in record["reason"]
    assert all(record["summary"][name] is None for name in GPU_METRICS)


@pytest.mark.parametrize("strategy", GPU_STRATEGIES)
def test_gpu_strategies_skip_on_cpu_with_a_reason_and_no_worker(strategy, monkeypatch):
    monkeypatch.setattr(runner, "run_worker", lambda *a, **k: pytest.fail("started a worker"))
    record = runner.measure(RunSpec("sweep", strategy))
    assert record["status"] == "skipped"
    assert f"strategy {strategy} needs a GPU" in record["reason"] and "--device gpu" in record["reason"]


def test_gpu_strategies_are_declared_with_the_gpu_feature():
    assert [name for name, s in STRATEGIES.items() if s.needs_gpu and s.backend != "torch"] == GPU_STRATEGIES
    assert [name for name, s in STRATEGIES.items() if s.needs_gpu and s.backend == "torch"] == ["torch_empty_cache"]
    assert STRATEGIES["gpu_growth_on"].memory_growth == "on" and STRATEGIES["gpu_growth_off"].memory_growth == "off"
    assert STRATEGIES["gpu_malloc_async"].gpu_allocator == "cuda_malloc_async"
    assert [name for name, s in STRATEGIES.items() if s.jit_compile] == ["gpu_jit_compile"]


def test_bad_gpu_knob_names_the_value_and_the_valid_ones():
    from kerasbench.strategies import Strategy

    with pytest.raises(ValueError) as e:
        Strategy("x", "x", frozenset({"sweep"}), gpu_allocator="cuda_malloc")
    assert "'cuda_malloc'" in str(e.value) and "'cuda_malloc_async'" in str(e.value)


@pytest.mark.parametrize("strategy,expected", [("gpu_malloc_async", "cuda_malloc_async"), ("gpu_growth_on", None),
                                               ("gpu_growth_off", None), ("clear_session", "inherited")])
def test_tf_gpu_allocator_is_set_for_that_strategy_only(strategy, expected, monkeypatch):
    monkeypatch.setenv("TF_GPU_ALLOCATOR", "inherited")
    env = runner._worker_env(RunSpec("sweep", strategy, device="gpu"))
    assert env.get("TF_GPU_ALLOCATOR") == expected
    assert env.get("CUDA_VISIBLE_DEVICES") != "-1"
    assert os.environ["TF_GPU_ALLOCATOR"] == "inherited"  # the parent's own environment is untouched


def test_cpu_worker_hides_gpus():
    assert runner._worker_env(RunSpec("sweep", "clear_session"))["CUDA_VISIBLE_DEVICES"] == "-1"


@pytest.mark.parametrize("strategy,growth", [("gpu_growth_on", [True]), ("gpu_growth_off", [False]),
                                             ("gpu_malloc_async", [True]), ("clear_session", [])])
def test_memory_growth_is_set_in_the_worker_before_any_op(strategy, growth, monkeypatch):
    calls = []
    monkeypatch.setattr(_compat, "tf", lambda: calls.append("import") or None)
    monkeypatch.setattr(_compat, "require", lambda features: calls.append(("require", tuple(features))))
    monkeypatch.setattr(_compat, "set_memory_growth", lambda enabled: calls.append(("growth", enabled)))
    monkeypatch.setattr(loops.Sweep, "setup", lambda self: calls.append("loop setup"))
    worker.pair_for(RunSpec("sweep", strategy, device="gpu")).setup()
    assert [c[1] for c in calls if c[0] == "growth"] == growth
    assert calls[0] == "import" and calls[-1] == "loop setup"  # after the import, before the loop's first op
    assert ("require", STRATEGIES[strategy].needs + ("gpu",)) in calls


@pytest.mark.parametrize("loop", ["sweep", "kfold", "notebook", "inference"])
@pytest.mark.parametrize("strategy,jit", [("gpu_jit_compile", True), ("gpu_growth_on", False),
                                          ("clear_session", False)])
def test_jit_compile_knob_reaches_small_model(loop, strategy, jit, monkeypatch):
    built = []
    monkeypatch.setattr(_compat, "small_model", lambda **kw: built.append(kw) or object())
    impl = LOOPS[loop].runtime(RunSpec(loop, strategy), STRATEGIES[strategy])
    impl.setup()
    impl.build(0)
    assert built and all(kw["jit_compile"] is jit for kw in built)


def test_list_says_which_strategies_need_a_gpu():
    from kerasbench.cli import main

    out = io.StringIO()
    assert main(["list"], out=out) == 0
    text = out.getvalue()
    for name, s in STRATEGIES.items():
        block = text.split(f"  {name} ", 1)[1].split("\n", 2)[:2]
        assert ("needs a GPU" in "\n".join(block)) == s.needs_gpu, name


def test_run_all_leaves_gpu_strategies_to_device_gpu(monkeypatch):
    from kerasbench import cli

    ran = []
    fake = lambda spec, progress=None: ran.append((spec.strategy, spec.device)) or summary.make_record(  # noqa: E731
        spec, [{"repeat": 0, "status": "skipped", "reason": "fake", "result": None, "environment": None}],
        spec_floors(spec))
    monkeypatch.setattr(runner, "measure", fake)
    for device, expected in (("cpu", []), ("gpu", GPU_STRATEGIES)):
        ran.clear()
        assert cli.main(["run", "--loop", "sweep", "--device", device, "--iterations", "3"], out=io.StringIO()) == 0
        assert [s for s, _ in ran if STRATEGIES[s].needs_gpu] == expected and {d for _, d in ran} == {device}
    ran.clear()
    cli.main(["run", "--loop", "sweep", "--strategy", "gpu_growth_on", "--iterations", "3"], out=io.StringIO())
    assert ran == [("gpu_growth_on", "cpu")]  # named: it runs, and its record says why it skips


def test_table_shows_gpu_columns_for_gpu_records():
    from kerasbench.runtable import run_table as table

    spec = RunSpec("control", "control_noop", iterations=4, device="gpu")
    summary = summarize([], spec, spec_floors(spec))
    summary.update(verdict="flat", gpu_alloc_peak=20 * MIB, gpu_reserved_peak=96 * MIB)
    record = {"loop": "control", "strategy": "control_noop", "status": "ok", "reason": None, "environment": None,
              "repeats": [], "spec": {"device": "gpu"}, "summary": summary}
    text = table([record])
    assert "GPU alloc MiB" in text and "GPU NVML MiB" in text and "20.0" in text and "96.0" in text
    assert "GPU alloc MiB" not in table([{**record, "spec": {"device": "cpu"}}])


def test_readme_gpu_section_commands_name_real_strategies_and_metrics(monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    monkeypatch.syspath_prepend(str(root))
    readme = (root / "docs" / "asv.md").read_text()
    section = readme.split("### On a GPU machine", 1)[1].split("\n## ", 1)[0]
    assert "future work" not in section
    commands = [line for block in re.findall(r"```sh\n(.*?)\n```", section, re.S) for line in block.splitlines()]
    runs = [c.split("#")[0] for c in commands if "kerasbench run" in c]
    assert runs and all("--device gpu" in c for c in runs)
    named = {s for c in runs for m in re.findall(r"--strategy (\S+)", c) for s in m.split(",")}
    assert set(GPU_STRATEGIES) | {"process_isolation", "clear_session_del_gc"} <= named <= set(STRATEGIES)
    for metric in ("gpu_alloc_peak", "gpu_reserved_peak"):
        assert f"`{metric}`" in section
    from benchmarks._common import TRACKED

    assert [m for m in TRACKED if m.startswith("gpu_")] == ["gpu_alloc_peak", "gpu_reserved_peak"]


def test_fake_gpu_hook_stands_in_for_tf_and_the_driver(device, monkeypatch):
    """$KERASBENCH_TEST_FAKE_GPU (tests only): a module replaces TF's GPU statistics; the control loop runs on gpu."""
    hook = types.ModuleType("fake_gpu_hook")
    hook.memory_info = lambda d: {"current": 3 * MIB, "peak": 7 * MIB}
    hook.reset_memory_stats = lambda d: device.calls.append(("hook reset", d))
    monkeypatch.setitem(sys.modules, "fake_gpu_hook", hook)
    spec = RunSpec("control", "control_noop", iterations=4, warmup=1, device="gpu").validate()
    assert [e for e, _ in measure_in_process(spec)][-1] == "skip"  # without the hook: nothing to run on a GPU
    monkeypatch.setenv(gpu.TEST_HOOK, "fake_gpu_hook")
    assert gpu.driver_present()
    events = measure_in_process(spec)
    (_, fields), = [e for e in events if e[0] == "done"]
    assert fields["result"]["gpu_alloc_peak"] == 7 * MIB and fields["result"]["series"]["gpu_alloc"] == [3 * MIB] * 4
    assert ("hook reset", "GPU:0") in device.calls and ("get_memory_info", "GPU:0") not in device.calls
    assert fields["environment"]["gpu_driver"] == "550.54.15"  # NVML, without TF


def test_without_the_hook_no_driver_means_no_gpu(monkeypatch):
    monkeypatch.delenv(gpu.TEST_HOOK, raising=False)
    assert gpu.fake() is None
    assert gpu.driver_present() == os.path.exists("/proc/driver/nvidia/version")
