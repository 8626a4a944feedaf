"""The worker's Tracer: tracemalloc from before the baseline, a snapshot and the GC-tracked objects counted by type
after the first measured iteration and after the last, memray over the same window where asked for; the trace as
the record keeps it (kerasbench.record.Trace)."""

from __future__ import annotations

import gc
import os
import tempfile
import time
import tracemalloc
from collections import Counter
from typing import Any, Dict, List

from .containers import container_lengths, describe_containers, grown_containers
from .frames import _harness_frame
from .records import Trace
from .referrers import HOLDER_SECONDS, holders
from .sites import native_frames, python_sites, type_growth, user_sites


DEFAULT_TOP = 10  # `--trace` without a number
# Frames kept per allocation. The user's line must be among them: in Keras 3's fit the allocations that grow sit up
# to ~70 frames below the loop body's line (with 64 frames, a tenth of a fit loop's growth named no user line). The
# cost, CPU per iteration of a tiny fit loop (0.42 s untraced): 6 frames 1.4 s, 64 frames 4.9 s, 128 frames 5.0 s;
# frames past a stack's depth cost nothing.
FRAMES = 128
# tracemalloc's own allocations and the trace's (every module of kerasbench.trace, a pattern) are not the loop's
_IGNORED = (tracemalloc.__file__, os.path.join(os.path.dirname(__file__), "*.py"), "<frozen importlib._bootstrap>",
            "<frozen importlib._bootstrap_external>", "<unknown>")


def _type_counts() -> Counter:
    """GC-tracked objects by type (module.qualname). Counted by type object first: a name per object would be an
    allocation per object, each one traced (its stack walked) while tracemalloc runs."""
    counts = Counter()
    for t, n in Counter(map(type, gc.get_objects())).items():
        counts[f"{t.__module__}.{t.__qualname__}"] += n
    return counts


def _memray():
    try:
        import memray
        import memray.reporters.module_tools  # noqa: F401  (imported by the tracker as it starts: not in the window)
    except ImportError:
        return None
    return memray


