"""Where it grows: an opt-in trace of one pair (`kerasbench run --trace N`), off by default.

In the worker, around the measured loop: tracemalloc runs from before the baseline; after the first
measured iteration and after the last one it takes a snapshot and counts the GC-tracked objects by
type. The differences, divided by the iterations between the two, say which Python allocation sites
(file:line, with the few frames that led there) and which object types grow per iteration. A TF
site alone does not tell users what to change, so the same growth is also grouped by the first
frame of each allocation that is in the user's code (not the stdlib, an installed package or
kerasbench): their lines come first. At the loop's end, the referrers of a few of the newest objects
of the types that grow are followed up to a module global (gc.get_referrers, bounded in levels,
objects and seconds): what holds them. Asked for (`--trace-native`) and where memray is installed
(the `trace` extra), a memray tracker with native frames runs over the same window (it slows a TF
iteration tens of times), and its allocations still alive at the end are grouped by their first
frame past the allocator's own: the native sites. What a trace costs is in the record (seconds
spent in snapshots and counts), and the loop's own figures move with it (tracemalloc's traces live
in the same heap): a traced record is marked (spec.trace > 0) and compare and report refuse to mix
it with untraced ones.
"""

from __future__ import annotations

import functools
import gc
import itertools
import linecache
import os
import re
import sys
import sysconfig
import tempfile
import time
import tracemalloc
import types
from array import array
from collections import Counter, OrderedDict, defaultdict, deque
from typing import AbstractSet, Any, Dict, List, Optional, Sequence, Tuple

DEFAULT_TOP = 10  # `--trace` without a number
# Frames kept per allocation. The user's line must be among them: in Keras 3's fit the allocations that grow sit up
# to ~70 frames below the loop body's line (with 64 frames, a tenth of a fit loop's growth named no user line). The
# cost, CPU per iteration of a tiny fit loop (0.42 s untraced): 6 frames 1.4 s, 64 frames 4.9 s, 128 frames 5.0 s;
# frames past a stack's depth cost nothing.
FRAMES = 128
STACK_SHOWN = 4  # frames shown per site, innermost first
NATIVE_FRAMES = 24  # frames read per memray record
# What holds the growing objects (kerasbench.trace.holders), bounded: it runs once, after the loop.
HOLDER_TYPES = 3  # growing types whose holders are shown
HOLDER_CANDIDATES = 24  # growing types whose newest object is followed, to choose them
HOLDER_SAMPLES = 3  # objects followed per type, the newest
HOLDER_DEPTH = 6  # referrer levels followed up towards a module global
HOLDER_BRANCH = 4  # referrers followed per object and level
HOLDER_FRONTIER = 48  # objects whose referrers one level asks for (gc.get_referrers is linear in them)
HOLDER_SECONDS = 10.0  # after this, what was found so far
# Containers whose length grows (kerasbench.trace.containers): they hold what the gc does not track (numpy arrays,
# tensors' buffers, bytes), which no growing type names.
# Exact types, read without calling Python code: isinstance would ask a proxy its __class__ (wrapt's, a lazy
# module's, which imports what it stands for: a trace that imported JAX into the loop it traced).
CONTAINER_TYPES = frozenset((list, dict, set, deque, OrderedDict, defaultdict))
CONTAINERS_SHOWN = 3
CONTAINER_MIN_BYTES = 1024  # per iteration, of the new items: below it, a growing list of floats (a counter's own
# readings) is no holder to show, unless a module global of the user's files holds it
CONTAINER_SAMPLE = 64  # new items whose size is read, per container
GLOBAL_ITEMS = 256  # a module global dict's values looked into for containers (module `m` global `d` key 'k')
_IGNORED = (tracemalloc.__file__, __file__, "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
            "<unknown>")

Trace = Dict[str, Any]  # kerasbench.record.Trace


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


_KERASBENCH = os.path.dirname(os.path.realpath(__file__)) + os.sep
_EXAMPLES = os.path.join(_KERASBENCH, "examples") + os.sep  # repro files: the user's code when run
_LIBRARY_DIRS = ("site-packages", "dist-packages")


# kerasbench's files wherever the package sits (a checkout, site-packages, a worker's cache copy): by their path, for
# a record read where its worker's copy is not this one; its examples are repro files, the user's code when run.
_KERASBENCH_PATH = re.compile(r"(?:^|[/\\])kerasbench[/\\](?!examples[/\\])(?:[\w.-]+[/\\])*[\w.-]+\.py(?::\d+)?$")
_WORKLOAD = ("loops.py",)  # the loop shapes kerasbench measures: a control's leak is there, and named


