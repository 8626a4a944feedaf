"""The readings the probes take inside the measured process, as plain functions: RSS (/proc/self/statm), a phase's
peak RSS (PeakTracker: VmHWM, else a sampler), the objects the GC tracks, the GC barrier, the protocol's clock.

Per-iteration readings must cost microseconds (an RSS read from /proc/self/statm is ~10 µs); anything heavier
(live-object counts) is read only at the phase boundaries. kerasbench.probes takes them at the protocol's hooks
(the names are imported there too); kerasbench.overhead times them.
"""

from __future__ import annotations

import gc
import os
import threading
import time

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
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

    def __init__(self, interval: float = 0.005):
        self.interval = interval
        self.method = None
        self._peak = 0
        self._stop = None

    def start(self) -> PeakTracker:
        """Start the phase (reset VmHWM, or start the sampler); returns self."""
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

    def peek(self) -> int:
        """The phase's peak RSS so far in bytes (the phase goes on)."""
        if self.method == "vmhwm":
            return max(_vm_hwm_bytes(), rss_bytes())
        return max(self._peak, rss_bytes())

    def stop(self) -> int:
        """The phase's peak RSS in bytes."""
        if self.method == "vmhwm":
            return max(_vm_hwm_bytes(), rss_bytes())
        self._stop.set()
        return max(self._peak, rss_bytes())


def live_objects() -> int:
    """Objects tracked by the garbage collector (native memory is invisible here)."""
    return len(gc.get_objects())


def gc_barrier() -> None:
    """Collect until a full collection finds nothing unreachable (cycles freed by one are gone too); at most three.

    A collection that finds nothing leaves the heap as it was, so a further one would find nothing either:
    stopping there gives the same heap as three collections at two thirds of the cost (each full collection
    walks every tracked object: ~0.1-0.2 s in a TF process).
    """
    for _ in range(3):
        if gc.collect() == 0:
            return


def timer() -> float:
    """The protocol's clock (time.perf_counter), in seconds."""
    return time.perf_counter()
