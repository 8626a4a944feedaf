"""The allocation sites that grow: tracemalloc's differences grouped by their innermost line (Python sites) and by
their innermost line in the user's code (user sites), memray's records by their first frame past the allocator's
(native sites), and the object types whose count grows."""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

from .frames import _PLUMBING, _kerasbench_file, _library, harness_file, user_code


STACK_SHOWN = 4  # frames shown per site, innermost first
NATIVE_FRAMES = 24  # frames read per memray record


# Frames of the interpreter's own allocators (CPython's source tree, the malloc family): a native site is
# the first frame past them, the code that asked for the memory.
_ALLOCATOR_FILES = ("Objects/", "Modules/", "Python/", "Include/", "./Objects/", "./Modules/", "./Python/",
                    "./Include/")
_ALLOCATOR_FUNCTIONS = ("malloc", "calloc", "realloc", "free", "operator new", "posix_memalign", "aligned_alloc",
                        "mmap", "memalign", "valloc")


def native_frames(rec: Any) -> List[str]:
    """'function file:line' of a memray record's hybrid stack, innermost first, past the allocator's own frames."""
    try:
        stack = list(rec.hybrid_stack_trace(max_stacks=NATIVE_FRAMES))
    except Exception:  # no native frames for this record
        stack = list(rec.stack_trace(max_stacks=NATIVE_FRAMES))
    frames = [f"{fn} {file}:{line}" for fn, file, line in stack]
    skip = 0
    for fn, file, _ in stack:
        if str(file).startswith(_ALLOCATOR_FILES) or str(fn).strip().startswith(_ALLOCATOR_FUNCTIONS):
            skip += 1
        else:
            break
    return frames[skip:skip + STACK_SHOWN] if skip < len(frames) else frames[:STACK_SHOWN]


def _where(frame: Any) -> str:
    return f"{frame.filename}:{frame.lineno}"


def _ranked(diffs: Sequence[Any], span: int, top: int, place) -> List[Dict[str, Any]]:
    """The `top` sites that grew most, from tracemalloc's StatisticDiffs by traceback: `place(frames)` (innermost
    first) says an allocation's site and the frames to show for it, or None to leave it out. A site's growth is net
    (what its paths freed counts against what they allocated); its stack is that of its path that grew most."""
    by_site: Dict[str, Dict[str, Any]] = {}
    for d in diffs:
        if not d.size_diff:
            continue
        placed = place(list(d.traceback)[::-1])  # tracemalloc keeps them oldest first
        if placed is None:
            continue
        site, shown = placed
        entry = by_site.setdefault(site, {"site": site, "bytes": 0, "count": 0, "stack": [], "largest": 0})
        entry["bytes"] += d.size_diff
        entry["count"] += d.count_diff
        if d.size_diff > entry["largest"]:
            entry["largest"] = d.size_diff
            entry["stack"] = [_where(f) for f in shown]
    ranked = sorted((e for e in by_site.values() if e["bytes"] > 0), key=lambda e: -e["bytes"])[:top]
    return [{"site": e["site"], "bytes_per_iter": e["bytes"] / span, "count_per_iter": e["count"] / span,
             "stack": e["stack"]} for e in ranked]


def python_sites(diffs: Sequence[Any], span: int, top: int) -> List[Dict[str, Any]]:
    """The `top` sites that grew most, grouped by innermost line, with the frames that led there. kerasbench's own
    are left out: a site in its harness (its probes, runner, worker: harness_file; the loop shapes it measures are
    no harness), an allocation made through tracemalloc's module (the trace's own filters), and the harness's frames
    in a site's stack (loops.py calling the repro file's iteration)."""
    def place(frames):
        asker = next((f.filename for f in frames if not _library(f.filename)), "")  # the code that asked for it
        if harness_file(frames[0].filename) or harness_file(asker):
            return None
        return _where(frames[0]), [frames[0]] + [f for f in frames[1:] if not _kerasbench_file(f.filename)
                                                 and f.filename not in _PLUMBING][:STACK_SHOWN - 1]

    return _ranked(diffs, span, top, place)


def user_sites(diffs: Sequence[Any], span: int, top: int) -> List[Dict[str, Any]]:
    """The `top` lines of the user's code that the growth goes through: each allocation counts at its innermost frame
    in the user's files (user_code). The stack: that line, the library call it made, and where that path allocated.
    A TF site names no line users can change; this does, even where TF allocates ~70 frames below it."""
    def place(frames):
        i = next((i for i, f in enumerate(frames) if user_code(f.filename)), None)
        if i is None:
            return None
        return _where(frames[i]), [frames[i]] + ([frames[i - 1]] if i > 1 else []) + ([frames[0]] if i else [])

    return _ranked(diffs, span, top, place)


def type_growth(early: Counter, late: Counter, span: int, top: Optional[int]) -> List[Dict[str, Any]]:
    """The `top` object types (all with None) whose GC-tracked count grew most per iteration."""
    grown = [(name, late[name] - early.get(name, 0)) for name in late]
    grown = sorted((g for g in grown if g[1] > 0), key=lambda g: -g[1])[:top]
    return [{"type": name, "per_iter": n / span} for name, n in grown]