@functools.lru_cache(maxsize=None)
def _kerasbench_file(filename: str) -> bool:
    """Whether a file (or 'file:line') is kerasbench's own code, not its examples: this copy, or any by its path."""
    path = filename.rsplit(":", 1)[0] if re.search(r":\d+$", filename) else filename
    real = os.path.realpath(path) if path and not path.startswith("<") else ""
    return bool(real.startswith(_KERASBENCH) and not real.startswith(_EXAMPLES) or _KERASBENCH_PATH.search(filename))


_PLUMBING = ("<frozen runpy>",)  # how the worker runs: no caller a user reads


def _library(filename: str) -> bool:
    """The stdlib's or the interpreter's frozen modules: not what asked for memory, what it asked through."""
    return filename.startswith("<frozen ") or os.path.realpath(filename).startswith(_stdlib())


def _harness_frame(frame: str) -> bool:
    """Whether a native frame ('function file:line') is in kerasbench's harness."""
    return harness_file(frame.rsplit(" ", 1)[-1])


def harness_file(filename: str) -> bool:
    """Whether a file is kerasbench's harness (its probes, worker, runner, trace): its own frames, which a user
    reading where memory grows has nothing to do with; the loop shapes (loops.py) are the workload measured."""
    path = filename.rsplit(":", 1)[0] if re.search(r":\d+$", filename) else filename
    return _kerasbench_file(filename) and os.path.basename(path) not in _WORKLOAD


@functools.lru_cache(maxsize=None)
def _stdlib() -> Tuple[str, ...]:
    paths = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib"), os.path.dirname(os.__file__)}
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


@functools.lru_cache(maxsize=None)
def user_code(filename: str) -> bool:
    """Whether a frame's file is the user's: a repro file or their own module, not `<frozen …>`-like code, the
    stdlib, an installed package (site-packages, dist-packages) or kerasbench (but for its example repros)."""
    if not filename or filename.startswith("<"):
        return False
    if any(d in filename.replace("\\", "/").split("/") for d in _LIBRARY_DIRS):
        return False
    path = os.path.realpath(filename)
    if path.startswith(_stdlib()):
        return False
    return not _kerasbench_file(filename)


def _user_type(t: type) -> bool:
    """Whether a class is the user's: defined in user code, or in a script that is no module any more (a repro
    file runs as `kerasbench_repro`, then leaves sys.modules)."""
    module = sys.modules.get(t.__module__)
    if module is None:
        return "." not in t.__module__ and t.__module__ != "builtins"
    path = getattr(module, "__file__", None)
    return user_code(path) if path else t.__module__ == "__main__"


def type_growth(early: Counter, late: Counter, span: int, top: Optional[int]) -> List[Dict[str, Any]]:
    """The `top` object types (all with None) whose GC-tracked count grew most per iteration."""
    grown = [(name, late[name] - early.get(name, 0)) for name in late]
    grown = sorted((g for g in grown if g[1] > 0), key=lambda g: -g[1])[:top]
    return [{"type": name, "per_iter": n / span} for name, n in grown]


# ---------------------------------------------------------------- containers whose length grows


def _own_module(module: Any) -> bool:
    """Whether a module is kerasbench's own (its probes, its runner), not the user's or a library's."""
    name = getattr(module, "__name__", "") or ""
    return name == "kerasbench" or name.startswith("kerasbench.") and not name.startswith("kerasbench.examples")


def _plain_vars(value: Any) -> Optional[Any]:
    """An object's or a class's own attributes (a mapping, not copied), where reading them runs no Python code (no
    __getattribute__ of its own, a __dict__ of the interpreter's): a proxy's or a lazy loader's reads import what
    they stand for."""
    kind = type(value)
    if kind is type:
        return value.__dict__
    if kind.__getattribute__ is not object.__getattribute__:
        return None
    slot = next((k.__dict__["__dict__"] for k in kind.__mro__ if "__dict__" in k.__dict__), None)
    if type(slot) is not types.GetSetDescriptorType:
        return None
    try:
        return object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None


Reached = Tuple[Any, str, str, str, Any, bool]  # (container, the module's name for it, the global, how it is reached
# from the global, the key or attribute, whether the module is the user's)


def _namespaces(objects: Sequence[Any]) -> List[Tuple[str, bool, dict]]:
    """(the module's name for a line: its file's, a package's dotted name; whether it is the user's; its globals) of
    every plain module in sys.modules but kerasbench's, and of the user's functions' modules that are not there (a
    repro file runs as a module that leaves sys.modules): `objects` is gc.get_objects()."""
    out, seen = [], set()

    def add(name: str, path: str, namespace: dict) -> None:
        seen.add(id(namespace))
        base = os.path.basename(path) if path else ""
        mine = user_code(path) if path else name == "__main__"
        out.append((base if base and base != "__init__.py" else name, mine, namespace))

    for module in list(sys.modules.values()):
        if type(module) is types.ModuleType and not _own_module(module):  # noqa: E721 -- a subclass may be a lazy
            add(module.__name__, module.__dict__.get("__file__") or "", module.__dict__)  # loader: its reads import
    for obj in objects:
        if type(obj) is types.FunctionType and id(obj.__globals__) not in seen and user_code(obj.__code__.co_filename):
            add(str(obj.__globals__.get("__name__")), obj.__globals__.get("__file__") or obj.__code__.co_filename,
                obj.__globals__)
    return out


