"""Where it grows: an opt-in trace of one pair (`kerasbench run --trace N`), off by default.

In the worker, around the measured loop: tracemalloc runs from before the baseline; after the first
measured iteration and after the last one it takes a snapshot and counts the GC-tracked objects by
type. The differences, divided by the iterations between the two, say which Python allocation sites
(file:line, with the few frames that led there) and which object types grow per iteration. Asked
for (`--trace-native`) and where memray is installed (the `trace` extra), a memray tracker with
native frames runs over the same window (it slows a TF iteration tens of times), and its
allocations still alive at the end are grouped by their first frame past the allocator's own: the
native sites. What a trace costs is in the record (seconds spent in snapshots and counts), and
the loop's own figures move with it (tracemalloc's traces live in the same heap): a traced record
is marked (spec.trace > 0) and compare and report refuse to mix it with untraced ones.
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
import tracemalloc
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

DEFAULT_TOP = 10  # `--trace` without a number
FRAMES = 6  # frames kept per allocation: the site plus what led there
STACK_SHOWN = 4  # frames shown per site, innermost first
_IGNORED = (tracemalloc.__file__, __file__, "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
            "<unknown>")

Trace = Dict[str, Any]  # kerasbench.record.Trace


def _type_counts() -> Counter:
    """GC-tracked objects by type (module.qualname)."""
    counts = Counter()
    for obj in gc.get_objects():
        t = type(obj)
        counts[f"{t.__module__}.{t.__qualname__}"] += 1
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
        self.seconds = 0.0  # spent in snapshots and counts: the trace's own cost inside the loop
        self.native = None  # (memray tracker, its file) while it runs
        self.native_note = ""
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
        if k == 0:
            self.early = (self._snapshot(), _type_counts())
            self._start_native()
        else:
            self._stop_native()
            self.late = (self._snapshot(), _type_counts())
        self.seconds += time.perf_counter() - t0

    def finish(self, done: int) -> None:
        """After the loop: a budgeted run that stopped before `iterations` takes its late snapshot now (after
        iteration `done` - 1), and the trace spans the iterations it measured."""
        if self.started and self.early is not None and self.late is None and done >= 2:
            self.iterations = done
            t0 = time.perf_counter()
            self._stop_native()
            self.late = (self._snapshot(), _type_counts())
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
        fd, path = tempfile.mkstemp(prefix="kerasbench-memray-", suffix=".bin")
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
        span = self.iterations - 1
        sites = python_sites(late.compare_to(early, "traceback"), span, self.top)
        growth = sum(s.size_diff for s in late.compare_to(early, "filename")) / span
        types = type_growth(early_types, late_types, span, self.top)
        del self.early, self.late
        native, note = self._native_sites(span)
        return {"top": self.top, "iterations": span, "first": 0, "last": self.iterations - 1,
                "python_bytes_per_iter": growth, "python_sites": sites, "types": types,
                "native_sites": native, "native_note": note,
                "seconds_in_loop": self.seconds, "seconds_after": time.perf_counter() - t0}

    def _native_sites(self, span: int):
        if not self.native:
            return None, self.native_note or "memray did not run"
        memray, path = _memray(), self.native[1]
        try:
            reader = memray.FileReader(path)
            by_site: Dict[str, List[Any]] = {}
            for rec in reader.get_leaked_allocation_records(merge_threads=True):
                frames = native_frames(rec)
                if any("_tracemalloc.c" in f for f in frames):
                    continue  # the Python trace's own bookkeeping, not the loop's
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
        finally:
            if os.path.exists(path):
                os.unlink(path)


# Frames of the interpreter's own allocators (CPython's source tree, the malloc family): a native site is
# the first frame past them, the code that asked for the memory.
_ALLOCATOR_FILES = ("Objects/", "Modules/", "Python/", "Include/", "./Objects/", "./Modules/", "./Python/",
                    "./Include/")
_ALLOCATOR_FUNCTIONS = ("malloc", "calloc", "realloc", "free", "operator new", "posix_memalign", "aligned_alloc",
                        "mmap", "memalign", "valloc")


def native_frames(rec: Any) -> List[str]:
    """'function file:line' of a memray record's hybrid stack, innermost first, past the allocator's own frames."""
    try:
        stack = list(rec.hybrid_stack_trace(max_stacks=FRAMES * 4))
    except Exception:  # no native frames for this record
        stack = list(rec.stack_trace(max_stacks=FRAMES * 4))
    frames = [f"{fn} {file}:{line}" for fn, file, line in stack]
    skip = 0
    for fn, file, _ in stack:
        if str(file).startswith(_ALLOCATOR_FILES) or str(fn).strip().startswith(_ALLOCATOR_FUNCTIONS):
            skip += 1
        else:
            break
    return frames[skip:skip + STACK_SHOWN] if skip < len(frames) else frames[:STACK_SHOWN]


def python_sites(diffs: Sequence[Any], span: int, top: int) -> List[Dict[str, Any]]:
    """The `top` sites that grew most, from tracemalloc's StatisticDiffs by traceback, grouped by innermost line."""
    by_site: Dict[str, Dict[str, Any]] = {}
    for d in diffs:
        if d.size_diff <= 0:
            continue
        frames = list(d.traceback)[::-1]  # innermost first (tracemalloc keeps them oldest first)
        site = f"{frames[0].filename}:{frames[0].lineno}"
        entry = by_site.setdefault(site, {"site": site, "bytes": 0, "count": 0, "stack": [], "largest": 0})
        entry["bytes"] += d.size_diff
        entry["count"] += d.count_diff
        if d.size_diff > entry["largest"]:  # the path that grew most leads there
            entry["largest"] = d.size_diff
            entry["stack"] = [f"{f.filename}:{f.lineno}" for f in frames[:STACK_SHOWN]]
    ranked = sorted(by_site.values(), key=lambda e: -e["bytes"])[:top]
    return [{"site": e["site"], "bytes_per_iter": e["bytes"] / span, "count_per_iter": e["count"] / span,
             "stack": e["stack"]} for e in ranked]


