"""GPU readings: the Keras backend's allocator bytes (TF's, JAX's or torch's, through _compat) and the device
memory NVML says this process holds.

NVML (the `pynvml` module of nvidia-ml-py) is imported on first use; every reader returns None
where NVML or a GPU is unavailable, so nothing here fails on a CPU machine. TensorFlow is only
touched through kerasbench._compat, and only when the caller says it is loaded. The GPU probe of
the worker's protocol (kerasbench.probes) takes its readings from a GpuMemoryReader.

Test hook (tests only; tests/test_asv_gpu.py), known to this module alone: $KERASBENCH_TEST_FAKE_GPU
names an importable module that stands in for a GPU in every process of a run, asv's included. With
it set, `driver_present()` is true, GpuMemoryReader reads TF's allocator statistics from the module
(`memory_info(device)` -> {'current', 'peak'} bytes, `reset_memory_stats(device)`) instead of TF, and
`measurable_without_tf()` is true, so a loop without TF runs on device gpu. NVML is faked apart from
it, by a `pynvml` module earlier on the path. Never set it for a measurement.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Callable, Optional

DEVICE = "GPU:0"  # the first GPU TF sees: the first of CUDA_VISIBLE_DEVICES

_NVML = {}  # "module": the initialised pynvml module, or None once it failed
TEST_HOOK = "KERASBENCH_TEST_FAKE_GPU"


def fake() -> Optional[ModuleType]:
    """The test hook's fake-GPU module, or None (always, outside tests)."""
    name = os.environ.get(TEST_HOOK)
    return importlib.import_module(name) if name else None


def measurable_without_tf() -> bool:
    """Whether a process that never imports TF has GPU allocations to measure: only under the test hook."""
    return fake() is not None


def driver_present() -> bool:
    """Whether an NVIDIA driver is loaded, without importing TF or NVML (or a test's fake GPU is set)."""
    return bool(os.environ.get(TEST_HOOK)) or os.path.exists("/proc/driver/nvidia/version")


def nvml() -> Optional[ModuleType]:
    """The initialised pynvml module, or None where nvidia-ml-py or the NVIDIA driver is missing."""
    if "module" not in _NVML:
        try:
            import pynvml

            pynvml.nvmlInit()
            _NVML["module"] = pynvml
        except Exception:  # ImportError, or pynvml.NVMLError when there is no driver
            _NVML["module"] = None
    return _NVML["module"]


def reset_nvml() -> None:
    """Forget the cached NVML state (for tests)."""
    _NVML.clear()


def _handle(lib):
    """NVML's handle of TF's GPU:0; NVML ignores CUDA_VISIBLE_DEVICES, so map it by hand."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if visible and not visible.isdigit():
        return lib.nvmlDeviceGetHandleByUUID(visible)
    return lib.nvmlDeviceGetHandleByIndex(int(visible or 0))


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def reserved_bytes(pid: Optional[int] = None) -> Optional[tuple]:
    """(bytes, source) of device memory held by `pid` (default: this process) as NVML sees it, or None.

    source is "process" (nvmlDeviceGetComputeRunningProcesses found the pid) or "device" (the pid is
    not listed, e.g. in a container's pid namespace, or its usage is hidden: the whole GPU's used bytes).
    """
    lib = nvml()
    if lib is None:
        return None
    pid = os.getpid() if pid is None else pid
    try:
        handle = _handle(lib)
        for proc in lib.nvmlDeviceGetComputeRunningProcesses(handle):
            if proc.pid == pid and proc.usedGpuMemory is not None:
                return int(proc.usedGpuMemory), "process"
        return int(lib.nvmlDeviceGetMemoryInfo(handle).used), "device"
    except Exception:
        return None


def driver_details() -> dict:
    """{'gpu_driver', 'gpu_name'} from NVML, or {} where it is unavailable."""
    lib = nvml()
    if lib is None:
        return {}
    try:
        return {"gpu_driver": _text(lib.nvmlSystemGetDriverVersion()),
                "gpu_name": _text(lib.nvmlDeviceGetName(_handle(lib)))}
    except Exception:
        return {}


class GpuMemoryReader:
    """GPU readings for one measured process: allocator bytes (TF) and NVML reservation, per phase.

    `allocator` says whether TF is loaded here (the parent of process_isolation never loads it);
    `reserved` is the NVML reader, replaceable in tests.
    """

    def __init__(self, allocator: bool = True, device: str = DEVICE, reserved: Callable = reserved_bytes):
        self.allocator = allocator
        self.device = device
        self.reserved = reserved
        self.source = None

    def reset(self) -> None:
        """Start a phase: TF's peak counter back to the current bytes (reset_memory_stats)."""
        if fake():
            fake().reset_memory_stats(self.device)
        elif self.allocator:
            from . import _compat

            _compat.reset_gpu_memory_stats(self.device)

    def memory_info(self) -> Optional[dict]:
        """The backend's allocator {'current', 'peak'} bytes on the GPU (TF's, JAX's or torch's), or None."""
        if fake():
            return fake().memory_info(self.device)
        if not self.allocator:
            return None
        from . import _compat

        return _compat.gpu_memory_info(self.device)

    def read(self) -> dict:
        """{'alloc': bytes in use per TF's allocator, 'reserved': NVML bytes held}, each or None."""
        info = self.memory_info()
        held = self.reserved()
        if held is not None:
            self.source = held[1]
        return {"alloc": info["current"] if info else None, "reserved": held[0] if held else None}

    def peak(self) -> Optional[int]:
        """TF allocator peak bytes since the last reset, or None."""
        info = self.memory_info()
        return info["peak"] if info else None