def _global_containers(objects: Sequence[Any]) -> List[Reached]:
    """The containers reachable from modules' globals (_namespaces; kerasbench's own left out): a global itself, a
    value of a global dict, an attribute of a global object, a class attribute, a closure variable of a global
    function; _reached_text names one. Dicts of untracked values (numpy arrays) are not GC-tracked: only this finds
    them. Types are compared exactly and attributes read only where no Python code runs (_plain_vars). It runs under
    tracemalloc, which walks the stack of every allocation: a tuple per container found, nothing named until one
    grew."""
    found: List[Reached] = []
    for where, mine, namespace in _namespaces(objects):
        try:
            for name, value in namespace.items():
                kind = type(value)
                if kind in CONTAINER_TYPES:
                    found.append((value, where, name, "", None, mine))
                    if kind is not list and kind is not set and kind is not deque and len(value) <= GLOBAL_ITEMS:
                        found += [(item, where, name, "key", key, mine) for key, item in value.items()
                                  if type(item) in CONTAINER_TYPES]
                elif kind is types.FunctionType and value.__closure__:
                    for n, cell in zip(value.__code__.co_freevars, value.__closure__):
                        try:
                            if type(cell.cell_contents) in CONTAINER_TYPES:
                                found.append((cell.cell_contents, where, name, "closure variable", n, mine))
                        except ValueError:  # an empty cell
                            pass
                elif kind is not types.ModuleType and kind not in _NO_ATTRIBUTES:
                    attributes = _plain_vars(value)
                    if attributes:
                        how = "class attribute" if kind is type else "attribute"
                        found += [(v, where, name, how, a, mine) for a, v in attributes.items()
                                  if type(v) in CONTAINER_TYPES]
        except RuntimeError:  # a module's globals changed while read (another thread imported): the others
            continue
    return found


_NO_ATTRIBUTES = frozenset((types.BuiltinFunctionType, types.MethodType, types.FunctionType, str, int, float, bool,
                            bytes, tuple, frozenset, type(None)))


def _reached_text(reached: Reached) -> str:
    """'module global `kept` in keeper.py' (as _link names one), '…, attribute `items`', '… key 'k''."""
    _, where, name, how, key, _ = reached
    head = f"module global `{name}` in {where}"
    if how == "key":
        return f"{head} key {str(key)[:40]!r}"
    return f"{head}, {how} `{key}`" if how else head


def container_lengths() -> Tuple[array, array]:
    """(ids, lengths) of the non-empty containers the gc tracks and of those reachable from modules' globals, after the
    first measured iteration (a container that grows by an item an iteration has one by then). Ids, not the objects:
    holding them would keep garbage alive; two arrays, 16 bytes a container, not a dict of them."""
    ids, lengths = array("Q"), array("q")
    objects = gc.get_objects()
    for obj in itertools.chain(objects, (r[0] for r in _global_containers(objects))):
        if type(obj) in CONTAINER_TYPES:
            n = len(obj)
            if n:
                ids.append(id(obj))
                lengths.append(n)
    return ids, lengths


def _new_items(obj: Any, grew: int) -> List[Any]:
    """A sample of what a container gained: a list's or deque's last items, a dict's last values (insertion order),
    some of a set's."""
    try:
        if type(obj) in (dict, OrderedDict, defaultdict):
            return list(itertools.islice(reversed(obj.values()), min(grew, CONTAINER_SAMPLE)))
        if type(obj) is set:
            return list(itertools.islice(iter(obj), min(grew, CONTAINER_SAMPLE)))
        return list(itertools.islice(reversed(obj), min(grew, CONTAINER_SAMPLE)))
    except RuntimeError:  # changed size while read (another thread)
        return []