class Tracer:
    """The trace of one worker's measured loop: start before the baseline, after_iteration(k) after each."""

    def __init__(self, top: int, iterations: int, in_process: bool = True, native: bool = False):
        self.top, self.iterations, self.in_process, self.want_native = top, iterations, in_process, native
        self.early = self.late = None  # (snapshot, type counts)
        self.lengths = None  # (ids, lengths) of the containers after the first measured iteration
        self.grown: List[Dict[str, Any]] = []  # the containers that grew, found after the last
        self.seconds = 0.0  # spent in snapshots and counts: the trace's own cost inside the loop
        self.native = None  # (memray tracker, its file) while it runs
        self.native_note = ""
        self.native_file = ""  # memray's capture, kept
        self.started = False

    def start(self) -> None:
        """Start tracemalloc (when there is a loop in this process to trace and two iterations to compare)."""
        if self.in_process and self.iterations >= 2:
            if self.want_native:
                _memray()  # imported now (it imports rich): not inside the traced window
            tracemalloc.start(FRAMES)
            self.started = True

    def after_iteration(self, k: int) -> None:
        """After measured iteration k: the early snapshot after the first, the late one after the last."""
        if not self.started or k not in (0, self.iterations - 1):
            return
        t0 = time.perf_counter()
        if k == 0:  # the containers first: reading an object's attributes may make its __dict__ (3.11's inline
            self.lengths = container_lengths()  # values), once, before the window the counts compare
            self.early = (self._snapshot(), _type_counts())
            self._start_native()
        else:
            self._late()
        self.seconds += time.perf_counter() - t0

    def _late(self) -> None:
        self._stop_native()
        self.late = (self._snapshot(), _type_counts())
        self.grown = grown_containers(self.lengths, self.iterations - 1)
        self.lengths = None

    def finish(self, done: int) -> None:
        """After the loop: a budgeted run that stopped before `iterations` takes its late snapshot now (after
        iteration `done` - 1), and the trace spans the iterations it measured."""
        if self.started and self.early is not None and self.late is None and done >= 2:
            self.iterations = done
            t0 = time.perf_counter()
            self._late()
            self.seconds += time.perf_counter() - t0

    def _snapshot(self):
        return tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, f) for f in _IGNORED])

    def _start_native(self) -> None:
        if not self.want_native:
            self.native_note = "not asked for (run --trace-native, with memray installed)"
            return
        memray = _memray()
        if memray is None:
            self.native_note = "memray not installed (pip install 'kerasbench[trace]')"
            return
        fd, path = tempfile.mkstemp(prefix="kerasbench-memray-", suffix=".bin")  # kept: `memray flamegraph` reads it
        os.close(fd)
        os.unlink(path)  # memray creates the file and refuses an existing one
        try:
            tracker = memray.Tracker(path, native_traces=True)
            tracker.__enter__()
        except Exception as e:  # e.g. another tracker active: the trace goes on without native sites
            self.native_note = f"memray could not start: {e}"
            return
        self.native = (tracker, path)

    def _stop_native(self) -> None:
        if self.native:
            self.native[0].__exit__(None, None, None)

    def result(self) -> Trace:
        """The trace as the record keeps it (stops tracemalloc); `skipped` says why there is none."""
        if not self.in_process:
            return {"top": self.top, "skipped": "the iterations run in child processes (process_isolation)"}
        if not self.started:
            return {"top": self.top, "skipped": "a trace needs 2 or more measured iterations"}
        t0 = time.perf_counter()
        tracemalloc.stop()
        (early, early_types), (late, late_types) = self.early, self.late
        del self.early, self.late
        span = self.iterations - 1
        diffs = late.compare_to(early, "traceback")
        sites, mine = python_sites(diffs, span, self.top), user_sites(diffs, span, self.top)
        growth = sum(s.size_diff for s in late.compare_to(early, "filename")) / span
        del diffs, early, late
        grown = type_growth(early_types, late_types, span, None)
        deadline = time.perf_counter() + HOLDER_SECONDS
        kept = describe_containers(self.grown, deadline)
        self.grown = []
        held = holders(grown, late_types, deadline)
        native, note = self._native_sites(span)
        return {"top": self.top, "iterations": span, "first": 0, "last": self.iterations - 1, "frames": FRAMES,
                "python_bytes_per_iter": growth, "user_sites": mine, "python_sites": sites,
                "types": grown[:self.top], "holders": held, "containers": kept, "native_sites": native,
                "native_note": note, **({"native_file": self.native_file} if self.native_file else {}),
                "seconds_in_loop": self.seconds, "seconds_after": time.perf_counter() - t0}

    def _native_sites(self, span: int):
        """(the native sites, the note saying what they are and the capture file memray left, which is kept for
        `memray flamegraph FILE` and its other reporters)."""
        if not self.native:
            return None, self.native_note or "memray did not run"
        memray, path = _memray(), self.native[1]
        self.native_file = path
        try:
            reader = memray.FileReader(path)
            by_site: Dict[str, List[Any]] = {}
            for rec in reader.get_leaked_allocation_records(merge_threads=True):
                frames = native_frames(rec)
                if any("_tracemalloc.c" in f for f in frames) or frames and _harness_frame(frames[0]):
                    continue  # the Python trace's own bookkeeping, kerasbench's probes: not the loop's
                key = frames[0] if frames else "?"
                entry = by_site.setdefault(key, [0.0, 0.0, frames])
                entry[0] += rec.size
                entry[1] += rec.n_allocations
            top = sorted(by_site.items(), key=lambda kv: -kv[1][0])[:self.top]
            sites = [{"site": k, "bytes_per_iter": v[0] / span, "count_per_iter": v[1] / span, "stack": v[2]}
                     for k, v in top]
            version = getattr(memray, "__version__", "")
            return sites, f"memray {version}: allocations of the window still alive at its end"
        except Exception as e:
            return None, f"memray's file could not be read: {e}"
