"""Probes: cheap readings taken inside the measured process, and the metrics they feed.

Per-iteration readings must cost microseconds (an RSS read from /proc/self/statm is ~10 µs);
anything heavier (live-object counts) is read only at the phase boundaries.
"""

import collections
import ctypes
import ctypes.util
import gc
import os
import threading
import time

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

# Trace and model counters, bumped from traced Python bodies (see _compat).
_COUNTS = collections.Counter()


def count_trace(kind, n=1):
    _COUNTS["traces:" + kind] += n


def count_model(n=1):
    _COUNTS["models"] += n


def traces(kind):
    return _COUNTS["traces:" + kind]


def models_built():
    return _COUNTS["models"]


def rss_bytes():
    """Resident set size of this process, from /proc/self/statm (falls back to psutil)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_SIZE
    except OSError:
        import psutil

        return psutil.Process().memory_info().rss


def _vm_hwm_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


class PeakTracker:
    """Peak RSS of one phase: the kernel's VmHWM reset via /proc/self/clear_refs, else a sampler.

    The sampler (a thread reading statm every `interval` s) is the fallback where clear_refs is
    not writable; it can miss spikes shorter than its interval, and the record says which was used.
    """

    def __init__(self, interval=0.005):
        self.interval = interval
        self.method = None
        self._peak = 0
        self._stop = None

    def start(self):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            _vm_hwm_bytes()
            self.method = "vmhwm"
            return self
        except OSError:
            pass
        self.method = "sampler"
        self._peak = rss_bytes()
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def _sample(self):
        while not self._stop.wait(self.interval):
            self._peak = max(self._peak, rss_bytes())

    def stop(self):
        """The phase's peak RSS in bytes."""
        if self.method == "vmhwm":
            return max(_vm_hwm_bytes(), rss_bytes())
        self._stop.set()
        return max(self._peak, rss_bytes())


def live_objects():
    """Objects tracked by the garbage collector (native memory is invisible here)."""
    return len(gc.get_objects())


def gc_barrier():
    for _ in range(3):
        gc.collect()


_LIBC = None


def _malloc_trim_fn():
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        except OSError:
            _LIBC = False
    return getattr(_LIBC, "malloc_trim", None) if _LIBC else None


def malloc_trim_available():
    return _malloc_trim_fn() is not None


def malloc_trim():
    """glibc malloc_trim(0): return free heap pages to the OS. Returns whether anything was freed."""
    fn = _malloc_trim_fn()
    return bool(fn(0)) if fn is not None else False


def allocator_in_use():
    """Which malloc this process runs on: 'tcmalloc', 'jemalloc' or 'glibc' (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return "unknown"
    for name in ("tcmalloc", "jemalloc"):
        if "lib" + name in maps:
            return name
    return "glibc"


def timer():
    return time.perf_counter()