def grown_containers(early: Optional[Tuple[array, array]], span: int) -> List[Dict[str, Any]]:
    """The containers that gained an item an iteration or more since `early` (container_lengths), the most bytes
    first: each with the container itself (for describe_containers, which drops it), its name where a module global
    reaches it, the type and size of what it gained. kerasbench's own (its modules, its frames' small readings) are
    left out: those reached from its modules are not scanned, and a growth of less than CONTAINER_MIN_BYTES an
    iteration counts only where a module global of the user's files holds the container."""
    if not early or span < 1:
        return []
    before = dict(zip(*early))
    objects = gc.get_objects()
    reached = _global_containers(objects)
    named = {id(r[0]): r for r in reversed(reached)}  # the first way a container is reached names it
    own = {id(early), id(early[0]), id(early[1]), id(before), id(named), id(reached), id(objects)}
    found, seen = [], set()
    for obj in itertools.chain(objects, (r[0] for r in reached)):
        key = id(obj)
        if key in seen or key in own or type(obj) not in CONTAINER_TYPES or key not in before:
            continue
        seen.add(key)
        grew = len(obj) - before[key]
        if grew < 0.99 * span:
            continue
        items = _new_items(obj, grew)
        sizes = [_size(x) for x in items]
        per_item = sum(sizes) / len(sizes) if sizes else 0.0
        way = named.get(key)
        mine, what = (way[5], _reached_text(way)) if way else (False, None)
        if per_item * grew / span < CONTAINER_MIN_BYTES and not mine:
            continue
        kinds = Counter(f"{type(x).__module__}.{type(x).__qualname__}".replace("builtins.", "") for x in items)
        found.append({"container": obj, "kind": type(obj).__qualname__, "len": len(obj), "per_iter": grew / span,
                      "bytes_per_iter": per_item * grew / span, "items": [k for k, _ in kinds.most_common(3)],
                      "name": what, "mine": mine})
    del before, named, reached, objects
    found.sort(key=lambda c: (not c["mine"], -c["bytes_per_iter"]))
    return found[:CONTAINERS_SHOWN]


def _size(obj: Any) -> int:
    try:
        if type(type(obj).__sizeof__) is types.FunctionType:  # Python code (a proxy's): the object's own shell
            return object.__sizeof__(obj)
        return sys.getsizeof(obj)  # a numpy array that owns its data counts it; a view or a list, its own shell
    except Exception:  # a proxy whose __sizeof__ raises
        return 0


def describe_containers(grown: List[Dict[str, Any]], deadline: float) -> List[Dict[str, Any]]:
    """The record's entries of grown_containers: a container no module global names gets the chain of its holders
    (as `holders` follows them, up to a module global or a class); the containers themselves are let go."""
    out = []
    for c in grown:
        obj = c.pop("container")
        if c["name"]:
            held_by, rooted = [c.pop("name")], True
        else:
            c.pop("name")
            (chain, rooted), = _paths([obj], deadline)
            held_by = _describe(chain)
            if rooted and held_by and held_by[-1].startswith("module global ") and _own_chain(chain):
                continue  # held from kerasbench's own module
        del obj
        c.pop("mine")
        out.append({**c, "held_by": held_by, "rooted": rooted})
    return out


def _own_chain(chain: List[Any]) -> bool:
    """Whether a chain ends at a kerasbench module's globals."""
    last = chain[-1] if chain else None
    return _module_globals(last) and _own_module(sys.modules.get(last.get("__name__", ""), None))


# ---------------------------------------------------------------- what holds the objects that grow


def holders(grown: List[Dict[str, Any]], alive: Counter, deadline: float) -> List[Dict[str, Any]]:
    """What holds the objects of up to HOLDER_TYPES growing types: the referrers of the newest few of each, followed
    up to a module global (or a class), e.g. `list (len 40) ← module global `histories` in repro.py`.

    Which types: a fit loop that keeps its History grows by ~20 types once per iteration (the History, its model,
    the model's layers, optimizer, graph), and which of them the user keeps shows only in their chains. So a first
    pass follows the newest object of up to HOLDER_CANDIDATES types that grew once per iteration or more (the
    user's classes first, then other classes, the fewest per iteration first; where no class grew, dict, list and
    their like, the most first), and keeps the types whose chains are most direct: the user's first, then those
    that reach a module global or a class, the shortest first. A second pass follows HOLDER_SAMPLES objects of
    each: their most common chain, and how many share it. Bounded (HOLDER_* levels, objects, seconds): it runs
    once, after the loop; gc.get_referrers scans every object once per level.
    """
    per_iter = {g["type"]: g["per_iter"] for g in grown  # once per iteration and up: no one-off, nor the trace's own
                if g["per_iter"] >= 0.99 and not g["type"].startswith(("tracemalloc.", "weakref."))}
    newest = _newest(per_iter)
    user = {name: _user_type(type(kept[0])) for name, kept in newest.items()}
    classes = sorted((not user[n], per_iter[n], n) for n in newest if not n.startswith(_PLAIN))
    plain = sorted((-per_iter[n], n) for n in newest if n.startswith(_PLAIN))  # the bulk: no class grew
    candidates = [key[-1] for key in classes or plain][:HOLDER_CANDIDATES]
    started = time.perf_counter()
    lists = {id(newest)} | {id(kept) for kept in newest.values()}  # they hold the samples too: not holders
    first = [(tuple(_describe(chain)), rooted) for chain, rooted in
             _paths([newest[name][-1] for name in candidates], deadline, lists)]
    order = sorted(range(len(candidates)),
                   key=lambda i: (not user[candidates[i]], not first[i][1], len(first[i][0]), i))[:HOLDER_TYPES]
    chosen = [candidates[i] for i in order]
    chains: Dict[str, List[Tuple[Tuple[str, ...], bool]]] = {name: [first[i]] for name, i in zip(chosen, order)}
    if time.perf_counter() + (time.perf_counter() - started) < deadline:  # time for the second pass
        samples, owners = [], []
        for name in chosen:
            samples += newest[name]
            owners += [name] * len(newest[name])
        del newest  # nothing but `samples` holds them now
        chains = {name: [] for name in chosen}
        for (chain, rooted), owner in zip(_paths(samples, deadline), owners):
            chains[owner].append((tuple(_describe(chain)), rooted))
        del samples
    out = []
    for name in chosen:
        (held_by, rooted), agree = Counter(chains[name]).most_common(1)[0]
        out.append({"type": name, "per_iter": per_iter[name], "alive": alive[name], "sampled": len(chains[name]),
                    "agree": agree, "held_by": list(held_by), "rooted": rooted})
    return out


