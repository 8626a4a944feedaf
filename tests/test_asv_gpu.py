"""Fake GPU numbers flow through the real asv into its results JSON and our records.

`asv run --python=same` runs the Control class with KERASBENCH_DEVICE=gpu on a machine without a
GPU, in a temporary clone. Two fakes sit at the root of the clone, which is on the path of every
process of the run (ASV_PYTHONPATH for asv's processes, as asv drops PYTHONPATH; the runner puts
its own checkout on its workers' PYTHONPATH): a fake `pynvml` (NVML: driver, GPU name, the bytes
this pid holds) and a fake-GPU module named by the test hook $KERASBENCH_TEST_FAKE_GPU
(kerasbench.gpu: TF's allocator statistics, and "a driver is present"). The control loop needs no
TF, so this takes seconds. The skip path (no GPU: n/a with a reason) is tested in test_asv.py
(machine "gpubox").
"""

import json
import os
import pathlib
import subprocess
import textwrap

import pytest
from conftest import clone_for_asv

from kerasbench import strategies_for
from kerasbench.gpu import TEST_HOOK

ROOT = pathlib.Path(__file__).resolve().parent.parent
MIB = 1024**2
ALLOC_PEAK = 123 * MIB + 4567  # odd sizes no real reading would produce
ALLOC_CURRENT = 17 * MIB + 3
RESERVED = 456 * MIB + 89
DRIVER, NAME = "550.54.15", "NVIDIA Fake GPU (kerasbench test)"

FAKE_PYNVML = f'''
"""A fake NVML (nvidia-ml-py's pynvml) for tests: one GPU; this process holds {RESERVED} bytes."""
import os, types

def nvmlInit():
    pass

def nvmlDeviceGetHandleByIndex(i):
    return ("index", i)

def nvmlDeviceGetHandleByUUID(u):
    return ("uuid", u)

def nvmlDeviceGetComputeRunningProcesses(handle):
    return [types.SimpleNamespace(pid=os.getpid(), usedGpuMemory={RESERVED})]

def nvmlDeviceGetMemoryInfo(handle):
    return types.SimpleNamespace(used={RESERVED} + 500 * 2**20, total=16 * 2**30)

def nvmlSystemGetDriverVersion():
    return b"{DRIVER}"

def nvmlDeviceGetName(handle):
    return b"{NAME}"
'''

FAKE_GPU = f'''
"""The fake GPU named by ${TEST_HOOK} (see kerasbench/gpu.py): TF's allocator statistics."""
resets = []

def memory_info(device):
    return {{"current": {ALLOC_CURRENT}, "peak": {ALLOC_PEAK}}}

def reset_memory_stats(device):
    resets.append(device)
'''

PARAMS = [[repr(s) for s in strategies_for("control")]]


@pytest.fixture(scope="module")
def fake_gpu_run(tmp_path_factory):
    work, repo = clone_for_asv(tmp_path_factory, "asv_gpu")
    (repo / "pynvml.py").write_text(textwrap.dedent(FAKE_PYNVML))
    (repo / "kerasbench_fake_gpu.py").write_text(textwrap.dedent(FAKE_GPU))
    env = dict(os.environ, KERASBENCH_PROFILE="quick", KERASBENCH_RECORDS_DIR=str(work / "records"), HOME=str(work),
               KERASBENCH_DEVICE="gpu", ASV_PYTHONPATH=str(repo), **{TEST_HOOK: "kerasbench_fake_gpu"})
    subprocess.run(["asv", "machine", "--yes", "--machine", "fakegpubox"], cwd=repo, env=env, check=True,
                   capture_output=True)
    proc = subprocess.run(["asv", "run", "--python=same", "--set-commit-hash", "HEAD",
                           "-b", r"^control\.Control\.track_gpu_", "--machine", "fakegpubox", "--show-stderr"],
                          cwd=repo, env=env, capture_output=True, text=True)
    return repo, work, proc.returncode, proc.stdout + proc.stderr


def _result_values(repo, name):
    from asv.results import iter_results_for_machine

    [result] = list(iter_results_for_machine(str(repo / ".asv" / "results"), "fakegpubox"))
    return result.get_result_value(name, PARAMS)


def test_fake_gpu_numbers_reach_the_asv_results(fake_gpu_run):
    repo, _, code, log = fake_gpu_run
    assert code == 0, log[-3000:]
    assert _result_values(repo, "control.Control.track_gpu_alloc_peak") == [ALLOC_PEAK] * len(PARAMS[0])
    assert _result_values(repo, "control.Control.track_gpu_reserved_peak") == [RESERVED] * len(PARAMS[0])


def test_records_name_the_fake_gpu_and_driver(fake_gpu_run):
    _, work, code, log = fake_gpu_run
    assert code == 0, log[-3000:]
    records = json.loads(next((work / "records").rglob("control.json")).read_text())["records"]
    assert [r["strategy"] for r in records] == strategies_for("control")
    for record in records:
        assert record["status"] == "ok" and record["spec"]["device"] == "gpu"
        assert record["environment"]["gpu_driver"] == DRIVER and record["environment"]["gpu_name"] == NAME
        result = record["repeats"][0]["result"]
        assert result["gpu_reserved_source"] == "process"  # NVML listed the worker's own pid
        assert set(result["series"]["gpu_reserved"]) == {RESERVED}
        assert set(result["series"]["gpu_alloc"]) == {ALLOC_CURRENT}