def type_growth(early: Counter, late: Counter, span: int, top: int) -> List[Dict[str, Any]]:
    """The `top` object types whose GC-tracked count grew most per iteration."""
    grown = [(name, late[name] - early.get(name, 0)) for name in late]
    grown = sorted((g for g in grown if g[1] > 0), key=lambda g: -g[1])[:top]
    return [{"type": name, "per_iter": n / span} for name, n in grown]


# ---------------------------------------------------------------- reading traces back


def traced(record: Dict[str, Any]) -> bool:
    """Whether a record's memory figures were taken under a trace (`run --trace`)."""
    return bool((record.get("spec") or {}).get("trace"))


def record_trace(record: Dict[str, Any]) -> Optional[Trace]:
    """The trace of a record's first ok repeat, if it was traced."""
    for rep in record.get("repeats", []):
        trace = (rep.get("result") or {}).get("trace")
        if trace:
            return trace
    return None


def _short(path: str, width: int = 90) -> str:
    for marker in ("site-packages/", "lib/python"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return path if len(path) <= width else "…" + path[-(width - 1):]


def _kib(v: float) -> str:
    return f"{v / 1024:+,.1f} KiB"


def text(records: Sequence[Dict[str, Any]]) -> str:
    """What `run` prints after its table for every traced record: top sites, growing types, native sites."""
    out = []
    for record in records:
        trace = record_trace(record)
        if not trace:
            continue
        out.append(f"\ntrace of {record['loop']} × {record['strategy']} (tracemalloc and gc, iteration "
                   f"{trace.get('first', 0)} → {trace.get('last', '?')}):")
        if trace.get("skipped"):
            out.append(f"  not traced: {trace['skipped']}")
            continue
        out.append(f"  Python heap growth {_kib(trace['python_bytes_per_iter'])}/iteration; trace cost "
                   f"{trace['seconds_in_loop']:.2f} s in the loop, {trace['seconds_after']:.2f} s after it")
        out.append("  Python allocation sites that grow (per iteration):")
        for s in trace["python_sites"]:
            out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} blocks  {_short(s['site'])}")
            for frame in s["stack"][1:]:
                out.append(f"    {'':>14} {'':>16}    ← {_short(frame)}")
        out.append("  object types that grow (per iteration):")
        out += [f"    {t['per_iter']:+9.1f}  {t['type']}" for t in trace["types"]] or ["    none"]
        if trace.get("native_sites"):
            out.append(f"  native sites ({trace.get('native_note')}):")
            for s in trace["native_sites"]:
                out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} allocs  "
                           f"{_short(s['site'])}")
        else:
            out.append(f"  native sites: n/a ({trace.get('native_note')})")
    return "\n".join(out) + ("\n" if out else "")