# The interpreter's own containers and plumbing: they hold what grows (or point at it) and are never the cause.
_PLAIN = ("builtins.", "weakref.", "_weakref.", "collections.", "functools.", "types.")


def _newest(per_iter: Dict[str, float]) -> Dict[str, List[Any]]:
    """The last HOLDER_SAMPLES objects of each growing type in gc's order (the newest, after a collection)."""
    names: Dict[type, Optional[str]] = {}
    newest: Dict[str, List[Any]] = {}
    for obj in gc.get_objects():
        t = type(obj)
        if t not in names:
            name = f"{t.__module__}.{t.__qualname__}"
            names[t] = name if name in per_iter else None
        if names[t]:
            kept = newest.setdefault(names[t], [])
            kept.append(obj)
            if len(kept) > HOLDER_SAMPLES:
                del kept[0]
    return newest


def _module_globals(obj: Any) -> bool:
    return isinstance(obj, dict) and "__builtins__" in obj and "__name__" in obj


def _paths(samples: List[Any], deadline: float, own: AbstractSet[int] = frozenset()) -> List[Tuple[List[Any], bool]]:
    """For each sample: (its chain [sample, holder, holder's holder, …], whether it ends at a module's globals or a
    class). Breadth first, the shortest such chain; without one, the first chain to the deepest level reached.
    One gc.get_referrers scan per level serves every sample; frames, the containers whose ids are in `own` and what
    this function holds itself (its lists, the scan's arguments and result) are no holders."""
    objs = list(samples)  # every object reached, once per sample that reached it
    parent: List[Optional[int]] = [None] * len(objs)  # parent[n]: the index of the object objs[n] holds
    origin, depth = list(range(len(objs))), [0] * len(objs)
    seen = [{id(o)} for o in samples]
    root: List[Optional[int]] = [None] * len(samples)
    deepest = list(range(len(samples)))
    frontier = list(range(len(objs)))
    per_sample = max(2, HOLDER_FRONTIER // max(1, len(samples)))
    for _ in range(HOLDER_DEPTH):
        if not frontier or time.perf_counter() > deadline:
            break
        held = _referrers({id(objs[n]): objs[n] for n in frontier}, {id(objs), id(samples), *own})
        nxt: List[int] = []
        for n in frontier:
            s = origin[n]
            for r in sorted(held.get(id(objs[n]), ()), key=_preference)[:HOLDER_BRANCH]:
                if root[s] is not None or id(r) in seen[s]:
                    continue
                seen[s].add(id(r))
                objs.append(r)
                parent.append(n)
                origin.append(s)
                depth.append(depth[n] + 1)
                m = len(objs) - 1
                if _root(r):
                    root[s] = m
                elif depth[m] > depth[deepest[s]]:
                    deepest[s] = m
                nxt.append(m)
        del held
        taken = Counter()
        frontier = []
        for m in nxt:
            s = origin[m]
            if root[s] is None and taken[s] < per_sample:
                taken[s] += 1
                frontier.append(m)
    paths = []
    for s in range(len(samples)):
        chain, n = [], root[s] if root[s] is not None else deepest[s]
        while n is not None:
            chain.append(objs[n])
            n = parent[n]
        paths.append((chain[::-1], root[s] is not None))
    return paths


def _referrers(targets: Dict[int, Any], own: set) -> Dict[int, List[Any]]:
    """id(target) -> the objects that refer to it, from one scan of every object the gc tracks."""
    args = tuple(targets.values())  # passed as is: the scan finds it, and leaves it out
    refs = gc.get_referrers(*args)
    own = own | {id(args), id(refs), id(targets)}
    held: Dict[int, List[Any]] = {}
    for r in refs:
        if id(r) in own or isinstance(r, types.FrameType):
            continue
        for x in gc.get_referents(r):
            if id(x) in targets:
                held.setdefault(id(x), []).append(r)
    return held


def _root(obj: Any) -> bool:
    return _module_globals(obj) or isinstance(obj, type)


def _preference(obj: Any) -> int:
    """Which referrers to follow first: a module's globals or a class (where a chain ends), containers, objects,
    closures and methods last."""
    if _root(obj):
        return 0
    if isinstance(obj, (list, dict, tuple, set, frozenset, deque)):
        return 1
    if isinstance(obj, (types.CellType, types.FunctionType, types.MethodType)):
        return 3
    return 2


def _describe(chain: List[Any]) -> List[str]:
    """Each link of a chain, the holder first: 'list (len 40)', 'attribute `model` of History', 'module global
    `histories` in repro.py'. An object's __dict__ and a function's closure cell fold into their owner."""
    links, i = [], 1
    while i < len(chain):
        holder, child = chain[i], chain[i - 1]
        owner = chain[i + 1] if i + 1 < len(chain) else None
        if isinstance(holder, dict) and owner is not None and not _module_globals(holder) and _dict_of(owner, holder):
            links.append(_link(owner, child, _key(holder, child)))
            i += 2
        elif isinstance(holder, types.CellType) and isinstance(owner, types.FunctionType):
            names = owner.__code__.co_freevars
            name = next((n for n, c in zip(names, owner.__closure__ or ()) if c is holder), "?")
            links.append(f"closure variable `{name}` of function {owner.__qualname__}")
            i += 2
        else:
            links.append(_link(holder, child))
            i += 1
    return links


def _dict_of(owner: Any, d: dict) -> bool:
    """Whether `d` is `owner`'s __dict__ (a class's: the dict its mappingproxy shows)."""
    try:
        if isinstance(owner, type):
            return any(r is d for r in gc.get_referents(owner))
        return getattr(owner, "__dict__", None) is d
    except Exception:  # proxies (wrapt's, TF's) may raise on attribute reads
        return False


def _key(d: dict, child: Any) -> str:
    for k, v in list(d.items()):
        if v is child:
            return str(k)[:40]
    return "(as a key)"


def _attribute(obj: Any, child: Any) -> Optional[str]:
    """The name under which `obj` holds `child` (an attribute or a slot), if it is one."""
    try:
        for k, v in list(vars(obj).items()):
            if v is child:
                return str(k)
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if getattr(obj, slot, None) is child:
                    return slot
    except Exception:  # no __dict__, or a proxy that raises
        pass
    return None


def _link(holder: Any, child: Any, attribute: Optional[str] = None) -> str:
    kind = type(holder).__qualname__
    if _module_globals(holder):
        where = os.path.basename(holder.get("__file__") or "") or holder.get("__name__")
        return f"module global `{_key(holder, child)}` in {where}"
    if isinstance(holder, dict):
        return f"dict (len {len(holder)}) key {_key(holder, child)}"
    if isinstance(holder, (list, tuple, set, frozenset, deque)):
        return f"{kind} (len {len(holder)})"
    attribute = attribute or _attribute(holder, child)
    if isinstance(holder, type):
        return f"class attribute `{holder.__qualname__}.{attribute}`" if attribute else f"class {holder.__qualname__}"
    return f"attribute `{attribute}` of {kind}" if attribute else kind


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
    """What `run` prints after its table for every traced record: the user's lines the growth goes through and what
    holds the objects that grow (records before them lack both), top sites, growing types, native sites."""
    out = []
    for record in records:
        trace = record_trace(record)
        if not trace:
            continue
        from .console import loop_label, strategy_label

        out.append(f"\ntrace of {loop_label(record)} × {strategy_label(record)} (tracemalloc and gc, iteration "
                   f"{trace.get('first', 0)} → {trace.get('last', '?')}):")
        if trace.get("skipped"):
            out.append(f"  not traced: {trace['skipped']}")
            continue
        out.append(f"  Python heap growth {_kib(trace['python_bytes_per_iter'])}/iteration; trace cost "
                   f"{trace['seconds_in_loop']:.2f} s in the loop, {trace['seconds_after']:.2f} s after it")
        kept = _kept_names(trace)
        out += _lead_text(trace, kept) + _containers_text(trace) + _holders_text(trace) + _user_text(trace, kept)
        out.append("  Python allocation sites that grow (per iteration; kerasbench's own left out):")
        sites = [s for s in trace["python_sites"] if not harness_file(s["site"])]  # a record of an older worker
        for s in sites:
            out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} blocks  {_short(s['site'])}")
            for frame in [f for f in s["stack"][1:] if not _kerasbench_file(f)]:
                out.append(f"    {'':>14} {'':>16}    ← {_short(frame)}")
        if not sites:
            out.append("    none outside kerasbench's own")
        out.append("  object types that grow (per iteration):")
        out += [f"    {t['per_iter']:+9.1f}  {t['type']}" for t in trace["types"]] or ["    none"]
        if trace.get("native_sites"):
            out.append(f"  native sites ({trace.get('native_note')}; kerasbench's own left out):")
            for s in [s for s in trace["native_sites"] if not _harness_frame(s["site"])]:
                out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} allocs  "
                           f"{_short(s['site'])}")
        else:
            out.append(f"  native sites: n/a ({trace.get('native_note')})")
        out += _capture_text(trace)
    return "\n".join(out) + ("\n" if out else "")


def _capture_text(trace: Trace) -> List[str]:
    """Where memray's capture of the traced window is kept, and the command that draws it."""
    path = trace.get("native_file")
    if not path:
        return []
    if not os.path.exists(path):
        return [f"  memray's capture was {path} (no longer there)"]
    import shlex

    return [f"  memray's capture of the window, kept: memray flamegraph {shlex.quote(path)}  (or memray summary, "
            "table, tree; --leaks for what was still alive at its end)"]


_NAMED = re.compile(r"`([^`]+)`")
# A line that puts an object into a container it names: `kept.append(x)`, `kept[k] = x`, `kept += [x]`, ...
_KEEPS = r"\b{name}\s*(?:\.\s*(?:append|extend|insert|add|update|setdefault|appendleft)\s*\(|\[[^\]]*\]\s*=[^=]|\+=)"


def _kept_names(trace: Trace) -> List[Tuple[str, str, Dict[str, Any]]]:
    """(name, the file it lives in or '', holder) of each rooted chain's names that a line of code can use to keep
    an object: the module global (`histories`), the attributes and keys on the way; the type that grows most first."""
    names = []
    for h in trace.get("holders") or ():
        if not h.get("rooted"):
            continue
        for link in h.get("held_by") or ():
            found = _NAMED.search(link)
            if found:
                where = link.rsplit(" in ", 1)[1] if link.startswith("module global ") and " in " in link else ""
                names.append((found.group(1).rsplit(".", 1)[-1], where, h))
    for c in trace.get("containers") or ():  # then a container that grows: its own name (the last its chain says),
        found = _NAMED.findall(c["held_by"][0]) if c.get("rooted") and c.get("held_by") else []  # for what the gc
        if found:  # does not track (a type's holder says more where one grew: Box ×6 kept in `boxes`)
            names.append((found[-1].rsplit(".", 1)[-1], "", c))
    return names


def _source(site: str) -> str:
    path, _, line = site.rpartition(":")
    return linecache.getline(path, int(line)).strip() if line.isdigit() else ""


def _names_in(source: str, kept: List[Tuple[str, str, Dict[str, Any]]]) -> Optional[Tuple[str, str, Dict[str, Any]]]:
    """The first of `kept` whose name `source` uses as a word."""
    return next((k for k in kept if re.search(rf"\b{re.escape(k[0])}\b", source)), None)


def _keeping_lines(trace: Trace, kept: List[Tuple[str, str, Dict[str, Any]]]) -> List[Tuple[str, str, str]]:
    """(file:line, source, name) of the lines of the user's files that put an object into a container a holder chain
    names (`histories.append(...)`): the user sites' files, searched; at most three."""
    files = []
    for s in trace.get("user_sites") or ():
        path = s["site"].rpartition(":")[0]
        if path not in files:
            files.append(path)
    found = []
    for name, where, _ in kept:
        pattern = re.compile(_KEEPS.format(name=re.escape(name)))
        for path in files:
            if where and os.path.basename(path) != where:
                continue
            for n, text in enumerate(linecache.getlines(path), 1):
                match = pattern.search(text.split("#", 1)[0])
                before = text[:match.start()] if match else ""
                if match and before.count('"') % 2 == 0 and before.count("'") % 2 == 0:  # code, not a string's text
                    found.append((f"{path}:{n}", text.strip(), name))
        if found:
            break
    return found[:3]


def _lead_text(trace: Trace, kept: List[Tuple[str, str, Dict[str, Any]]]) -> List[str]:
    """One line to act on first: what holds a type that grows (the one that grows most, of those a line of the
    user's files adds to its holder) and that line; nothing when no such line is found."""
    lines = _keeping_lines(trace, kept)
    if not lines:  # a chain no line of the user's adds to (a class attribute of a library) is not where to look
        return []
    name = lines[0][2]
    holder = next(h for n, _, h in kept if n == name)
    where = "; ".join(f"{_short(site)} `{source if len(source) <= 60 else source[:59] + '…'}`"
                      for site, source, _ in lines)
    if "type" not in holder:  # a container that grows: what it gains
        return [f"  look first: `{name}`, {_container_text(holder)}, by {where}"]
    kind = holder["type"].rsplit(".", 1)[-1]
    return [f"  look first: {kind} ×{holder['alive']} ({holder['per_iter']:+.1f}/iteration) kept in `{name}`, by "
            f"{where}"]


def _container_text(c: Dict[str, Any]) -> str:
    """'a list, +1.0 item per iteration (len 9), holding numpy.ndarray (+200.0 KiB per iteration)'."""
    article = "an" if c["kind"][:1] in "aeiou" else "a"
    items = " or ".join(c["items"]) or "nothing sampled"
    return (f"{article} {c['kind']}, {c['per_iter']:+.1f} item{'s' if c['per_iter'] >= 1.5 else ''} per iteration "
            f"(len {c['len']}), holding {items} ({_kib(c['bytes_per_iter'])} per iteration)")


def _containers_text(trace: Trace) -> List[str]:
    """The containers that grow, the holder named first: 'module `foo` global `kept`: a list, +1.0 item per
    iteration (len 9), holding numpy.ndarray (+200.0 KiB per iteration)'; nothing where none grew (or the record
    is older than them)."""
    if not trace.get("containers"):
        return []
    out = ["  containers that grow (an item an iteration or more; they hold what the gc does not track, e.g. arrays):"]
    for c in trace["containers"]:
        held = " ← ".join(c["held_by"]) + ("" if c["rooted"] else " ← … (not followed further)")
        out.append(f"    {held}: {_container_text(c)}")
    return out


def where_text(record: Dict[str, Any], top: int = 3) -> List[str]:
    """Where a traced record's growth is, in a few lines: the line to act on, what holds the growing objects, the
    user's first `top` lines (a failing test's message); [] for a record without a trace."""
    trace = record_trace(record)
    if not trace or trace.get("skipped"):
        return []
    kept = _kept_names(trace)
    return _lead_text(trace, kept) + _containers_text(trace) + _holders_text(trace) + _user_text(trace, kept, top)


def _user_text(trace: Trace, kept: Optional[List[Tuple[str, str, Dict[str, Any]]]] = None,
               top: Optional[int] = None) -> List[str]:
    """The user's lines: those that name what holds the growing objects first, then by growth; each with its source
    (where the file is readable here), the library call it made and where that path allocated."""
    if "user_sites" not in trace:
        return []
    if not trace["user_sites"]:
        return [f"  your code: none of the growth goes through it (within the {trace.get('frames', '?')} frames kept "
                "per allocation)"]
    out = ["  your code that the growth goes through (each allocation at its innermost line in your files, per "
           "iteration; lines that name what holds them first):"]
    sites = sorted(trace["user_sites"], key=lambda s: _names_in(_source(s["site"]), kept or []) is None)
    for s in sites[:top]:
        out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} blocks  {_short(s['site'])}")
        source = _source(s["site"])
        if source:
            named = _names_in(source, kept or [])
            tail = f"   ← names `{named[0]}`, which holds them" if named else ""
            out.append(f"    {'':>14} {'':>16}    {source if len(source) <= 90 else source[:89] + '…'}{tail}")
        calls = s["stack"][1:]
        for i, frame in enumerate(calls):
            how = "calls" if i == 0 and len(calls) == 2 else "allocates at"
            out.append(f"    {'':>14} {'':>16}    → {how} {_short(frame)}")
    return out


def _holders_text(trace: Trace) -> List[str]:
    """What holds the objects that grow, one line per type: 'History ×40 (+1.0/iteration) held by list (len 40) ← …'."""
    if "holders" not in trace:
        return []
    if not trace["holders"]:
        return ["  what holds the objects that grow: no GC-tracked type grew" +
                (" (the containers above hold what grows)" if trace.get("containers") else "")]
    out = ["  what holds the objects that grow (referrers of the newest few of a type, at the loop's end):"]
    for h in trace["holders"]:
        held = " ← ".join(h["held_by"]) + ("" if h["rooted"] else " ← … (not followed further)")
        if not h["held_by"]:
            held = "no referrer the gc tracks (a frame or C code holds them)"
        agree = f" [{h['agree']} of {h['sampled']} sampled]" if h["agree"] < h["sampled"] else ""
        kind = h["type"].rsplit(".", 1)[-1]  # the class's name: the record has its module
        out.append(f"    {kind} ×{h['alive']} ({h['per_iter']:+.1f}/iteration) held by {held}{agree}")
    return out
